//! Agent sessions' shapes: the session document, search results, the load
//! answer and the resume report. Field by field in `docs/session.md`.

use super::{Code, Provider, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the session document and of the answers below; bumped on any
/// incompatible change. Version 2 pins by digest instead of by copy.
pub const SESSION_FORMAT_VERSION: u32 = 2;

/// What identifies a chat's pin: the selection it was planned with, the
/// roster fingerprint, a short digest per offered tool, one digest over
/// every deferred tool, and the loads since, each with the revision it
/// made. Definitions are not copied: muster rebuilds them from the policy
/// it serves and refuses the session where a digest no longer matches, so
/// the document stays a few kilobytes however many tools are deferred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SessionDocument {
    /// [`SESSION_FORMAT_VERSION`].
    pub format_version: u32,
    /// The session's id when a session store keeps it; absent for a
    /// document the host carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// 0 when created; each load that changes the session adds one.
    pub revision: u64,
    /// The agent and version the session was created with.
    pub agent: PinnedAgent,
    /// The flags the roster was planned with.
    pub selection: PinnedSelection,
    /// Whose billing the token counts follow.
    pub provider: Provider,
    /// How the model was given tool names: every text muster writes for
    /// the model uses the same spelling.
    pub names: NameSpelling,
    /// The tokenizer the roster was counted with.
    pub encoding: String,
    /// The caps the roster was planned under.
    pub caps: PinnedCaps,
    /// The roster fingerprint: agent, version and every offered definition.
    pub fingerprint: String,
    /// Offered tools, in roster order, with a short digest of each.
    pub roster: Vec<PinnedTool>,
    /// Every deferred tool, as one digest.
    pub deferred: PinnedSet,
    /// Tools loaded since, in load order; each was deferred at the pin.
    pub loaded: Vec<LoadedTool>,
    /// The revision the session's last re-pin made, when a gateway chat
    /// followed a reviewed change (`[lock] chats = "follow"`); absent on a
    /// session never re-pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repinned: Option<u64>,
    /// The `sub` of the caller who started the chat, when `muster serve`
    /// checks tokens (`[auth]`, docs/auth.md): only that caller reaches it.
    /// Absent otherwise (and in documents written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// HMAC-SHA256 over the rest of the document, when the service or
    /// command that wrote it holds a session key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
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
    /// Planned for the MCP gateway: MCP tools only, configured tools left
    /// to the host. Absent (false) in every other session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mcp_only: bool,
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

/// How tool names are spelt in what the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum NameSpelling {
    /// As providers are sent them (`mcp__fs__read_text_file`): the names a
    /// model sees in every provider format.
    #[default]
    Provider,
    /// muster's own names (`mcp.fs.read_text_file`), for a host that maps
    /// names itself.
    Muster,
}

impl NameSpelling {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            NameSpelling::Provider => "provider",
            NameSpelling::Muster => "muster",
        }
    }
}

/// One pinned offered tool: enough to say which tool and which part of it
/// changed. The fingerprint, over every definition's full hash, decides
/// whether the roster still holds; these digests only explain a mismatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedTool {
    /// Full tool name.
    pub name: String,
    /// The first 16 hex digits of the definition's SHA-256.
    pub digest: String,
    /// The first 8 hex digits of each part's SHA-256, joined by `.`:
    /// description, input schema, fixed values, `only`.
    pub parts: String,
}

/// A set of tools pinned as one digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PinnedSet {
    /// How many tools.
    pub count: u32,
    /// `sha256:` over each tool's name and full definition hash, in rank
    /// order.
    pub digest: String,
}

/// One loaded tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoadedTool {
    /// Full tool name; a tool the session deferred.
    pub name: String,
    /// The first 16 hex digits of its definition's SHA-256 when loaded.
    pub digest: String,
    /// The first 8 hex digits of each part's SHA-256, as in [`PinnedTool`].
    pub parts: String,
    /// The revision the load made.
    pub revision: u64,
}

/// A document's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Which key signed it (the id before `:` in the key's text).
    pub key: String,
    /// HMAC-SHA256 of the document without `signature`, as compact JSON,
    /// in 64 lowercase hex digits.
    pub hmac: String,
}

/// A part of a definition.
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
    /// The name providers are sent (the `[names]` spelling changed).
    ProviderName,
}

impl DefinitionPart {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionPart::Description => "description",
            DefinitionPart::InputSchema => "input-schema",
            DefinitionPart::Fixed => "fixed",
            DefinitionPart::Only => "only",
            DefinitionPart::ProviderName => "provider-name",
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
    /// Several tools fit the query about equally: nothing was loaded, and
    /// the answer lists them for the model to pick by name.
    Choose,
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
    /// No tool the chat can reach, deferred or offered, matches the query
    /// well enough.
    NothingFound {
        /// The query.
        query: String,
        /// The kinds of tools the chat can reach (every group and server
        /// with an offered or deferred tool, at most
        /// `session::MAX_KINDS`), so the model can ask again in their words.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kinds: Vec<String>,
        /// How many kinds past `session::MAX_KINDS` were left out.
        #[serde(default, skip_serializing_if = "is_zero")]
        more: u32,
    },
    /// Several tools fit the query about equally, or its best match is
    /// already offered or loaded and others not yet there come close; none
    /// was loaded.
    Choose {
        /// The query.
        query: String,
        /// The options, best first.
        options: Vec<LoadOption>,
    },
    /// Earlier loads dropped to make room for this one: the bounds were
    /// full (see docs/session.md, "Replacing loads").
    Unloaded {
        /// Their names, in the order they had been loaded.
        tools: Vec<String>,
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
    /// Loading would take what the chat is offered (pinned and loaded)
    /// past the caps (`deferral.loads = "within-caps"`), or past the caps
    /// and `deferral.beyond_items` / `beyond_tokens` (`"beyond-caps"`).
    Caps {
        /// Which cap.
        measure: CapMeasure,
        /// The most the offer may reach: the cap, plus `beyond_*` when
        /// loads may pass it.
        limit: u32,
        /// What the chat is offered before this call: items, or tokens
        /// with the wrapper (loaded tools counted from the policy).
        offered: u32,
        /// What the tools this call asked for would add.
        requested: u32,
        /// The tools that were not loaded.
        tools: Vec<String>,
    },
    /// The session has no control tool, so nothing can be loaded.
    NoControlTool,
    /// The query is longer than the control tool reads
    /// ([`crate::search::MAX_QUERY_BYTES`]); it was not searched.
    QueryTooLong {
        /// Its length in bytes.
        bytes: usize,
        /// The most a query may have.
        limit: usize,
    },
    /// More names than one load looks up ([`crate::session::MAX_LOAD_NAMES`]); none was.
    TooManyNames {
        /// How many were given.
        names: usize,
        /// The most one load looks up.
        limit: usize,
    },
}

/// One tool a [`LoadNote::Choose`] offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LoadOption {
    /// The name to load it by, as the model is given names.
    pub name: String,
    /// Its description's first sentence.
    pub description: String,
    /// Whether it is loaded already.
    pub loaded: bool,
    /// Whether the chat is offered it already (absent when not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offered: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which of the two caps a [`LoadNote::Caps`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CapMeasure {
    /// The item cap: tool definitions offered.
    Items,
    /// The token cap: tokens of the tool section.
    Tokens,
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
            LoadNote::NothingFound { query, kinds, more } => {
                write!(
                    f,
                    "No tool here matches {query:?} well; nothing was loaded."
                )?;
                if kinds.is_empty() {
                    return f.write_str(
                        " Try other words, or a kind listed in this tool's description.",
                    );
                }
                let mut kinds: Vec<String> =
                    kinds.iter().map(|k| crate::names::escape(k)).collect();
                if *more > 0 {
                    kinds.push(format!("{more} more"));
                }
                write!(
                    f,
                    " The tools here are of these kinds: {}. Ask again in their words, or by exact name.",
                    kinds.join(", ")
                )
            }
            LoadNote::Choose { query, options } => {
                let ready = options.iter().any(|o| o.loaded || o.offered);
                if ready {
                    write!(f, "Several tools fit {query:?}, some already here, so none was loaded:")?;
                } else {
                    write!(f, "Several tools fit {query:?} about equally, so none was loaded:")?;
                }
                for (n, o) in options.iter().enumerate() {
                    let sep = if n == 0 { " " } else { "; " };
                    let status = match (o.offered, o.loaded) {
                        (true, _) => " (offered)",
                        (_, true) => " (loaded)",
                        _ => "",
                    };
                    let description = o.description.trim_end_matches(['.', '…']);
                    write!(f, "{sep}{}{status}: {description}", crate::names::escape(&o.name))?;
                }
                if ready {
                    f.write_str(". Call one already here directly, or ask again with the exact name of the one you need (several: names separated by commas).")
                } else {
                    f.write_str(". Ask again with the exact name of the one you need (several: names separated by commas).")
                }
            }
            LoadNote::Unloaded { tools } => write!(
                f,
                "To make room, unloaded {} (loaded earlier); load {} again by name if you need {}.",
                list(tools),
                if tools.len() == 1 { "it" } else { "them" },
                if tools.len() == 1 { "it" } else { "them" }
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
                "Nothing more was loaded: this session may load at most {limit} tools and has loaded {loaded}; {} would need {requested} more. {}",
                list(tools),
                if requested > limit {
                    "That alone is past the limit, so it cannot be loaded in this session."
                } else {
                    "Ask for fewer tools by exact name."
                }
            ),
            LoadNote::MaxLoadedTokens {
                limit,
                used,
                requested,
                tools,
            } => write!(
                f,
                "Nothing more was loaded: loaded tools may cost at most {limit} tokens and {used} are used; {} would need {requested} more. {}",
                list(tools),
                if requested > limit {
                    "That alone is past the limit, so it cannot be loaded in this session."
                } else {
                    "Ask for fewer tools by exact name."
                }
            ),
            LoadNote::Caps {
                measure,
                limit,
                offered,
                requested,
                tools,
            } => {
                let (what, unit) = match measure {
                    CapMeasure::Items => ("tools", "more"),
                    CapMeasure::Tokens => ("tokens", "tokens more"),
                };
                write!(
                    f,
                    "Nothing more was loaded: this chat may be offered at most {limit} {what} and is offered {offered}; {} would need {requested} {unit}. Ask for fewer or smaller tools by exact name.",
                    list(tools)
                )
            }
            LoadNote::NoControlTool => f.write_str(
                "This session has no tool loading: deferral was off or its control tool did not fit when it was planned.",
            ),
            LoadNote::QueryTooLong { bytes, limit } => write!(
                f,
                "The query is {bytes} bytes; this tool reads at most {limit}. Ask again in a few words saying what the tool should do, or with exact names."
            ),
            LoadNote::TooManyNames { names, limit } => write!(
                f,
                "{names} names were given; one load looks up at most {limit}. Ask for the tools this step needs."
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

/// A change refused because the session moved on since it was read: what
/// a `stale-revision` conflict carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StaleRevision {
    /// The session, when it has an id.
    pub session_id: Option<String>,
    /// The revision the change was made against.
    pub expected: u64,
    /// The session's revision now: read it again, and retry the change
    /// against it if it still makes sense.
    pub current: u64,
}

impl fmt::Display for StaleRevision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the session is at revision {}, not {}: another change landed first; read it again and retry",
            self.current, self.expected
        )
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
    /// The loaded tools.
    Loaded,
}

impl Place {
    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Roster => "roster",
            Place::Loaded => "loaded",
        }
    }
}

/// One difference between the pin and the current policies, reported by
/// cause: a tool that left or arrived is one change, and the tools that
/// only moved because of it are counted in one [`PinChange::Shifted`].
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
    /// A pinned tool's definition differs.
    Changed {
        /// Tool name.
        name: String,
        /// Where it is pinned.
        place: Place,
        /// What differs.
        what: Vec<DefinitionPart>,
    },
    /// A pinned roster tool is ahead of or behind a tool it was not
    /// before: the order itself changed.
    Moved {
        /// Tool name.
        name: String,
        /// Its 0-based roster position in the pin.
        pinned: u32,
        /// Its position now.
        now: u32,
    },
    /// Roster tools whose order held but whose positions moved because of
    /// the tools removed or added before them.
    Shifted {
        /// How many.
        tools: u32,
    },
    /// The deferred tools differ from the pin (one digest pins them all).
    DeferredChanged {
        /// How many were deferred at the pin.
        pinned: u32,
        /// How many are deferred now.
        now: u32,
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
            PinChange::Moved { name, pinned, now } => write!(
                f,
                "{name}: roster order changed (position {pinned} in the pin, {now} now)"
            ),
            PinChange::Shifted { tools } => write!(
                f,
                "{tools} roster tools kept their order but moved because of the tools removed or added before them"
            ),
            PinChange::DeferredChanged { pinned, now } => {
                write!(f, "the deferred tools changed ({pinned} pinned, {now} now)")
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
