//! What muster did to a forwarded tool result, as data: its counts and cut
//! (`_meta["dev.muster/gateway"].result`), the closing note a cut result
//! carries, and what a result that breaks its tool's `outputSchema` is
//! answered with (docs/results.md).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The codes of result decisions, stable and kebab-case (docs/problems.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultCode {
    /// The result was over its budget and was cut to fit.
    ResultCut,
    /// `structuredContent` does not match the tool's `outputSchema`, or is
    /// missing when the tool declares one.
    OutputSchemaMismatch,
    /// The tool's `outputSchema` cannot be compiled, so no result of it can
    /// be checked.
    OutputSchemaUncheckable,
}

impl ResultCode {
    /// Every code, for the documentation test.
    pub const ALL: [ResultCode; 3] = [
        Self::ResultCut,
        Self::OutputSchemaMismatch,
        Self::OutputSchemaUncheckable,
    ];

    /// The code as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResultCut => "result-cut",
            Self::OutputSchemaMismatch => "output-schema-mismatch",
            Self::OutputSchemaUncheckable => "output-schema-uncheckable",
        }
    }
}

/// A forwarded result's counts: what it cost, what is left, and whether it
/// was cut. Tokens are counted as the policy's encoding counts text; an
/// image or a binary resource counts as [`crate::results`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultCount {
    /// Tokens of the result's `content` as the server sent it.
    pub tokens_before: u64,
    /// Whether `tokens_before` is an estimate: text past a cut (or past the first 256 KiB when
    /// no budget applies) is not counted but estimated from the bytes per token counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_before_estimated: bool,
    /// Tokens of the `content` the client gets, the closing note included.
    pub tokens_after: u64,
    /// Bytes of the result object as the server sent it.
    pub bytes_before: u64,
    /// The budget it was held to (the call's own, or what was left of the
    /// turn's when that was less); null when none applies.
    pub budget: Option<u64>,
    /// Whether anything was cut or left out.
    pub cut: bool,
    /// Tokens of `structuredContent` when there is one (counted, never
    /// cut: a cut would break its schema).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub structured_tokens: Option<u64>,
    /// The closing note, when the result was cut.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<ResultCut>,
}

/// The closing note of a cut result: its last `content` item says this
/// sentence, and `_meta` holds it as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultCut {
    /// Always [`ResultCode::ResultCut`].
    pub code: ResultCode,
    /// The tool as the client called it.
    pub tool: String,
    /// Tokens of the content as sent.
    pub tokens_before: u64,
    /// Whether `tokens_before` is an estimate ([`ResultCount::tokens_before_estimated`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_before_estimated: bool,
    /// Bytes of the result as sent.
    pub bytes_before: u64,
    /// The budget it was cut to.
    pub budget: u64,
    /// Content items left out whole (after the one cut, or images over the
    /// budget).
    pub items_left_out: u64,
    /// The tool's own arguments for asking for less (`limit`, `offset`,
    /// `cursor`, `head`, …), as its input schema names them; empty when it
    /// has none.
    pub paging: Vec<String>,
}

impl fmt::Display for ResultCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[muster result-cut] This result was cut to fit its budget of {} tokens: as sent it was {}{} tokens ({} bytes)",
            self.budget,
            if self.tokens_before_estimated {
                "about "
            } else {
                ""
            },
            self.tokens_before,
            self.bytes_before
        )?;
        if self.items_left_out > 0 {
            write!(
                f,
                ", and {} more content item{} {} left out",
                self.items_left_out,
                if self.items_left_out == 1 { "" } else { "s" },
                if self.items_left_out == 1 {
                    "was"
                } else {
                    "were"
                }
            )?;
        }
        f.write_str(". ")?;
        if self.paging.is_empty() {
            f.write_str("Ask the tool for less at a time to see the rest.]")
        } else {
            let names: Vec<String> = self.paging.iter().map(|n| format!("`{n}`")).collect();
            write!(
                f,
                "To see the rest, call it again asking for less at a time with its own arguments: {}.]",
                names.join(", ")
            )
        }
    }
}

/// Why a result was not passed on as a success: its `structuredContent`
/// and the tool's `outputSchema` disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputMismatch {
    /// [`ResultCode::OutputSchemaMismatch`] or
    /// [`ResultCode::OutputSchemaUncheckable`].
    pub code: ResultCode,
    /// The tool as the client called it.
    pub tool: String,
    /// Where in `structuredContent` (a JSON path, `$` for the whole);
    /// null for an uncheckable schema.
    pub path: Option<String>,
    /// What the schema expected there, as the check words it.
    pub expected: String,
}

impl fmt::Display for OutputMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            ResultCode::OutputSchemaUncheckable => write!(
                f,
                "tool {:?} declares an outputSchema muster cannot check ({}), so its result is not passed on as a success",
                crate::names::escape(&self.tool),
                self.expected
            ),
            _ => write!(
                f,
                "tool {:?} returned a result that does not match its outputSchema at {}: {}. The tool misbehaved; its structured result was withheld",
                crate::names::escape(&self.tool),
                self.path.as_deref().unwrap_or("$"),
                self.expected
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_documented() {
        let docs = include_str!("../../docs/problems.md");
        for code in ResultCode::ALL {
            let row = format!("| `{}` |", code.as_str());
            assert!(docs.contains(&row), "docs/problems.md lists {row}");
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
