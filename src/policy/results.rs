//! How large a forwarded tool result may be and what a result that breaks its tool's
//! `outputSchema` becomes: `[results]` in `muster.toml` (the default budget, the per-turn
//! budget, `on_output_mismatch`), `max_result_tokens` on an `[[mcp]]` block and on an
//! `[[agent]]` (docs/results.md). It decides the budget a call is held to; cutting is
//! [`crate::results`]'s.

use super::load::{Loader, Source};
use super::{Agent, Policy, raw};
use crate::error::code;
use crate::results::MIN_RESULT_TOKENS;
use toml::Spanned;

/// What is done with a result whose `structuredContent` breaks its tool's `outputSchema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMismatchMode {
    /// Answered as `isError: true` naming the path and what was expected;
    /// `structuredContent` withheld (the default).
    #[default]
    Error,
    /// Passed on as sent, with the mismatch in `_meta` and the call log.
    Warn,
}

/// `[results]`: budgets and checks on what tools return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResultPolicy {
    /// The budget of a call whose server block and agent set none; `None`: no budget.
    pub max_result_tokens: Option<u32>,
    /// The most tokens one turn's results add up to (a `/v1/call` or `muster call` turn; a
    /// gateway `tools/call` is a turn of one call); `None`: no bound.
    pub max_turn_result_tokens: Option<u32>,
    /// What a result that breaks its `outputSchema` becomes.
    pub on_output_mismatch: OutputMismatchMode,
}

impl Policy {
    /// The budget a call to `server`'s tools is held to for `agent`: the smaller of the
    /// server block's and the agent's `max_result_tokens` where either is set, else
    /// `[results].max_result_tokens`; `None` when nothing sets one.
    pub fn result_budget(&self, server: &str, agent: Option<&Agent>) -> Option<u32> {
        let own = self
            .servers
            .iter()
            .find(|s| s.name == server)
            .and_then(|s| s.max_result_tokens);
        let agent = agent.and_then(|a| a.max_result_tokens);
        match (own, agent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (Some(a), None) | (None, Some(a)) => Some(a),
            (None, None) => self.results.max_result_tokens,
        }
    }
}

impl Loader {
    /// A result budget written at `key`: a whole number of tokens from
    /// [`MIN_RESULT_TOKENS`] (room for the closing note and some text).
    pub(super) fn result_tokens(
        &mut self,
        src: &Source,
        value: &Spanned<i64>,
        key: &str,
    ) -> Option<u32> {
        self.whole_from(
            src,
            value,
            key,
            MIN_RESULT_TOKENS,
            &format!(
                "use a whole number of tokens from {MIN_RESULT_TOKENS} (room for the note a cut result ends with) to 4294967295, or leave it out for no budget"
            ),
        )
    }

    /// `[results]` read, every problem named with its line.
    pub(super) fn results(&mut self, src: &Source, raw: Option<&raw::RawResults>) -> ResultPolicy {
        let mut policy = ResultPolicy::default();
        let Some(raw) = raw else {
            return policy;
        };
        if let Some(v) = &raw.max_result_tokens {
            policy.max_result_tokens = self.result_tokens(src, v, "results.max_result_tokens");
        }
        if let Some(v) = &raw.max_turn_result_tokens {
            policy.max_turn_result_tokens =
                self.result_tokens(src, v, "results.max_turn_result_tokens");
        }
        if let Some(mode) = &raw.on_output_mismatch {
            match mode.get_ref().as_str() {
                "error" => policy.on_output_mismatch = OutputMismatchMode::Error,
                "warn" => policy.on_output_mismatch = OutputMismatchMode::Warn,
                other => self.problems.push(
                    src.at(mode)
                        .coded(
                            code::NOT_A_CHOICE,
                            format!("results.on_output_mismatch {other:?} is not a choice"),
                        )
                        .help("use \"error\" (answer the call as a tool error naming what is wrong; the default) or \"warn\" (pass it on, with the mismatch in _meta and the call log)"),
                ),
            }
        }
        policy
    }
}
