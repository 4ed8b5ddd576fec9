//! The lock of MCP tool definitions: a reviewed hash of each discovered
//! tool's definition (name, description, input schema, and what a model or
//! host acts on beside them: title, annotations, output schema, `_meta`),
//! so a server that changes a tool after it was approved (a known MCP
//! attack rewrites a description; another flips a tool from read-only to
//! destructive) is noticed, and said what kind of change it is
//! ([`change`]).
//!
//! This module decides what a definition is (see [`definition_hash`]), how
//! the lock file reads and writes, and how a listing compares with it. It
//! does not decide what happens to a tool that differs: the planner reports
//! it as `lock-mismatch` and a policy setting chooses cut or warn. It never
//! prints; `update` returns what it accepted for the binary to show.
//!
//! The file is TOML, one table per server, so each entry's path is
//! literally `mcp.<server>.<tool>`:
//!
//! ```toml
//! # muster lock of MCP tool definitions. Review changes, then run `muster lock`.
//! version = 3
//!
//! [mcp.memory.read_graph]
//! hash = "sha256:…"
//! input-schema = "sha256:…"
//! accepts = '{"type":"object"}'
//! reviewed = '{"description":"…","inputSchema":{"type":"object"},"name":"read_graph"}'
//! hints = { readOnlyHint = true }
//! ```
//!
//! `reviewed` keeps the definition as hashed, so a later change is shown
//! against what was reviewed (the description word by word, the paths that
//! differ): a version 2 lock, which kept only hashes, is still read, its
//! changes named by kind alone until `muster lock` records them anew. A
//! version 1 lock (`read_graph = "sha256:…"`, a hash of the name,
//! description and input schema alone) is still read: each of its entries
//! is a change of kind `needs-relock` until `muster lock` records it anew.

use crate::error::code;
use std::collections::BTreeMap;
use std::path::Path;

pub mod change;

use serde::{Deserialize, Serialize};
use toml::Spanned;

mod drift;

pub use crate::contract::{LockChange, LockFinding, LockStatus};
use crate::error::{Error, ErrorKind, LineIndex, Problem, line_of};
use crate::input::{ReadError, read_text};
use crate::snapshot::ListedTool;
use change::Record;
pub use drift::drift;

const HEADER: &str =
    "# muster lock of MCP tool definitions. Review changes, then run `muster lock`.\n";

/// Canonical JSON (keys sorted, no whitespace): the hash must not depend on
/// how a server or serde_json happens to order keys.
pub use crate::canon::canonical as canonical_json;

/// `sha256:<hex>` of the canonical JSON of the tool's definition: the
/// tool object with only `name`, `description` (left out when the server
/// gives none), `inputSchema` and, where the server gives them, the
/// members in [`change::HASHED_MEMBERS`] (`title`, `annotations`,
/// `outputSchema`, `_meta`). Other members (`icons`) are not hashed.
pub fn definition_hash(tool: &ListedTool) -> String {
    let mut out = crate::canon::HashSink::new();
    write_definition(tool, &mut out);
    crate::canon::labelled_hex(&out.finish())
}

/// The text [`definition_hash`] hashes: what the lock keeps as `reviewed`.
pub fn definition_text(tool: &ListedTool) -> String {
    let mut out = String::new();
    write_definition(tool, &mut out);
    out
}

fn write_definition(tool: &ListedTool, out: &mut impl crate::canon::Sink) {
    use crate::canon::{write_str, write_value};
    let extra = |key: &str| tool.raw.as_object().and_then(|o| o.get(key));
    out.put("{");
    // Keys in sorted order (`_` sorts before letters), written as they are
    // hashed: the schema is not copied into a new object first.
    if let Some(meta) = extra("_meta") {
        out.put("\"_meta\":");
        write_value(meta, out);
        out.put(",");
    }
    if let Some(annotations) = extra("annotations") {
        out.put("\"annotations\":");
        write_value(annotations, out);
        out.put(",");
    }
    if let Some(d) = &tool.description {
        out.put("\"description\":");
        write_str(d, out);
        out.put(",");
    }
    out.put("\"inputSchema\":");
    out.put(tool.input_schema.canonical());
    out.put(",\"name\":");
    write_str(&tool.name, out);
    if let Some(output) = extra("outputSchema") {
        out.put(",\"outputSchema\":");
        write_value(output, out);
    }
    if let Some(title) = extra("title") {
        out.put(",\"title\":");
        write_value(title, out);
    }
    out.put("}");
}

/// The hash a version 1 lock recorded: [`definition_hash`] over `name`,
/// `description` and `inputSchema` only.
fn definition_hash_v1(tool: &ListedTool) -> String {
    use crate::canon::{HashSink, Sink as _, write_str};
    let mut out = HashSink::new();
    out.put("{");
    if let Some(d) = &tool.description {
        out.put("\"description\":");
        write_str(d, &mut out);
        out.put(",");
    }
    out.put("\"inputSchema\":");
    out.put(tool.input_schema.canonical());
    out.put(",\"name\":");
    write_str(&tool.name, &mut out);
    out.put("}");
    crate::canon::labelled_hex(&out.finish())
}

/// One tool's entry: a version 1 hash, or the record of version 2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum Entry {
    /// `tool = "sha256:…"`: from a version 1 lock, not yet locked again.
    Hash(String),
    /// `[mcp.<server>.<tool>]` with the parts of [`Record`].
    Record(Record),
}

impl Entry {
    fn hash(&self) -> &str {
        match self {
            Entry::Hash(h) => h,
            Entry::Record(r) => &r.hash,
        }
    }
}

/// How a listed tool differs from its lock entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The locked hash; `None` when the lock has no entry for the tool.
    pub locked: Option<String>,
    /// The hash of the definition listed now.
    pub current: String,
    /// What kind of change it is; empty for a tool the lock lacks.
    pub changes: Vec<LockChange>,
}

/// The file as written.
#[derive(Debug, Serialize)]
struct LockFile<'a> {
    version: u32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    mcp: &'a BTreeMap<String, BTreeMap<String, Entry>>,
}

/// The file as read, with spans so each problem names its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLockFile {
    version: Spanned<u32>,
    #[serde(default)]
    mcp: BTreeMap<String, BTreeMap<String, Spanned<Entry>>>,
}

/// The lock version this muster writes.
const VERSION: u32 = 3;

/// Reviewed definition hashes, per server and tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    servers: BTreeMap<String, BTreeMap<String, Entry>>,
}

impl Lock {
    /// Reads a lock file.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when it cannot be read, [`ErrorKind::Input`] when it
    /// is not a regular UTF-8 file within [`crate::input::MAX_INPUT_BYTES`];
    /// [`ErrorKind::Policy`] with
    /// file and line when it is not valid TOML, has an unknown key or
    /// version, or a hash that is not `sha256:` and 64 hex digits.
    pub fn read(path: &Path) -> Result<Lock, Error> {
        let text = read_text(path).map_err(|e| e.into_error(path, "the lock file"))?;
        Self::parse(&text, path)
    }

    /// Like [`Lock::read`], but a missing file is an empty lock.
    ///
    /// # Errors
    /// As [`Lock::read`], except for a missing file.
    pub fn read_or_empty(path: &Path) -> Result<Lock, Error> {
        match read_text(path) {
            Ok(text) => Self::parse(&text, path),
            Err(ReadError::Missing) => Ok(Lock::default()),
            Err(e) => Err(e.into_error(path, "the lock file")),
        }
    }

    /// Parses lock text; `path` is only used in problems.
    ///
    /// # Errors
    /// As [`Lock::read`].
    pub fn parse(text: &str, path: &Path) -> Result<Lock, Error> {
        let file: RawLockFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            Error::new(
                ErrorKind::Policy,
                Problem::coded(
                    code::INVALID_TOML,
                    format!("lock file is malformed: {}", e.message()),
                )
                .in_file(path)
                .at_line(line)
                .help("restore it from version control, or delete it and run `muster lock`"),
            )
        })?;
        let lines = LineIndex::new(text);
        let mut problems = Vec::new();
        let version = *file.version.get_ref();
        if !(1..=VERSION).contains(&version) {
            problems.push(
                Problem::coded(
                    code::UNSUPPORTED_VERSION,
                    format!("lock version {version} is not supported"),
                )
                .in_file(path)
                .at_line(Some(lines.line(file.version.span().start)))
                .help("this muster reads versions 1 to 3 and writes `version = 3`"),
            );
        }
        let labelled = |h: &str| {
            let hex = h.strip_prefix("sha256:").unwrap_or("");
            hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
        };
        for (server, tools) in &file.mcp {
            for (tool, entry) in tools {
                let line = Some(lines.line(entry.span().start));
                let problem = match entry.get_ref() {
                    Entry::Hash(h) if !labelled(h) => {
                        Some("is not `sha256:` and 64 hex digits".to_string())
                    }
                    Entry::Record(_) if version == 1 => {
                        Some("is a table, which a version 1 lock does not hold".to_string())
                    }
                    Entry::Record(r) => [
                        Some(&r.hash),
                        r.description.as_ref(),
                        Some(&r.input_schema),
                        r.output_schema.as_ref(),
                        r.cosmetic.as_ref(),
                    ]
                    .into_iter()
                    .flatten()
                    .any(|h| !labelled(h))
                    .then(|| "has a hash that is not `sha256:` and 64 hex digits".to_string())
                    .or_else(|| {
                        // What is shown as reviewed must be what was hashed.
                        let kept = r.reviewed.as_ref()?;
                        (crate::canon::sha256_hex(kept.as_bytes()) != r.hash).then(|| {
                            "keeps a reviewed definition that is not the one its `hash` names"
                                .to_string()
                        })
                    }),
                    Entry::Hash(_) => None,
                };
                if let Some(problem) = problem {
                    problems.push(
                        Problem::coded(
                            code::INVALID_LOCK,
                            format!("lock entry mcp.{server}.{tool} {problem}"),
                        )
                        .in_file(path)
                        .at_line(line)
                        .help("run `muster lock` to record the tool again after review"),
                    );
                }
            }
        }
        if !problems.is_empty() {
            return Err(Error::many(ErrorKind::Policy, problems));
        }
        let servers = file
            .mcp
            .into_iter()
            .map(|(server, tools)| {
                let tools = tools
                    .into_iter()
                    .map(|(tool, entry)| (tool, entry.into_inner()))
                    .collect();
                (server, tools)
            })
            .collect();
        Ok(Lock { servers })
    }

    /// The locked hash of `server`'s `tool`.
    pub fn get(&self, server: &str, tool: &str) -> Option<&str> {
        self.servers.get(server)?.get(tool).map(Entry::hash)
    }

    /// How `tool` as listed by `server` differs from its entry, or `None`
    /// when it is the definition locked. An entry from a version 1 lock
    /// always differs (`needs-relock`): what it hashed leaves out the
    /// annotations, so it is never taken as a review of them.
    pub fn check(&self, server: &str, tool: &ListedTool) -> Option<Mismatch> {
        let entry = self.servers.get(server).and_then(|t| t.get(&tool.name));
        let now = Record::of(tool);
        let changes = match entry {
            None => Vec::new(),
            Some(Entry::Record(locked)) if locked.hash == now.hash => return None,
            Some(Entry::Record(locked)) => change::changes(locked, &now),
            Some(Entry::Hash(h)) if *h == definition_hash_v1(tool) => {
                vec![LockChange::NeedsRelock]
            }
            Some(Entry::Hash(_)) => vec![LockChange::NeedsRelock, LockChange::Unclassified],
        };
        Some(Mismatch {
            locked: entry.map(|e| e.hash().to_string()),
            current: now.hash,
            changes,
        })
    }

    /// What a reviewer is shown of `tool` as `server` lists it now against
    /// the definition its entry keeps: `None` when the entry keeps none (a
    /// lock older than version 3, or no entry). Compared as the lock keeps
    /// a definition, only what is hashed, so a member the lock never
    /// reviewed (`icons`, `execution`) is not shown as changed. The one
    /// home of this comparison: `lock`, `lock --check` and the gateway's
    /// live drift show the same thing.
    pub fn shown(&self, server: &str, tool: &ListedTool) -> Option<crate::contract::ChangeDetails> {
        let kept = match self.servers.get(server)?.get(&tool.name)? {
            Entry::Record(r) => r.reviewed_tool()?,
            Entry::Hash(_) => return None,
        };
        let now = change::kept_tool(&definition_text(tool))?;
        Some(crate::snapshot::review::details(&kept, &now))
    }

    /// Every tool of `server` (as listed now) that does not match the lock,
    /// and every locked tool of `server` no longer listed; sorted by status,
    /// then tool. A new tool whose definition is, but for its name, one the
    /// lock holds under a name no longer listed is one `renamed` finding
    /// instead of `unlocked` and `gone`. An empty result means the listing
    /// is exactly what was reviewed.
    pub fn compare(&self, server: &str, tools: &[ListedTool]) -> Vec<LockFinding> {
        let empty = BTreeMap::new();
        let locked = self.servers.get(server).unwrap_or(&empty);
        let mut findings = Vec::new();
        let mut listed = std::collections::BTreeSet::new();
        let mut new_records = Vec::new();
        for t in tools {
            listed.insert(t.name.as_str());
            let Some(m) = self.check(server, t) else {
                continue;
            };
            let (status, details) = if m.locked.is_some() {
                (LockStatus::Changed, self.shown(server, t))
            } else {
                new_records.push((t.name.as_str(), Record::of(t)));
                let details = crate::snapshot::review::introduced(t);
                (LockStatus::Unlocked, Some(details))
            };
            findings.push(LockFinding {
                status,
                server: server.to_string(),
                tool: t.name.clone(),
                locked: m.locked,
                current: Some(m.current),
                changes: m.changes,
                previous: None,
                details: details.filter(|d| !d.is_empty()),
            });
        }
        // Gone entries, each paired with the first new tool (by name) that
        // is the same definition, if any.
        let mut renamed: BTreeMap<&str, &str> = BTreeMap::new();
        for (tool, entry) in locked {
            if listed.contains(tool.as_str()) {
                continue;
            }
            let mut twin = None;
            if let Entry::Record(old) = entry {
                let mut candidates: Vec<&(&str, Record)> = new_records
                    .iter()
                    .filter(|(name, r)| !renamed.contains_key(name) && old.same_but_name(r))
                    .collect();
                candidates.sort_by_key(|(name, _)| *name);
                twin = candidates.first().map(|(name, _)| *name);
            }
            match twin {
                Some(name) => {
                    renamed.insert(name, tool);
                }
                None => findings.push(LockFinding {
                    status: LockStatus::Gone,
                    server: server.to_string(),
                    tool: tool.clone(),
                    locked: Some(entry.hash().to_string()),
                    current: None,
                    changes: Vec::new(),
                    previous: None,
                    details: None,
                }),
            }
        }
        for f in &mut findings {
            if let Some(previous) = renamed.get(f.tool.as_str()) {
                f.status = LockStatus::Renamed;
                f.locked = locked.get(*previous).map(|e| e.hash().to_string());
                f.changes = vec![LockChange::Renamed];
                f.previous = Some(previous.to_string());
                // The same definition as reviewed, but for its name.
                f.details = None;
            }
        }
        findings.sort();
        findings
    }

    /// A lock whose entries for `server` are exactly `tools` as listed now,
    /// and what that accepts (the findings [`Lock::compare`] gave). Other
    /// servers' entries are kept.
    pub fn update(&self, server: &str, tools: &[ListedTool]) -> (Lock, Vec<LockFinding>) {
        let accepted = self.compare(server, tools);
        let mut next = self.clone();
        let entries: BTreeMap<String, Entry> = tools
            .iter()
            .map(|t| (t.name.clone(), Entry::Record(Record::reviewed(t))))
            .collect();
        if entries.is_empty() {
            next.servers.remove(server);
        } else {
            next.servers.insert(server.to_string(), entries);
        }
        (next, accepted)
    }

    /// The file text: header, version, one sorted table per server.
    ///
    /// Written by the `toml` serializer, so any name a server reports
    /// (quotes, backslashes, control characters, DEL) is escaped exactly
    /// as [`Lock::parse`] reads it back.
    pub fn to_toml(&self) -> String {
        let file = LockFile {
            version: VERSION,
            mcp: &self.servers,
        };
        let body = toml::to_string(&file).expect("maps of strings and records serialize as TOML");
        format!("{HEADER}{body}")
    }

    /// The read-modify-write of the lock file at `path`: reads it (empty
    /// when missing), hands it to `change`, and writes the lock `change`
    /// returns, all under [`crate::atomic::update`]'s lock, so concurrent
    /// `muster lock`s of different servers each keep the others' entries.
    /// Returns what `change` returned beside the lock.
    ///
    /// # Errors
    /// [`Lock::read`]'s errors for the old file, [`ErrorKind::Io`] when the
    /// new one cannot be written, and `change`'s; the old file is then kept.
    pub fn update_file<T>(
        path: &Path,
        change: impl FnOnce(Lock) -> Result<(Lock, T), Error>,
    ) -> Result<T, Error> {
        let mut out = None;
        crate::atomic::update(path, |old| {
            let lock = match old {
                None => Lock::default(),
                Some(bytes) => {
                    let text = crate::input::text_of(bytes)
                        .map_err(|e| e.into_error(path, "the lock file"))?;
                    Self::parse(text, path)?
                }
            };
            let (next, value) = change(lock)?;
            out = Some(value);
            Ok(Some(next.to_toml().into_bytes()))
        })?;
        Ok(out.expect("a successful update ran `change`"))
    }

    /// Writes the lock atomically.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when it cannot be written; the old file is then kept.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        crate::atomic::write_atomic(path, self.to_toml().as_bytes())
    }
}

#[cfg(test)]
mod tests;
