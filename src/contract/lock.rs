//! `muster lock`'s answer, and how a listed tool stands against the lock: data the lock
//! module returns and the binary renders as text or JSON.

use serde::{Deserialize, Serialize};

/// The `format_version` of `muster lock --format json`.
pub const LOCK_FORMAT_VERSION: u32 = 1;

/// What `muster lock` accepted into the lock file. JSON: see `docs/policy.md`
/// ("`muster lock --format json`").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct LockAnswer {
    /// [`LOCK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The lock file written.
    pub lock_file: String,
    /// Each definition accepted: new, changed or removed; empty when the lock was up to date.
    pub accepted: Vec<LockFinding>,
}

/// How a listed tool stands against the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LockStatus {
    /// `unlocked`: the server lists the tool and the lock has no entry for it.
    Unlocked,
    /// `changed`: the tool's definition hash differs from the locked one.
    Changed,
    /// `gone`: the lock has an entry the server no longer lists.
    Gone,
    /// `renamed`: the server lists under a new name a definition the lock
    /// holds under a name it no longer lists (`previous`).
    Renamed,
}

impl LockStatus {
    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unlocked => "unlocked",
            Self::Changed => "changed",
            Self::Gone => "gone",
            Self::Renamed => "renamed",
        }
    }
}

/// One tool that does not match the lock.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct LockFinding {
    /// What kind of difference.
    pub status: LockStatus,
    /// The server block's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The hash in the lock, when there is one.
    pub locked: Option<String>,
    /// The hash of the listed definition, when the tool is listed.
    pub current: Option<String>,
    /// What kind of change it is (`changed` and `renamed` only), in
    /// [`LockChange`]'s order; absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<LockChange>,
    /// For `renamed`: the name the lock held the definition under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// What a reviewer reads: for `changed`, what differs from the
    /// definition the lock kept (absent when the entry keeps none: a lock
    /// written before version 3); for `unlocked`, the tool's description.
    /// Absent when there is nothing to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "serve", schema(value_type = Option<Object>))]
    pub details: Option<super::ChangeDetails>,
}

/// What kind of change a definition is against the one locked. A change
/// can be of several kinds; they are listed in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LockChange {
    /// `needs-relock`: the entry comes from a version 1 lock, which hashed
    /// only the name, description and input schema; those are unchanged,
    /// but the annotations, title, output schema and `_meta` were never
    /// reviewed.
    NeedsRelock,
    /// `unclassified`: the entry comes from a version 1 lock and the name,
    /// description or input schema it hashed changed; it kept no parts to
    /// say which.
    Unclassified,
    /// `renamed`: the same definition under a new name.
    Renamed,
    /// `safety-hint-weakened`: a safety hint moved to its less safe value
    /// (read-only to not, not destructive to destructive, idempotent to
    /// not, closed world to open), each read at MCP's default when not
    /// declared.
    SafetyHintWeakened,
    /// `schema-narrowed`: the input schema refuses calls it accepted.
    SchemaNarrowed,
    /// `schema-widened`: the input schema accepts calls it refused.
    SchemaWidened,
    /// `schema-changed`: the input schema changed both ways, or in a way
    /// muster cannot tell.
    SchemaChanged,
    /// `output-schema`: the output schema changed, appeared or went.
    OutputSchema,
    /// `description`: the description, or a text inside the input schema
    /// (a property's `description` or `title`, `examples`), changed.
    Description,
    /// `safety-hint-strengthened`: a safety hint moved to its safer value.
    SafetyHintStrengthened,
    /// `cosmetic`: only the title, other annotations or `_meta` changed.
    Cosmetic,
}

impl LockChange {
    /// Every kind, in order.
    pub const ALL: [LockChange; 11] = [
        LockChange::NeedsRelock,
        LockChange::Unclassified,
        LockChange::Renamed,
        LockChange::SafetyHintWeakened,
        LockChange::SchemaNarrowed,
        LockChange::SchemaWidened,
        LockChange::SchemaChanged,
        LockChange::OutputSchema,
        LockChange::Description,
        LockChange::SafetyHintStrengthened,
        LockChange::Cosmetic,
    ];

    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NeedsRelock => "needs-relock",
            Self::Unclassified => "unclassified",
            Self::Renamed => "renamed",
            Self::SafetyHintWeakened => "safety-hint-weakened",
            Self::SchemaNarrowed => "schema-narrowed",
            Self::SchemaWidened => "schema-widened",
            Self::SchemaChanged => "schema-changed",
            Self::OutputSchema => "output-schema",
            Self::Description => "description",
            Self::SafetyHintStrengthened => "safety-hint-strengthened",
            Self::Cosmetic => "cosmetic",
        }
    }
}

impl std::fmt::Display for LockChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl LockFinding {
    /// The roster name, `mcp.<server>.<tool>`.
    pub fn key(&self) -> String {
        format!("mcp.{}.{}", self.server, self.tool)
    }
}

/// The `format_version` of `muster lock --check --format json`.
pub const LOCK_CHECK_FORMAT_VERSION: u32 = 1;

/// What `muster lock --check` found: the definitions `muster lock` would
/// accept, written nowhere. JSON: see `docs/ci.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockCheck {
    /// [`LOCK_CHECK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The lock file compared with.
    pub lock_file: String,
    /// Each tool that does not match the lock, by server then status then
    /// tool; empty when the lock is up to date.
    pub drift: Vec<DriftEntry>,
}

/// One tool that does not match the lock, and the line to review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftEntry {
    /// The tool and how it differs.
    #[serde(flatten)]
    pub finding: LockFinding,
    /// The lock file for `changed` and `gone`; the server block's policy
    /// file for `unlocked`.
    pub file: String,
    /// Its 1-based line: the lock entry, or the server block.
    pub line: Option<usize>,
}
