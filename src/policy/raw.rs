//! The policy files as written: one struct per file shape, unknown keys
//! refused, spans kept so every later problem can name its line. Nothing
//! here judges meaning; `policy::load` does that.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `muster.toml`: caps, tokenizer, deferral, groups, agents, call policy.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MusterFile {
    #[serde(default)]
    pub caps: Option<Spanned<RawCaps>>,
    #[serde(default)]
    pub tokens: Option<RawTokens>,
    #[serde(default)]
    pub deferral: Option<Spanned<RawDeferral>>,
    #[serde(default)]
    pub calls: Option<RawCalls>,
    #[serde(default)]
    pub lock: Option<RawLock>,
    #[serde(default)]
    pub group: Vec<Spanned<RawGroup>>,
    #[serde(default)]
    pub agent: Vec<Spanned<RawAgent>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCaps {
    pub items: Option<Spanned<i64>>,
    pub tokens: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTokens {
    pub encoding: Option<Spanned<String>>,
    pub provider: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDeferral {
    #[serde(default)]
    pub enabled: bool,
    pub control_tool: Option<Spanned<String>>,
    pub description: Option<String>,
    pub summary_tokens: Option<Spanned<i64>>,
    pub max_loaded: Option<Spanned<i64>>,
    pub max_loaded_tokens: Option<Spanned<i64>>,
    pub per_query: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCalls {
    pub unknown_arguments: Option<Spanned<String>>,
    pub mcp_unknown_arguments: Option<Spanned<String>>,
    pub coerce_configured: Option<bool>,
    pub coerce_mcp: Option<bool>,
    pub configured_check: Option<Spanned<String>>,
    pub mcp_check: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLock {
    pub file: Option<String>,
    pub on_mismatch: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    pub name: Spanned<String>,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub members: Vec<Spanned<String>>,
    pub description: Option<String>,
    #[serde(default)]
    pub defer_together: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub name: Spanned<String>,
    #[serde(default)]
    pub version: Option<Spanned<i64>>,
    #[serde(default)]
    pub default: bool,
    #[serde(default)]
    pub current: bool,
    pub enabled_tools: Option<Vec<Spanned<String>>>,
    pub servers: Option<Vec<Spanned<String>>>,
}

/// `tools/*.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    #[serde(default)]
    pub tool: Vec<Spanned<RawTool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTool {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    pub input_schema: Option<Spanned<serde_json::Value>>,
    pub input_schema_file: Option<Spanned<String>>,
    pub when: Option<Spanned<String>>,
    #[serde(default = "yes")]
    pub default_roster: bool,
    #[serde(default)]
    pub priority: i64,
    #[serde(default = "yes")]
    pub deferrable: bool,
    pub parameters: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub variadic: bool,
    pub unknown_arguments: Option<Spanned<String>>,
    pub coerce: Option<bool>,
    pub check: Option<Spanned<String>>,
}

/// `mcp/*.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpFile {
    #[serde(default)]
    pub mcp: Vec<Spanned<RawServer>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub name: Spanned<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub defer_together: bool,
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub snapshot: Option<Spanned<String>>,
    pub timeout_secs: Option<u64>,
    pub when: Option<Spanned<String>>,
    #[serde(default)]
    pub priority: i64,
    #[serde(default = "yes")]
    pub deferrable: bool,
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    #[serde(default)]
    pub params: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<RawFixed>>>,
    #[serde(default)]
    pub only: BTreeMap<Spanned<String>, Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub tool_priority: BTreeMap<Spanned<String>, i64>,
    pub unknown_arguments: Option<Spanned<String>>,
    pub coerce: Option<bool>,
    pub check: Option<Spanned<String>>,
    #[serde(default)]
    pub tool_check: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// A fixed argument: `{ value = ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFixed {
    pub value: toml::Value,
}

/// `flags/<profile>.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagsFile {
    #[serde(default)]
    pub flags: Vec<Spanned<String>>,
}

fn yes() -> bool {
    true
}
