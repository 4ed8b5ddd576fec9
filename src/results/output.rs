//! A result's `structuredContent` against its tool's `outputSchema`, with the validator and
//! budget a call's strict check uses ([`crate::check::compile_strict`]): MCP says a client
//! SHOULD validate it, and a tool that declares a schema MUST send a result that conforms. A
//! result with `isError: true` is the tool saying it failed and is not judged. A compiled
//! validator is kept per server, tool and schema ([`OutputValidators`]), so a tool's schema is
//! compiled once, not on every call.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::contract::{OutputMismatch, ResultCode};

/// The most mismatches one result is answered with.
pub const MAX_OUTPUT_PROBLEMS: usize = 5;

/// The most compiled `outputSchema` validators a gateway keeps; past it the oldest is dropped
/// (and compiled again when its tool is called again).
pub const MAX_OUTPUT_VALIDATORS: usize = 256;

/// A schema compiled, or why it cannot be.
pub type Compiled = Arc<Result<crate::check::Checker, String>>;

/// Compiled `outputSchema` validators by server, tool and the schema's SHA-256: a schema that
/// changes (a reload, a server that rewrites its tool) is a new entry, never the old validator.
/// At most [`MAX_OUTPUT_VALIDATORS`], the oldest dropped first.
#[derive(Debug, Default)]
pub struct OutputValidators {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_key: HashMap<(String, String, String), Compiled>,
    order: VecDeque<(String, String, String)>,
    compiled: u64,
}

impl OutputValidators {
    /// The validator of `schema`, `server`'s `tool`'s output schema: kept, or compiled now.
    pub fn get(&self, server: &str, tool: &str, schema: &Value) -> Compiled {
        let key = (
            server.to_string(),
            tool.to_string(),
            crate::canon::sha256_hex(schema.to_string().as_bytes()),
        );
        if let Some(hit) = self.lock().by_key.get(&key) {
            return hit.clone();
        }
        // Compiled outside the lock: other calls do not wait for it.
        let compiled: Compiled = Arc::new(crate::check::compile_strict(schema));
        let mut kept = self.lock();
        kept.compiled += 1;
        if kept.by_key.insert(key.clone(), compiled.clone()).is_none() {
            kept.order.push_back(key);
        }
        while kept.order.len() > MAX_OUTPUT_VALIDATORS {
            if let Some(oldest) = kept.order.pop_front() {
                kept.by_key.remove(&oldest);
            }
        }
        compiled
    }

    /// How many schemas were compiled so far (a kept one is not compiled again).
    pub fn compiled(&self) -> u64 {
        self.lock().compiled
    }

    /// The kept validators; a panic elsewhere while the lock was held leaves nothing
    /// half-written here, so a poisoned lock is used as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What is wrong with `result` (a `tools/call` result object) for a tool declaring
/// `output_schema`: nothing when it conforms. A schema muster cannot compile is one
/// `output-schema-uncheckable` (fail closed: nothing can say the result is what was declared).
pub fn check_output(output_schema: &Value, result: &Value, tool: &str) -> Vec<OutputMismatch> {
    check_output_with(
        &Arc::new(crate::check::compile_strict(output_schema)),
        result,
        tool,
    )
}

/// [`check_output`] with the schema already compiled ([`OutputValidators::get`]).
pub fn check_output_with(compiled: &Compiled, result: &Value, tool: &str) -> Vec<OutputMismatch> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    let mismatch = |path: Option<String>, expected: String| OutputMismatch {
        code: ResultCode::OutputSchemaMismatch,
        tool: tool.to_string(),
        path,
        expected,
    };
    let Some(structured) = result.get("structuredContent") else {
        return vec![mismatch(
            Some("$".into()),
            "a structuredContent member: the tool declares an outputSchema, so its result must carry one".into(),
        )];
    };
    let validator = match compiled.as_ref() {
        Ok(validator) => validator,
        Err(why) => {
            return vec![OutputMismatch {
                code: ResultCode::OutputSchemaUncheckable,
                tool: tool.to_string(),
                path: None,
                expected: why.chars().take(300).collect(),
            }];
        }
    };
    crate::check::output_findings(validator, structured, MAX_OUTPUT_PROBLEMS)
        .into_iter()
        .map(|(path, words)| mismatch(Some(path), words))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_text_where_a_number_is_declared_is_a_mismatch_at_its_path() {
        let schema = json!({"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]});
        let bad = check_output(
            &schema,
            &json!({"content": [], "structuredContent": {"temp": "hot"}}),
            "weather",
        );
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert_eq!(bad[0].code, ResultCode::OutputSchemaMismatch);
        assert_eq!(bad[0].path.as_deref(), Some("temp"));
        assert!(
            check_output(
                &schema,
                &json!({"content": [], "structuredContent": {"temp": 21.5}}),
                "weather"
            )
            .is_empty()
        );
        let missing = check_output(&schema, &json!({"content": []}), "weather");
        assert_eq!(missing[0].path.as_deref(), Some("$"));
        assert!(
            check_output(&schema, &json!({"content": [], "isError": true}), "weather").is_empty()
        );
    }

    #[test]
    fn a_schema_is_compiled_once_per_server_tool_and_schema_and_the_oldest_dropped() {
        let cache = OutputValidators::default();
        let schema = json!({"type": "object", "properties": {"temp": {"type": "number"}}});
        let bad = json!({"content": [], "structuredContent": {"temp": "hot"}});
        for _ in 0..3 {
            let compiled = cache.get("w", "weather", &schema);
            assert_eq!(check_output_with(&compiled, &bad, "weather").len(), 1);
        }
        assert_eq!(cache.compiled(), 1);
        // Another server's tool of the same name, and the tool's schema changed: compiled anew.
        cache.get("v", "weather", &schema);
        let changed = json!({"type": "object", "properties": {"temp": {"type": "string"}}});
        let compiled = cache.get("w", "weather", &changed);
        assert!(check_output_with(&compiled, &bad, "weather").is_empty());
        assert_eq!(cache.compiled(), 3);
        // Bounded: past the most kept, the oldest goes first and is compiled again.
        for i in 0..MAX_OUTPUT_VALIDATORS {
            cache.get("s", &format!("t{i}"), &schema);
        }
        assert_eq!(
            cache.kept.lock().unwrap().by_key.len(),
            MAX_OUTPUT_VALIDATORS
        );
        let before = cache.compiled();
        cache.get("w", "weather", &schema);
        assert_eq!(cache.compiled(), before + 1);
        cache.get("s", &format!("t{}", MAX_OUTPUT_VALIDATORS - 1), &schema);
        assert_eq!(cache.compiled(), before + 1);
    }
}
