//! Why a candidate was offered, deferred or cut: its code with the facts
//! behind it. The plan JSON carries one per candidate (`facts`), `why` and
//! gates render it, and its `Display` is the one sentence every command
//! shows for that decision.

use super::Code;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A decision's code and facts, tagged by `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Reason {
    /// Offered as a member of a required group.
    Required {
        /// The group.
        group: String,
        /// Tokens of its definition.
        tokens: u32,
    },
    /// Offered: it fit both caps at its place.
    Fits {
        /// Tokens of its definition.
        tokens: u32,
        /// Its 1-based place in the priority order.
        rank: u32,
    },
    /// The control tool, reserved before anything else.
    ControlTool {
        /// Tokens reserved: its base definition and the summary budget.
        reserved: u32,
        /// Tokens of its definition as offered, summary included.
        tokens: u32,
    },
    /// Loaded into an agent session through the control tool.
    Loaded,
    /// Every slot was taken by higher-ranked tools.
    ItemCap {
        /// Offered tools ranked ahead of it.
        offered_ahead: u32,
        /// The item cap that would let it in, tokens permitting.
        item_cap_needed: u32,
        /// Offered tools, lowest-ranked first and not required, that would
        /// each have to give up a slot for it at this cap.
        displace: Vec<String>,
        /// Slots held back for loads (`deferral.loads = "within-caps"`):
        /// `deferral.max_loaded`; absent when none are.
        #[serde(default, skip_serializing_if = "is_zero")]
        reserved_for_loads: u32,
    },
    /// Its definition was larger than the tokens left when its turn came.
    TokenCap {
        /// Its definition's tokens.
        tokens: u32,
        /// Tokens left when its turn came.
        room: u32,
        /// `tokens - room`.
        short: u32,
        /// The token cap that would let it in at the same place.
        token_cap_needed: u32,
        /// Tokens held back for loads (`deferral.loads = "within-caps"`):
        /// `deferral.max_loaded_tokens`; absent when none are.
        #[serde(default, skip_serializing_if = "is_zero")]
        reserved_for_loads: u32,
    },
    /// The flag its (or its server's) `when` names is off.
    FlagOff {
        /// The flag.
        flag: String,
        /// The server, when the server block's `when` is the one.
        server: Option<String>,
    },
    /// The agent does not enable it.
    NotEnabled {
        /// The agent.
        agent: String,
        /// Which rule leaves it out.
        by: Enabling,
        /// The server, for a discovered tool left out by `servers`.
        server: Option<String>,
    },
    /// An earlier candidate has the same name.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// Its input schema cannot be a tool's input schema.
    InvalidSchema {
        /// What is wrong with it.
        problem: SchemaProblem,
    },
    /// The server block's `deny` names it.
    Denied {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// The server block's `allow` does not name it.
    NotAllowed {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// `params` fixes arguments its schema does not declare.
    FixedUndeclared {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The undeclared arguments.
        arguments: Vec<String>,
    },
    /// Its schema requires arguments neither `only` lists nor `params` fixes.
    RequiredUnreachable {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The unreachable arguments.
        arguments: Vec<String>,
    },
    /// Its name holds a control, bidirectional or invisible character, so
    /// it would not read as what it is.
    InvalidName {
        /// The server that listed it.
        server: String,
        /// The tool's name on the server, each hidden character written as
        /// `\u{XXXX}` (the candidate is named with this form too).
        tool: String,
        /// The first hidden character, as `U+XXXX`.
        character: String,
        /// Which kind of hidden character it is.
        hidden: Hidden,
        /// Its 0-based place among the name's characters.
        position: usize,
    },
    /// Its definition differs from the lock.
    LockMismatch {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The locked hash; `None` when the lock does not have the tool.
        locked: Option<String>,
        /// The hash of the definition listed now.
        current: String,
        /// The lock file.
        lock_file: String,
        /// What kind of change it is ([`crate::contract::LockChange`]);
        /// empty (and absent from the JSON) when the lock lacks the tool.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<crate::contract::LockChange>,
    },
    /// A policy rule over safety hints keeps it away: `deny_hints` names a
    /// hint it has, or `require_hints` one it lacks (each read at MCP's
    /// default when the tool does not declare it).
    HintDenied {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The hint.
        hint: Hint,
        /// `deny` (it has the hint) or `require` (it lacks it).
        rule: HintRule,
        /// The agent whose rule it is; `None` for the server block's.
        agent: Option<String>,
    },
    /// A higher-ranked tool has the same provider name.
    ProviderNameCollision {
        /// The provider name both would be sent as.
        provider_name: String,
        /// The muster name of the higher-ranked tool that keeps it.
        other: String,
    },
    /// A configured tool in a plan for the MCP gateway, which offers MCP
    /// tools only: the host offers and runs it itself.
    LeftToHost,
}

/// Which rule leaves a tool out of an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Enabling {
    /// `default_roster = false` and the agent has no `enabled_tools`.
    DefaultRoster,
    /// The agent's `enabled_tools` does not name it.
    EnabledTools,
    /// The agent's `servers` does not name its server.
    Servers,
}

/// What is wrong with an input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SchemaProblem {
    /// It is not a JSON object.
    NotAnObject {
        /// The JSON kind it is (`a string`, `an array`, ...).
        found: String,
    },
    /// Its `type` is not `"object"`.
    NotObjectType {
        /// The `type` as JSON text.
        found: String,
    },
    /// Its `properties` is not an object.
    PropertiesNotObject,
    /// It nests deeper than muster accepts.
    TooDeep {
        /// Its depth.
        depth: usize,
        /// The most accepted.
        max: usize,
    },
}

/// A kind of character that makes a name read differently from what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Hidden {
    /// A control character (Unicode Cc, such as a newline or escape) or a
    /// line or paragraph separator: it breaks text output.
    Control,
    /// A bidirectional control (U+202A–U+202E, U+2066–U+2069, U+200E,
    /// U+200F, U+061C): it reorders what is shown.
    Bidi,
    /// A character that shows nothing (zero-width characters, soft hyphen,
    /// variation selectors, tags, other format characters and fillers): two
    /// names that look the same can differ by it.
    Invisible,
}

impl Hidden {
    /// `control`, `bidi` or `invisible`.
    pub fn as_str(self) -> &'static str {
        match self {
            Hidden::Control => "control",
            Hidden::Bidi => "bidi",
            Hidden::Invisible => "invisible",
        }
    }
}

impl fmt::Display for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hidden::Control => "a control character",
            Hidden::Bidi => "a bidirectional control",
            Hidden::Invisible => "an invisible character",
        })
    }
}

impl Reason {
    /// The bare code.
    pub fn code(&self) -> Code {
        match self {
            Reason::Required { .. } => Code::Required,
            Reason::Fits { .. } => Code::Fits,
            Reason::ControlTool { .. } => Code::ControlTool,
            Reason::Loaded => Code::Loaded,
            Reason::ItemCap { .. } => Code::ItemCap,
            Reason::TokenCap { .. } => Code::TokenCap,
            Reason::FlagOff { .. } => Code::FlagOff,
            Reason::NotEnabled { .. } => Code::NotEnabled,
            Reason::DuplicateName { .. } => Code::DuplicateName,
            Reason::InvalidSchema { .. } => Code::InvalidSchema,
            Reason::Denied { .. } => Code::Denied,
            Reason::NotAllowed { .. } => Code::NotAllowed,
            Reason::FixedUndeclared { .. } => Code::FixedUndeclared,
            Reason::RequiredUnreachable { .. } => Code::RequiredUnreachable,
            Reason::InvalidName { .. } => Code::InvalidName,
            Reason::LockMismatch { .. } => Code::LockMismatch,
            Reason::HintDenied { .. } => Code::HintDenied,
            Reason::ProviderNameCollision { .. } => Code::ProviderNameCollision,
            Reason::LeftToHost => Code::LeftToHost,
        }
    }
}

/// The sentence for a required tool that is not offered, shared by the
/// plan's warning and the gate's failure.
pub(crate) fn required_not_offered(
    f: &mut fmt::Formatter<'_>,
    tool: &str,
    status: super::Status,
    reason: &Reason,
) -> fmt::Result {
    write!(
        f,
        "required tool {tool} is {} ({}): {reason}",
        status.as_str(),
        reason.code()
    )
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Required { group, tokens } => {
                write!(f, "required by group {group}; {tokens} tokens")
            }
            Reason::Fits { tokens, rank } => write!(f, "{tokens} tokens at rank {rank}"),
            Reason::ControlTool { reserved, tokens } => write!(
                f,
                "reserved first ({reserved} tokens with its summary budget): it loads deferred tools; offered at {tokens} tokens"
            ),
            Reason::Loaded => f.write_str(Code::Loaded.description()),
            Reason::ItemCap {
                offered_ahead,
                item_cap_needed,
                displace,
                reserved_for_loads,
            } => {
                if *reserved_for_loads == 0 {
                    write!(
                        f,
                        "all {offered_ahead} slots went to higher-ranked tools; it needs an item cap of {item_cap_needed}"
                    )?;
                } else {
                    write!(
                        f,
                        "{offered_ahead} slots went to higher-ranked tools and {reserved_for_loads} are reserved for loads; it needs an item cap of {item_cap_needed}"
                    )?;
                }
                match displace.as_slice() {
                    [] => Ok(()),
                    [one] => write!(f, ", or {one} to give up its slot"),
                    [first, .., last] => write!(
                        f,
                        ", or the {} lowest-ranked slot-holders that are not required ({first} up to {last}) to give up theirs",
                        displace.len()
                    ),
                }
            }
            Reason::TokenCap {
                tokens,
                room,
                short,
                token_cap_needed,
                reserved_for_loads,
            } => {
                if *reserved_for_loads > 0 {
                    write!(f, "{reserved_for_loads} tokens are reserved for loads; ")?;
                }
                if *room == 0 {
                    write!(
                        f,
                        "{tokens} tokens with none left; it needs a token cap of {token_cap_needed}"
                    )
                } else {
                    write!(
                        f,
                        "{tokens} tokens with {room} left: {short} short; it needs a token cap of {token_cap_needed} or a definition {short} tokens smaller"
                    )
                }
            }
            Reason::FlagOff { flag, server } => match server {
                Some(server) => write!(
                    f,
                    "server {server} exists only when flag {flag} is on; it is off in this selection"
                ),
                None => write!(
                    f,
                    "exists only when flag {flag} is on; it is off in this selection"
                ),
            },
            Reason::NotEnabled { agent, by, server } => match by {
                Enabling::EnabledTools => write!(
                    f,
                    "agent {agent} lists enabled_tools and this tool is not among them"
                ),
                Enabling::DefaultRoster => write!(
                    f,
                    "registered, but agent {agent}'s default roster leaves it out (default_roster = false); name it in enabled_tools to enable it"
                ),
                Enabling::Servers => write!(
                    f,
                    "agent {agent} lists servers and {} is not among them",
                    server.as_deref().unwrap_or("its server")
                ),
            },
            Reason::DuplicateName { name } => {
                write!(f, "an earlier candidate is already named {name:?}")
            }
            Reason::InvalidSchema { problem } => write!(f, "its input schema {problem}"),
            Reason::Denied { server, tool } => {
                write!(f, "server block {server}'s deny list names {tool}")
            }
            Reason::NotAllowed { server, tool } => {
                write!(f, "server block {server}'s allow list does not name {tool}")
            }
            Reason::FixedUndeclared {
                tool, arguments, ..
            } => write!(
                f,
                "{tool}: `params` fixes {} which the server's schema does not declare",
                quoted(arguments)
            ),
            Reason::RequiredUnreachable {
                tool, arguments, ..
            } => write!(
                f,
                "{tool}: the server's schema requires {} which `only` does not list and `params` does not fix",
                quoted(arguments)
            ),
            Reason::InvalidName {
                server,
                tool,
                character,
                hidden,
                position,
            } => write!(
                f,
                "server {server} lists a tool named {tool}, with {hidden} ({character}) at character {position}; names must read as what they are"
            ),
            Reason::HintDenied {
                server,
                hint,
                rule,
                agent,
                ..
            } => {
                let whose = match agent {
                    Some(agent) => format!("agent {agent}"),
                    None => format!("server block {server}"),
                };
                match rule {
                    HintRule::Deny => write!(
                        f,
                        "{whose} denies {} tools (deny_hints), and this one is",
                        hint.as_str()
                    ),
                    HintRule::Require => write!(
                        f,
                        "{whose} requires {} tools (require_hints), and this one does not say it is",
                        hint.as_str()
                    ),
                }
            }
            Reason::LockMismatch {
                locked,
                current,
                lock_file,
                changes,
                ..
            } => match locked {
                Some(_) if changes.contains(&crate::contract::LockChange::NeedsRelock) => write!(
                    f,
                    "it is locked in {lock_file} by a version 1 entry, which left out its annotations, title, output schema and _meta; review it, then run `muster lock`"
                ),
                Some(locked) => write!(
                    f,
                    "its definition changed since it was locked ({}; {locked}, now {current}); review it, then run `muster lock`",
                    changes
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => write!(
                    f,
                    "it is not in the lock {lock_file}; review it, then run `muster lock`"
                ),
            },
            Reason::ProviderNameCollision {
                provider_name,
                other,
            } => write!(
                f,
                "providers would be sent it as {provider_name}, the name {other} (ranked ahead of it) already has; rename one of them, or set a different [names] separator"
            ),
            Reason::LeftToHost => write!(
                f,
                "a configured tool: the MCP gateway offers MCP tools only, so the host offers and runs it itself"
            ),
        }
    }
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaProblem::NotAnObject { found } => {
                write!(f, "is {found}, not a JSON Schema object")
            }
            SchemaProblem::NotObjectType { found } => {
                write!(f, "has type {found}; tool arguments must be an object")
            }
            SchemaProblem::PropertiesNotObject => {
                f.write_str("has \"properties\" that is not an object")
            }
            SchemaProblem::TooDeep { depth, max } => {
                write!(f, "nests {depth} levels deep; at most {max} are accepted")
            }
        }
    }
}

/// A safety hint a policy selects discovered tools by (`deny_hints`,
/// `require_hints`), from MCP's tool annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Hint {
    /// `read-only`: `readOnlyHint` true (MCP's default: false).
    ReadOnly,
    /// `destructive`: not read-only and `destructiveHint` true (MCP's
    /// default: true).
    Destructive,
    /// `idempotent`: `idempotentHint` true (MCP's default: false).
    Idempotent,
    /// `open-world`: `openWorldHint` true (MCP's default: true).
    OpenWorld,
}

impl Hint {
    /// Every hint, in order.
    pub const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read-only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open-world",
        }
    }

    /// The hint called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

/// Which rule over a hint cut a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum HintRule {
    /// `deny_hints`: the tool has the hint.
    Deny,
    /// `require_hints`: the tool lacks the hint.
    Require,
}
