//! Policies: reads a policy directory and validates it into a [`Policy`],
//! with the snapshots and the lock held beside it in [`Inputs`].
//!
//! Layout (every part optional except at least one tool or server):
//!
//! ```text
//! policies/
//!   muster.toml         caps, tokenizer, deferral, groups, agents, call policy
//!   tools/*.toml        [[tool]] configured tools
//!   mcp/*.toml          [[mcp]] servers and their narrowing
//!   mcp/*.json          snapshots: what each server listed (`discover`)
//!   mcp.lock            the reviewed definitions (`muster lock`)
//!   flags/<profile>.toml  flags = [...] a profile turns on
//! ```
//!
//! Loading is two-phase: each file is parsed into raw structs that keep
//! spans and refuse unknown keys, then every rule is checked and *all*
//! problems are returned at once, each with file and line. This module
//! decides what a policy means; it never decides what is offered. The
//! [`Policy`] is what the TOML says; what discovery recorded ([`Listings`])
//! and what review accepted (the lock) change on their own schedule, so
//! they are held beside it, not inside it.

mod agents;
mod assemble;
mod auth;
pub use auth::{
    ApiKey, AuthPolicy, CallLimits, DEFAULT_JWKS_REFETCH_SECS, DEFAULT_LEEWAY_SECS,
    DEFAULT_LIMIT_CALLERS, Grant, GrantMatch, Issuer, JwksSource, MAX_KEY_NAME, MAX_LEEWAY_SECS,
    MetricsAccess, is_key_name,
};
mod chunks;
mod finite;
mod inputs;
mod load;
mod raw;
mod reach;
mod results;
pub use reach::SECRET_VARIABLES;
pub use results::{OutputMismatchMode, ResultPolicy};
mod oauth;
pub use oauth::{ClientAuth, UpstreamOAuth};
mod relay;
pub use relay::Relayed;
mod servers;
mod settings;
mod tools;
pub(crate) use tools::schema_problem;
mod vars;

use crate::contract::CheckMode;
pub use crate::contract::UnknownArguments;
use crate::error::Problem;
use crate::names::Hidden;
use crate::narrow::Narrowing;
pub use crate::snapshot::ListedTool;
use crate::tokens::{Encoding, Provider};
pub(crate) use inputs::registered_names;
pub use inputs::{Inputs, Listings};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
pub(crate) use vars::expand_with;
pub use vars::{expand_vars, vars_named};

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

    /// A problem of kind `code` (one of [`crate::problem_code::ALL`])
    /// located at this origin.
    pub fn coded(&self, code: &'static str, message: impl Into<String>) -> Problem {
        self.problem(message).with_code(code)
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

/// What the gateway does with an open chat whose pinned tools a reloaded
/// (reviewed) policy changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatsMode {
    /// Plan the chat again for its agent, keep its loads that still hold,
    /// and tell its client the list changed (`notifications/tools/list_changed`).
    Follow,
    /// Refuse every request of the chat with `tool-pin-mismatch` until a
    /// new chat is started.
    Refuse,
}

/// The lock of discovered tool definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockPolicy {
    /// The lock file, relative paths resolved against the policy directory.
    pub file: PathBuf,
    /// What a mismatch does.
    pub on_mismatch: LockMode,
    /// What open chats do when a reviewed change reaches their pins.
    pub chats: ChatsMode,
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
    /// Whether loads stay within the caps (`deferral.loads`).
    pub loads: Loads,
}

/// `deferral.loads`: how far loads may take a chat's offer past the caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loads {
    /// The planner reserves `max_loaded` items and `max_loaded_tokens`
    /// tokens for loads, and a load that would pass the caps is refused.
    WithinCaps,
    /// Loads may pass the caps by at most `items` items and `tokens`
    /// tokens (`deferral.beyond_items` / `beyond_tokens`); `None` is
    /// unbounded. The default, with both unbounded.
    BeyondCaps {
        /// `deferral.beyond_items`.
        items: Option<u32>,
        /// `deferral.beyond_tokens`.
        tokens: Option<u32>,
    },
}

impl Default for Loads {
    fn default() -> Self {
        Loads::BeyondCaps {
            items: None,
            tokens: None,
        }
    }
}

impl Loads {
    /// The most items and tokens the offer (pinned and loaded) may reach
    /// under `caps`; `None` where unbounded.
    pub fn limits(self, caps: Caps) -> (Option<u32>, Option<u32>) {
        match self {
            Loads::WithinCaps => (Some(caps.items), Some(caps.tokens)),
            Loads::BeyondCaps { items, tokens } => (
                items.map(|n| caps.items.saturating_add(n)),
                tokens.map(|n| caps.tokens.saturating_add(n)),
            ),
        }
    }

    /// Its name in `muster.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Loads::WithinCaps => "within-caps",
            Loads::BeyondCaps { .. } => "beyond-caps",
        }
    }
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
    /// MCP servers the agent uses; `None` means all ([`Agent::uses`]).
    pub servers: Option<Vec<(String, Origin)>>,
    /// Whose billing token counts its plans follow when the request names
    /// none (`None`: the policy's `tokens.provider`).
    pub provider: Option<Provider>,
    /// Its rules over discovered tools' safety hints.
    pub hints: HintRules,
    /// The most tokens one tool result may cost in its chats (docs/results.md).
    pub max_result_tokens: Option<u32>,
    /// Where it was declared.
    pub origin: Origin,
}

/// `deny_hints` and `require_hints` of an agent or a server block: which
/// discovered tools are cut by their safety hints (MCP annotations, each
/// read at MCP's default when not declared).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HintRules {
    /// A tool with any of these is cut.
    pub deny: Vec<crate::contract::Hint>,
    /// A tool without every one of these is cut.
    pub require: Vec<crate::contract::Hint>,
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
    pub input_schema: crate::schema::Schema,
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
    /// The stdio command `discover` starts (never together with `url`).
    pub command: Option<Vec<String>>,
    /// The Streamable HTTP endpoint (`http://` or `https://`) `discover`
    /// reaches instead of starting a command.
    pub url: Option<String>,
    /// HTTP headers sent to `url`, values as written: a `${VAR}` in them is
    /// filled by [`expand_vars`] when the server is reached, never here.
    pub headers: BTreeMap<String, String>,
    /// OAuth client credentials muster gets `url`'s access token with.
    pub oauth: Option<UpstreamOAuth>,
    /// Working directory for `command`, inside the policy directory
    /// (written relative to it); muster's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Extra environment for the command, values as written (`${VAR}`
    /// filled by [`expand_vars`] when the server is started).
    pub env: BTreeMap<String, String>,
    /// The recorded `tools/list` result `plan` reads (what it lists is in
    /// [`Inputs::listings`]).
    pub snapshot: Option<PathBuf>,
    /// `timeout_secs`: how long a whole discovery of the server may take,
    /// and how long each call forwarded to it (gateway, `muster call`,
    /// `/v1/call`) waits for its answer.
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
    /// Its rules over its tools' safety hints.
    pub hints: HintRules,
    /// The most tokens one result of its tools may cost (docs/results.md).
    pub max_result_tokens: Option<u32>,
    /// The requests of its own the server may send the chat's client
    /// through muster (`relay`), in [`Relayed::ALL`]'s order; none by default.
    pub relay: Vec<Relayed>,
    /// Whether the gateway passes its resources through (`resources`,
    /// default on; docs/gateway.md).
    pub resources: bool,
    /// Whether the gateway passes its prompts through (`prompts`, default
    /// on; docs/gateway.md).
    pub prompts: bool,
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
    /// The definition lock's settings (its entries are [`Inputs::lock`]).
    pub lock: LockPolicy,
    /// `[results]`: result budgets and `outputSchema` checks.
    pub results: ResultPolicy,
    /// How names are spelt for providers (`[names]`).
    pub names: crate::provider::NamePolicy,
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
    /// `[auth]`: who may call `muster serve` (none: anyone who reaches it).
    pub auth: Option<AuthPolicy>,
}

impl Agent {
    /// Whether the agent uses MCP server `server`: its `servers` list names
    /// it, or it has none. The one rule for which servers an agent's
    /// tools, resources and prompts come from.
    pub fn uses(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|list| list.iter().any(|(s, _)| s == server))
    }
}

impl Policy {
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
}

/// The roster name of tool `tool` on server `server`.
pub fn mcp_name(server: &str, tool: &str) -> String {
    format!("mcp.{server}.{tool}")
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
            loads: Loads::default(),
        }
    }
}

/// The code of the problem [`bad_name`] finds with `name`.
fn bad_name_code(name: &str) -> &'static str {
    match crate::names::too_long(name) {
        Some(_) => crate::problem_code::NAME_TOO_LONG,
        None => crate::problem_code::NAME_INVALID,
    }
}

/// Why `name` cannot be a tool name, if it cannot. Quote the name with
/// [`crate::names::shown`]: the reason may be that it is too long to quote
/// whole.
fn bad_name(name: &str) -> Option<std::borrow::Cow<'static, str>> {
    if let Some(long) = crate::names::too_long(name) {
        return Some(long.to_string().into());
    }
    let reason = if name.is_empty() {
        "is empty"
    } else if name.chars().any(char::is_whitespace) {
        "contains whitespace or a control character"
    } else {
        match crate::names::first_hidden(name)?.2 {
            Hidden::Control => "contains whitespace or a control character",
            Hidden::Bidi => "contains a bidirectional control character",
            Hidden::Invisible => "contains an invisible character",
        }
    };
    Some(reason.into())
}

pub use crate::canon::{input_schema_problem, kind_of};

/// Loads a policy of the smallest settings whose one tools file,
/// `tools/t.toml`, holds `tools`: for the tools loader's tests.
#[cfg(test)]
pub(crate) fn load_with_tools_file(tools: &str) -> Result<Inputs, crate::Error> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |path: &str, text: &str| {
        std::fs::write(dir.path().join(path), text).expect("the test policy is written")
    };
    write(
        "muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\n[[agent]]\nname = \"chat\"\nversion = 1\n",
    );
    std::fs::create_dir(dir.path().join("tools")).expect("tools/ is made");
    write("tools/t.toml", tools);
    Inputs::load(dir.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `policy` fuzz target: an empty policy directory was
    /// refused with a problem that named no file.
    #[test]
    fn an_empty_policy_directory_is_refused_naming_where_tools_go() {
        let dir = tempfile::tempdir().unwrap();
        let err = Inputs::load(dir.path()).unwrap_err();
        assert_eq!(err.problems().len(), 1, "{err}");
        assert_eq!(
            err.problems()[0].file.as_deref(),
            Some(dir.path().join("tools").as_path())
        );
    }
}
