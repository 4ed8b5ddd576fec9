//! Writing a file so a reader sees either the old bytes or the new ones,
//! never a half-written file. Decides nothing about content.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::error::Error;

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, creating the directory if needed. Every file muster writes
/// (snapshots, the lock) goes through here.
///
/// The temp file sits beside the target because a rename is only atomic
/// within one filesystem; `tempfile` removes it on every error path.
///
/// # Errors
/// An [`crate::ErrorKind::Io`] error naming `path` when the directory cannot be
/// created or the file cannot be written or renamed; the old file is then
/// left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.");
    remove_stale(dir, &prefix);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TMP_SUFFIX);
    // What `File::create` would give (0666 less the umask), not tempfile's
    // owner-only default: locks and snapshots are shared through git.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, &e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(path, &e))?;
    tmp.persist(path).map_err(|e| Error::io(path, &e.error))?;
    Ok(())
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
}
