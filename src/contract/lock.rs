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
}

impl LockStatus {
    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unlocked => "unlocked",
            Self::Changed => "changed",
            Self::Gone => "gone",
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
