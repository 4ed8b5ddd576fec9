//! The share of a model's context window a roster's tool section takes:
//! `plan --format json`'s `context` and the report's start-up line.

use serde::{Deserialize, Serialize};

/// A tool section's tokens against one model's context window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ContextShare {
    /// The model measured against: as named, or the provider's default.
    pub model: String,
    /// Tokens the model's context window holds.
    pub context_tokens: u32,
    /// Tokens of the tool section (the plan's `totals.tokens`).
    pub tokens: u32,
    /// `tokens` as a percentage of `context_tokens`, rounded half up to two
    /// decimals.
    pub percent: f64,
    /// Where the window's size was read.
    pub source: String,
}
