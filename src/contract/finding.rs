//! Findings: the typed, stable vocabulary every decision and warning is
//! reported in. `plan`, `why` and `gate` render these codes; none of them
//! invents its own wording for a decision.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a candidate was offered, deferred or cut. Serialized kebab-case;
/// the strings are a stable contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// Offered: a member of a required group, placed before everything else.
    Required,
    /// Offered: it fit both caps at its place in the priority order.
    Fits,
    /// Offered: the control tool that loads deferred tools; its slot and
    /// tokens are reserved before anything else is placed.
    ControlTool,
    /// Offered in an agent session: deferred when it was planned, then
    /// loaded through the control tool.
    Loaded,
    /// Deferred or cut: every slot was taken by higher-ranked tools.
    ItemCap,
    /// Deferred or cut: its definition was larger than the tokens left when
    /// its turn came. Later, smaller tools may still be offered.
    TokenCap,
    /// Cut: the flag its `when` names is off in this selection.
    FlagOff,
    /// Cut: the agent does not enable it (not in its default roster or
    /// `enabled_tools`, or its server is not in the agent's `servers`).
    NotEnabled,
    /// Cut: an earlier candidate already has this name.
    DuplicateName,
    /// Cut: its input schema is not a JSON Schema object.
    InvalidSchema,
    /// Cut: the server block's `deny` names it.
    Denied,
    /// Cut: the server block has an `allow` list that does not name it.
    NotAllowed,
    /// Cut: `params` fixes an argument its schema does not declare.
    FixedUndeclared,
    /// Cut: its schema requires an argument `only` does not list and
    /// `params` does not fix, so every call would be refused.
    RequiredUnreachable,
    /// Cut: its name holds a control, bidirectional or invisible character
    /// (a newline, U+202E, U+200B, …), so it would not read as what it is.
    InvalidName,
    /// Cut (or offered with a warning, per `lock.on_mismatch`): its
    /// definition differs from the one recorded in the lock.
    LockMismatch,
    /// Cut: a tool ranked ahead of it has the same provider name (the name
    /// OpenAI and Anthropic are sent), so a call could not say which.
    ProviderNameCollision,
    /// Cut: a configured tool, in a plan for the MCP gateway. The gateway
    /// offers MCP tools only; the host runs its own tools itself.
    LeftToHost,
}

impl Code {
    /// Every code, in documentation order.
    pub const ALL: [Code; 18] = [
        Code::Required,
        Code::Fits,
        Code::ControlTool,
        Code::Loaded,
        Code::ItemCap,
        Code::TokenCap,
        Code::FlagOff,
        Code::NotEnabled,
        Code::DuplicateName,
        Code::InvalidSchema,
        Code::Denied,
        Code::NotAllowed,
        Code::FixedUndeclared,
        Code::RequiredUnreachable,
        Code::InvalidName,
        Code::LockMismatch,
        Code::ProviderNameCollision,
        Code::LeftToHost,
    ];

    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Required => "required",
            Code::Fits => "fits",
            Code::ControlTool => "control-tool",
            Code::Loaded => "loaded",
            Code::ItemCap => "item-cap",
            Code::TokenCap => "token-cap",
            Code::FlagOff => "flag-off",
            Code::NotEnabled => "not-enabled",
            Code::DuplicateName => "duplicate-name",
            Code::InvalidSchema => "invalid-schema",
            Code::Denied => "denied",
            Code::NotAllowed => "not-allowed",
            Code::FixedUndeclared => "fixed-undeclared",
            Code::RequiredUnreachable => "required-unreachable",
            Code::InvalidName => "invalid-name",
            Code::LockMismatch => "lock-mismatch",
            Code::ProviderNameCollision => "provider-name-collision",
            Code::LeftToHost => "left-to-host",
        }
    }

    /// One line saying what the code means.
    pub fn description(self) -> &'static str {
        match self {
            Code::Required => "member of a required group; placed first",
            Code::Fits => "fit both caps at its place in the priority order",
            Code::ControlTool => "loads deferred tools; reserved before anything else",
            Code::Loaded => "deferred when planned, loaded since through the control tool",
            Code::ItemCap => "every slot was taken by higher-ranked tools",
            Code::TokenCap => "larger than the tokens left when its turn came",
            Code::FlagOff => "the flag its `when` names is off",
            Code::NotEnabled => "the agent does not enable it",
            Code::DuplicateName => "an earlier candidate has the same name",
            Code::InvalidSchema => "its input schema is not a JSON Schema object",
            Code::Denied => "the server block denies it",
            Code::NotAllowed => "the server block's allow list does not name it",
            Code::FixedUndeclared => "a fixed argument is not declared by its schema",
            Code::RequiredUnreachable => {
                "a required argument is neither allowed by `only` nor fixed by `params`"
            }
            Code::InvalidName => "its name holds a control, bidi or invisible character",
            Code::LockMismatch => "its definition differs from the lock",
            Code::ProviderNameCollision => "a higher-ranked tool has the same provider name",
            Code::LeftToHost => "a configured tool the MCP gateway leaves to the host",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a candidate ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// In the roster the model is shown.
    Offered,
    /// Not shown; reachable through the control tool.
    Deferred,
    /// Not reachable at all.
    Cut,
}

impl Status {
    /// `offered`, `deferred` or `cut`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Offered => "offered",
            Status::Deferred => "deferred",
            Status::Cut => "cut",
        }
    }
}

/// What a warning is about. Serialized kebab-case; stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum WarningCode {
    /// A required tool is not offered: the roster is broken for its users.
    RequiredNotOffered,
    /// `enabled_tools` names a tool no policy registers.
    UnknownEnabledTool,
    /// `enabled_tools` names a discovered tool; discovered tools are
    /// governed by the agent's `servers` and the server block.
    EnabledDiscoveredTool,
    /// A group member names no registered tool.
    UnmatchedGroupMember,
    /// A selected flag is used by no `when`.
    UnusedFlag,
    /// A server block's `allow` names a tool the server does not list.
    UnmatchedAllow,
    /// A server block's `deny` names a tool the server does not list.
    UnmatchedDeny,
    /// `tool_priority` names a tool the server does not list.
    UnmatchedToolPriority,
    /// Servers list tools but there is no lock file, so their definitions
    /// are not checked against a reviewed version.
    NoLock,
    /// `only` lists an argument the server's schema does not declare.
    OnlyUndeclared,
    /// A required argument is neither in `only` nor fixed (the tool is cut).
    RequiredUnreachable,
    /// A server has a command but no snapshot yet.
    NoSnapshot,
    /// A discovered tool's definition differs from the lock, or is not in it.
    LockMismatch,
    /// The control tool itself does not fit, so nothing can be deferred.
    ControlToolCut,
    /// A tool checked strictly has an input schema the validator cannot compile, so the check
    /// refuses every call to it.
    UncheckableSchema,
    /// A tool's provider name was cut to 64 characters or had characters
    /// providers refuse replaced, and carries a hash suffix.
    ProviderNameRewritten,
}

impl WarningCode {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::RequiredNotOffered => "required-not-offered",
            WarningCode::UnknownEnabledTool => "unknown-enabled-tool",
            WarningCode::EnabledDiscoveredTool => "enabled-discovered-tool",
            WarningCode::UnmatchedGroupMember => "unmatched-group-member",
            WarningCode::UnusedFlag => "unused-flag",
            WarningCode::UnmatchedAllow => "unmatched-allow",
            WarningCode::UnmatchedDeny => "unmatched-deny",
            WarningCode::UnmatchedToolPriority => "unmatched-tool-priority",
            WarningCode::NoLock => "no-lock",
            WarningCode::OnlyUndeclared => "only-undeclared",
            WarningCode::RequiredUnreachable => "required-unreachable",
            WarningCode::NoSnapshot => "no-snapshot",
            WarningCode::LockMismatch => "lock-mismatch",
            WarningCode::ControlToolCut => "control-tool-cut",
            WarningCode::UncheckableSchema => "uncheckable-schema",
            WarningCode::ProviderNameRewritten => "provider-name-rewritten",
        }
    }
}

/// What a warning says, as data, tagged by `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum WarningKind {
    /// A required tool is not offered.
    RequiredNotOffered {
        /// The tool.
        tool: String,
        /// Where the plan put it.
        status: Status,
        /// Why, with its facts.
        reason: super::Reason,
    },
    /// `enabled_tools` names a tool no policy registers.
    UnknownEnabledTool {
        /// The agent.
        agent: String,
        /// The name it lists.
        tool: String,
    },
    /// `enabled_tools` names a discovered tool.
    EnabledDiscoveredTool {
        /// The agent.
        agent: String,
        /// The discovered tool.
        tool: String,
    },
    /// A group member names no registered tool.
    UnmatchedGroupMember {
        /// The group.
        group: String,
        /// The name it lists.
        tool: String,
    },
    /// A selected flag is used by no `when`.
    UnusedFlag {
        /// The flag.
        flag: String,
    },
    /// A server block's `allow` names a tool the server does not list.
    UnmatchedAllow {
        /// The server block.
        server: String,
        /// The name it allows.
        tool: String,
    },
    /// A server block's `deny` names a tool the server does not list.
    UnmatchedDeny {
        /// The server block.
        server: String,
        /// The name it denies.
        tool: String,
    },
    /// `tool_priority` names a tool the server does not list.
    UnmatchedToolPriority {
        /// The server block.
        server: String,
        /// The name it ranks.
        tool: String,
    },
    /// Servers list tools but there is no lock file.
    NoLock {
        /// The lock file the policy expects.
        lock_file: String,
    },
    /// `only` lists an argument the server's schema does not declare.
    OnlyUndeclared {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The argument.
        argument: String,
    },
    /// A required argument is neither in `only` nor fixed (the tool is cut).
    RequiredUnreachable {
        /// The server block.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The argument.
        argument: String,
    },
    /// A server has a command but no snapshot yet.
    NoSnapshot {
        /// The server block.
        server: String,
    },
    /// A discovered tool differs from the lock, and the lock only warns.
    LockMismatch {
        /// The tool's full name.
        name: String,
        /// The lock facts.
        reason: super::Reason,
    },
    /// The control tool does not fit, so nothing can be deferred.
    ControlToolCut {
        /// The control tool.
        tool: String,
    },
    /// A strictly checked tool's schema cannot be compiled by the
    /// validator, so the check refuses every call to it.
    UncheckableSchema {
        /// The tool.
        tool: String,
        /// What the validator said.
        why: String,
    },
    /// A tool's provider name was shortened or had characters replaced.
    ProviderNameRewritten {
        /// The tool's muster name.
        tool: String,
        /// The name providers are sent.
        provider_name: String,
        /// Characters the name has with only its dots replaced.
        length: usize,
        /// Characters providers refuse that were replaced, as `U+XXXX`.
        characters: Vec<String>,
    },
}

impl WarningKind {
    /// The bare code.
    pub fn code(&self) -> WarningCode {
        match self {
            WarningKind::RequiredNotOffered { .. } => WarningCode::RequiredNotOffered,
            WarningKind::UnknownEnabledTool { .. } => WarningCode::UnknownEnabledTool,
            WarningKind::EnabledDiscoveredTool { .. } => WarningCode::EnabledDiscoveredTool,
            WarningKind::UnmatchedGroupMember { .. } => WarningCode::UnmatchedGroupMember,
            WarningKind::UnusedFlag { .. } => WarningCode::UnusedFlag,
            WarningKind::UnmatchedAllow { .. } => WarningCode::UnmatchedAllow,
            WarningKind::UnmatchedDeny { .. } => WarningCode::UnmatchedDeny,
            WarningKind::UnmatchedToolPriority { .. } => WarningCode::UnmatchedToolPriority,
            WarningKind::NoLock { .. } => WarningCode::NoLock,
            WarningKind::OnlyUndeclared { .. } => WarningCode::OnlyUndeclared,
            WarningKind::RequiredUnreachable { .. } => WarningCode::RequiredUnreachable,
            WarningKind::NoSnapshot { .. } => WarningCode::NoSnapshot,
            WarningKind::LockMismatch { .. } => WarningCode::LockMismatch,
            WarningKind::ControlToolCut { .. } => WarningCode::ControlToolCut,
            WarningKind::UncheckableSchema { .. } => WarningCode::UncheckableSchema,
            WarningKind::ProviderNameRewritten { .. } => WarningCode::ProviderNameRewritten,
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKind::RequiredNotOffered {
                tool,
                status,
                reason,
            } => super::reason::required_not_offered(f, tool, *status, reason),
            WarningKind::UnknownEnabledTool { agent, tool } => write!(
                f,
                "agent {agent} enables {tool:?}, which no policy registers; remove it or register the tool"
            ),
            WarningKind::EnabledDiscoveredTool { agent, tool } => write!(
                f,
                "agent {agent} names discovered tool {tool} in enabled_tools, which governs configured tools only; use the agent's servers or the server block's allow"
            ),
            WarningKind::UnmatchedGroupMember { group, tool } => {
                write!(f, "group {group} names {tool:?}, which no policy registers")
            }
            WarningKind::UnusedFlag { flag } => write!(
                f,
                "flag {flag} is on but no tool or server names it in `when`"
            ),
            WarningKind::UnmatchedAllow { server, tool } => write!(
                f,
                "server {server} allows {tool:?}, which the server does not list"
            ),
            WarningKind::UnmatchedDeny { server, tool } => write!(
                f,
                "server {server} denies {tool:?}, which the server does not list"
            ),
            WarningKind::UnmatchedToolPriority { server, tool } => write!(
                f,
                "server {server} gives a priority to {tool:?}, which the server does not list"
            ),
            WarningKind::NoLock { lock_file } => write!(
                f,
                "there is no lock file {lock_file}, so discovered tool definitions are not checked against a reviewed version; review the snapshots, then run `muster lock`"
            ),
            WarningKind::OnlyUndeclared {
                server,
                tool,
                argument,
            } => write!(
                f,
                "MCP server {server}: {tool}: `only` lists `{argument}` but the server's schema does not declare it; the model cannot write it"
            ),
            WarningKind::RequiredUnreachable {
                server,
                tool,
                argument,
            } => write!(
                f,
                "MCP server {server}: {tool}: the server's schema requires `{argument}`, which `only` does not list and `params` does not fix; the tool is kept away"
            ),
            WarningKind::NoSnapshot { server } => write!(
                f,
                "MCP server {server} has no snapshot yet, so none of its tools are candidates; run `muster discover`"
            ),
            WarningKind::LockMismatch { name, reason } => write!(f, "{name}: {reason}"),
            WarningKind::ControlToolCut { tool } => write!(
                f,
                "the control tool {tool} does not fit the caps, so no tool can be deferred"
            ),
            WarningKind::UncheckableSchema { tool, why } => write!(
                f,
                "tool {tool}: its input schema cannot be compiled for strict checking ({why}), so the check refuses every call to it; correct the schema, or set check = \"lenient\" for it"
            ),
            WarningKind::ProviderNameRewritten {
                tool,
                provider_name,
                length,
                characters,
            } => {
                write!(f, "tool {tool} is sent to providers as {provider_name}: ")?;
                if characters.is_empty() {
                    write!(
                        f,
                        "its provider spelling has {length} characters, over the 64 allowed"
                    )?;
                } else {
                    write!(
                        f,
                        "its name holds {}, which providers refuse",
                        characters.join(", ")
                    )?;
                }
                f.write_str("; calls may use either name, and a shorter name reads better")
            }
        }
    }
}

/// A warning: not a decision about one candidate, but something in the
/// policy or the plan a reviewer should see. Its JSON is the kind's `code`
/// and fields, the rendered `message`, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Warning {
    /// What it says, as data.
    #[serde(flatten)]
    pub kind: WarningKind,
    /// The sentence rendered from `kind`.
    pub message: String,
    /// The policy file involved, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its 1-based line, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Warning {
    /// A warning with no location.
    pub fn new(kind: WarningKind) -> Self {
        Self {
            message: kind.to_string(),
            kind,
            file: None,
            line: None,
        }
    }

    /// A warning located at a policy entry.
    pub fn at(kind: WarningKind, origin: &crate::policy::Origin) -> Self {
        Self {
            message: kind.to_string(),
            kind,
            file: Some(origin.file.display().to_string()),
            line: origin.line,
        }
    }

    /// The bare code.
    pub fn code(&self) -> WarningCode {
        self.kind.code()
    }
}

impl PartialOrd for Warning {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Warning {
    /// By code, then sentence and place: the sentence renders every field.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.code(), &self.message, &self.file, self.line).cmp(&(
            other.code(),
            &other.message,
            &other.file,
            other.line,
        ))
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        write!(f, "{}", self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strings_are_the_serialized_codes() {
        for code in Code::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
        let code = WarningCode::UnmatchedToolPriority;
        assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
    }

    /// README's reason-code table lists every code, in `ALL`'s order.
    #[test]
    fn the_readme_documents_every_code_in_order() {
        let readme = include_str!("../../README.md");
        let table = readme
            .split("## Reason codes")
            .nth(1)
            .expect("README has a Reason codes section");
        let documented: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with("| `"))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(documented, all);
    }
}
