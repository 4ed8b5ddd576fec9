//! The gateway's hook on every forwarded result, for `tools/call`, `/v1/call` and `muster
//! call` alike: the result counted and cut to its budget ([`crate::results::shape`]), its
//! `structuredContent` checked against the `outputSchema` its server lists for the tool now
//! ([`crate::results::check_output_with`], compiled once per schema), and the counts, the note and any mismatch written
//! under muster's own `_meta` key. The budget is the policy's
//! ([`crate::policy::Policy::result_budget`]), held to what is left of the turn's.
//!
//! It decides nothing about budgets or schemas itself, and runs on the blocking pool: a
//! 16 MiB result is parsed, counted and cut off the async workers.

use serde_json::Value;
use serde_json::value::RawValue;

use super::own_meta::{tool_error, with_own};
use super::{CallRecord, Gateway};
use crate::contract::{CallResult, ResultStatus};
use crate::contract::{OutputMismatch, ResultCount};
use crate::policy::OutputMismatchMode;
use crate::results::{MIN_RESULT_TOKENS, Shaping};

/// One forwarded call's result as the client gets it.
pub(super) struct Shaped {
    /// The result object's text.
    pub text: String,
    /// Tokens of the content the client gets (0 when the result has none).
    pub tokens: u64,
    /// `result-cut`, `output-schema-mismatch`, `output-schema-uncheckable`, for the log.
    pub codes: Vec<String>,
}

impl Gateway {
    /// Every forwarded result of a turn shaped, in the turn's order, each held to what is
    /// left of the turn's budget after the ones before it; a drift a call was let through
    /// with (`warned`, by call) rides in its `_meta`, as for `tools/call`.
    pub(super) async fn shape_turn(
        &self,
        results: &mut [CallResult],
        records: &mut [CallRecord],
        warned: Vec<Option<super::Drift>>,
    ) {
        let mut turn_left = self.turn_budget();
        for ((result, record), drift) in results.iter_mut().zip(records.iter_mut()).zip(warned) {
            let (ResultStatus::Forwarded, Some(server), Some(tool), Some(raw)) = (
                result.status,
                result.server.as_deref(),
                result.tool.as_deref(),
                result.result.take(),
            ) else {
                continue;
            };
            let ask = Ask {
                server,
                tool,
                called: &record.tool,
                turn_left,
                details: drift
                    .map(|d| serde_json::Map::from_iter([("drift".into(), serde_json::json!(d))]))
                    .unwrap_or_default(),
            };
            let shaped = self.shape(ask, raw).await;
            turn_left = turn_left.map(|left| left.saturating_sub(shaped.tokens));
            record.codes.extend(shaped.codes);
            record.result_tokens = Some(shaped.tokens);
            result.result = RawValue::from_string(shaped.text).ok();
        }
    }
}

/// What one forwarded result is shaped by.
pub(super) struct Ask<'a> {
    /// The server and its name of the tool.
    pub server: &'a str,
    pub tool: &'a str,
    /// The tool as the client called it.
    pub called: &'a str,
    /// What is left of the turn's budget, when it has one.
    pub turn_left: Option<u64>,
    /// Other details of muster's for the same `_meta` key (a drift let through).
    pub details: serde_json::Map<String, Value>,
}

impl Gateway {
    /// The budget of a call to `server`'s tools, before the turn's.
    pub(super) fn call_budget(&self, server: &str) -> Option<u64> {
        let g = self.current.load();
        let policy = &g.inputs.policy;
        let selection = &self.options.selection;
        let agent = policy.agent(selection.agent.as_deref(), selection.version);
        policy.result_budget(server, agent).map(u64::from)
    }

    /// The encoding and the provider's rules a result is counted by.
    pub(super) fn counted_by(&self) -> (crate::tokens::Encoding, crate::tokens::Provider) {
        let g = self.current.load();
        let policy = &g.inputs.policy;
        let selection = &self.options.selection;
        let provider = selection
            .provider
            .or_else(|| {
                policy
                    .agent(selection.agent.as_deref(), selection.version)
                    .and_then(|a| a.provider)
            })
            .unwrap_or(policy.provider);
        (policy.encoding, provider)
    }

    /// The turn's budget, when `[results]` sets one.
    pub(super) fn turn_budget(&self) -> Option<u64> {
        let g = self.current.load();
        g.inputs
            .policy
            .results
            .max_turn_result_tokens
            .map(u64::from)
    }

    /// `raw` (a server's result, muster's keys already moved) as the client gets it.
    pub(super) async fn shape(&self, ask: Ask<'_>, raw: Box<RawValue>) -> Shaped {
        let budget = match (self.call_budget(ask.server), ask.turn_left) {
            (Some(a), Some(b)) => Some(a.min(b.max(u64::from(MIN_RESULT_TOKENS)))),
            (a, b) => a.or(b.map(|b| b.max(u64::from(MIN_RESULT_TOKENS)))),
        };
        // The tool as its server lists it now (the call just checked it against the plan):
        // its `outputSchema`, and the arguments its input schema has for asking for less.
        let (output_schema, input_schema) = match self.upstreams.listing(ask.server).await {
            Ok(listing) => listing.get(ask.tool).map_or((None, None), |(t, _)| {
                (
                    t.raw.get("outputSchema").cloned(),
                    Some(t.input_schema.clone()),
                )
            }),
            // A listing that fails now is judged by the next call.
            Err(_) => (None, None),
        };
        let (encoding, provider) = self.counted_by();
        let mode = self.current.load().inputs.policy.results.on_output_mismatch;
        let called = ask.called.to_string();
        let (server, tool) = (ask.server.to_string(), ask.tool.to_string());
        let validators = self.validators.clone();
        let mut details = ask.details;
        let work = move || {
            let paging = input_schema
                .map(|s| crate::results::paging_arguments(&s.value()))
                .unwrap_or_default();
            let how = Shaping {
                tool: &called,
                encoding,
                provider,
                budget,
                paging: &paging,
            };
            let shaped = crate::results::shape(raw.get(), &how);
            let mismatches = match &output_schema {
                Some(schema) => serde_json::from_str::<Value>(raw.get())
                    .map(|result| {
                        let compiled = validators.get(&server, &tool, schema);
                        crate::results::check_output_with(&compiled, &result, &called)
                    })
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            finish(raw.get(), shaped, mismatches, mode, &mut details)
        };
        match super::call::off_worker(work).await {
            Ok(shaped) => shaped,
            // Nothing cancels this work; a panic stays a panic.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// The answer from the shaped result and the mismatches found.
fn finish(
    sent: &str,
    shaped: crate::results::Shaped,
    mismatches: Vec<OutputMismatch>,
    mode: OutputMismatchMode,
    details: &mut serde_json::Map<String, Value>,
) -> Shaped {
    let count: ResultCount = shaped.count;
    let mut codes: Vec<String> = Vec::new();
    if count.cut {
        codes.push("result-cut".into());
    }
    codes.extend(mismatches.iter().map(|m| m.code.as_str().to_string()));
    codes.dedup();
    let tokens = count.tokens_after;
    // With no budget, no mismatch and nothing else to say, the result goes as it was sent,
    // byte for byte; the call log still counts it.
    if count.budget.is_none() && mismatches.is_empty() && details.is_empty() {
        return Shaped {
            text: sent.to_string(),
            tokens,
            codes,
        };
    }
    details.insert(
        "result".into(),
        serde_json::to_value(&count).unwrap_or_default(),
    );
    if !mismatches.is_empty() {
        details.insert(
            "output".into(),
            serde_json::to_value(&mismatches).unwrap_or_default(),
        );
    }
    let details = Value::Object(std::mem::take(details));
    if !mismatches.is_empty() && mode == OutputMismatchMode::Error {
        let text: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
        return Shaped {
            text: tool_error(&text.join("\n"), &details),
            tokens,
            codes,
        };
    }
    let body = shaped.text.as_deref().unwrap_or(sent);
    Shaped {
        text: with_own(body, &details),
        tokens,
        codes,
    }
}
