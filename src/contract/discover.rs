//! `muster discover`'s answer: per server, the listing recorded or why it failed, and what the
//! lock accepted with `--lock`. Data the discover module returns and the binary renders as text
//! or JSON.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{LockFinding, ToolChange};

/// The `format_version` of `muster discover --format json`.
pub const DISCOVER_FORMAT_VERSION: u32 = 1;

/// What one `muster discover` run did. JSON: see `docs/policy.md`
/// ("`muster discover --format json`").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoverAnswer {
    /// [`DISCOVER_FORMAT_VERSION`].
    pub format_version: u32,
    /// One entry per server discovered, in the order the policy declares them.
    pub servers: Vec<ServerDiscovery>,
    /// With `--lock`: the lock file written and what it accepted; null without.
    pub lock: Option<LockUpdate>,
    /// Servers whose listing was recorded.
    pub listed: usize,
    /// Servers that failed; their snapshots were left as they were.
    pub failed: usize,
}

/// How discovery of one server went, tagged by `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ServerDiscovery {
    /// `listed`: a complete, valid listing, recorded as the server's snapshot.
    Listed {
        /// The server block's name.
        server: String,
        /// How many tools the server listed.
        tools: usize,
        /// How many tools/list pages were read.
        pages: usize,
        /// The snapshot file now holding the listing.
        snapshot: String,
        /// Whether the file's bytes changed (false: it already held this listing).
        snapshot_written: bool,
        /// The previous snapshot existed but was not a snapshot muster reads; it was replaced.
        /// Its problems, empty otherwise.
        previous_unreadable: Vec<DiscoverProblem>,
        /// Against the previous snapshot (everything is `added` when there was none).
        diff: SnapshotDiff,
    },
    /// `failed`: no listing recorded; the old snapshot is untouched.
    Failed {
        /// The server block's name.
        server: String,
        /// What went wrong, as a code.
        reason: FailureReason,
        /// Every problem, each naming the server (and the tool, where one is at fault).
        problems: Vec<DiscoverProblem>,
        /// Whether a previous snapshot exists and is kept.
        snapshot_kept: bool,
    },
}

impl ServerDiscovery {
    /// The server block's name.
    pub fn server(&self) -> &str {
        match self {
            Self::Listed { server, .. } | Self::Failed { server, .. } => server,
        }
    }
}

/// Why discovering one server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureReason {
    /// `cannot-start`: the command is empty, or the program could not be started.
    CannotStart,
    /// `handshake-failed`: the server exited or failed during the MCP initialize handshake.
    HandshakeFailed,
    /// `exited`: the server exited (or closed its stdout) after initialize, before it answered;
    /// the problem gives its exit status.
    Exited,
    /// `bad-response`: a response that breaks the protocol (no result, no `tools` array, a bad
    /// cursor, a repeated cursor, lines that are not JSON, …).
    BadResponse,
    /// `listing-too-large`: the listing broke one of discovery's limits: a message longer than
    /// [`crate::discover::MAX_MESSAGE_BYTES`], more than [`crate::discover::MAX_LISTING_BYTES`] in
    /// all, more than [`crate::discover::MAX_TOOLS`] tools or [`crate::discover::MAX_PAGES`]
    /// pages. Refused as soon as the limit is passed, before the rest is read.
    ListingTooLarge,
    /// `invalid-listing`: the listing has tools that break the listing rules (one problem per
    /// tool: not an object, no name, a non-object schema, a name listed twice, …).
    InvalidListing,
    /// `timed-out`: the session ran past the block's `timeout`.
    TimedOut,
    /// `stopped`: SIGINT, SIGTERM or SIGHUP stopped discovery; the server was killed.
    Stopped,
    /// `snapshot-io`: the old snapshot could not be read as a file, or the new one not written.
    SnapshotIo,
    /// `internal`: discovery itself could not run (no async runtime, a task that stopped).
    Internal,
}

impl FailureReason {
    /// Every reason, in documented order.
    pub const ALL: [FailureReason; 10] = [
        Self::CannotStart,
        Self::HandshakeFailed,
        Self::Exited,
        Self::BadResponse,
        Self::ListingTooLarge,
        Self::InvalidListing,
        Self::TimedOut,
        Self::Stopped,
        Self::SnapshotIo,
        Self::Internal,
    ];

    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CannotStart => "cannot-start",
            Self::HandshakeFailed => "handshake-failed",
            Self::Exited => "exited",
            Self::BadResponse => "bad-response",
            Self::ListingTooLarge => "listing-too-large",
            Self::InvalidListing => "invalid-listing",
            Self::TimedOut => "timed-out",
            Self::Stopped => "stopped",
            Self::SnapshotIo => "snapshot-io",
            Self::Internal => "internal",
        }
    }
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem of a failed server: where, what, what to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoverProblem {
    /// The stable kebab-case code (docs/problems.md).
    pub code: String,
    /// What is wrong, naming the server (and the tool, where one is at fault).
    pub message: String,
    /// The file the problem is in, when it is in one (a snapshot).
    pub file: Option<String>,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// What to change, when there is a clear fix.
    pub help: Option<String>,
}

impl fmt::Display for DiscoverProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// What `--lock` accepted into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockUpdate {
    /// The lock file written.
    pub lock_file: String,
    /// Each definition accepted: new, changed or removed; empty when the lock was up to date.
    pub accepted: Vec<LockFinding>,
}

/// The difference between two listings of one server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotDiff {
    /// Tools only in the new listing, by name.
    pub added: Vec<String>,
    /// Tools only in the old listing, by name.
    pub removed: Vec<String>,
    /// Tools in both whose definition changed, by name.
    pub changed: Vec<ToolChange>,
}

impl SnapshotDiff {
    /// Nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_serializes_as_its_code_and_is_documented() {
        let doc = include_str!("../../docs/policy.md");
        for reason in FailureReason::ALL {
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, reason.as_str());
            assert_eq!(
                serde_json::from_value::<FailureReason>(json).unwrap(),
                reason
            );
            assert!(
                doc.contains(&format!("`{}`", reason.as_str())),
                "docs/policy.md lists {reason}"
            );
        }
    }
}
