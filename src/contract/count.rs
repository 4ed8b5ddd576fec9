//! `count`'s answer as data: the input tokens one chat request will be
//! billed for, whether that is exact or an estimate, and where the tokens
//! go. `muster count --format json` prints a [`CountReport`];
//! `POST /v1/count` returns the same bytes. Documented in `docs/count.md`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The version of the [`CountReport`] shape; bumped when a field changes
/// meaning or goes away.
pub const COUNT_FORMAT_VERSION: u32 = 1;

/// Whose billing a count follows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI Chat Completions: tools rendered as a TypeScript namespace,
    /// counted exactly with tiktoken's encodings.
    #[default]
    Openai,
    /// Anthropic Messages: no public tokenizer; counts are estimates.
    Anthropic,
}

impl Provider {
    /// Every provider, in declaration order.
    pub const ALL: [Provider; 2] = [Provider::Openai, Provider::Anthropic];

    /// The stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// Parses `openai` or `anthropic`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far a count can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Accuracy {
    /// Every part follows a formula that reproduces the provider's measured
    /// counts exactly on the fixtures in `tests/fixtures/count/`.
    Exact,
    /// Some part is estimated; `notes` says which.
    Estimate,
}

/// The input tokens of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CountReport {
    /// [`COUNT_FORMAT_VERSION`].
    pub format_version: u32,
    /// Whose billing the count follows.
    pub provider: Provider,
    /// The model, as named in the request or by `--model`.
    pub model: String,
    /// The tokenizer counted with: the model's own for OpenAI, a proxy for
    /// Anthropic (see `notes`).
    pub encoding: String,
    /// `exact` or `estimate`.
    pub accuracy: Accuracy,
    /// The input tokens the request will be billed for: the sum of the
    /// breakdown.
    pub input_tokens: u32,
    /// Where the tokens go.
    pub breakdown: Breakdown,
    /// Each tool's own tokens, in request order. Their sum is at most
    /// `breakdown.tools`, which also holds what wraps the tool section.
    pub tools: Vec<ToolTokens>,
    /// Why a count is an estimate, or what it leaves out; empty when exact.
    pub notes: Vec<CountNote>,
}

/// Where a request's tokens go; the parts sum to `input_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    /// Every message (and Anthropic's `system`): framing, role, name,
    /// content, tool calls.
    pub messages: u32,
    /// The tool section: every definition and what wraps them.
    pub tools: u32,
    /// What `tool_choice` (or `function_call`) adds beyond `auto`.
    pub tool_choice: u32,
    /// Fixed tokens of the request: reply priming, the provider's
    /// tool-use system prompt, net of what a system message shares.
    pub overhead: u32,
}

/// One tool's own tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolTokens {
    /// The tool's name as sent.
    pub name: String,
    /// Tokens of its rendered definition.
    pub tokens: u32,
}

/// Why a count is an estimate: one part of the request and what is not
/// measured about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CountNote {
    /// Anthropic publishes no tokenizer: text is counted with a proxy
    /// encoding.
    ProxyTokenizer,
    /// `tool_choice` is `required`: no public measurement gives its cost;
    /// counted as `auto`.
    ToolChoiceRequiredUnmeasured,
    /// An assistant message carries `tool_calls` or a `tool` message
    /// answers one: counted as the legacy `function_call` / `function`
    /// messages are, which no public measurement confirms for tools.
    ToolCallsUnmeasured,
    /// A schema nests objects: the few public measurements of nested
    /// objects bill them differently by request shape (flat with nested
    /// descriptions for `tools` in 2024, indented without them for
    /// `functions` in 2023); the count follows the set of the request's
    /// shape, which covers only shallow nesting.
    NestedObjects,
    /// A schema has an `enum` of numbers, or a `const` with no `type`: the
    /// provider renders these literals a token or so shorter than muster.
    Literals,
    /// A schema has `$defs` / `definitions` or a `$ref`: no public
    /// measurement shows how the provider renders them; each definition is
    /// counted once as a named type and a reference as its name.
    References,
}

impl CountNote {
    /// Every note, in declaration order.
    pub const ALL: [CountNote; 6] = [
        CountNote::ProxyTokenizer,
        CountNote::ToolChoiceRequiredUnmeasured,
        CountNote::ToolCallsUnmeasured,
        CountNote::NestedObjects,
        CountNote::Literals,
        CountNote::References,
    ];

    /// The stable kebab-case code.
    pub fn code(self) -> &'static str {
        match self {
            CountNote::ProxyTokenizer => "proxy-tokenizer",
            CountNote::ToolChoiceRequiredUnmeasured => "tool-choice-required-unmeasured",
            CountNote::ToolCallsUnmeasured => "tool-calls-unmeasured",
            CountNote::NestedObjects => "nested-objects",
            CountNote::Literals => "literals",
            CountNote::References => "references",
        }
    }
}

impl fmt::Display for CountNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CountNote::ProxyTokenizer => {
                "Anthropic publishes no tokenizer: text is counted with a proxy encoding and the total is an estimate"
            }
            CountNote::ToolChoiceRequiredUnmeasured => {
                "tool_choice \"required\" has no public measurement; it is counted as \"auto\""
            }
            CountNote::ToolCallsUnmeasured => {
                "tool_calls and tool messages are counted as function_call and function messages are; no public measurement confirms it"
            }
            CountNote::NestedObjects => {
                "a schema nests objects, counted as the public measurements of the request's shape (tools or functions) bill them; deeper nesting is not measured"
            }
            CountNote::References => {
                "a schema has $defs or $ref, whose rendering no public measurement shows; each definition is counted once as a named type"
            }
            CountNote::Literals => {
                "a schema has a number enum or an untyped const, which the provider renders a token or so shorter"
            }
        })
    }
}

impl fmt::Display for CountReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accuracy = match self.accuracy {
            Accuracy::Exact => "exact",
            Accuracy::Estimate => "estimate",
        };
        writeln!(
            f,
            "{} input tokens ({accuracy}) for {} {} ({})",
            self.input_tokens, self.provider, self.model, self.encoding
        )?;
        let b = &self.breakdown;
        writeln!(f, "  messages     {:>8}", b.messages)?;
        writeln!(f, "  tools        {:>8}", b.tools)?;
        for tool in &self.tools {
            writeln!(f, "    {:<30} {:>6}", tool.name, tool.tokens)?;
        }
        writeln!(f, "  tool_choice  {:>8}", b.tool_choice)?;
        writeln!(f, "  overhead     {:>8}", b.overhead)?;
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}
