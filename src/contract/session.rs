//! Agent sessions' shapes: the session document, search results, the load
//! answer and the resume report. Field by field in `docs/session.md`.

use super::{Code, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the session document and of the answers below; bumped on any
/// incompatible change.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// What a host stores with its chat: the pinned selection, the roster and
/// deferred tools with their definition hashes, and what was loaded since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SessionDocument {
    /// [`SESSION_FORMAT_VERSION`].
    pub format_version: u32,
    /// The agent and version the session was created with.
    pub agent: PinnedAgent,
    /// The flags the roster was planned with.
    pub selection: PinnedSelection,
    /// The tokenizer the roster was counted with.
    pub encoding: String,
    /// The caps the roster was planned under.
    pub caps: PinnedCaps,
    /// The control tool's name when deferral is on and it was offered.
    pub control_tool: Option<String>,
    /// The roster fingerprint: agent, version and every offered definition.
    pub fingerprint: String,
    /// Offered tools, in roster order.
    pub roster: Vec<PinnedTool>,
    /// Deferred tools, in rank order.
    pub deferred: Vec<PinnedTool>,
    /// Tools loaded since, in load order; each is one of `deferred`.
    pub loaded: Vec<LoadedTool>,
}

/// The pinned agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedAgent {
    /// Agent name.
    pub name: String,
    /// Agent version.
    pub version: u64,
}

/// The pinned flag selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedSelection {
    /// The flag profile named at creation, for the record; `flags` is what
    /// counts, so a later change to the profile does not move the session.
    pub profile: Option<String>,
    /// Every flag on, sorted.
    pub flags: Vec<String>,
}

/// The pinned caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedCaps {
    /// Item cap.
    pub items: u32,
    /// Token cap.
    pub tokens: u32,
}

/// One pinned definition: the hash of the whole and of each part, so a
/// resume can say what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedTool {
    /// Full tool name.
    pub name: String,
    /// `sha256:` hash of the definition as offered.
    pub definition_hash: String,
    /// `sha256:` hashes of its parts.
    pub parts: DefinitionParts,
}

/// Hashes of the parts of one definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DefinitionParts {
    /// The description the model is shown.
    pub description: String,
    /// The input schema the model is shown.
    pub input_schema: String,
    /// Fixed argument values (MCP `params`).
    pub fixed: String,
    /// The arguments the model may write (MCP `only`).
    pub only: String,
}

/// One loaded tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoadedTool {
    /// Full tool name; one of the document's `deferred`.
    pub name: String,
    /// Tokens its definition costs, counted toward the load budget.
    pub tokens: u32,
}

/// A part of a definition, or its place in the roster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum DefinitionPart {
    /// The description.
    Description,
    /// The input schema.
    InputSchema,
    /// Fixed argument values.
    Fixed,
    /// The arguments the model may write.
    Only,
    /// Its position in the roster.
    Position,
}

impl DefinitionPart {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionPart::Description => "description",
            DefinitionPart::InputSchema => "input-schema",
            DefinitionPart::Fixed => "fixed",
            DefinitionPart::Only => "only",
            DefinitionPart::Position => "position",
        }
    }
}

/// Search results for one query (`session search`, one JSON line each with
/// `--queries`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchResults {
    /// The query as given.
    pub query: String,
    /// Best first.
    pub results: Vec<SearchResult>,
}

/// One match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchResult {
    /// The tool's full name, or the kind's name for tools loaded together.
    pub name: String,
    /// One line on what it does.
    pub description: String,
    /// Relevance from 0 to 1, rounded to 4 decimals.
    pub score: f64,
    /// A single tool, or a kind whose tools load together.
    pub entry: EntryKind,
    /// The tools it loads (one for a tool, every deferred member for a kind).
    pub tools: Vec<String>,
    /// Whether every one of them is already loaded.
    pub loaded: bool,
}

/// What a search entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// One deferred tool.
    Tool,
    /// A server or group whose deferred tools load together.
    Kind,
}

/// What a load did: the control tool's answer to the model, as data and
/// as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoadAnswer {
    /// [`SESSION_FORMAT_VERSION`].
    pub format_version: u32,
    /// Whether anything was loaded.
    pub status: LoadStatus,
    /// Tools loaded by this call, in load order.
    pub loaded: Vec<String>,
    /// Everything the answer says, in order.
    pub notes: Vec<LoadNote>,
    /// The text for the model: the notes as sentences.
    pub answer: String,
}

/// The outcome of one load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LoadStatus {
    /// At least one tool was loaded; the document changed.
    Loaded,
    /// Everything asked for is already available; nothing changed.
    Unchanged,
    /// Nothing could be loaded; nothing changed.
    Refused,
}

/// One fact in a load's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LoadNote {
    /// These tools were loaded.
    Loaded {
        /// Their names, in load order.
        tools: Vec<String>,
    },
    /// The tool is already loaded.
    AlreadyLoaded {
        /// Tool name.
        name: String,
    },
    /// The tool is in the roster already.
    AlreadyOffered {
        /// Tool name.
        name: String,
    },
    /// No deferred tool matches the query.
    NothingFound {
        /// The query.
        query: String,
    },
    /// No candidate has this name.
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Deferred names closest to it.
        closest: Vec<String>,
    },
    /// The tool exists but is not deferred, so it cannot be loaded.
    NotDeferred {
        /// Tool name.
        name: String,
        /// Where the plan put it.
        status: Status,
        /// Why.
        reason: Code,
    },
    /// Loading would pass the policy's bound on loaded tools.
    MaxLoaded {
        /// `deferral.max_loaded`.
        limit: u32,
        /// Tools loaded before this call.
        loaded: u32,
        /// Tools this call asked for.
        requested: u32,
        /// The tools that were not loaded.
        tools: Vec<String>,
    },
    /// Loading would pass the policy's token budget for loaded tools.
    MaxLoadedTokens {
        /// `deferral.max_loaded_tokens`.
        limit: u32,
        /// Tokens of the tools loaded before this call.
        used: u32,
        /// Tokens of the tools this call asked for.
        requested: u32,
        /// The tools that were not loaded.
        tools: Vec<String>,
    },
    /// The session has no control tool, so nothing can be loaded.
    NoControlTool,
}

impl fmt::Display for LoadNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadNote::Loaded { tools } => write!(
                f,
                "Loaded {}; call {} directly from your next step.",
                list(tools),
                if tools.len() == 1 { "it" } else { "them" }
            ),
            LoadNote::AlreadyLoaded { name } => {
                write!(f, "{name} is already loaded; call it directly.")
            }
            LoadNote::AlreadyOffered { name } => {
                write!(f, "{name} is already offered; call it directly.")
            }
            LoadNote::NothingFound { query } => write!(
                f,
                "No tool that can be loaded matches {query:?}; try other words, or a kind listed in this tool's description."
            ),
            LoadNote::UnknownTool { name, closest } => match closest.as_slice() {
                [] => write!(f, "There is no tool named {name:?}."),
                _ => write!(
                    f,
                    "There is no tool named {name:?}; did you mean {}?",
                    list_or(closest)
                ),
            },
            LoadNote::NotDeferred { name, status, reason } => write!(
                f,
                "{name} is not available in this session ({} {}: {}).",
                status.as_str(),
                reason,
                reason.description()
            ),
            LoadNote::MaxLoaded {
                limit,
                loaded,
                requested,
                tools,
            } => write!(
                f,
                "Nothing more was loaded: this session may load at most {limit} tools and has loaded {loaded}; {} would need {requested} more. Ask for fewer tools by exact name.",
                list(tools)
            ),
            LoadNote::MaxLoadedTokens {
                limit,
                used,
                requested,
                tools,
            } => write!(
                f,
                "Nothing more was loaded: loaded tools may cost at most {limit} tokens and {used} are used; {} would need {requested} more. Ask for fewer tools by exact name.",
                list(tools)
            ),
            LoadNote::NoControlTool => f.write_str(
                "This session has no tool loading: deferral was off or its control tool did not fit when it was planned.",
            ),
        }
    }
}

fn list(names: &[String]) -> String {
    join(names, "and")
}

fn list_or(names: &[String]) -> String {
    join(names, "or")
}

fn join(names: &[String], word: &str) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} {word} {last}", rest.join(", ")),
    }
}

/// What `session resume` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResumeReport {
    /// [`SESSION_FORMAT_VERSION`].
    pub format_version: u32,
    /// `ok` when every pinned and loaded definition matches.
    pub status: ResumeStatus,
    /// The pinned agent.
    pub agent: PinnedAgent,
    /// The pinned fingerprint and, when the agent version still exists,
    /// the one the current policies give.
    pub fingerprint: FingerprintPair,
    /// What differs, roster first, then deferred, then loaded tools.
    pub changes: Vec<PinChange>,
}

/// Pinned and current fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FingerprintPair {
    /// From the document.
    pub pinned: String,
    /// From the current policies; `None` when the agent version is gone.
    pub now: Option<String>,
}

/// The resume verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ResumeStatus {
    /// The session resumes against the tools it was pinned to.
    Ok,
    /// The tools differ from the pin; the run must not resume as is.
    ToolPinMismatch,
}

/// Where in the session a tool is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// The offered roster.
    Roster,
    /// The deferred tools.
    Deferred,
    /// The loaded tools.
    Loaded,
}

impl Place {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Roster => "roster",
            Place::Deferred => "deferred",
            Place::Loaded => "loaded",
        }
    }
}

/// One difference between the pin and the current policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "change", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PinChange {
    /// A pinned tool is no longer in that place.
    Removed {
        /// Tool name.
        name: String,
        /// Where it was pinned.
        place: Place,
    },
    /// A tool is now in a place the pin did not have it.
    Added {
        /// Tool name.
        name: String,
        /// Where it is now.
        place: Place,
    },
    /// A pinned tool's definition or position differs.
    Changed {
        /// Tool name.
        name: String,
        /// Where it is pinned.
        place: Place,
        /// What differs.
        what: Vec<DefinitionPart>,
    },
    /// The pinned agent version is no longer declared.
    AgentVersionRemoved {
        /// Agent name.
        agent: String,
        /// The pinned version.
        version: u64,
    },
    /// The policies count tokens with another encoding now.
    EncodingChanged {
        /// The pinned encoding.
        pinned: String,
        /// The current one.
        now: String,
    },
}

impl fmt::Display for PinChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinChange::Removed { name, place } => {
                write!(f, "{name}: pinned in {}, no longer there", place.as_str())
            }
            PinChange::Added { name, place } => {
                write!(f, "{name}: now in {}, not pinned there", place.as_str())
            }
            PinChange::Changed { name, place, what } => {
                let what: Vec<&str> = what.iter().map(|w| w.as_str()).collect();
                write!(
                    f,
                    "{name} ({}): {} changed",
                    place.as_str(),
                    what.join(", ")
                )
            }
            PinChange::AgentVersionRemoved { agent, version } => write!(
                f,
                "agent {agent} version {version} is no longer declared; start a new session"
            ),
            PinChange::EncodingChanged { pinned, now } => {
                write!(f, "tokens were counted with {pinned}, now with {now}")
            }
        }
    }
}
