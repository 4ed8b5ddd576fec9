//! Strict checking: an MCP tool is validated against its whole schema after the cast.

use super::*;

/// A plan of one tool with `schema`, from the plan's JSON, so the check mode defaults as it
/// does for a plan the planner wrote.
fn plan_of(source: &str, check: Option<&str>, schema: Value) -> OfferedPlan {
    let mut tool = json!({"name": "t", "source": source, "coerce": true, "input_schema": schema});
    if let Some(check) = check {
        tool["check"] = json!(check);
    }
    let text = json!({"format_version": 3, "roster": [tool]}).to_string();
    OfferedPlan::from_json(&text, Path::new("plan.json")).unwrap()
}

/// Issue 12 item 3: an MCP tool is checked against its whole schema after the cast; the same
/// call to a lenient tool passes, and a fitting call passes both.
#[test]
fn an_mcp_tool_is_checked_strictly_after_the_cast_and_a_lenient_tool_is_not() {
    let schema = json!({"type": "object", "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 10}}});
    let strict = plan_of("mcp", None, schema.clone());
    let lenient = plan_of("mcp", Some("lenient"), schema.clone());
    let configured = plan_of("configured", None, schema);
    let options = CheckOptions::default();
    let report = check_calls(&strict, &[("t", json!({"count": "50"}))], &options);
    assert_eq!(report.verdict, Verdict::Refused);
    assert_eq!(
        messages(&report.calls[0].problems),
        ["tool \"t\": argument \"count\" must be at most 10; got the number 50"]
    );
    for plan in [&lenient, &configured] {
        let report = check_calls(plan, &[("t", json!({"count": "50"}))], &options);
        assert_eq!(report.verdict, Verdict::Run);
    }
    // The twin: the cast "5" fits the whole schema.
    let report = check_calls(&strict, &[("t", json!({"count": "5"}))], &options);
    assert_eq!(
        report.verdict,
        Verdict::Run,
        "{:?}",
        report.calls[0].problems
    );
    assert_eq!(
        report.calls[0].arguments.as_deref(),
        Some(&json!({"count": 5}))
    );
}

/// Fixed values are the policy's: the offered schema no longer declares them, so strict
/// checking judges what the model wrote, before they are added.
#[test]
fn strict_checking_judges_what_the_model_wrote_before_fixed_values() {
    let text = json!({"format_version": 3, "roster": [{"name": "t", "source": "mcp",
        "fixed": {"scope": "team"}, "input_schema": {"type": "object",
        "additionalProperties": false, "properties": {"q": {"type": "string", "minLength": 1}}}}]})
    .to_string();
    let plan = OfferedPlan::from_json(&text, Path::new("plan.json")).unwrap();
    let options = CheckOptions::default();
    let report = check_calls(&plan, &[("t", json!({"q": "x"}))], &options);
    assert_eq!(
        report.verdict,
        Verdict::Run,
        "{:?}",
        report.calls[0].problems
    );
    assert_eq!(
        report.calls[0].arguments.as_deref(),
        Some(&json!({"q": "x", "scope": "team"}))
    );
    let report = check_calls(&plan, &[("t", json!({"q": ""}))], &options);
    assert_eq!(report.verdict, Verdict::Refused);
}

/// A strict schema the validator cannot compile fails closed: every call is refused, naming
/// why; the same schema checked leniently passes the call.
#[test]
fn a_strict_schema_that_cannot_be_compiled_refuses_every_call() {
    let schema = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}});
    let options = CheckOptions::default();
    let report = check_calls(
        &plan_of("mcp", None, schema.clone()),
        &[("t", json!({"p": "x"}))],
        &options,
    );
    assert_eq!(report.verdict, Verdict::Refused);
    let problem = &report.calls[0].problems[0];
    assert!(
        problem
            .message
            .starts_with("tool \"t\": its input schema cannot be compiled for strict checking ("),
        "{problem}"
    );
    let report = check_calls(
        &plan_of("mcp", Some("lenient"), schema),
        &[("t", json!({"p": "x"}))],
        &options,
    );
    assert_eq!(report.verdict, Verdict::Run);
}
