//! MCP servers: `mcp/*.toml` `[[mcp]]` blocks validated into
//! [`ServerDef`]s, with their narrowing, and the snapshot each names read
//! into the [`Listings`] held beside the policy.

use super::load::{Loader, Source};
use super::{ListedTool, Listings, Origin, ServerDef, raw};
use crate::error::Problem;
use crate::error::code;
use crate::input::ReadError;
use crate::narrow::{Entry, Narrowing, NarrowingInput, OnlyEntry, ParamsEntry};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

impl Loader {
    /// The declared servers, and what each one's snapshot lists. Each
    /// snapshot is read as its block is validated, so its problems come in
    /// the block's place.
    pub(super) fn load_servers(&mut self) -> (Vec<ServerDef>, Listings) {
        let mut servers: Vec<ServerDef> = Vec::new();
        let mut listings = Listings::default();
        let mut seen: BTreeMap<String, Origin> = BTreeMap::new();
        for path in self.toml_files("mcp") {
            let Some((src, file)) = self.read_toml::<raw::McpFile>(&path, false) else {
                continue;
            };
            for entry in file.mcp {
                let origin = src.at(&entry);
                if let Some((server, listed)) =
                    self.server(&src, origin, entry.into_inner(), &mut seen)
                {
                    listings.set(server.name.clone(), listed);
                    servers.push(server);
                }
            }
        }
        (servers, listings)
    }

    fn server(
        &mut self,
        src: &Source,
        origin: Origin,
        raw: raw::RawServer,
        seen: &mut BTreeMap<String, Origin>,
    ) -> Option<(ServerDef, Vec<ListedTool>)> {
        let name = raw.name.get_ref().clone();
        let at = src.at(&raw.name);
        if let Some(long) = crate::names::too_long(&name) {
            self.problems.push(
                at.coded(
                    code::NAME_TOO_LONG,
                    format!("MCP server name {:?} {long}", crate::names::shown(&name)),
                )
                .help("shorten it: the server's tools are named mcp.<server>.<tool>"),
            );
            return None;
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.problems.push(
                at.coded(
                    code::NAME_INVALID,
                    format!("MCP server name {name:?} is not usable in tool names"),
                )
                .help("use letters, digits, '_' and '-' only"),
            );
            return None;
        }
        if let Some(first) = seen.get(&name) {
            self.problems.push(at.coded(
                code::DUPLICATE,
                format!(
                    "MCP server {name:?} is declared twice; first at {}:{}",
                    first.file.display(),
                    first.line.unwrap_or(0)
                ),
            ));
            return None;
        }
        seen.insert(name.clone(), at.clone());
        if raw.command.is_none() && raw.snapshot.is_none() {
            self.problems.push(
                origin
                    .coded(code::MISSING_VALUE, format!("MCP server {name:?} has neither command nor snapshot"))
                    .help("add snapshot = \"<file>.json\" (a recorded tools/list result) or command = [\"prog\", ...]"),
            );
            return None;
        }
        if raw
            .command
            .as_ref()
            .is_some_and(|c| c.is_empty() || c[0].is_empty())
        {
            self.problems.push(
                origin
                    .coded(
                        code::MISSING_VALUE,
                        format!("MCP server {name:?}: command is empty"),
                    )
                    .help("command = [\"program\", \"arg\", ...]"),
            );
        }
        let snapshot = raw.snapshot.as_ref().and_then(|s| {
            self.inside(
                src,
                s.get_ref(),
                &src.at(s),
                &format!("MCP server {name:?}"),
                "snapshot",
            )
        });
        let listed = match (&snapshot, &raw.snapshot) {
            (Some(path), Some(spanned)) => {
                self.read_snapshot(path, &src.at(spanned), &name, raw.command.is_some())
            }
            _ => Vec::new(),
        };
        let allow = raw.allow.as_ref().map(|list| {
            list.get_ref()
                .iter()
                .map(|n| (n.get_ref().clone(), src.at(n)))
                .collect::<Vec<_>>()
        });
        let deny: Vec<(String, Origin)> = raw
            .deny
            .iter()
            .map(|n| (n.get_ref().clone(), src.at(n)))
            .collect();
        let narrowing = self.narrowing(src, &name, &origin, &raw);
        let only_origins = raw
            .only
            .keys()
            .map(|tool| (tool.get_ref().clone(), src.at(tool)))
            .collect();
        let unknown_arguments = raw
            .unknown_arguments
            .as_ref()
            .and_then(|u| self.unknown_arguments(src, u, &format!("MCP server {name:?}")));
        let timeout =
            Duration::from_secs(match raw.timeout_secs {
                Some(0) => {
                    self.problems.push(
                    origin
                        .coded(code::OUT_OF_RANGE, format!(
                            "MCP server {name:?}: timeout_secs = 0 leaves no time to list tools"
                        ))
                        .help("use a whole number of seconds, 1 or more (default 30)"),
                );
                    30
                }
                Some(secs) => secs,
                None => 30,
            });
        let when = raw.when.as_ref().and_then(|w| self.flag_name(src, w));
        let check = raw
            .check
            .as_ref()
            .and_then(|c| self.check_mode(src, c, &format!("MCP server {name:?}")));
        let tool_check = raw
            .tool_check
            .iter()
            .filter_map(|(tool, mode)| {
                let subject = format!("MCP server {name:?}: tool_check.{}", tool.get_ref());
                Some((
                    tool.get_ref().clone(),
                    self.check_mode(src, mode, &subject)?,
                ))
            })
            .collect();
        let hints = self.hint_rules(
            src,
            &raw.deny_hints,
            &raw.require_hints,
            &format!("MCP server {name:?}"),
        );
        let server = ServerDef {
            hints,
            name,
            description: raw.description.clone(),
            defer_together: raw.defer_together,
            command: raw.command,
            env: raw.env,
            snapshot,
            timeout,
            when,
            priority: raw.priority,
            tool_priority: raw
                .tool_priority
                .iter()
                .map(|(k, v)| (k.get_ref().clone(), *v))
                .collect(),
            deferrable: raw.deferrable,
            allow,
            deny,
            narrowing,
            only_origins,
            unknown_arguments,
            coerce: raw.coerce,
            check,
            tool_check,
            origin,
        };
        Some((server, listed))
    }

    /// Checks `allow`, `deny`, `params` and `only` (see
    /// [`crate::narrow::validate_narrowing`]) with every name's line.
    fn narrowing(
        &mut self,
        src: &Source,
        server: &str,
        origin: &Origin,
        raw: &raw::RawServer,
    ) -> Narrowing {
        let entry = |s: &Spanned<String>| Entry::at(s.get_ref().clone(), src.line(s.span().start));
        let mut params = Vec::new();
        for (tool, args) in &raw.params {
            let mut fixed = Vec::new();
            for (arg, value) in args {
                match serde_json::to_value(&value.get_ref().value) {
                    Ok(v) => fixed.push((entry(arg), v)),
                    Err(err) => self.problems.push(src.at(value).coded(
                        code::INVALID_JSON,
                        format!(
                            "MCP server {server:?}: fixed value of {}.{} is not JSON: {err}",
                            tool.get_ref(),
                            arg.get_ref()
                        ),
                    )),
                }
            }
            params.push(ParamsEntry {
                tool: entry(tool),
                args: fixed,
            });
        }
        let input = NarrowingInput {
            server: server.to_string(),
            file: Some(src.path.clone()),
            line: origin.line,
            allow: raw
                .allow
                .as_ref()
                .map(|a| a.get_ref().iter().map(entry).collect()),
            deny: raw.deny.iter().map(entry).collect(),
            params,
            only: raw
                .only
                .iter()
                .map(|(tool, args)| OnlyEntry {
                    tool: entry(tool),
                    args: args.get_ref().iter().map(entry).collect(),
                })
                .collect(),
        };
        match crate::narrow::validate_narrowing(&input) {
            Ok(narrowing) => narrowing,
            Err(err) => {
                self.problems.extend(err.problems().iter().cloned());
                Narrowing::default()
            }
        }
    }

    fn read_snapshot(
        &mut self,
        path: &Path,
        at: &Origin,
        server: &str,
        has_command: bool,
    ) -> Vec<ListedTool> {
        let text =
            match crate::input::read_text(path) {
                Ok(text) => text,
                Err(ReadError::Missing) if has_command => {
                    // A server not yet discovered lists nothing; `plan` warns.
                    return Vec::new();
                }
                Err(err) => {
                    self.problems.push(
                    at.coded(err.code(), format!(
                        "MCP server {server:?}: cannot read snapshot {}: {err}",
                        path.display()
                    ))
                    .help(
                        "the path is relative to the TOML file; run `muster discover` to record it",
                    ),
                );
                    return Vec::new();
                }
            };
        match crate::snapshot::parse_listing(&text, &mut self.schemas) {
            Ok(tools) => tools,
            Err((line, message)) => {
                self.problems.push(
                    Problem::coded(code::INVALID_SNAPSHOT, format!("MCP server {server:?}: snapshot {message}"))
                        .in_file(path)
                        .at_line(line)
                        .help("a snapshot is a tools/list result: {\"tools\": [{\"name\": ..., \"inputSchema\": {...}}]}"),
                );
                Vec::new()
            }
        }
    }
}
