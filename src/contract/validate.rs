//! `muster validate`'s answer: what the policy holds, and every warning the plans of each agent
//! under no profile and under each flag profile raise.

use serde::{Deserialize, Serialize};

use super::Warning;

/// The `format_version` of `muster validate --format json`.
pub const VALIDATE_FORMAT_VERSION: u32 = 1;

/// A valid policy directory's summary and warnings. JSON: see `docs/policy.md`
/// ("`muster validate --format json`").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Validation {
    /// [`VALIDATE_FORMAT_VERSION`].
    pub format_version: u32,
    /// The policy directory, as given.
    pub policies: String,
    /// Configured tools.
    pub configured_tools: usize,
    /// MCP server blocks.
    pub servers: usize,
    /// Tools the servers' snapshots list, together.
    pub listed_tools: usize,
    /// Agent declarations (each version counts).
    pub agents: usize,
    /// Flag profiles.
    pub profiles: usize,
    /// Each warning once per agent name and profile, ordered by its sentence (with its place),
    /// then the agent, then the profile.
    pub warnings: Vec<SweptWarning>,
    /// With `--accept`: everything a named provider would refuse in each plan's request, once
    /// per agent name and profile, in the order of the formats asked, then agent, profile and
    /// the request's order. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<SweptViolation>,
}

/// A provider's refusal and the plan whose request it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct SweptViolation {
    /// The violation: its `code`, `format` and fields.
    #[serde(flatten)]
    pub violation: super::Violation,
    /// The agent planned for.
    pub agent: String,
    /// The flag profile, or null for none.
    pub profile: Option<String>,
}

/// A warning and the plan that raised it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct SweptWarning {
    /// The warning: its `code`, fields, `message` and place.
    #[serde(flatten)]
    pub warning: Warning,
    /// The agent planned for.
    pub agent: String,
    /// The flag profile, or null for none.
    pub profile: Option<String>,
}

impl SweptWarning {
    /// Which plan raised it, in words: `agent NAME, profile P` or `agent NAME, no profile`.
    pub fn context(&self) -> String {
        format!(
            "agent {}, {}",
            self.agent,
            self.profile
                .as_deref()
                .map(|p| format!("profile {p}"))
                .unwrap_or_else(|| "no profile".into())
        )
    }
}
