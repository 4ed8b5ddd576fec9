//! `muster cache stats` and `muster cache clear`: what the cache directory
//! holds (the token-count and vector tables, `muster::cache_file`), and
//! removing it. Reads headers only; decides nothing about what a record
//! means.

use crate::args::{CacheCommand, TextOrJson};
use crate::{cache_dir, emit};
use muster::cache_file::{self, Kind};
use muster::{Error, ErrorKind, Problem, problem_code as code};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One table's files, as `--format json` prints them.
#[derive(Debug, Serialize)]
struct Table {
    /// `token-counts` or `vectors`.
    name: &'static str,
    file: PathBuf,
    base_records: u64,
    journal_records: u64,
    bytes: u64,
    max_entries: usize,
}

/// `muster cache stats --format json`.
#[derive(Debug, Serialize)]
struct CacheStats {
    dir: PathBuf,
    tables: Vec<Table>,
}

fn tables(dir: &Path) -> Vec<(&'static str, PathBuf, Kind)> {
    let mut out = vec![(
        "token-counts",
        dir.join(muster::tokens::cache::FILE_NAME),
        muster::tokens::cache::KIND,
    )];
    #[cfg(feature = "encoder")]
    out.push((
        "vectors",
        dir.join(muster::search::vectors::FILE_NAME),
        muster::search::vectors::KIND,
    ));
    out
}

pub(crate) fn run(command: CacheCommand) -> Result<u8, Error> {
    let Some(dir) = cache_dir() else {
        return Err(Error::new(
            ErrorKind::Usage,
            Problem::coded(
                code::USAGE,
                "no cache directory: set MUSTER_CACHE_DIR, XDG_CACHE_HOME or HOME".to_string(),
            ),
        ));
    };
    match command {
        CacheCommand::Stats { format } => {
            let stats = CacheStats {
                tables: tables(&dir)
                    .into_iter()
                    .map(|(name, file, kind)| {
                        let s = cache_file::stats(&kind, &file);
                        Table {
                            name,
                            file,
                            base_records: s.base_records,
                            journal_records: s.journal_records,
                            bytes: s.bytes,
                            max_entries: kind.max_entries,
                        }
                    })
                    .collect(),
                dir,
            };
            emit(&match format {
                TextOrJson::Json => muster::answer::json_text(&stats),
                TextOrJson::Text => text(&stats),
            })?;
        }
        CacheCommand::Clear => {
            for (_, file, _) in tables(&dir) {
                cache_file::clear(&file)?;
            }
            emit(&format!("cleared {}\n", dir.display()))?;
        }
    }
    Ok(0)
}

fn text(stats: &CacheStats) -> String {
    let mut out = format!("cache directory {}\n", stats.dir.display());
    for t in &stats.tables {
        let _ = writeln!(
            out,
            "  {:<13} {:>9} records (at most {}), {} waiting in the journal, {} bytes",
            t.name, t.base_records, t.max_entries, t.journal_records, t.bytes
        );
    }
    out
}
