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
use std::path::{Path, PathBuf};
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
        if raw.command.is_none() && raw.url.is_none() && raw.snapshot.is_none() {
            self.problems.push(
                origin
                    .coded(code::MISSING_VALUE, format!("MCP server {name:?} has neither command, url nor snapshot"))
                    .help("add snapshot = \"<file>.json\" (a recorded tools/list result), command = [\"prog\", ...] (stdio) or url = \"https://.../mcp\" (Streamable HTTP)"),
            );
            return None;
        }
        let reach = self.reach(src, &name, &raw);
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
                let live = raw.command.is_some() || raw.url.is_some();
                self.read_snapshot(path, &src.at(spanned), &name, live)
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
        let timeout = Duration::from_secs(match raw.timeout_secs {
            Some(0) => {
                self.problems.push(
                    origin
                        .coded(code::OUT_OF_RANGE, format!(
                            "MCP server {name:?}: timeout_secs = 0 leaves no time to list tools or answer a call"
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
        let max_result_tokens = raw.max_result_tokens.as_ref().and_then(|v| {
            self.result_tokens(src, v, &format!("MCP server {name:?}: max_result_tokens"))
        });
        let oauth = self.oauth(src, &raw, &format!("MCP server {name:?}"));
        let relay = self.relay(src, &raw, &format!("MCP server {name:?}"));
        let server = ServerDef {
            hints,
            max_result_tokens,
            name,
            description: raw.description.clone(),
            defer_together: raw.defer_together,
            command: reach.command,
            url: reach.url,
            headers: reach.headers,
            oauth,
            relay,
            cwd: reach.cwd,
            env: reach.env,
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
            resources: raw.resources,
            prompts: raw.prompts,
            origin,
        };
        Some((server, listed))
    }

    /// How the block is reached: `command` (stdio, with `cwd` and `env`) or
    /// `url` (Streamable HTTP, with `headers`), never both; each key of one
    /// way refused beside the other. `${VAR}` references are checked for
    /// form here and filled only when the server is reached.
    fn reach(&mut self, src: &Source, name: &str, raw: &raw::RawServer) -> Reach {
        let subject = format!("MCP server {name:?}");
        let mut reach = Reach::default();
        if let (Some(command), Some(url)) = (&raw.command, &raw.url) {
            self.problems.push(
                src.at(url)
                    .coded(
                        code::CONFLICT,
                        format!(
                            "{subject} has both url and command (line {})",
                            src.line(command.span().start)
                        ),
                    )
                    .help("keep command = [...] to start the server on stdio, or url = \"https://.../mcp\" to reach it over Streamable HTTP, not both"),
            );
        }
        if let Some(command) = &raw.command {
            let c = command.get_ref();
            if c.is_empty() || c[0].is_empty() {
                self.problems.push(
                    src.at(command)
                        .coded(code::MISSING_VALUE, format!("{subject}: command is empty"))
                        .help("command = [\"program\", \"arg\", ...]"),
                );
            }
            reach.command = Some(c.clone());
        }
        if let Some(url) = &raw.url {
            match super::reach::url_problem(url.get_ref()) {
                Some((code, why)) => self.problems.push(
                    src.at(url)
                        .coded(code, format!("{subject}: url {why}"))
                        .help("url = \"https://host/mcp\" (http:// only for a server on this machine); credentials go in headers"),
                ),
                None => reach.url = Some(url.get_ref().clone()),
            }
        }
        if raw.url.is_none()
            && let Some((header, _)) = raw.headers.iter().next()
        {
            self.problems.push(
                src.at(header)
                    .coded(
                        code::CONFLICT,
                        format!(
                            "{subject}: headers are sent only to a url, and the block has none"
                        ),
                    )
                    .help("remove headers, or reach the server by url = \"https://.../mcp\""),
            );
        }
        for (header, value) in &raw.headers {
            if RESERVED_HEADERS
                .iter()
                .any(|r| header.get_ref().eq_ignore_ascii_case(r))
            {
                self.problems.push(
                    src.at(header)
                        .coded(
                            code::CONFLICT,
                            format!(
                                "{subject}: header {} is set by the MCP transport itself",
                                header.get_ref()
                            ),
                        )
                        .help("remove it: muster sends Accept, Mcp-Session-Id, MCP-Protocol-Version and Last-Event-ID as the protocol requires"),
                );
            }
            if !is_header_name(header.get_ref()) {
                self.problems.push(
                    src.at(header)
                        .coded(
                            code::INVALID_VALUE,
                            format!("{subject}: {:?} is not an HTTP header name", crate::names::shown(header.get_ref())),
                        )
                        .help("use letters, digits and !#$%&'*+-.^_`|~ only, as in Authorization or X-Api-Key"),
                );
            }
            self.var_syntax(
                src,
                value,
                &subject,
                &format!("headers.{}", header.get_ref()),
            );
            reach
                .headers
                .insert(header.get_ref().clone(), value.get_ref().clone());
        }
        for (var, value) in &raw.env {
            self.var_syntax(src, value, &subject, &format!("env.{}", var.get_ref()));
            reach
                .env
                .insert(var.get_ref().clone(), value.get_ref().clone());
        }
        if let Some(cwd) = &raw.cwd {
            if raw.command.is_none() {
                self.problems.push(
                    src.at(cwd)
                        .coded(
                            code::CONFLICT,
                            format!(
                                "{subject}: cwd is where a command starts, and the block has none"
                            ),
                        )
                        .help("remove cwd, or add command = [\"prog\", ...]"),
                );
            }
            reach.cwd = self.working_directory(src, cwd, &subject);
        }
        reach
    }

    /// `cwd`, written relative to the policy directory: inside it once
    /// links are followed, and a directory.
    fn working_directory(
        &mut self,
        src: &Source,
        cwd: &Spanned<String>,
        subject: &str,
    ) -> Option<PathBuf> {
        let at = src.at(cwd);
        let root = self.root.clone();
        let path = self.inside_from(&root, cwd.get_ref(), &at, subject, "cwd")?;
        if path.is_dir() {
            return Some(path);
        }
        self.problems.push(
            at.coded(
                code::FILE_MISSING,
                format!(
                    "{subject}: cwd {:?} is not a directory ({})",
                    cwd.get_ref(),
                    path.display()
                ),
            )
            .help("cwd is relative to the policy directory; create the directory or fix the path"),
        );
        None
    }

    /// Records a malformed `${...}` in `value`, and one that names a
    /// variable of muster's own.
    pub(super) fn var_syntax(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        subject: &str,
        key: &str,
    ) {
        if let Some(why) = super::vars::syntax_problem(value.get_ref()) {
            self.problems.push(
                src.at(value)
                    .coded(code::INVALID_VALUE, format!("{subject}: {key} {why}"))
                    .help("write a variable as ${NAME}, and a literal `$` as $$"),
            );
        }
        if let Some(problem) = super::reach::own_variable(value.get_ref(), subject, key) {
            self.problems
                .push(src.at(value).coded(problem.0, problem.1).help(problem.2));
        }
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

/// How a block is reached, once its keys are checked.
#[derive(Default)]
struct Reach {
    command: Option<Vec<String>>,
    url: Option<String>,
    headers: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    env: BTreeMap<String, String>,
}

/// Headers the Streamable HTTP transport sets itself (rmcp refuses them).
const RESERVED_HEADERS: [&str; 5] = [
    "Accept",
    "Content-Type",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Last-Event-ID",
];

/// An HTTP header name (RFC 9110 token).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
