//! A gate run's outcome: the roster's size, each failed check as typed
//! data, and what a findability check measured. `muster gate --format json`
//! prints a list of [`GateResult`]; the text output renders the same values.

use super::{Reason, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of one gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GateResult {
    /// Gate name.
    pub name: String,
    /// Gate file.
    pub file: String,
    /// Whether every check passed.
    pub passed: bool,
    /// Each failed check.
    pub failures: Vec<GateFailure>,
    /// The planned roster's size against its caps.
    pub roster: RosterSize,
    /// The planned roster's fingerprint.
    pub fingerprint: String,
    /// What the findability check measured, when the gate has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findability: Option<FindabilityResult>,
}

/// A roster's size against its caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RosterSize {
    /// Definitions offered.
    pub items: u32,
    /// The item cap.
    pub item_cap: u32,
    /// Tokens of the tool section.
    pub tokens: u32,
    /// The token cap.
    pub token_cap: u32,
}

impl fmt::Display for RosterSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} items, {}/{} tokens",
            self.items, self.item_cap, self.tokens, self.token_cap
        )
    }
}

/// One failed gate check, tagged by `code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
pub enum GateFailure {
    /// The gate requires more tools than the item cap holds.
    TooManyRequired {
        /// The required tools.
        required: Vec<String>,
        /// The item cap.
        item_cap: u32,
    },
    /// A required tool is not offered.
    RequiredNotOffered {
        /// The tool.
        tool: String,
        /// Where the plan put it.
        status: Status,
        /// Why, with its facts.
        reason: Reason,
    },
    /// Fewer slots are left than the gate wants.
    SlotHeadroom {
        /// Slots left.
        slots: u32,
        /// The gate's minimum.
        min: u32,
    },
    /// Fewer tokens are left than the gate wants.
    TokenHeadroom {
        /// Tokens left.
        tokens: u32,
        /// The gate's minimum.
        min: u32,
    },
    /// The planned roster differs from the pinned one.
    RosterDiffers {
        /// The gate file.
        file: String,
        /// The line of the pinned roster.
        line: usize,
        /// Tools offered now that the pin does not have.
        added: Vec<AddedTool>,
        /// Pinned tools not offered now.
        removed: Vec<RemovedTool>,
        /// With the same tools, the first position where the order differs.
        reordered: Option<Reorder>,
    },
    /// With every load the policy allows taken, the chat would be offered
    /// more than the caps (`loads_within_caps = true`).
    LoadsBeyondCaps {
        /// Items offered with every allowed load taken.
        items: u32,
        /// The item cap.
        item_cap: u32,
        /// Tokens of the tool section with every allowed load taken.
        tokens: u32,
        /// The token cap.
        token_cap: u32,
        /// The policy's `deferral.loads`.
        loads: String,
    },
    /// A provider named in `accepted_by` would refuse the request as
    /// muster sends it.
    NotAccepted {
        /// Each thing refused, by provider format.
        violations: Vec<super::Violation>,
    },
    /// The control tool's search finds too few labelled queries' tools.
    Findability {
        /// How many results counted.
        k: u32,
        /// Queries found.
        found: u32,
        /// Queries asked.
        total: u32,
        /// The recall measured.
        recall: f64,
        /// The least the gate accepts.
        min_recall: f64,
    },
    /// A labelled query's `loads` says what a load of it must load, and
    /// the control tool would load something else.
    Loads {
        /// Its line in the query file.
        line: usize,
        /// The query.
        query: String,
        /// What the line says it loads (empty: nothing).
        expect: Vec<String>,
        /// What a load of it would load now.
        loaded: Vec<String>,
    },
}

/// A tool offered now that the pin lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddedTool {
    /// Tool name.
    pub name: String,
    /// Its 1-based position in the roster now.
    pub position: usize,
}

/// A pinned tool not offered now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RemovedTool {
    /// Tool name.
    pub name: String,
    /// Where the plan puts it now; `None` when it is no longer a candidate.
    pub status: Option<Status>,
    /// Why, when it is still a candidate.
    pub reason: Option<Reason>,
}

/// The first position where the same tools are ordered differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Reorder {
    /// 1-based position.
    pub position: usize,
    /// The tool there now.
    pub now: String,
    /// The tool the pin has there.
    pub pinned: String,
}

/// What a findability check measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FindabilityResult {
    /// The query file.
    pub queries: String,
    /// How many results counted.
    pub k: u32,
    /// Queries whose expected tool was offered or in the top `k`.
    pub found: u32,
    /// Queries in the file.
    pub total: u32,
    /// `found / total`, rounded to 4 decimals.
    pub recall: f64,
    /// The least the gate accepts.
    pub min_recall: f64,
    /// The queries missed, at most ten, in file order.
    pub missed: Vec<MissedQuery>,
}

/// A labelled query whose tool was not found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MissedQuery {
    /// Its line in the query file.
    pub line: usize,
    /// The query.
    pub query: String,
    /// The tools it expects.
    pub expect: Vec<String>,
    /// What the search returned instead, best first.
    pub top: Vec<String>,
}

/// Most roster changes one failure sentence lists.
const SHOWN: usize = 5;

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateFailure::TooManyRequired { required, item_cap } => write!(
                f,
                "the gate requires {} tools ({}) but the item cap is {item_cap}: they cannot all fit",
                required.len(),
                required.join(", ")
            ),
            GateFailure::RequiredNotOffered {
                tool,
                status,
                reason,
            } => super::reason::required_not_offered(f, tool, *status, reason),
            GateFailure::LoadsBeyondCaps {
                items,
                item_cap,
                tokens,
                token_cap,
                loads,
            } => write!(
                f,
                "with every allowed load taken the chat is offered {items}/{item_cap} items and {tokens}/{token_cap} tokens, past the caps (deferral.loads = {loads:?}); set deferral.loads = \"within-caps\", or lower deferral.beyond_items / beyond_tokens to 0"
            ),
            GateFailure::SlotHeadroom { slots, min } => write!(
                f,
                "headroom is {slots} slot(s); the gate wants at least {min}"
            ),
            GateFailure::TokenHeadroom { tokens, min } => write!(
                f,
                "headroom is {tokens} tokens; the gate wants at least {min}"
            ),
            GateFailure::RosterDiffers {
                file,
                line,
                added,
                removed,
                reordered,
            } => {
                let mut parts: Vec<String> = added
                    .iter()
                    .map(|a| format!("+ {} (now offered at position {})", a.name, a.position))
                    .collect();
                for r in removed {
                    let why = match (&r.status, &r.reason) {
                        (Some(status), Some(reason)) => {
                            format!("now {} ({}): {reason}", status.as_str(), reason.code())
                        }
                        _ => "no longer a candidate".to_string(),
                    };
                    parts.push(format!("- {} ({why})", r.name));
                }
                if let Some(r) = reordered {
                    parts.push(format!(
                        "order changed from position {}: {} where the pin has {}",
                        r.position, r.now, r.pinned
                    ));
                }
                let more = parts.len().saturating_sub(SHOWN);
                parts.truncate(SHOWN);
                if more > 0 {
                    parts.push(format!("and {more} more change(s)"));
                }
                write!(
                    f,
                    "roster differs from the one pinned at {file}:{line}: {}; if the change is intended, update the pinned roster",
                    parts.join("; ")
                )
            }
            GateFailure::NotAccepted { violations } => {
                let shown: Vec<String> = violations
                    .iter()
                    .take(SHOWN)
                    .map(|v| v.to_string())
                    .collect();
                let more = violations.len().saturating_sub(SHOWN);
                write!(
                    f,
                    "{} thing(s) a provider would refuse: {}",
                    violations.len(),
                    shown.join("; ")
                )?;
                if more > 0 {
                    write!(f, "; and {more} more")?;
                }
                Ok(())
            }
            GateFailure::Findability {
                k,
                found,
                total,
                recall,
                min_recall,
            } => write!(
                f,
                "findability: recall@{k} is {recall} ({found}/{total}); the gate wants at least {min_recall}"
            ),
            GateFailure::Loads {
                line,
                query,
                expect,
                loaded,
            } => write!(
                f,
                "findability line {line}: a load of {query:?} loads {loaded:?}; the line says {expect:?}"
            ),
        }
    }
}

impl fmt::Display for MissedQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {:?} expects {} (found: {})",
            self.line,
            self.query,
            self.expect.join(" or "),
            if self.top.is_empty() {
                "nothing".to_string()
            } else {
                self.top.join(", ")
            }
        )
    }
}
