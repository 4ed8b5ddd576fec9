//! `muster diff`'s answer: what one plan changes against another, tool by
//! tool and in total against the caps. JSON: see `docs/diff.md`.

use super::{Code, Provider, Reason, Status};
use serde::{Deserialize, Serialize};

/// The `format_version` of `muster diff --format json`.
pub const DIFF_FORMAT_VERSION: u32 = 1;

/// What changed from the base plan to the head plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanDiff {
    /// [`DIFF_FORMAT_VERSION`].
    pub format_version: u32,
    /// The plan compared against.
    pub base: DiffSide,
    /// The plan compared.
    pub head: DiffSide,
    /// Whether the offered roster (its fingerprint) is the same.
    pub same_roster: bool,
    /// Head minus base, for the totals and the caps.
    pub delta: TotalsDelta,
    /// Each tool whose place changed, in the order of [`ChangeKind`], then
    /// by its rank in the head plan (the base plan for `left`), then name.
    pub changes: Vec<RosterChange>,
}

/// One of the two plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffSide {
    /// Where the plan came from: the plan file, the policy directory, or
    /// `DIR@REV` for a policy directory at a git revision.
    pub source: String,
    /// The agent planned for.
    pub agent: String,
    /// Its version.
    pub agent_version: u64,
    /// The flag profile, or null.
    pub profile: Option<String>,
    /// Whose billing the token counts follow.
    pub provider: Provider,
    /// The plan's fingerprint.
    pub fingerprint: String,
    /// Its totals.
    pub totals: SideTotals,
}

/// A plan's size against its caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideTotals {
    /// Definitions offered.
    pub items: u32,
    /// The item cap.
    pub item_cap: u32,
    /// Tokens of the tool section.
    pub tokens: u32,
    /// The token cap.
    pub token_cap: u32,
    /// Tokens of the tool section's wrapper.
    pub wrapper_tokens: u32,
    /// Tools offered, deferred and cut.
    pub offered: u32,
    /// Tools deferred.
    pub deferred: u32,
    /// Tools cut.
    pub cut: u32,
}

/// Head minus base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotalsDelta {
    /// Items offered.
    pub items: i64,
    /// The item cap.
    pub item_cap: i64,
    /// Tokens of the tool section: the sum of every change's
    /// `tokens_delta` plus `wrapper_tokens`.
    pub tokens: i64,
    /// The token cap.
    pub token_cap: i64,
    /// The wrapper's tokens.
    pub wrapper_tokens: i64,
    /// Slots left under the item cap.
    pub slots_left: i64,
    /// Tokens left under the token cap.
    pub tokens_left: i64,
}

/// What happened to one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Offered in the head plan, not in the base (deferred, cut or absent there).
    Entered,
    /// Cut in the head plan, not in the base (offered, deferred or absent there).
    Cut,
    /// Deferred in the head plan, not in the base.
    Deferred,
    /// A candidate in the base plan, no candidate at all in the head.
    Left,
    /// Offered in both, and its order among the tools offered in both
    /// changed: one of the fewest tools that, moved, turn the base order
    /// into the head order (shifts from tools entering or leaving are not
    /// moves).
    Moved,
    /// Offered in both at the same relative place, with a different
    /// definition size.
    Resized,
    /// Deferred in both or cut in both, for a different reason code.
    ReasonChanged,
}

impl ChangeKind {
    /// Every kind, in the order changes are listed.
    pub const ALL: [ChangeKind; 7] = [
        ChangeKind::Entered,
        ChangeKind::Cut,
        ChangeKind::Deferred,
        ChangeKind::Left,
        ChangeKind::Moved,
        ChangeKind::Resized,
        ChangeKind::ReasonChanged,
    ];

    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Entered => "entered",
            ChangeKind::Cut => "cut",
            ChangeKind::Deferred => "deferred",
            ChangeKind::Left => "left",
            ChangeKind::Moved => "moved",
            ChangeKind::Resized => "resized",
            ChangeKind::ReasonChanged => "reason-changed",
        }
    }
}

/// One tool's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterChange {
    /// Full tool name.
    pub name: String,
    /// What happened.
    pub change: ChangeKind,
    /// Where the base plan put it; null when it was no candidate there.
    pub base: Option<Placement>,
    /// Where the head plan puts it; null when it is no candidate there.
    pub head: Option<Placement>,
    /// Head rank minus base rank, when both plans rank it.
    pub rank_delta: Option<i64>,
    /// What it adds to the roster's tokens: its offered tokens in the head
    /// minus those in the base (0 where it is not offered).
    pub tokens_delta: i64,
    /// For a tool the head plan cuts or defers on a cap (`item-cap`,
    /// `token-cap`), the tools that entered the roster ranked ahead of it:
    /// what pushed it out. For `provider-name-collision`, the tool that
    /// keeps the name. Empty otherwise (a lowered cap pushes nothing in;
    /// the facts say what would let it in).
    pub outranked_by: Vec<String>,
}

/// Where a plan puts a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Offered, deferred or cut.
    pub status: Status,
    /// The decision's code.
    pub code: Code,
    /// Its place in the priority order; null for tools excluded before the caps.
    pub rank: Option<u32>,
    /// Its definition's tokens; null when it was never counted.
    pub tokens: Option<u32>,
    /// The decision's facts, for deferred and cut tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Reason>,
}
