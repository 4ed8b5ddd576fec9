//! A policy directory as it was at a git revision: `git archive` of the
//! directory's tree at that revision, unpacked by `tar` into a temporary
//! directory. Nothing in the work tree, the index or the refs is touched.

use crate::error::{Error, ErrorKind, Problem};
use std::path::Path;
use std::process::{Command, Stdio};

/// The policy directory `dir` as committed at `rev`, in a temporary
/// directory deleted when the returned value is dropped.
///
/// # Errors
/// [`ErrorKind::Usage`] when `dir` is not inside a git work tree, `rev`
/// names no commit, or the directory did not exist at `rev`;
/// [`ErrorKind::Io`] when `git` or `tar` cannot be run or the temporary
/// directory cannot be made.
pub fn policies_at(dir: &Path, rev: &str) -> Result<tempfile::TempDir, Error> {
    let usage = |message: String, help: &str| {
        Error::new(
            ErrorKind::Usage,
            Problem::new(message).in_file(dir).help(help),
        )
    };
    if rev.starts_with('-') || rev.contains(':') {
        return Err(usage(
            format!("--base-rev {rev:?} is not a revision"),
            "give a commit, branch or tag, e.g. --base-rev origin/main",
        ));
    }
    let git = |cwd: &Path, args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|err| {
                Error::new(
                    ErrorKind::Io,
                    Problem::new(format!("cannot run git: {err}"))
                        .help("install git, or compare two plan files instead"),
                )
            })
    };
    let line = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Paths in a tree-ish are taken from the top of the repository, and git
    // run inside a subdirectory limits archives to it: run at the top.
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if !top.status.success() {
        return Err(usage(
            "the policy directory is not inside a git work tree".into(),
            "run in a clone of the repository, or compare two plan files instead",
        ));
    }
    let top = std::path::PathBuf::from(line(&top));
    let prefix = line(&git(dir, &["rev-parse", "--show-prefix"])?);
    let commit = git(
        &top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )?;
    if !commit.status.success() {
        return Err(usage(
            format!("git knows no commit {rev:?} in the repository of this policy directory"),
            "give a commit, branch or tag of this repository (in CI, fetch it first: `git fetch origin main`)",
        ));
    }
    let tree = format!("{}:{prefix}", line(&commit));
    let exists = git(&top, &["cat-file", "-e", &tree])?;
    if !exists.status.success() {
        return Err(usage(
            format!("the policy directory did not exist at {rev}"),
            "pick a revision that has it, or compare two plan files instead",
        ));
    }
    let out =
        tempfile::tempdir().map_err(|err| Error::io(Path::new("temporary directory"), &err))?;
    let archive = git(&top, &["archive", "--format=tar", &tree])?;
    if !archive.status.success() {
        return Err(Error::new(
            ErrorKind::Io,
            Problem::new(format!(
                "git archive of the policy directory at {rev} failed: {}",
                String::from_utf8_lossy(&archive.stderr).trim()
            ))
            .in_file(dir),
        ));
    }
    let mut tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(out.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| {
            Error::new(
                ErrorKind::Io,
                Problem::new(format!("cannot run tar: {err}")).help("install tar"),
            )
        })?;
    {
        use std::io::Write;
        let mut stdin = tar.stdin.take().expect("piped");
        stdin
            .write_all(&archive.stdout)
            .map_err(|err| Error::io(out.path(), &err))?;
    }
    let done = tar
        .wait_with_output()
        .map_err(|err| Error::io(out.path(), &err))?;
    if !done.status.success() {
        return Err(Error::new(
            ErrorKind::Io,
            Problem::new(format!(
                "tar could not unpack the policy directory at {rev}: {}",
                String::from_utf8_lossy(&done.stderr).trim()
            )),
        ));
    }
    Ok(out)
}
