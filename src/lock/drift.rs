//! Lock drift: how the snapshots' listings stand against the lock, without
//! writing anything (`muster lock --check`), each finding placed on the
//! line a reviewer fixes: the lock entry of a changed or gone tool, the
//! server block of a tool the lock lacks.

use super::{Lock, RawLockFile};
use crate::contract::{DriftEntry, LOCK_CHECK_FORMAT_VERSION, LockCheck, LockStatus};
use crate::error::{Error, ErrorKind, LineIndex, Problem};
use crate::input::{ReadError, read_text};
use crate::policy::Inputs;
use std::collections::BTreeMap;

/// What `muster lock` would accept for the servers `names` (every server
/// when empty), each finding with its file and line.
///
/// # Errors
/// [`ErrorKind::Usage`] for a name no server block has; the lock file's own
/// errors ([`Lock::read`]).
pub fn drift(inputs: &Inputs, names: &[String]) -> Result<LockCheck, Error> {
    let policy = &inputs.policy;
    let unknown: Vec<Problem> = names
        .iter()
        .filter(|n| !policy.servers.iter().any(|s| &s.name == *n))
        .map(|n| {
            Problem::new(format!("no MCP server named {n:?} is declared"))
                .help("declare it in mcp/*.toml, or pick one of the declared servers")
        })
        .collect();
    if !unknown.is_empty() {
        return Err(Error::many(ErrorKind::Usage, unknown));
    }
    let path = &policy.lock.file;
    let (lock, lines) = match read_text(path) {
        Ok(text) => (Lock::parse(&text, path)?, entry_lines(&text)),
        Err(ReadError::Missing) => (Lock::default(), BTreeMap::new()),
        Err(e) => return Err(e.into_error(path, "the lock file")),
    };
    let lock_file = path.display().to_string();
    let mut drift = Vec::new();
    for server in policy
        .servers
        .iter()
        .filter(|s| names.is_empty() || names.contains(&s.name))
    {
        for finding in lock.compare(&server.name, inputs.listings.of(&server.name)) {
            let (file, line) = match finding.status {
                LockStatus::Unlocked => {
                    (server.origin.file.display().to_string(), server.origin.line)
                }
                LockStatus::Changed | LockStatus::Gone | LockStatus::Renamed => (
                    lock_file.clone(),
                    lines
                        .get(&(finding.server.clone(), finding.tool.clone()))
                        .copied(),
                ),
            };
            drift.push(DriftEntry {
                finding,
                file,
                line,
            });
        }
    }
    Ok(LockCheck {
        format_version: LOCK_CHECK_FORMAT_VERSION,
        lock_file,
        drift,
    })
}

/// The 1-based line of each `(server, tool)` entry of lock text that
/// parses; empty when it does not.
fn entry_lines(text: &str) -> BTreeMap<(String, String), usize> {
    let Ok(file) = toml::from_str::<RawLockFile>(text) else {
        return BTreeMap::new();
    };
    let index = LineIndex::new(text);
    file.mcp
        .iter()
        .flat_map(|(server, tools)| {
            tools.iter().map(|(tool, hash)| {
                (
                    (server.clone(), tool.clone()),
                    index.line(hash.span().start),
                )
            })
        })
        .collect()
}
