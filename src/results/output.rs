//! A result's `structuredContent` against its tool's `outputSchema`, with the validator and
//! budget a call's strict check uses ([`crate::check::compile_strict`]): MCP says a client
//! SHOULD validate it, and a tool that declares a schema MUST send a result that conforms. A
//! result with `isError: true` is the tool saying it failed and is not judged.

use serde_json::Value;

use crate::contract::{OutputMismatch, ResultCode};

/// The most mismatches one result is answered with.
pub const MAX_OUTPUT_PROBLEMS: usize = 5;

/// What is wrong with `result` (a `tools/call` result object) for a tool declaring
/// `output_schema`: nothing when it conforms. A schema muster cannot compile is one
/// `output-schema-uncheckable` (fail closed: nothing can say the result is what was declared).
pub fn check_output(output_schema: &Value, result: &Value, tool: &str) -> Vec<OutputMismatch> {
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
    let validator = match crate::check::compile_strict(output_schema) {
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
    crate::check::output_findings(&validator, structured, MAX_OUTPUT_PROBLEMS)
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
}
