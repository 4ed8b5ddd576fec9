//! Reading one input file, the same way for every file muster reads:
//! policy TOML, schema files, snapshots, the lock, gates, and the check's
//! plan and turn.
//!
//! This module decides what may be read: a regular file (a FIFO would hang
//! and a device such as `/dev/zero` never ends), at most [`MAX_INPUT_BYTES`]
//! long, holding UTF-8 text. It also decides which paths a policy may name
//! ([`inside`]). It knows nothing of what the text means.

use std::ffi::OsStr;
use std::fmt;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind, Problem, line_of};

/// The most bytes muster reads from one input file: far above any real
/// policy, snapshot or plan (100,000 tools fit in a few tens of MiB), and
/// low enough that a wrong path cannot take all memory.
pub const MAX_INPUT_BYTES: u64 = 128 << 20;

/// How deep muster reads JSON: serde_json's recursion limit. A text of this many nested
/// lists and objects or more is refused by the parser (one less is read), so a hostile
/// document cannot exhaust the stack of any walk over what was read.
pub const JSON_DEPTH_LIMIT: usize = 128;

/// Problems listed for one line-by-line input (a queries file), at most; the
/// rest are counted in one more problem, `more-problems` ([`cap_problems`]).
pub const MAX_LISTED_PROBLEMS: usize = 50;

/// `problems` found in `file` cut to [`MAX_LISTED_PROBLEMS`], the rest
/// counted in one last problem (code `more-problems`), so a file of a
/// million bad lines is answered with a screenful.
pub fn cap_problems(mut problems: Vec<Problem>, file: &Path) -> Vec<Problem> {
    if problems.len() > MAX_LISTED_PROBLEMS {
        let more = problems.len() - MAX_LISTED_PROBLEMS;
        problems.truncate(MAX_LISTED_PROBLEMS);
        problems.push(
            Problem::coded(
                crate::error::code::MORE_PROBLEMS,
                format!("and {more} more problems, not listed"),
            )
            .in_file(file)
            .help(format!(
                "fix the first {MAX_LISTED_PROBLEMS} and run again to see the next"
            )),
        );
    }
    problems
}

/// Why a file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// Occurs when nothing exists at the path.
    Missing,
    /// Occurs when the path names something other than a regular file: a
    /// directory, a FIFO, a socket or a device (the field says which).
    NotAFile(&'static str),
    /// Occurs when the file holds more than the byte limit.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Occurs when the bytes are not UTF-8.
    NotUtf8 {
        /// 0-based byte offset of the first bad byte.
        offset: usize,
        /// 1-based line of that byte.
        line: usize,
    },
    /// Occurs when the operating system refuses the read (permissions, a
    /// dangling or looping link, an I/O error).
    Io(std::io::Error),
}

impl ReadError {
    /// What to change.
    pub fn help(&self) -> &'static str {
        match self {
            Self::Missing => "correct the path, or create the file",
            Self::NotAFile(_) => "point it at a regular file",
            Self::TooLarge { .. } => {
                "this is far larger than any input muster expects; check the path"
            }
            Self::NotUtf8 { .. } => "save the file as UTF-8",
            Self::Io(_) => "make the file readable by the user running muster, or correct the path",
        }
    }

    /// The problem code (see [`crate::problem_code`]).
    pub fn code(&self) -> &'static str {
        use crate::error::code;
        match self {
            Self::Missing => code::FILE_MISSING,
            Self::NotAFile(_) => code::NOT_A_FILE,
            Self::TooLarge { .. } => code::FILE_TOO_LARGE,
            Self::NotUtf8 { .. } => code::NOT_UTF8,
            Self::Io(_) => code::FILE_UNREADABLE,
        }
    }

    /// The 1-based line the problem is at, when it is at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::NotUtf8 { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The error for `path`, read as `what` ("the plan", "snapshot", …): an
    /// [`ErrorKind::Io`] when the operating system refused, else
    /// [`ErrorKind::Input`].
    pub fn into_error(self, path: &Path, what: &str) -> Error {
        let kind = match self {
            Self::Missing | Self::Io(_) => ErrorKind::Io,
            _ => ErrorKind::Input,
        };
        Error::new(kind, self.problem(path, what))
    }

    /// The problem for `path`, read as `what`, with file, line and help.
    pub fn problem(&self, path: &Path, what: &str) -> Problem {
        Problem::coded(self.code(), format!("cannot read {what}: {self}"))
            .in_file(path)
            .at_line(self.line())
            .help(self.help())
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("no such file"),
            Self::NotAFile(what) => write!(f, "it is a {what}, not a regular file"),
            Self::TooLarge { limit } => write!(f, "it is larger than {} MiB", limit >> 20),
            Self::NotUtf8 { offset, .. } => {
                write!(
                    f,
                    "it is not UTF-8 text (first bad byte at offset {offset})"
                )
            }
            Self::Io(err) => write!(f, "{err}"),
        }
    }
}

/// Reads `path` as UTF-8 text, refusing anything but a regular file of at
/// most [`MAX_INPUT_BYTES`]. A leading byte-order mark is dropped.
///
/// # Errors
/// A [`ReadError`] saying why.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    read_text_limited(path, MAX_INPUT_BYTES)
}

pub(crate) fn read_text_limited(path: &Path, limit: u64) -> Result<String, ReadError> {
    utf8_text(read_bytes_limited(path, limit)?)
}

/// `bytes` as text without a leading byte-order mark, or where the first
/// byte that is not UTF-8 is.
fn utf8_text(bytes: Vec<u8>) -> Result<String, ReadError> {
    let text =
        String::from_utf8(bytes).map_err(|err| not_utf8(err.as_bytes(), err.utf8_error()))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// [`read_text`]'s rules for bytes already read (by
/// [`crate::atomic::update`], say): UTF-8, a leading byte-order mark
/// dropped.
///
/// # Errors
/// [`ReadError::NotUtf8`] saying where.
pub(crate) fn text_of(bytes: &[u8]) -> Result<&str, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|err| not_utf8(bytes, err))?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

fn not_utf8(bytes: &[u8], err: std::str::Utf8Error) -> ReadError {
    let offset = err.valid_up_to();
    let valid = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
    ReadError::NotUtf8 {
        offset,
        line: line_of(valid, offset),
    }
}

/// Reads `path` as bytes, under the same rules as [`read_text`].
///
/// # Errors
/// A [`ReadError`] saying why.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_bytes_limited(path, MAX_INPUT_BYTES)
}

fn read_bytes_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let meta = regular_file(path)?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may have grown since: never read more than the limit.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// Reads `reader` (standard input, say) whole as UTF-8 text, at most
/// [`MAX_INPUT_BYTES`], under the same rules as [`read_text`].
///
/// # Errors
/// A [`ReadError`] saying why.
pub fn read_text_from(reader: impl Read) -> Result<String, ReadError> {
    let limit = MAX_INPUT_BYTES;
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    utf8_text(bytes)
}

/// The metadata of `path` when it is a regular file (links followed), else
/// why not. Looks without opening: opening a FIFO blocks until a writer
/// comes.
///
/// # Errors
/// [`ReadError::Missing`] (a dangling link included), [`ReadError::NotAFile`]
/// or [`ReadError::Io`].
pub(crate) fn regular_file(path: &Path) -> Result<std::fs::Metadata, ReadError> {
    let meta = std::fs::metadata(path).map_err(io)?;
    match not_a_file(&meta.file_type()) {
        Some(what) => Err(ReadError::NotAFile(what)),
        None => Ok(meta),
    }
}

fn io(err: std::io::Error) -> ReadError {
    match err.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Io(err),
    }
}

/// Which kind of not-a-regular-file `kind` is, or `None` for a regular file.
fn not_a_file(kind: &std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("FIFO");
        }
        if kind.is_socket() {
            return Some("socket");
        }
        if kind.is_char_device() || kind.is_block_device() {
            return Some("device");
        }
    }
    Some("special file")
}

/// Where `named`, a path written in a policy file in directory `base`
/// (itself under `root`), points, when that stays inside `root`: `None` for
/// an absolute path or one whose `..` parts climb out of `root`. Lexical:
/// [`outside_real`] is the other half of the rule, for links.
pub(crate) fn inside(root: &Path, base: &Path, named: &Path) -> Option<PathBuf> {
    let base = base.strip_prefix(root).ok()?;
    let mut parts: Vec<&OsStr> = Vec::new();
    for part in base.components().chain(named.components()) {
        match part {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(
        parts
            .iter()
            .fold(root.to_path_buf(), |path, p| path.join(p)),
    )
}

/// Most symbolic links [`real_path`] follows (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where `path` really is once every symbolic link on the way is followed,
/// a dangling one included, and for a path that does not exist yet, where
/// it would be created: its nearest existing directory, resolved, with the
/// rest appended. `None` for a loop or a chain past [`MAX_LINKS`] links.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut path = std::path::absolute(path).ok()?;
    for _ in 0..=MAX_LINKS {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return Some(real);
        }
        match std::fs::symlink_metadata(&path) {
            // A dangling link: where it points, relative to its directory.
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&path).ok()?;
                path = path.parent()?.join(to);
            }
            // Nothing there yet, or something that cannot be looked at:
            // where its directory really is.
            _ => {
                let name = path.file_name()?.to_os_string();
                return Some(real_path(path.parent()?)?.join(name));
            }
        }
    }
    None
}

/// The rule for symbolic links in a policy directory: `None` when `path`
/// really is inside `real_root` (the policy directory, its own links
/// followed), else where `path` leads (see [`real_path`]; `path` itself for
/// a loop). A link inside the directory to a file inside it is fine; one
/// that leads out is refused as a `..` out of it is, so that a link a pull
/// request adds cannot make muster read (and offer to a model) any file, or
/// write a snapshot anywhere.
pub(crate) fn outside_real(real_root: &Path, path: &Path) -> Option<PathBuf> {
    match real_path(path) {
        Some(real) if real.starts_with(real_root) => None,
        Some(real) => Some(real),
        None => Some(path.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Result<String, ReadError> {
        read_text(path)
    }

    #[test]
    fn the_depth_limit_is_serde_jsons() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        assert!(serde_json::from_str::<serde_json::Value>(&nested(JSON_DEPTH_LIMIT - 1)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nested(JSON_DEPTH_LIMIT)).is_err());
    }

    #[test]
    fn a_regular_utf8_file_is_read_without_its_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        std::fs::write(&path, "\u{feff}x = 1\n").unwrap();
        assert_eq!(read(&path).unwrap(), "x = 1\n");
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_before_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read(dir.path()),
            Err(ReadError::NotAFile("directory"))
        ));
        assert!(matches!(
            read(Path::new("/dev/zero")),
            Err(ReadError::NotAFile("device"))
        ));
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let err = read(&fifo).unwrap_err();
            assert!(matches!(err, ReadError::NotAFile("FIFO")));
            let err = err.into_error(&fifo, "the plan");
            assert_eq!(err.kind(), ErrorKind::Input);
            assert_eq!(err.problems()[0].file.as_deref(), Some(fifo.as_path()));
            assert!(err.problems()[0].help.is_some());
        }
        assert!(matches!(
            read(&dir.path().join("none")),
            Err(ReadError::Missing)
        ));
        #[cfg(unix)]
        {
            let link = dir.path().join("dangling");
            std::os::unix::fs::symlink(dir.path().join("gone"), &link).unwrap();
            assert!(matches!(read(&link), Err(ReadError::Missing)));
        }
    }

    #[test]
    fn a_file_past_the_limit_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        // Sparse: costs no disk.
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_INPUT_BYTES + 1).unwrap();
        assert!(matches!(read(&path), Err(ReadError::TooLarge { .. })));
        std::fs::write(&path, "12345").unwrap();
        assert!(matches!(
            read_text_limited(&path, 4),
            Err(ReadError::TooLarge { limit: 4 })
        ));
        assert_eq!(read_text_limited(&path, 5).unwrap(), "12345");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused_with_offset_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, b"a = 1\nb = \"\xff\"\n").unwrap();
        let err = read(&path).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::NotUtf8 {
                    offset: 11,
                    line: 2
                }
            ),
            "{err:?}"
        );
        let problem = err.problem(&path, "policy file");
        assert_eq!(problem.line, Some(2));
    }

    /// Issue 24 item 3: the inside rule was lexical only.
    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_directory_leads_outside_and_one_within_does_not() {
        use std::os::unix::fs::symlink;
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("policies");
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(outer.path().join("secret"), "x").unwrap();
        std::fs::write(root.join("tools/s.json"), "{}").unwrap();
        let real_root = std::fs::canonicalize(&root).unwrap();
        let secret = std::fs::canonicalize(outer.path().join("secret")).unwrap();
        let out = |p: &str| outside_real(&real_root, &root.join(p));
        // Links to a file, to a directory, dangling, chained and looping.
        symlink(outer.path().join("secret"), root.join("tools/file.json")).unwrap();
        symlink(outer.path(), root.join("tools/dir")).unwrap();
        symlink("../../gone/x.json", root.join("tools/dangling.json")).unwrap();
        symlink("file.json", root.join("tools/chain.json")).unwrap();
        symlink("loop.json", root.join("tools/loop.json")).unwrap();
        assert_eq!(out("tools/file.json"), Some(secret.clone()));
        assert_eq!(out("tools/chain.json"), Some(secret.clone()));
        assert_eq!(out("tools/dir/secret"), Some(secret));
        assert_eq!(
            out("tools/dir/not-yet/x.json"),
            Some(
                std::fs::canonicalize(outer.path())
                    .unwrap()
                    .join("not-yet/x.json")
            )
        );
        assert!(out("tools/dangling.json").is_some());
        assert!(out("tools/loop.json").is_some());
        // Inside: real files, links within, and paths not created yet.
        symlink("s.json", root.join("tools/within.json")).unwrap();
        symlink(root.join("tools"), root.join("alias")).unwrap();
        for p in [
            "tools/s.json",
            "tools/within.json",
            "alias/s.json",
            "tools/new.json",
            "new/a/b.json",
        ] {
            assert_eq!(out(p), None, "{p}");
        }
    }

    #[test]
    fn a_named_path_must_stay_inside_the_policy_directory() {
        let root = Path::new("policies");
        let tools = root.join("tools");
        let at = |named: &str| inside(root, &tools, Path::new(named));
        assert_eq!(at("schemas/a.json"), Some(tools.join("schemas/a.json")));
        assert_eq!(at("./a.json"), Some(tools.join("a.json")));
        assert_eq!(at("../shared/a.json"), Some(root.join("shared/a.json")));
        assert_eq!(at("../../a.json"), None);
        assert_eq!(at("schemas/../../../a.json"), None);
        assert_eq!(at("/etc/passwd"), None);
        let dot = Path::new(".");
        assert_eq!(
            inside(dot, &dot.join("tools"), Path::new("s.json")),
            Some(dot.join("tools/s.json"))
        );
    }
}
