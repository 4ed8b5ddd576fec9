//! `why`'s answer as data: where the tool ended, the decision's facts, the
//! context that explains them, and each concrete change that would let it
//! in. `muster why --format json` prints an [`Explanation`].

use super::{Code, Reason, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The answer for one tool name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    /// The name asked about.
    pub name: String,
    /// Where it ended, or `unknown`.
    pub status: WhyStatus,
    /// The decision's code; `None` for an unknown name.
    pub code: Option<Code>,
    /// The decision's facts; `None` for an unknown name.
    pub facts: Option<Reason>,
    /// 1-based place in the priority order, when it was ranked.
    pub rank: Option<u32>,
    /// Tokens of its definition, when counted.
    pub tokens: Option<u32>,
    /// Its priority tier, e.g. `required discovered, priority 0`.
    pub tier: Option<String>,
    /// For an item-cap miss: every offered tool, all ranked ahead of it.
    pub outranked_by: Vec<String>,
    /// For a token-cap miss: smaller tools ranked after it that were offered.
    pub offered_after: Vec<String>,
    /// For a deferred tool: the control tool that loads it.
    pub load_with: Option<String>,
    /// One line: the decision and its main fact (rendered).
    pub summary: String,
    /// The reason chain as sentences, most important first (rendered).
    pub reasons: Vec<String>,
    /// What would change the outcome, each a concrete edit.
    pub to_fit: Vec<Remedy>,
    /// For an unknown name: the closest registered names.
    pub closest: Vec<String>,
}

/// Where the tool asked about ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum WhyStatus {
    /// Offered.
    Offered,
    /// Deferred behind the control tool.
    Deferred,
    /// Cut.
    Cut,
    /// No candidate has the name.
    Unknown,
}

impl WhyStatus {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            WhyStatus::Offered => "offered",
            WhyStatus::Deferred => "deferred",
            WhyStatus::Cut => "cut",
            WhyStatus::Unknown => "unknown",
        }
    }
}

impl From<Status> for WhyStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Offered => WhyStatus::Offered,
            Status::Deferred => WhyStatus::Deferred,
            Status::Cut => WhyStatus::Cut,
        }
    }
}

/// One change that would let a tool in, tagged by `action`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Remedy {
    /// Raise the item cap, tokens permitting.
    RaiseItemCap {
        /// The cap that lets it in.
        to: u32,
    },
    /// These slot-holders give up their slots.
    Displace {
        /// The lowest-ranked offered tools that are not required.
        tools: Vec<String>,
    },
    /// Put it in a required group, or rank it above the tools it must pass.
    RaisePriority,
    /// Make its definition smaller.
    ShrinkDefinition {
        /// By this many tokens.
        tokens: u32,
    },
    /// Raise the token cap.
    RaiseTokenCap {
        /// The cap that lets it in.
        to: u32,
    },
    /// Turn its flag on.
    TurnOnFlag {
        /// The flag.
        flag: String,
    },
    /// Enable it in the agent.
    Enable {
        /// The agent.
        agent: String,
        /// For a discovered tool left out by `servers`: the server to add.
        server: Option<String>,
    },
    /// Rename one of the tools that share its name.
    Rename,
    /// Have the server fix its inputSchema.
    FixSchema,
    /// Remove it from the server block's `deny`.
    Undeny {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Add it to the server block's `allow`.
    Allow {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Remove fixed arguments the schema does not declare from `params`.
    Unfix {
        /// The arguments.
        arguments: Vec<String>,
    },
    /// List required arguments in `only`, or fix them in `params`.
    Reach {
        /// The arguments.
        arguments: Vec<String>,
    },
    /// Have the server rename the tool: its name hides characters.
    RenameOnServer {
        /// The server block.
        server: String,
    },
    /// Review the changed definition, then accept it with `muster lock`.
    Relock {
        /// The server block.
        server: String,
    },
    /// Register it, or discover the server that lists it.
    Register,
    /// Rename it or the tool whose provider name it shares, or change the
    /// policy's `[names] separator`, so the two are sent apart.
    SpellApart {
        /// The higher-ranked tool with the same provider name.
        other: String,
    },
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remedy::RaiseItemCap { to } => write!(
                f,
                "raise the item cap to {to} (--item-cap {to}), tokens permitting"
            ),
            Remedy::Displace { tools } => write!(
                f,
                "drop {} from the roster (the lowest-ranked slot-holder{} not required)",
                tools.join(", "),
                if tools.len() > 1 { "s" } else { "" }
            ),
            Remedy::RaisePriority => f.write_str(
                "add it to a required group, or give it a higher priority than the tools it must pass",
            ),
            Remedy::ShrinkDefinition { tokens } => {
                write!(f, "make its definition {tokens} tokens smaller")
            }
            Remedy::RaiseTokenCap { to } => {
                write!(f, "raise the token cap to {to} (--token-cap {to})")
            }
            Remedy::TurnOnFlag { flag } => write!(
                f,
                "turn its flag on: --flag {flag}, or add {flag} to the flag profile"
            ),
            Remedy::Enable { agent, server } => match server {
                Some(server) => write!(f, "add {server} to agent {agent}'s servers"),
                None => write!(f, "name it in agent {agent}'s enabled_tools"),
            },
            Remedy::Rename => f.write_str("rename one of the tools that share the name"),
            Remedy::FixSchema => f.write_str(
                "fix the server's inputSchema: it must be a JSON object with type \"object\"",
            ),
            Remedy::Undeny { server, tool } => {
                write!(f, "remove {tool} from server block {server}'s deny list")
            }
            Remedy::Allow { server, tool } => {
                write!(f, "add {tool} to server block {server}'s allow list")
            }
            Remedy::Unfix { arguments } => write!(
                f,
                "remove {} from params, or have the server declare {}",
                arguments.join(", "),
                if arguments.len() > 1 { "them" } else { "it" }
            ),
            Remedy::Reach { arguments } => write!(
                f,
                "list {} in only, or fix {} in params",
                arguments.join(", "),
                if arguments.len() > 1 { "them" } else { "it" }
            ),
            Remedy::RenameOnServer { server } => write!(
                f,
                "have server {server} rename the tool; a name must hold no control, bidi or invisible character"
            ),
            Remedy::Relock { server } => write!(
                f,
                "review the changed definition, then accept it with `muster lock --server {server}`"
            ),
            Remedy::Register => {
                f.write_str("register it in tools/*.toml, or discover the server that lists it")
            }
            Remedy::SpellApart { other } => write!(
                f,
                "rename it or {other} so their provider names differ, or set another [names] separator in muster.toml"
            ),
        }
    }
}

/// The explanation as text lines for a terminal.
impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary)?;
        for reason in &self.reasons {
            writeln!(f, "  because: {reason}")?;
        }
        for fix in &self.to_fit {
            writeln!(f, "  to fit:  {fix}")?;
        }
        if !self.closest.is_empty() {
            writeln!(f, "  did you mean: {}", self.closest.join(", "))?;
        }
        Ok(())
    }
}
