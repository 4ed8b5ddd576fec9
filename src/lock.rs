//! The lock of MCP tool definitions: a reviewed hash of each discovered
//! tool's name, description and input schema, so a server that changes a
//! tool after it was approved (a known MCP attack rewrites a description)
//! is noticed.
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
//! version = 1
//!
//! [mcp.memory]
//! read_graph = "sha256:…"
//! ```

use crate::error::code;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use crate::contract::{LockFinding, LockStatus};
use crate::error::{Error, ErrorKind, LineIndex, Problem, line_of};
use crate::input::{ReadError, read_text};
use crate::snapshot::ListedTool;

const HEADER: &str =
    "# muster lock of MCP tool definitions. Review changes, then run `muster lock`.\n";

/// Canonical JSON (keys sorted, no whitespace): the hash must not depend on
/// how a server or serde_json happens to order keys.
pub use crate::canon::canonical as canonical_json;

/// `sha256:<hex>` of the canonical JSON of the tool's definition:
/// `{"description": …, "inputSchema": …, "name": …}`, description left out
/// when the server gives none. Other fields (title, annotations, icons) are
/// not part of the definition: they are hints the model does not act on.
pub fn definition_hash(tool: &ListedTool) -> String {
    // Keys in sorted order, written as they are hashed: the schema is not
    // copied into a new object first.
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

/// The file as written.
#[derive(Debug, Serialize)]
struct LockFile<'a> {
    version: u32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    mcp: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// The file as read, with spans so each problem names its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLockFile {
    version: Spanned<u32>,
    #[serde(default)]
    mcp: BTreeMap<String, BTreeMap<String, Spanned<String>>>,
}

/// Reviewed definition hashes, per server and tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    servers: BTreeMap<String, BTreeMap<String, String>>,
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
        if *file.version.get_ref() != 1 {
            problems.push(
                Problem::coded(
                    code::UNSUPPORTED_VERSION,
                    format!("lock version {} is not supported", file.version.get_ref()),
                )
                .in_file(path)
                .at_line(Some(lines.line(file.version.span().start)))
                .help("this muster writes `version = 1`"),
            );
        }
        for (server, tools) in &file.mcp {
            for (tool, hash) in tools {
                let hex = hash.get_ref().strip_prefix("sha256:").unwrap_or("");
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    problems.push(
                        Problem::coded(
                            code::INVALID_LOCK,
                            format!(
                                "lock entry mcp.{server}.{tool} is not `sha256:` and 64 hex digits"
                            ),
                        )
                        .in_file(path)
                        .at_line(Some(lines.line(hash.span().start)))
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
                    .map(|(tool, hash)| (tool, hash.into_inner()))
                    .collect();
                (server, tools)
            })
            .collect();
        Ok(Lock { servers })
    }

    /// The locked hash of `server`'s `tool`.
    pub fn get(&self, server: &str, tool: &str) -> Option<&str> {
        self.servers.get(server)?.get(tool).map(String::as_str)
    }

    /// Every tool of `server` (as listed now) that does not match the lock,
    /// and every locked tool of `server` no longer listed; sorted by status,
    /// then tool. An empty result means the listing is exactly what was
    /// reviewed.
    pub fn compare(&self, server: &str, tools: &[ListedTool]) -> Vec<LockFinding> {
        let empty = BTreeMap::new();
        let locked = self.servers.get(server).unwrap_or(&empty);
        let mut findings = Vec::new();
        let mut listed = std::collections::BTreeSet::new();
        for t in tools {
            listed.insert(t.name.as_str());
            let current = definition_hash(t);
            let status = match locked.get(&t.name) {
                None => LockStatus::Unlocked,
                Some(h) if *h != current => LockStatus::Changed,
                Some(_) => continue,
            };
            findings.push(LockFinding {
                status,
                server: server.to_string(),
                tool: t.name.clone(),
                locked: locked.get(&t.name).cloned(),
                current: Some(current),
            });
        }
        for (tool, hash) in locked {
            if !listed.contains(tool.as_str()) {
                findings.push(LockFinding {
                    status: LockStatus::Gone,
                    server: server.to_string(),
                    tool: tool.clone(),
                    locked: Some(hash.clone()),
                    current: None,
                });
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
        let entries: BTreeMap<String, String> = tools
            .iter()
            .map(|t| (t.name.clone(), definition_hash(t)))
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
            version: 1,
            mcp: &self.servers,
        };
        let body = toml::to_string(&file).expect("a map of strings serializes as TOML");
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
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn tool(name: &str, desc: &str, schema: Value) -> ListedTool {
        ListedTool {
            name: name.into(),
            description: Some(desc.into()),
            input_schema: crate::schema::Schema::new(&schema),
            raw: json!({"name": name, "description": desc, "inputSchema": null}),
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let v: Value =
            serde_json::from_str(r#"{"b": [ {"z": 1, "a": "x\n"} ], "a": null}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":null,"b":[{"a":"x\n","z":1}]}"#);
    }

    #[test]
    fn hash_covers_name_description_and_schema_but_not_hints() {
        let a = tool("t", "d", json!({"type": "object"}));
        let h = definition_hash(&a);
        assert!(h.starts_with("sha256:") && h.len() == 7 + 64);
        assert_ne!(
            h,
            definition_hash(&tool("u", "d", json!({"type": "object"})))
        );
        assert_ne!(
            h,
            definition_hash(&tool("t", "e", json!({"type": "object"})))
        );
        assert_ne!(
            h,
            definition_hash(&tool("t", "d", json!({"type": "string"})))
        );
        let mut hinted = a.clone();
        hinted.raw["title"] = json!("A title");
        assert_eq!(h, definition_hash(&hinted));
    }

    #[test]
    fn hash_is_the_digest_of_the_canonical_definition_object() {
        let schema =
            json!({"type": "object", "properties": {"b\"": {"enum": [1.5, "x\n"]}, "a": {}}});
        let mut bare = tool("t\u{1}", "", schema.clone());
        bare.description = None;
        for (t, def) in [
            (
                tool("t", "Does \"things\"\t.", schema.clone()),
                json!({"name": "t", "description": "Does \"things\"\t.", "inputSchema": schema}),
            ),
            (bare, json!({"name": "t\u{1}", "inputSchema": schema})),
        ] {
            assert_eq!(
                definition_hash(&t),
                crate::canon::sha256_hex(canonical_json(&def).as_bytes())
            );
        }
    }

    #[test]
    fn compare_finds_unlocked_changed_and_gone() {
        let (lock, accepted) = Lock::default().update(
            "docs",
            &[
                tool("keep", "k", json!({})),
                tool("edit", "before", json!({})),
                tool("old", "o", json!({})),
            ],
        );
        assert_eq!(accepted.len(), 3);
        assert!(accepted.iter().all(|f| f.status == LockStatus::Unlocked));
        let now = [
            tool("keep", "k", json!({})),
            tool("edit", "after", json!({})),
            tool("new", "n", json!({})),
        ];
        let findings = lock.compare("docs", &now);
        let found: Vec<(LockStatus, &str)> = findings
            .iter()
            .map(|f| (f.status, f.tool.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                (LockStatus::Unlocked, "new"),
                (LockStatus::Changed, "edit"),
                (LockStatus::Gone, "old")
            ]
        );
        assert!(lock.compare("other", &[]).is_empty());
        let (after, _) = lock.update("docs", &now);
        assert!(after.compare("docs", &now).is_empty());
    }

    #[test]
    fn file_round_trips_sorted_and_deterministic() {
        let (lock, _) = Lock::default().update(
            "z.srv",
            &[tool("b", "", json!({})), tool("a b", "", json!({}))],
        );
        let (lock, _) = lock.update("a", &[tool("x", "", json!({}))]);
        let text = lock.to_toml();
        assert!(
            text.find("[mcp.a]").unwrap() < text.find("[mcp.\"z.srv\"]").unwrap(),
            "{text}"
        );
        assert!(
            text.find("\"a b\" =").unwrap() < text.find("\nb =").unwrap(),
            "{text}"
        );
        let back = Lock::parse(&text, Path::new("mcp.lock")).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.to_toml(), text);
        assert!(back.get("z.srv", "a b").is_some());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policies/mcp.lock");
        lock.write(&path).unwrap();
        assert_eq!(Lock::read(&path).unwrap(), lock);
        assert_eq!(
            Lock::read_or_empty(&dir.path().join("none")).unwrap(),
            Lock::default()
        );
    }

    /// Issue 11 item 6: a name with DEL made a lock muster then refused.
    #[test]
    fn hostile_names_round_trip_through_the_file() {
        let names = [
            "\u{7f}",
            "del\u{7f}in",
            "\"",
            "'",
            "\\",
            "back\\slash\"quote",
            "a\nb",
            "cr\r",
            "tab\t",
            "nul\u{0}",
            "\u{1b}[31m",
            "\u{202e}rtl",
            "zero\u{200b}width",
            "é🙂日本",
            " ",
            "",
            ".",
            "a.b",
            "[x]",
            "= ",
            "#",
        ];
        let tools: Vec<ListedTool> = names.iter().map(|n| tool(n, "", json!({}))).collect();
        let mut lock = Lock::default();
        for server in names {
            lock = lock.update(server, &tools).0;
        }
        let text = lock.to_toml();
        let back =
            Lock::parse(&text, Path::new("mcp.lock")).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, lock);
        assert_eq!(back.to_toml(), text);
        for server in names {
            for name in names {
                assert!(back.get(server, name).is_some(), "{server:?} {name:?}");
            }
        }
    }

    #[test]
    fn an_empty_lock_is_the_header_and_version() {
        let text = Lock::default().to_toml();
        assert_eq!(text, format!("{HEADER}version = 1\n"));
        assert_eq!(
            Lock::parse(&text, Path::new("mcp.lock")).unwrap(),
            Lock::default()
        );
    }

    #[test]
    fn bad_lock_files_are_refused_with_line() {
        let p = Path::new("policies/mcp.lock");
        let err = Lock::parse("version = 1\n[mcp.a]\nt = \"md5:abc\"\n", p).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Policy);
        assert_eq!(err.problems()[0].line, Some(3));
        assert!(err.problems()[0].message.contains("mcp.a.t"));
        let err = Lock::parse("version = 1\nextra = 2\n", p).unwrap_err();
        assert_eq!(err.problems()[0].line, Some(2));
        let err = Lock::parse("# note\n\nversion = 2\n", p).unwrap_err();
        assert_eq!(err.problems()[0].line, Some(3));
    }
}
