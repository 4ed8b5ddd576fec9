//! Policies: reads a policy directory and validates it into a [`Policy`].
//!
//! Layout (every part optional except at least one tool or server):
//!
//! ```text
//! policies/
//!   muster.toml         caps, tokenizer, deferral, groups, agents, call policy
//!   tools/*.toml        [[tool]] configured tools
//!   mcp/*.toml          [[mcp]] servers and their narrowing
//!   flags/<profile>.toml  flags = [...] a profile turns on
//! ```
//!
//! Loading is two-phase: each file is parsed into raw structs that keep
//! spans and refuse unknown keys, then every rule is checked and *all*
//! problems are returned at once, each with file and line. This module
//! decides what a policy means; it never decides what is offered.

mod chunks;
mod raw;

use crate::contract::{CheckMode, SchemaProblem};
use crate::error::{Error, ErrorKind, LineIndex, Problem, line_of};
use crate::input::ReadError;
use crate::names::Hidden;
use crate::narrow::{Entry, Narrowing, NarrowingInput, OnlyEntry, ParamsEntry};
pub use crate::snapshot::ListedTool;
use crate::tokens::{Encoding, Provider};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// Default item cap: how many tool definitions the model is shown.
pub const DEFAULT_ITEM_CAP: u32 = 30;
/// Default token cap on the tool section.
pub const DEFAULT_TOKEN_CAP: u32 = 9_000;
/// Name of the control tool when deferral is on and the policy names none.
pub const DEFAULT_CONTROL_TOOL: &str = "tools.load";

/// Where a policy entry was written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    /// The file, as found under the policy directory.
    pub file: PathBuf,
    /// 1-based line of the entry, when known.
    pub line: Option<usize>,
}

impl Origin {
    /// A problem located at this origin.
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(message).in_file(&self.file).at_line(self.line)
    }
}

/// The two caps a roster must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Most tool definitions offered.
    pub items: u32,
    /// Most tokens the tool section may cost.
    pub tokens: u32,
}

impl Caps {
    /// These caps with what-if overrides applied (`--item-cap`,
    /// `--token-cap`, a gate's or a request's overrides).
    pub fn with_overrides(self, items: Option<u32>, tokens: Option<u32>) -> Caps {
        Caps {
            items: items.unwrap_or(self.items),
            tokens: tokens.unwrap_or(self.tokens),
        }
    }
}

/// What to do with an argument name a tool's schema does not declare
/// (where the schema does not already refuse it with
/// `additionalProperties: false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownArguments {
    /// Refuse the turn: the model learns the name does not exist.
    Refuse,
    /// Drop the argument and note it.
    Drop,
    /// Forward it unchanged.
    Pass,
}

impl UnknownArguments {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "refuse" => Some(Self::Refuse),
            "drop" => Some(Self::Drop),
            "pass" => Some(Self::Pass),
            _ => None,
        }
    }
}

/// How calls are checked and forwarded, by tool source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPolicy {
    /// For configured tools; default refuse (their names are ours to know).
    pub configured_unknown: UnknownArguments,
    /// For MCP tools; default refuse.
    pub mcp_unknown: UnknownArguments,
    /// Cast values to the declared type for configured tools; default off.
    pub coerce_configured: bool,
    /// Cast values to the declared type for MCP tools; default on, since
    /// MCP servers validate strictly.
    pub coerce_mcp: bool,
    /// How configured tools' calls are checked; default lenient.
    pub configured_check: CheckMode,
    /// How MCP tools' calls are checked; default strict, since MCP servers
    /// validate strictly.
    pub mcp_check: CheckMode,
}

/// What `plan` does with a discovered tool whose definition differs from the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Keep it away until `muster lock` accepts the change.
    Cut,
    /// Offer it, with a warning.
    Warn,
}

/// The lock of discovered tool definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockPolicy {
    /// The lock file, relative paths resolved against the policy directory.
    pub file: PathBuf,
    /// What a mismatch does.
    pub on_mismatch: LockMode,
}

/// Deferral: tools that do not fit are reachable through one control tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Deferral {
    /// Whether deferral is on.
    pub enabled: bool,
    /// The control tool's name.
    pub control_tool: String,
    /// The control tool's description, before the summary of what is
    /// deferred behind it.
    pub description: String,
    /// Most tokens the summary of deferred kinds may add to the control
    /// tool's description; reserved with its slot before planning.
    pub summary_tokens: u32,
    /// Most tools an agent session may load.
    pub max_loaded: u32,
    /// Most tokens the loaded tools' definitions may cost together.
    pub max_loaded_tokens: u32,
    /// Most tools one query to the control tool loads.
    pub per_query: u32,
}

impl Deferral {
    /// The control tool's input schema: a request in words, or exact names.
    pub fn control_schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you need a tool for, in a few words; or the exact name of a tool or kind listed above (several names separated by commas)."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }
}

/// A named set of tools; a required group is placed before everything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Group name.
    pub name: String,
    /// Whether its members must be offered.
    pub required: bool,
    /// Full tool names.
    pub members: Vec<(String, Origin)>,
    /// One line on what its tools are for, shown in the control tool's
    /// summary of deferred kinds.
    pub description: Option<String>,
    /// Whether its deferred members load together, as one entry named
    /// after the group.
    pub defer_together: bool,
    /// Where it was declared.
    pub origin: Origin,
}

/// An agent: which tools it enables and the version sessions pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// Agent name.
    pub name: String,
    /// Version pinned by sessions; part of the roster fingerprint. One
    /// name may be declared at several versions.
    pub version: u64,
    /// An explicit list of tools to enable; `None` means the default roster.
    pub enabled_tools: Option<Vec<(String, Origin)>>,
    /// MCP servers the agent uses; `None` means all.
    pub servers: Option<Vec<(String, Origin)>>,
    /// Where it was declared.
    pub origin: Origin,
}

/// A configured (built-in) tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Unique name.
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// JSON Schema of its arguments (always an object schema), shared with
    /// the catalogs built from it.
    pub input_schema: std::sync::Arc<Value>,
    /// The flag that must be on for the tool to exist.
    pub when: Option<String>,
    /// Whether the default roster enables it.
    pub default_roster: bool,
    /// Higher is placed earlier; default 0.
    pub priority: i64,
    /// Whether a tool that does not fit may be deferred instead of cut.
    pub deferrable: bool,
    /// Ordered parameter names for hosts that call tools positionally.
    pub parameters: Option<Vec<String>>,
    /// Whether the last parameter takes any number of values.
    pub variadic: bool,
    /// Override of the call policy for undeclared argument names.
    pub unknown_arguments: Option<UnknownArguments>,
    /// Override of the call policy for casting values.
    pub coerce: Option<bool>,
    /// Override of the call policy for how calls are checked.
    pub check: Option<CheckMode>,
    /// Where it was declared.
    pub origin: Origin,
}

/// An MCP server block.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerDef {
    /// Server name; tools are `mcp.<name>.<tool>`.
    pub name: String,
    /// One line on what its tools are for, shown in the control tool's
    /// summary of deferred kinds.
    pub description: Option<String>,
    /// Whether its deferred tools load together, as one entry named
    /// `mcp.<name>`.
    pub defer_together: bool,
    /// The stdio command `discover` starts.
    pub command: Option<Vec<String>>,
    /// Extra environment for the command.
    pub env: BTreeMap<String, String>,
    /// The recorded `tools/list` result `plan` reads.
    pub snapshot: Option<PathBuf>,
    /// How long `discover` waits for the server.
    pub timeout: Duration,
    /// The flag that must be on for the server's tools to exist.
    pub when: Option<String>,
    /// Priority of all its tools unless `tool_priority` says otherwise.
    pub priority: i64,
    /// Per-tool priority.
    pub tool_priority: BTreeMap<String, i64>,
    /// Whether its tools may be deferred.
    pub deferrable: bool,
    /// Tool names the block offers (`None` offers every listed tool), with
    /// where each is written, for warnings about names that match nothing.
    pub allow: Option<Vec<(String, Origin)>>,
    /// Tool names never offered, with where each is written.
    pub deny: Vec<(String, Origin)>,
    /// The validated `allow` / `deny` / `params` / `only` the catalog applies.
    pub narrowing: Narrowing,
    /// Where each tool's `only` entry is written, for drift warnings.
    pub only_origins: BTreeMap<String, Origin>,
    /// Override of the call policy for undeclared argument names.
    pub unknown_arguments: Option<UnknownArguments>,
    /// Override of the call policy for casting values.
    pub coerce: Option<bool>,
    /// Override of the call policy for how calls are checked.
    pub check: Option<CheckMode>,
    /// Per-tool override of `check`, by the tool's name on the server.
    pub tool_check: BTreeMap<String, CheckMode>,
    /// The tools the snapshot lists, in listed order (empty when there is
    /// no snapshot yet).
    pub listed: Vec<ListedTool>,
    /// Where it was declared.
    pub origin: Origin,
}

/// A flag profile: the flags an environment turns on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Flags, in file order.
    pub flags: Vec<String>,
    /// The profile file.
    pub origin: Origin,
}

/// A validated policy directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The directory it was read from.
    pub root: PathBuf,
    /// Caps from `muster.toml` (defaults 30 / 9,000).
    pub caps: Caps,
    /// Tokenizer (default `o200k_base`).
    pub encoding: Encoding,
    /// Whose billing token counts follow (default OpenAI).
    pub provider: Provider,
    /// Deferral settings (default off).
    pub deferral: Deferral,
    /// How calls are checked.
    pub calls: CallPolicy,
    /// The definition lock's settings.
    pub lock: LockPolicy,
    /// The lock's entries, when the lock file exists; with no lock file,
    /// discovered definitions are not checked.
    pub locked: Option<crate::lock::Lock>,
    /// Groups in declared order.
    pub groups: Vec<Group>,
    /// Agents, every declared version of each; the first name is the
    /// default unless one says `default = true`.
    pub agents: Vec<Agent>,
    /// Index into `agents` of the default agent at its current version.
    pub default_agent: usize,
    /// For each agent name, the index into `agents` of the version new
    /// sessions pin: the one marked `current = true`, else the highest.
    pub current_versions: BTreeMap<String, usize>,
    /// Configured tools in declared order (files by name, then file order).
    pub tools: Vec<ToolDef>,
    /// MCP servers in declared order.
    pub servers: Vec<ServerDef>,
    /// Flag profiles by name.
    pub profiles: BTreeMap<String, Profile>,
}

impl Policy {
    /// Reads and validates the policy directory `dir`.
    ///
    /// # Errors
    /// Returns every problem found (malformed TOML, unknown keys, a tool
    /// registered twice, a schema that is not an object, a missing schema or
    /// snapshot file, ...) with file and line, as one [`Error`] of kind
    /// [`ErrorKind::Policy`] (or [`ErrorKind::Io`] when the directory itself
    /// cannot be read).
    pub fn load(dir: &Path) -> Result<Policy, Error> {
        Loader::new(dir).load()
    }

    /// The agent called `name` (the default agent for `None`) at
    /// `version` (its current version for `None`).
    pub fn agent(&self, name: Option<&str>, version: Option<u64>) -> Option<&Agent> {
        let name = match name {
            Some(name) => name,
            None => self.agents.get(self.default_agent)?.name.as_str(),
        };
        match version {
            Some(v) => self
                .agents
                .iter()
                .find(|a| a.name == name && a.version == v),
            None => self
                .current_versions
                .get(name)
                .and_then(|&i| self.agents.get(i)),
        }
    }

    /// Every registered tool name: configured tools and, for each server,
    /// `mcp.<server>.<tool>` for every listed tool.
    pub fn registered_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        for server in &self.servers {
            for tool in &server.listed {
                names.insert(mcp_name(&server.name, &tool.name));
            }
        }
        names
    }
}

/// The problem for a policy subdirectory that exists but cannot be listed.
fn unreadable_dir(dir: &Path, sub: &str, err: &std::io::Error) -> Problem {
    Problem::new(format!(
        "cannot read the {sub}/ directory: {err}; its files would be left out"
    ))
    .in_file(dir)
    .help(format!(
        "make {sub}/ a directory readable by the user running muster, or remove it if it should hold nothing"
    ))
}

/// The roster name of tool `tool` on server `server`.
pub fn mcp_name(server: &str, tool: &str) -> String {
    format!("mcp.{server}.{tool}")
}

/// The problem a TOML file that cannot be read as policy is.
fn toml_problem(path: &Path, line: Option<usize>, err: &toml::de::Error) -> Problem {
    let message = err.message().trim().to_string();
    let help = if message.contains("unknown field") {
        "remove the key or correct its spelling; the keys this table accepts are listed above"
    } else {
        "fix the value or the TOML syntax at this line"
    };
    Problem::new(message).in_file(path).at_line(line).help(help)
}

struct Loader {
    root: PathBuf,
    problems: Vec<Problem>,
}

/// Text of a policy file and a way to turn byte spans into lines.
struct Source {
    path: PathBuf,
    lines: std::sync::Arc<LineIndex>,
    /// Where the parsed text starts in the file: spans of a part parsed on
    /// its own count from there.
    base: usize,
}

impl Source {
    fn new(path: PathBuf, text: &str) -> Self {
        Self {
            path,
            lines: std::sync::Arc::new(LineIndex::new(text)),
            base: 0,
        }
    }

    /// The same file, for a part of its text starting at byte `base`.
    fn part(&self, base: usize) -> Self {
        Self {
            path: self.path.clone(),
            lines: self.lines.clone(),
            base,
        }
    }

    fn origin(&self, span: std::ops::Range<usize>) -> Origin {
        Origin {
            file: self.path.clone(),
            line: Some(self.line(span.start)),
        }
    }

    fn line(&self, offset: usize) -> usize {
        self.lines.line(self.base + offset)
    }

    fn at<T>(&self, spanned: &Spanned<T>) -> Origin {
        self.origin(spanned.span())
    }
}

impl Loader {
    fn new(dir: &Path) -> Self {
        Self {
            root: dir.to_path_buf(),
            problems: Vec::new(),
        }
    }

    fn load(mut self) -> Result<Policy, Error> {
        if !self.root.is_dir() {
            return Err(Error::new(
                ErrorKind::Io,
                Problem::new(format!(
                    "policy directory {} does not exist",
                    self.root.display()
                ))
                .help("run from the repository root, or pass --policies DIR"),
            ));
        }
        let muster = self.read_toml::<raw::MusterFile>(&self.root.join("muster.toml"), true);
        let tools = self.load_tools();
        let servers = self.load_servers();
        let profiles = self.load_profiles();
        let (muster_src, muster) = match muster {
            Some((src, file)) => (Some(src), file),
            None => (None, raw::MusterFile::default()),
        };
        let settings = self.settings(muster_src.as_ref(), muster, &tools, &servers);
        if tools.is_empty() && servers.is_empty() && self.problems.is_empty() {
            self.problems.push(
                Problem::new("the policy defines no tools")
                    .in_file(self.root.join("tools"))
                    .help("add [[tool]] tables to tools/*.toml or [[mcp]] servers to mcp/*.toml"),
            );
        }
        if settings.lock_explicit && !settings.lock.file.exists() {
            self.problems.push(
                Problem::new(format!(
                    "the lock file {} named by [lock] file does not exist",
                    settings.lock.file.display()
                ))
                .in_file(self.root.join("muster.toml"))
                .help("correct the path, or create the lock with `muster lock` after reviewing the snapshots"),
            );
        }
        let locked = if settings.lock.file.exists() {
            match crate::lock::Lock::read(&settings.lock.file) {
                Ok(lock) => Some(lock),
                Err(err) => {
                    self.problems.extend(err.problems().iter().cloned());
                    None
                }
            }
        } else {
            None
        };
        if !self.problems.is_empty() {
            return Err(Error::many(ErrorKind::Policy, self.problems));
        }
        let Settings {
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            lock_explicit: _,
            groups,
            agents,
            default_agent,
            current_versions,
        } = settings;
        Ok(Policy {
            root: self.root,
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            locked,
            groups,
            agents,
            default_agent,
            current_versions,
            tools,
            servers,
            profiles,
        })
    }

    /// Reads and parses one TOML file; records a problem and returns `None`
    /// when it cannot. A missing optional file is not a problem.
    fn read_toml<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &Path,
        optional: bool,
    ) -> Option<(Source, T)> {
        let text = match crate::input::read_text(path) {
            Ok(text) => text,
            Err(ReadError::Missing) if optional => return None,
            Err(err) => {
                self.problems.push(err.problem(path, "file"));
                return None;
            }
        };
        match toml::from_str::<T>(&text) {
            Ok(value) => Some((Source::new(path.to_path_buf(), &text), value)),
            Err(err) => {
                let line = err.span().map(|s| line_of(&text, s.start));
                self.problems.push(toml_problem(path, line, &err));
                None
            }
        }
    }

    /// Parses `text`, a part of `path` that `src` locates in the file;
    /// records a problem and returns `None` when it cannot.
    fn parse_toml<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &Path,
        src: &Source,
        text: &str,
    ) -> Option<T> {
        match toml::from_str::<T>(text) {
            Ok(value) => Some(value),
            Err(err) => {
                let line = err.span().map(|s| src.line(s.start));
                self.problems.push(toml_problem(path, line, &err));
                None
            }
        }
    }

    /// The `*.toml` files of `sub`, in name order. A missing directory has
    /// none; one that cannot be listed is a problem, never an empty set
    /// (a `chmod 000 mcp/` would otherwise plan without its servers).
    fn toml_files(&mut self, sub: &str) -> Vec<PathBuf> {
        let dir = self.root.join(sub);
        let entries = match std::fs::read_dir(&dir).and_then(|entries| {
            entries
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<PathBuf>>>()
        }) {
            Ok(entries) => entries,
            // Nothing there: the part is simply not used. A dangling link is
            // something there that cannot be read.
            Err(err)
                if err.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&dir).is_err() =>
            {
                return Vec::new();
            }
            Err(err) => {
                self.problems.push(unreadable_dir(&dir, sub, &err));
                return Vec::new();
            }
        };
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        // A .toml entry that is not a readable file (a directory, a dangling
        // or looping link, a FIFO) would silently drop its tools.
        files.retain(|p| match crate::input::regular_file(p) {
            Ok(_) => true,
            Err(err) => {
                self.problems.push(
                    Problem::new(format!("is not a readable file: {err}"))
                        .in_file(p)
                        .help("replace it with a policy file, or rename it so it does not end in .toml"),
                );
                false
            }
        });
        files
    }

    fn load_tools(&mut self) -> Vec<ToolDef> {
        let mut tools: Vec<ToolDef> = Vec::new();
        let mut seen: BTreeMap<String, Origin> = BTreeMap::new();
        for path in self.toml_files("tools") {
            let text = match crate::input::read_text(&path) {
                Ok(text) => text,
                Err(err) => {
                    self.problems.push(err.problem(&path, "file"));
                    continue;
                }
            };
            let file = Source::new(path.clone(), &text);
            // Each `[[tool]]` entry is parsed and validated on its own, so
            // a large file is never one TOML document in memory.
            let starts = chunks::array_table_starts(&text, "tool");
            let mut bounds = vec![0];
            bounds.extend(starts.iter().copied().filter(|&s| s > 0));
            bounds.push(text.len());
            if bounds.len() > 2 && starts.first() != Some(&0) {
                // The text before the first header: if it declares tools
                // itself (`tool = [...]`), that conflicts with the headers
                // after it, and only the whole file parsed as one is judged
                // right.
                match self.parse_toml::<raw::ToolsFile>(&path, &file, &text[..bounds[1]]) {
                    Some(before) if !before.tool.is_empty() => bounds = vec![0, text.len()],
                    _ => {
                        bounds.remove(0);
                    }
                }
            }
            for part in bounds.windows(2) {
                let src = file.part(part[0]);
                let Some(parsed) =
                    self.parse_toml::<raw::ToolsFile>(&path, &src, &text[part[0]..part[1]])
                else {
                    continue;
                };
                for entry in parsed.tool {
                    let origin = src.at(&entry);
                    let raw = entry.into_inner();
                    if let Some(tool) = self.tool(&src, origin, raw, &mut seen) {
                        tools.push(tool);
                    }
                }
            }
        }
        tools
    }

    fn tool(
        &mut self,
        src: &Source,
        origin: Origin,
        raw: raw::RawTool,
        seen: &mut BTreeMap<String, Origin>,
    ) -> Option<ToolDef> {
        let name = raw.name.get_ref().clone();
        let name_origin = src.at(&raw.name);
        if let Some(problem) = bad_name(&name) {
            self.problems.push(
                name_origin
                    .problem(format!("tool name {name:?} {problem}"))
                    .help("name it with visible characters only: no spaces, controls, bidi or invisible characters"),
            );
            return None;
        }
        if name.starts_with("mcp.") {
            self.problems.push(
                name_origin
                    .problem(format!("configured tool {name:?} uses the reserved prefix \"mcp.\""))
                    .help("discovered tools are named mcp.<server>.<tool>; rename the configured tool"),
            );
        }
        if let Some(first) = seen.get(&name) {
            self.problems.push(
                name_origin
                    .problem(format!(
                        "tool {name:?} is registered twice; first at {}:{}",
                        first.file.display(),
                        first.line.unwrap_or(0)
                    ))
                    .help("remove one of the two entries or rename one"),
            );
            return None;
        }
        seen.insert(name.clone(), name_origin.clone());

        let input_schema = match (raw.input_schema, raw.input_schema_file) {
            (Some(_), Some(file)) => {
                self.problems.push(
                    src.at(&file)
                        .problem(format!(
                            "tool {name:?} has both input_schema and input_schema_file"
                        ))
                        .help("keep one of the two"),
                );
                return None;
            }
            (Some(inline), None) => {
                // Read straight into JSON: a TOML value in between would
                // copy every schema of a large tools file twice more.
                let at = src.at(&inline);
                self.object_schema(&name, inline.into_inner(), &at)?
            }
            (None, Some(file)) => {
                let at = src.at(&file);
                let path = self.inside(
                    src,
                    file.get_ref(),
                    &at,
                    &format!("tool {name:?}"),
                    "input_schema_file",
                )?;
                let value = self.read_json(&path, &at, &name)?;
                self.object_schema(
                    &name,
                    value,
                    &Origin {
                        file: path,
                        line: None,
                    },
                )?
            }
            (None, None) => serde_json::json!({"type": "object", "properties": {}}),
        };

        let unknown_arguments = raw
            .unknown_arguments
            .as_ref()
            .and_then(|u| self.unknown_arguments(src, u, &format!("tool {name:?}")));
        let when = raw.when.as_ref().and_then(|w| self.flag_name(src, w));
        let parameters = raw
            .parameters
            .as_ref()
            .map(|p| self.parameters(src, &name, p, &input_schema, raw.variadic));
        let check = raw
            .check
            .as_ref()
            .and_then(|c| self.check_mode(src, c, &format!("tool {name:?}")));
        Some(ToolDef {
            name,
            description: raw.description,
            input_schema: input_schema.into(),
            when,
            default_roster: raw.default_roster,
            priority: raw.priority,
            deferrable: raw.deferrable,
            parameters,
            variadic: raw.variadic,
            unknown_arguments,
            coerce: raw.coerce,
            check,
            origin,
        })
    }

    /// The file `named` (written in `src`) points to, when it stays inside
    /// the policy directory; else a problem at `at` and `None`.
    fn inside(
        &mut self,
        src: &Source,
        named: &str,
        at: &Origin,
        what: &str,
        key: &str,
    ) -> Option<PathBuf> {
        let base = src.path.parent().unwrap_or(Path::new("."));
        let path = crate::input::inside(&self.root, base, Path::new(named));
        if path.is_none() {
            self.problems.push(
                at.problem(format!(
                    "{what}: {key} {named:?} points outside the policy directory {}",
                    self.root.display()
                ))
                .help(format!(
                    "copy the file into {} and name it relative to this TOML file",
                    self.root.display()
                )),
            );
        }
        path
    }

    fn read_json(&mut self, path: &Path, at: &Origin, tool: &str) -> Option<Value> {
        let text = match crate::input::read_text(path) {
            Ok(text) => text,
            Err(err) => {
                let help = match err {
                    ReadError::Missing => "the path is relative to the TOML file that names it",
                    _ => err.help(),
                };
                self.problems.push(
                    at.problem(format!(
                        "tool {tool:?}: cannot read schema file {}: {err}",
                        path.display()
                    ))
                    .help(help),
                );
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(err) => {
                self.problems.push(
                    Problem::new(format!(
                        "tool {tool:?}: schema file is not valid JSON: {err}"
                    ))
                    .in_file(path)
                    .at_line(Some(err.line())),
                );
                None
            }
        }
    }

    fn object_schema(&mut self, tool: &str, value: Value, at: &Origin) -> Option<Value> {
        if let Some(problem) = input_schema_problem(&value) {
            let help = match problem {
                SchemaProblem::NotObjectType { .. } => {
                    "tool arguments are always an object; wrap the value in a property"
                }
                SchemaProblem::TooDeep { .. } => "flatten the schema or use $ref definitions",
                _ => "give a JSON Schema object with type = \"object\" and an object of properties",
            };
            self.problems.push(
                at.problem(format!("tool {tool:?}: input schema {problem}"))
                    .help(help),
            );
            return None;
        }
        Some(value)
    }

    fn parameters(
        &mut self,
        src: &Source,
        tool: &str,
        params: &Spanned<Vec<Spanned<String>>>,
        schema: &Value,
        variadic: bool,
    ) -> Vec<String> {
        let props = schema.get("properties").and_then(Value::as_object);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut first_optional: Option<&str> = None;
        let mut names = Vec::new();
        for p in params.get_ref() {
            let name = p.get_ref().as_str();
            let at = src.at(p);
            if !props.is_some_and(|props| props.contains_key(name)) {
                self.problems.push(
                    at.problem(format!(
                        "tool {tool:?}: parameter {name:?} is not a property of its input schema"
                    ))
                    .help("list only properties the schema declares"),
                );
            }
            if names.iter().any(|n| n == name) {
                self.problems.push(
                    at.problem(format!("tool {tool:?}: parameter {name:?} is listed twice"))
                        .help("list each parameter once"),
                );
            }
            let is_required = required.contains(name);
            match (is_required, first_optional) {
                (true, Some(optional)) => self.problems.push(
                    at.problem(format!(
                        "tool {tool:?}: required parameter {name:?} comes after optional parameter {optional:?}"
                    ))
                    .help("optional parameters come last; move it before them or make it optional"),
                ),
                (false, None) => first_optional = Some(name),
                _ => {}
            }
            names.push(name.to_string());
        }
        // A positional call carries listed parameters only; a property left
        // out could be written by the model and silently lost.
        for name in props.into_iter().flat_map(|p| p.keys()) {
            if !names.iter().any(|n| n == name) {
                self.problems.push(
                    src.at(params)
                        .problem(format!(
                            "tool {tool:?}: parameters leaves out property {name:?}, so a positional call could not carry it"
                        ))
                        .help("list every property of the input schema, required ones first"),
                );
            }
        }
        if variadic && let Some(optional) = first_optional {
            self.problems.push(
                src.at(params)
                    .problem(format!(
                        "tool {tool:?} is variadic and has optional parameter {optional:?}"
                    ))
                    .help("a variadic tool takes no optional parameters; make them required or drop variadic"),
            );
        }
        names
    }

    fn unknown_arguments(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        subject: &str,
    ) -> Option<UnknownArguments> {
        let parsed = UnknownArguments::parse(value.get_ref());
        if parsed.is_none() {
            self.problems.push(
                src.at(value)
                    .problem(format!(
                        "{subject}: unknown_arguments = {:?} is not a choice",
                        value.get_ref()
                    ))
                    .help("use \"refuse\", \"drop\" or \"pass\""),
            );
        }
        parsed
    }

    fn check_mode(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        subject: &str,
    ) -> Option<CheckMode> {
        let parsed = CheckMode::parse(value.get_ref());
        if parsed.is_none() {
            self.problems.push(
                src.at(value)
                    .problem(format!(
                        "{subject}: check = {:?} is not a choice",
                        value.get_ref()
                    ))
                    .help("use \"lenient\" (the argument-check record's rules) or \"strict\" (validate against the whole input schema)"),
            );
        }
        parsed
    }

    fn flag_name(&mut self, src: &Source, flag: &Spanned<String>) -> Option<String> {
        let name = flag.get_ref();
        if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
            self.problems.push(
                src.at(flag)
                    .problem(format!("flag name {name:?} is empty or has spaces")),
            );
            return None;
        }
        Some(name.clone())
    }

    fn load_servers(&mut self) -> Vec<ServerDef> {
        let mut servers: Vec<ServerDef> = Vec::new();
        let mut seen: BTreeMap<String, Origin> = BTreeMap::new();
        for path in self.toml_files("mcp") {
            let Some((src, file)) = self.read_toml::<raw::McpFile>(&path, false) else {
                continue;
            };
            for entry in file.mcp {
                let origin = src.at(&entry);
                if let Some(server) = self.server(&src, origin, entry.into_inner(), &mut seen) {
                    servers.push(server);
                }
            }
        }
        servers
    }

    fn server(
        &mut self,
        src: &Source,
        origin: Origin,
        raw: raw::RawServer,
        seen: &mut BTreeMap<String, Origin>,
    ) -> Option<ServerDef> {
        let name = raw.name.get_ref().clone();
        let at = src.at(&raw.name);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.problems.push(
                at.problem(format!(
                    "MCP server name {name:?} is not usable in tool names"
                ))
                .help("use letters, digits, '_' and '-' only"),
            );
            return None;
        }
        if let Some(first) = seen.get(&name) {
            self.problems.push(at.problem(format!(
                "MCP server {name:?} is declared twice; first at {}:{}",
                first.file.display(),
                first.line.unwrap_or(0)
            )));
            return None;
        }
        seen.insert(name.clone(), at.clone());
        if raw.command.is_none() && raw.snapshot.is_none() {
            self.problems.push(
                origin
                    .problem(format!("MCP server {name:?} has neither command nor snapshot"))
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
                    .problem(format!("MCP server {name:?}: command is empty"))
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
        let timeout = Duration::from_secs(match raw.timeout_secs {
            Some(0) => {
                self.problems.push(
                    origin
                        .problem(format!(
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
        Some(ServerDef {
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
            listed,
            origin,
        })
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
                    Err(err) => self.problems.push(src.at(value).problem(format!(
                        "MCP server {server:?}: fixed value of {}.{} is not JSON: {err}",
                        tool.get_ref(),
                        arg.get_ref()
                    ))),
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
        let text = match crate::input::read_text(path) {
            Ok(text) => text,
            Err(ReadError::Missing) if has_command => {
                // A server not yet discovered lists nothing; `plan` warns.
                return Vec::new();
            }
            Err(err) => {
                self.problems.push(
                    at.problem(format!(
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
        match crate::snapshot::parse_lenient(&text) {
            Ok(tools) => tools,
            Err((line, message)) => {
                self.problems.push(
                    Problem::new(format!("MCP server {server:?}: snapshot {message}"))
                        .in_file(path)
                        .at_line(line)
                        .help("a snapshot is a tools/list result: {\"tools\": [{\"name\": ..., \"inputSchema\": {...}}]}"),
                );
                Vec::new()
            }
        }
    }

    fn load_profiles(&mut self) -> BTreeMap<String, Profile> {
        let mut profiles = BTreeMap::new();
        for path in self.toml_files("flags") {
            let Some((src, file)) = self.read_toml::<raw::FlagsFile>(&path, false) else {
                continue;
            };
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let flags = file
                .flags
                .iter()
                .filter_map(|f| self.flag_name(&src, f))
                .collect();
            profiles.insert(
                name,
                Profile {
                    flags,
                    origin: Origin {
                        file: path.clone(),
                        line: None,
                    },
                },
            );
        }
        profiles
    }

    fn settings(
        &mut self,
        src: Option<&Source>,
        file: raw::MusterFile,
        tools: &[ToolDef],
        servers: &[ServerDef],
    ) -> Settings {
        let fallback = Source::new(self.root.join("muster.toml"), "");
        let src = src.unwrap_or(&fallback);
        let mut caps = Caps {
            items: DEFAULT_ITEM_CAP,
            tokens: DEFAULT_TOKEN_CAP,
        };
        if let Some(raw_caps) = &file.caps {
            let raw_caps = raw_caps.get_ref();
            if let Some(items) = &raw_caps.items {
                caps.items = self
                    .positive(src, items, "caps.items")
                    .unwrap_or(caps.items);
            }
            if let Some(tokens) = &raw_caps.tokens {
                caps.tokens = self
                    .positive(src, tokens, "caps.tokens")
                    .unwrap_or(caps.tokens);
            }
        }
        let mut encoding = Encoding::default();
        if let Some(name) = file.tokens.as_ref().and_then(|t| t.encoding.as_ref()) {
            match Encoding::from_name(name.get_ref()) {
                Some(e) => encoding = e,
                None => self.problems.push(
                    src.at(name)
                        .problem(format!(
                            "tokens.encoding {:?} is not supported",
                            name.get_ref()
                        ))
                        .help("use \"o200k_base\" (gpt-4o and later) or \"cl100k_base\" (gpt-4)"),
                ),
            }
        }
        let provider = self.provider(src, file.tokens.as_ref(), encoding);
        let deferral = match &file.deferral {
            Some(d) => {
                let d = d.get_ref();
                let control_tool = d
                    .control_tool
                    .as_ref()
                    .map(|n| n.get_ref().clone())
                    .unwrap_or_else(|| DEFAULT_CONTROL_TOOL.to_string());
                if let Some(spanned) = &d.control_tool {
                    if control_tool.starts_with("mcp.") {
                        self.problems.push(
                                src.at(spanned)
                                    .problem(format!(
                                        "deferral.control_tool {control_tool:?} uses the reserved prefix \"mcp.\""
                                    ))
                                    .help("discovered tools are named mcp.<server>.<tool>; give the control tool a name of its own"),
                            );
                    }
                    if let Some(problem) = bad_name(&control_tool) {
                        self.problems.push(
                            src.at(spanned).problem(format!(
                                "deferral.control_tool {control_tool:?} {problem}"
                            )),
                        );
                    }
                    if tools.iter().any(|t| t.name == control_tool) {
                        self.problems.push(src.at(spanned).problem(format!(
                            "deferral.control_tool {control_tool:?} is also a configured tool"
                        )).help("give the control tool a name of its own"));
                    }
                }
                let mut deferral = Deferral {
                    enabled: d.enabled,
                    control_tool,
                    ..Deferral::default()
                };
                if let Some(text) = &d.description {
                    deferral.description = text.clone();
                }
                let bounds = [
                    (
                        &d.summary_tokens,
                        "summary_tokens",
                        &mut deferral.summary_tokens,
                    ),
                    (&d.max_loaded, "max_loaded", &mut deferral.max_loaded),
                    (
                        &d.max_loaded_tokens,
                        "max_loaded_tokens",
                        &mut deferral.max_loaded_tokens,
                    ),
                    (&d.per_query, "per_query", &mut deferral.per_query),
                ];
                for (value, key, slot) in bounds {
                    if let Some(value) = value
                        && let Some(v) = self.positive(src, value, &format!("deferral.{key}"))
                    {
                        *slot = v;
                    }
                }
                deferral
            }
            None => Deferral::default(),
        };
        let mut calls = CallPolicy {
            configured_unknown: UnknownArguments::Refuse,
            mcp_unknown: UnknownArguments::Refuse,
            coerce_configured: false,
            coerce_mcp: true,
            configured_check: CheckMode::Lenient,
            mcp_check: CheckMode::Strict,
        };
        if let Some(c) = &file.calls {
            if let Some(u) = &c.unknown_arguments {
                calls.configured_unknown = self
                    .unknown_arguments(src, u, "calls")
                    .unwrap_or(calls.configured_unknown);
            }
            if let Some(u) = &c.mcp_unknown_arguments {
                calls.mcp_unknown = self
                    .unknown_arguments(src, u, "calls")
                    .unwrap_or(calls.mcp_unknown);
            }
            calls.coerce_configured = c.coerce_configured.unwrap_or(calls.coerce_configured);
            calls.coerce_mcp = c.coerce_mcp.unwrap_or(calls.coerce_mcp);
            if let Some(m) = &c.configured_check {
                calls.configured_check = self
                    .check_mode(src, m, "calls.configured_check")
                    .unwrap_or(calls.configured_check);
            }
            if let Some(m) = &c.mcp_check {
                calls.mcp_check = self
                    .check_mode(src, m, "calls.mcp_check")
                    .unwrap_or(calls.mcp_check);
            }
        }
        let mut lock = LockPolicy {
            file: self.root.join("mcp.lock"),
            on_mismatch: LockMode::Cut,
        };
        let lock_explicit = file.lock.as_ref().is_some_and(|l| l.file.is_some());
        if let Some(l) = &file.lock {
            if let Some(f) = &l.file {
                lock.file = self.root.join(f);
            }
            if let Some(mode) = &l.on_mismatch {
                match mode.get_ref().as_str() {
                    "cut" => lock.on_mismatch = LockMode::Cut,
                    "warn" => lock.on_mismatch = LockMode::Warn,
                    other => self.problems.push(
                        src.at(mode)
                            .problem(format!("lock.on_mismatch {other:?} is not a choice"))
                            .help("use \"cut\" (keep the tool away until reviewed) or \"warn\""),
                    ),
                }
            }
        }
        let mut groups: Vec<Group> = Vec::new();
        for g in &file.group {
            let origin = src.at(g);
            let g = g.get_ref();
            if groups.iter().any(|other| &other.name == g.name.get_ref()) {
                self.problems.push(
                    src.at(&g.name)
                        .problem(format!("group {:?} is declared twice", g.name.get_ref())),
                );
                continue;
            }
            if let Some(problem) = bad_name(g.name.get_ref()) {
                self.problems.push(
                    src.at(&g.name)
                        .problem(format!("group name {:?} {problem}", g.name.get_ref()))
                        .help("name it with visible characters only"),
                );
            }
            if g.members.is_empty() {
                self.problems.push(
                    origin
                        .problem(format!("group {:?} has no members", g.name.get_ref()))
                        .help("list full tool names in members = [...]"),
                );
            }
            if g.defer_together && g.required {
                self.problems.push(
                    origin
                        .problem(format!(
                            "group {:?} is both required and defer_together",
                            g.name.get_ref()
                        ))
                        .help("required members are always offered, so they are never deferred; drop one of the two"),
                );
            }
            groups.push(Group {
                name: g.name.get_ref().clone(),
                required: g.required,
                members: g
                    .members
                    .iter()
                    .map(|m| (m.get_ref().clone(), src.at(m)))
                    .collect(),
                description: g.description.clone(),
                defer_together: g.defer_together,
                origin,
            });
        }
        let mut agents: Vec<Agent> = Vec::new();
        let mut default_agent: Option<usize> = None;
        let mut current_marked: BTreeMap<String, usize> = BTreeMap::new();
        for a in &file.agent {
            let origin = src.at(a);
            let a = a.get_ref();
            let name = a.name.get_ref().clone();
            let version = match &a.version {
                Some(v) if *v.get_ref() < 0 => {
                    self.problems.push(
                        src.at(v)
                            .problem(format!("agent {name:?}: version must be 0 or more")),
                    );
                    0
                }
                Some(v) => *v.get_ref() as u64,
                None => 1,
            };
            if agents
                .iter()
                .any(|other| other.name == name && other.version == version)
            {
                self.problems.push(
                    src.at(&a.name)
                        .problem(format!(
                            "agent {name:?} version {version} is declared twice"
                        ))
                        .help("give each declaration of one agent its own version"),
                );
                continue;
            }
            if a.default {
                match default_agent.map(|i| &agents[i]) {
                    Some(first) if first.name != name => self.problems.push(
                        origin
                            .problem(format!(
                                "agents {:?} and {name:?} are both marked default",
                                first.name
                            ))
                            .help("mark exactly one agent default = true"),
                    ),
                    Some(_) => {}
                    None => default_agent = Some(agents.len()),
                }
            }
            if a.current {
                if let Some(&first) = current_marked.get(&name) {
                    self.problems.push(
                        origin
                            .problem(format!(
                                "agent {name:?}: versions {} and {version} are both marked current",
                                agents[first].version
                            ))
                            .help("mark at most one version current = true; without it the highest version is current"),
                    );
                } else {
                    current_marked.insert(name.clone(), agents.len());
                }
            }
            if let Some(servers_list) = &a.servers {
                for s in servers_list {
                    if !servers.iter().any(|server| &server.name == s.get_ref()) {
                        self.problems.push(
                            src.at(s)
                                .problem(format!(
                                    "agent {name:?} names MCP server {:?}, which no mcp/*.toml declares",
                                    s.get_ref()
                                ))
                                .help("declare the server in mcp/*.toml or remove it from servers"),
                        );
                    }
                }
            }
            let named = |list: &Option<Vec<Spanned<String>>>| {
                list.as_ref()
                    .map(|l| l.iter().map(|n| (n.get_ref().clone(), src.at(n))).collect())
            };
            agents.push(Agent {
                name,
                version,
                enabled_tools: named(&a.enabled_tools),
                servers: named(&a.servers),
                origin,
            });
        }
        if agents.is_empty() {
            agents.push(Agent {
                name: "default".into(),
                version: 1,
                enabled_tools: None,
                servers: None,
                origin: Origin {
                    file: self.root.join("muster.toml"),
                    line: None,
                },
            });
        }
        // Each name's current version: the one marked, else the highest.
        let mut current_versions = BTreeMap::new();
        for (i, agent) in agents.iter().enumerate() {
            if current_marked.contains_key(&agent.name) {
                continue;
            }
            let current = current_versions.entry(agent.name.clone()).or_insert(i);
            if agents[*current].version < agent.version {
                *current = i;
            }
        }
        current_versions.extend(current_marked);
        // The default agent is its name at its current version.
        let default_name = &agents[default_agent.unwrap_or(0)].name;
        let default_agent = current_versions[default_name];
        Settings {
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            lock_explicit,
            groups,
            agents,
            default_agent,
            current_versions,
        }
    }

    /// `tokens.provider`: whose billing counts follow. Anthropic's estimate
    /// counts with `o200k_base` as its proxy, so another encoding beside it
    /// is refused.
    fn provider(
        &mut self,
        src: &Source,
        tokens: Option<&raw::RawTokens>,
        encoding: Encoding,
    ) -> Provider {
        let Some(name) = tokens.and_then(|t| t.provider.as_ref()) else {
            return Provider::default();
        };
        let Some(provider) = Provider::from_name(name.get_ref()) else {
            self.problems.push(
                src.at(name)
                    .problem(format!(
                        "tokens.provider {:?} is not supported",
                        name.get_ref()
                    ))
                    .help("use \"openai\" or \"anthropic\""),
            );
            return Provider::default();
        };
        if provider == Provider::Anthropic && encoding != crate::count::anthropic::PROXY {
            self.problems.push(
                src.at(name)
                    .problem(format!(
                        "tokens.provider \"anthropic\" counts with {} as its proxy, not {}",
                        crate::count::anthropic::PROXY.name(),
                        encoding.name()
                    ))
                    .help("remove tokens.encoding, or set it to \"o200k_base\""),
            );
        }
        provider
    }

    fn positive(&mut self, src: &Source, value: &Spanned<i64>, key: &str) -> Option<u32> {
        match u32::try_from(*value.get_ref()) {
            Ok(v) if v > 0 => Some(v),
            _ => {
                self.problems.push(
                    src.at(value)
                        .problem(format!("{key} = {} is out of range", value.get_ref()))
                        .help("use a whole number from 1 to 4294967295"),
                );
                None
            }
        }
    }
}

struct Settings {
    caps: Caps,
    encoding: Encoding,
    provider: Provider,
    deferral: Deferral,
    calls: CallPolicy,
    lock: LockPolicy,
    lock_explicit: bool,
    groups: Vec<Group>,
    agents: Vec<Agent>,
    default_agent: usize,
    current_versions: BTreeMap<String, usize>,
}

impl Default for Deferral {
    fn default() -> Self {
        Deferral {
            enabled: false,
            control_tool: DEFAULT_CONTROL_TOOL.to_string(),
            description: "Find and load tools that are available but not listed here. Say \
                          what you need in a few words, or give exact names. Loaded tools \
                          stay for the rest of the session; call them directly from your \
                          next step."
                .to_string(),
            summary_tokens: 200,
            max_loaded: 8,
            max_loaded_tokens: 4000,
            per_query: 3,
        }
    }
}

/// Why `name` cannot be a tool name, if it cannot.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.chars().any(char::is_whitespace) {
        Some("contains whitespace or a control character")
    } else if let Some((_, _, hidden)) = crate::names::first_hidden(name) {
        Some(match hidden {
            Hidden::Control => "contains whitespace or a control character",
            Hidden::Bidi => "contains a bidirectional control character",
            Hidden::Invisible => "contains an invisible character",
        })
    } else {
        None
    }
}

pub use crate::canon::{input_schema_problem, kind_of};

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `policy` fuzz target: an empty policy directory was
    /// refused with a problem that named no file.
    #[test]
    fn an_empty_policy_directory_is_refused_naming_where_tools_go() {
        let dir = tempfile::tempdir().unwrap();
        let err = Policy::load(dir.path()).unwrap_err();
        assert_eq!(err.problems().len(), 1, "{err}");
        assert_eq!(
            err.problems()[0].file.as_deref(),
            Some(dir.path().join("tools").as_path())
        );
    }

    /// Root reads a `chmod 000` directory, so the integration tests cannot
    /// make one; the mapping of a refused listing is pinned here.
    #[test]
    fn a_directory_that_cannot_be_listed_is_a_problem_naming_it() {
        let err = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let dir = Path::new("policies/mcp");
        let problem = unreadable_dir(dir, "mcp", &err);
        assert_eq!(problem.file.as_deref(), Some(dir));
        assert!(problem.help.is_some());
        assert!(
            problem
                .message
                .starts_with("cannot read the mcp/ directory")
        );
    }
}
