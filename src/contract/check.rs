//! The call check's typed shapes: how a tool's calls are checked (`CheckMode`), as the policy
//! chooses it, the plan carries it and the check reads it back.

use serde::{Deserialize, Serialize};

/// How a tool's calls are judged. Serialized as `"lenient"` or `"strict"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckMode {
    /// The argument-check record's rules only: refuse what no tool can read, pass what a tool
    /// commonly reads after a cast, skip what the check cannot judge (the default for
    /// configured tools).
    Lenient,
    /// The lenient rules, then the forwarded arguments validated against the tool's whole
    /// input schema by a JSON Schema validator, as an MCP server validates them (the default for
    /// MCP tools).
    Strict,
}

impl CheckMode {
    /// The mode named `text` in a policy file, when it is one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "lenient" => Some(Self::Lenient),
            "strict" => Some(Self::Strict),
            _ => None,
        }
    }

    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lenient => "lenient",
            Self::Strict => "strict",
        }
    }
}
