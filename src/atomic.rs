//! Writing a file muster owns (a snapshot, the lock, a session document) so
//! that a reader sees either the old bytes or the new ones, never a
//! half-written file, and so that two writers never lose each other's
//! update. Decides nothing about content.
//!
//! Three rules, for every write:
//! - **Whole or not at all.** The bytes go to a temporary file beside the
//!   target, which is then renamed over it.
//! - **One writer at a time.** A write holds an exclusive lock (`flock`, on
//!   Unix) on the directory that holds the file, from before it reads the
//!   old bytes to after the rename; [`update`] is the read-modify-write
//!   under that lock. The directory, not the file: a rename replaces the file's inode,
//!   so a lock on the file would be lost with it, and a sibling lock file
//!   would be litter in a policy directory kept in git. The lock is
//!   advisory: it orders muster's writers (processes and threads alike),
//!   not other programs.
//! - **The file stays what it was.** A symbolic link is written through, to
//!   the file it points to, and the link is kept; an existing file keeps its
//!   permission bits (a `0600` document stays `0600`). A new file gets what
//!   `File::create` would give: `0666` less the umask.

use crate::error::code;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Problem};
use crate::input::ReadError;

/// Writes `bytes` to `path` whole (see the module's rules), creating the
/// directory if needed.
///
/// # Errors
/// An [`ErrorKind::Io`] error naming the path when the directory cannot be
/// created or locked, or the file cannot be written or renamed; the old
/// file is then left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let target = Target::new(path)?;
    let _lock = target.lock()?;
    target.replace(bytes)
}

/// Reads `path`, hands its bytes to `change` (`None` when there is no file)
/// and writes what `change` returns, all under the directory's lock, so
/// concurrent updates of one file (six `muster lock --server …` at once)
/// each see the previous one's result and none is lost. `Ok(None)` from
/// `change` leaves the file as it is.
///
/// `change` runs while the lock is held: keep it to computing the new
/// bytes, and never write another file of the same directory from it
/// (that write would wait for this lock for ever).
///
/// # Errors
/// [`write_atomic`]'s errors; the error [`crate::input::read_bytes`] gives
/// for an old file that is not a readable regular file within
/// [`crate::input::MAX_INPUT_BYTES`]; and whatever `change` returns. On any
/// error the file is left as it was.
///
/// # Example
/// ```
/// # fn main() -> Result<(), muster::Error> {
/// let dir = tempfile::tempdir().expect("a temporary directory");
/// let path = dir.path().join("count");
/// for _ in 0..3 {
///     muster::atomic::update(&path, |old| {
///         let n: u32 = old.map_or(0, |b| String::from_utf8_lossy(b).parse().unwrap_or(0));
///         Ok(Some((n + 1).to_string().into_bytes()))
///     })?;
/// }
/// assert_eq!(std::fs::read_to_string(&path).expect("written"), "3");
/// # Ok(())
/// # }
/// ```
pub fn update(
    path: &Path,
    change: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, Error>,
) -> Result<(), Error> {
    let target = Target::new(path)?;
    let _lock = target.lock()?;
    let old = match crate::input::read_bytes(&target.file) {
        Ok(bytes) => Some(bytes),
        Err(ReadError::Missing) => None,
        Err(e) => return Err(e.into_error(&target.file, "the file to update")),
    };
    match change(old.as_deref())? {
        Some(bytes) => target.replace(&bytes),
        None => Ok(()),
    }
}

/// Most symbolic links followed from the named path to the file (Linux's
/// own limit).
const MAX_LINKS: usize = 40;

/// Where a write lands: the file a path names once its links are followed,
/// and the directory holding it.
struct Target {
    file: PathBuf,
    dir: PathBuf,
}

impl Target {
    /// Follows `path`'s links (a dangling one too: the write creates what it
    /// points to) and creates the directory the file goes in.
    fn new(path: &Path) -> Result<Target, Error> {
        let mut file = path.to_path_buf();
        for _ in 0..=MAX_LINKS {
            let link = match std::fs::symlink_metadata(&file) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    std::fs::read_link(&file).map_err(|e| Error::io(&file, &e))?
                }
                _ => {
                    let dir = parent(&file).to_path_buf();
                    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, &e))?;
                    return Ok(Target { file, dir });
                }
            };
            // A relative link is relative to the directory holding it.
            file = parent(&file).join(link);
        }
        Err(Error::new(
            ErrorKind::Io,
            Problem::coded(code::WRITE_FAILED, format!(
                "cannot write {}: more than {MAX_LINKS} symbolic links lead from it, or they loop",
                path.display()
            ))
            .in_file(path)
            .help("point the link at the file itself"),
        ))
    }

    /// The exclusive lock on the directory, held until the value is dropped.
    fn lock(&self) -> Result<DirLock, Error> {
        DirLock::take(&self.dir)
    }

    /// Writes `bytes` to a temp file beside the file, with the old file's
    /// permission bits, and renames it over the file. The temp file sits in
    /// the same directory because a rename is only atomic within one
    /// filesystem; `tempfile` removes it on every error path.
    fn replace(&self, bytes: &[u8]) -> Result<(), Error> {
        let (dir, path) = (&self.dir, &self.file);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let prefix = format!(".{name}.");
        remove_stale(dir, &prefix);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(TMP_SUFFIX);
        // What `File::create` would give (0666 less the umask), not
        // tempfile's owner-only default: locks and snapshots are shared
        // through git.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, &e))?;
        // An existing file keeps its bits exactly: set after creation, where
        // the umask no longer narrows them.
        #[cfg(unix)]
        if let Ok(old) = std::fs::metadata(path) {
            use std::os::unix::fs::PermissionsExt;
            let bits = std::fs::Permissions::from_mode(old.permissions().mode() & 0o777);
            tmp.as_file()
                .set_permissions(bits)
                .map_err(|e| Error::io(path, &e))?;
        }
        tmp.write_all(bytes)
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| Error::io(path, &e))?;
        tmp.persist(path).map_err(|e| Error::io(path, &e.error))?;
        Ok(())
    }
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// An exclusive `flock` on a directory, released when dropped (the
/// descriptor is closed). `std::fs::File::lock` is `flock(LOCK_EX)` on
/// Unix, so no `unsafe` and no crate is needed. A lock belongs to one open
/// of the directory, so two threads of one process exclude each other as
/// two processes do. Elsewhere a directory cannot be opened as a file and
/// writes are not ordered (muster's process handling is Unix's too).
struct DirLock {
    #[cfg(unix)]
    _dir: std::fs::File,
}

impl DirLock {
    #[cfg(unix)]
    fn take(dir: &Path) -> Result<DirLock, Error> {
        let locked = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                Problem::coded(code::WRITE_FAILED, format!(
                    "cannot lock the directory {} for writing: {e}",
                    dir.display()
                ))
                .in_file(dir)
                .help("muster locks the directory a file is in while it writes the file; make it readable by the user running muster"),
            )
        };
        let handle = std::fs::File::open(dir).map_err(locked)?;
        loop {
            match handle.lock() {
                Ok(()) => return Ok(DirLock { _dir: handle }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(locked(e)),
            }
        }
    }

    #[cfg(not(unix))]
    fn take(_dir: &Path) -> Result<DirLock, Error> {
        Ok(DirLock {})
    }
}

const TMP_SUFFIX: &str = ".tmp";

/// A temp file of ours this old was left by a writer that was killed
/// mid-write (SIGKILL skips every clean-up); no live write takes this long.
const STALE_AFTER: Duration = Duration::from_secs(600);

/// Removes temp files a killed writer left beside the target (`prefix`…`.tmp`,
/// older than [`STALE_AFTER`]). Best effort: what cannot be listed or
/// removed stays, and the write goes on.
fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(prefix) && name.ends_with(TMP_SUFFIX)) {
            continue;
        }
        let stale = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn replaces_the_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_as_readable_as_a_created_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let created = dir.path().join("created");
        std::fs::write(&created, b"x").unwrap();
        let path = dir.path().join("atomic");
        write_atomic(&path, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&created));
    }

    /// Issue 13 item 6: SIGKILL mid-write left temp files for ever.
    #[test]
    fn stale_temp_files_of_a_killed_writer_are_removed_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.lock");
        let stale = dir.path().join(".mcp.lock.AbC123.tmp");
        let fresh = dir.path().join(".mcp.lock.XyZ789.tmp");
        let other = dir.path().join(".other.json.AbC123.tmp");
        for p in [&stale, &fresh, &other] {
            std::fs::write(p, b"partial").unwrap();
        }
        let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(60);
        for p in [&stale, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        write_atomic(&path, b"new").unwrap();
        assert!(!stale.exists(), "a stale temp of this file is removed");
        assert!(fresh.exists(), "a temp that may be a live write is kept");
        assert!(other.exists(), "another file's temp is not ours to remove");
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: the rename must fail.
        let path = dir.path().join("x.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keep"), b"old").unwrap();
        let err = write_atomic(&path, b"new").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Io);
        assert_eq!(err.problems()[0].file.as_deref(), Some(path.as_path()));
        assert_eq!(std::fs::read(path.join("keep")).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    /// Issue 24 item 9: a write replaced a symlinked file with a regular
    /// one, leaving the file it pointed to stale.
    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_written_through_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real/doc.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, b"old").unwrap();
        // Relative, and through a second link.
        let first = dir.path().join("first.json");
        let link = dir.path().join("doc.json");
        std::os::unix::fs::symlink("real/doc.json", &first).unwrap();
        std::os::unix::fs::symlink("first.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        update(&link, |old| {
            assert_eq!(old, Some(&b"new"[..]));
            Ok(Some(b"newer".to_vec()))
        })
        .unwrap();
        for l in [&link, &first] {
            assert!(std::fs::symlink_metadata(l).unwrap().is_symlink());
        }
        assert_eq!(std::fs::read(&real).unwrap(), b"newer");
        // A dangling link: the write creates the file it points to.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made/here.json", &dangling).unwrap();
        write_atomic(&dangling, b"x").unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(
            std::fs::read(dir.path().join("made/here.json")).unwrap(),
            b"x"
        );
        // A loop is refused, not followed for ever.
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = write_atomic(&a, b"x").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Io);
        assert_eq!(err.problems()[0].file.as_deref(), Some(a.as_path()));
    }

    /// Issue 24 item 9: a `0600` document came back `0644`.
    #[cfg(unix)]
    #[test]
    fn an_existing_file_keeps_its_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for bits in [0o600, 0o640, 0o604, 0o666] {
            let path = dir.path().join(format!("doc-{bits:o}"));
            std::fs::write(&path, b"old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(bits)).unwrap();
            write_atomic(&path, b"new").unwrap();
            assert_eq!(mode(&path), bits, "{bits:o}");
            update(&path, |_| Ok(Some(b"newer".to_vec()))).unwrap();
            assert_eq!(mode(&path), bits, "{bits:o}");
            assert_eq!(std::fs::read(&path).unwrap(), b"newer");
        }
        // Through a link, the file's bits.
        let real = dir.path().join("doc-600");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"via link").unwrap();
        assert_eq!(mode(&real), 0o600);
    }

    /// Issue 24 item 5: concurrent read-modify-writes lost updates. Threads
    /// exclude each other as processes do (tests/files.rs runs processes).
    #[test]
    fn concurrent_updates_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines");
        let (threads, each) = (8, 25);
        std::thread::scope(|s| {
            for t in 0..threads {
                let path = &path;
                s.spawn(move || {
                    for i in 0..each {
                        update(path, |old| {
                            let mut bytes = old.unwrap_or_default().to_vec();
                            // Widen the window between read and write.
                            std::thread::yield_now();
                            bytes.extend_from_slice(format!("{t}.{i}\n").as_bytes());
                            Ok(Some(bytes))
                        })
                        .unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), threads * each);
    }

    #[test]
    fn an_update_that_changes_nothing_or_fails_leaves_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        update(&path, |old| {
            assert_eq!(old, None);
            Ok(None)
        })
        .unwrap();
        assert!(!path.exists());
        write_atomic(&path, b"kept").unwrap();
        let err = update(&path, |_| {
            Err(Error::new(ErrorKind::Input, Problem::new("refused")))
        })
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
    }
}
