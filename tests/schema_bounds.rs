//! Issue 24, defect 1: a `$ref` "billion laughs" (each definition refers twice to the one before,
//! a property pointing at the deepest) made one strict check walk 2^40 nodes. Such a schema is
//! now uncheckable: `plan` warns `uncheckable-schema`, and every call to the tool is refused with
//! the `uncheckable-schema` problem at once, from the library and from `muster check`. Before the
//! fix neither test finished.

mod common;

use std::path::Path;

use common::{Fixture, check_value, stdout};
use muster::check::{CheckOptions, OfferedPlan, Status, Turn, check_turn};
use serde_json::{Value, json};

const TURN: &str = r#"{"calls": [{"id": "1", "name": "kb.search", "arguments": {"x": "a"}}]}"#;

#[test]
fn the_library_refuses_a_call_to_a_billion_laughs_schema_as_uncheckable() {
    let schema = common::laughs(40);
    assert!(
        schema.to_string().len() < 4096,
        "the issue's schema is small"
    );
    let plan = json!({"format_version": 3, "roster": [{"name": "kb.search", "source": "mcp",
        "check": "strict", "input_schema": schema}], "deferred": [], "findings": []});
    let plan = OfferedPlan::from_json(&plan.to_string(), Path::new("plan.json")).unwrap();
    let turn = Turn::from_json(TURN, Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    let call = &report.calls[0];
    assert_eq!(call.status, Status::Refused);
    let problem = serde_json::to_value(&call.problems[0]).unwrap();
    assert_eq!(problem["code"], "uncheckable-schema", "{problem}");
    assert_eq!(problem["tool"], "kb.search");

    // The same tool checked leniently runs: lenient checking does not follow references.
    let lenient = json!({"format_version": 3, "roster": [{"name": "kb.search", "source": "mcp",
        "check": "lenient", "input_schema": common::laughs(40)}], "deferred": [], "findings": []});
    let lenient = OfferedPlan::from_json(&lenient.to_string(), Path::new("plan.json")).unwrap();
    let report = check_turn(&lenient, &turn, &CheckOptions::default());
    assert_eq!(report.calls[0].status, Status::Ok);
}

#[test]
fn muster_check_refuses_a_call_to_a_billion_laughs_schema_from_a_server() {
    let snapshot = json!({"tools": [{"name": "search", "description": "Search.",
        "inputSchema": common::laughs(40)}]});
    let fx = Fixture::new(&[
        (
            "policies/mcp/kb.toml",
            "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
        ),
        ("policies/mcp/kb.json", &snapshot.to_string()),
    ]);
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    let doc: Value = serde_json::from_str(&plan).unwrap();
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "uncheckable-schema")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(warning["tool"], "mcp.kb.search");
    fx.write("plan.json", &plan);
    fx.write("turn.json", &TURN.replace("kb.search", "mcp.kb.search"));
    let report = check_value(fx.path(), 1);
    let call = &report["calls"][0];
    assert_eq!(call["status"], "refused");
    assert_eq!(call["problems"][0]["code"], "uncheckable-schema", "{call}");
}

/// A strict plan whose one tool's `pattern` needs a backreference, so the regex engine
/// backtracks: `"a" * n` followed by anything but `b` takes about 2^(n+2) steps to refuse.
fn backtracking_plan(items: bool) -> OfferedPlan {
    let text = json!({"type": "string", "pattern": "^(a|a)*\\1b$"});
    let s = if items {
        json!({"type": "array", "items": text})
    } else {
        text
    };
    let plan = json!({"format_version": 3, "roster": [{"name": "t", "source": "mcp",
        "check": "strict", "input_schema": {"type": "object", "properties": {"s": s}}}],
        "deferred": [], "findings": []});
    OfferedPlan::from_json(&plan.to_string(), Path::new("plan.json")).unwrap()
}

fn codes(call: &muster::check::CallReport<'_>) -> Vec<String> {
    call.problems
        .iter()
        .map(|p| {
            serde_json::to_value(p).unwrap()["code"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Issue 24, left open: a backtracking `pattern` cost the regex engine up to 1,000,000 steps
/// (~40 ms) per value, and a small body of many values stalled the thread checking it. One
/// value that needs more than `check::MAX_VALUE_STEPS` is refused `check-budget-exceeded`
/// naming the argument (before: `schema-mismatch` after a million steps).
#[test]
fn a_value_whose_pattern_needs_more_than_the_per_value_steps_is_refused_unjudged() {
    assert_eq!(muster::check::MAX_VALUE_STEPS, 10_000);
    let plan = backtracking_plan(false);
    let turn = json!({"calls": [{"id": "1", "name": "t", "arguments": {"s": format!("{}c", "a".repeat(28))}}]});
    let turn = Turn::from_json(&turn.to_string(), Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    let call = &report.calls[0];
    assert_eq!(call.status, Status::Refused);
    assert_eq!(
        codes(call),
        ["check-budget-exceeded"],
        "{:?}",
        call.problems
    );
    // The problem as JSON, read back through the contract's own type.
    let json = serde_json::to_string(&call.problems[0]).unwrap();
    let read: muster::contract::CheckProblem = serde_json::from_str(&json).unwrap();
    assert_eq!(
        read.problem,
        muster::contract::CallProblem::CheckBudgetExceeded {
            tool: "t".into(),
            argument: Some("s".into()),
            budget: muster::check::MAX_CHECK_STEPS,
            per_value: 10_000,
        }
    );
}

/// The budget is per check, counted in steps: each backtracking match is charged the limits it
/// ran under (64, then 1,024 when it needed more). `"a" * 7` needs about 500 steps, so each
/// value costs 1,088 and 91 of them fit in the 100,000 steps of one check (all judged: the
/// pattern refuses them); the 92nd is refused `check-budget-exceeded`, naming it, and so is a
/// second call of the same turn, where a fresh budget per call would have let it through.
#[test]
fn a_turn_past_the_check_budget_is_refused_naming_the_value_the_budget_ran_out_at() {
    assert_eq!(muster::check::MAX_CHECK_STEPS, 100_000);
    let plan = backtracking_plan(true);
    let values = |n: usize| vec!["a".repeat(7); n];
    let turn = |n: usize, calls: usize| {
        let calls: Vec<Value> = (0..calls)
            .map(|i| json!({"id": format!("c{i}"), "name": "t", "arguments": {"s": values(n)}}))
            .collect();
        Turn::from_json(
            &json!({ "calls": calls }).to_string(),
            Path::new("turn.json"),
        )
        .unwrap()
    };
    let within = turn(91, 1);
    let report = check_turn(&plan, &within, &CheckOptions::default());
    let judged = codes(&report.calls[0]);
    assert!(
        judged
            .iter()
            .all(|c| c == "schema-mismatch" || c == "more-problems"),
        "{judged:?}"
    );
    let past = turn(92, 1);
    let report = check_turn(&plan, &past, &CheckOptions::default());
    assert_eq!(codes(&report.calls[0]), ["check-budget-exceeded"]);
    let problem = serde_json::to_value(&report.calls[0].problems[0]).unwrap();
    assert_eq!(problem["argument"], "s[91]");
    // Two calls of 50 values: the second runs out at its 42nd (index 41).
    let two = turn(50, 2);
    let report = check_turn(&plan, &two, &CheckOptions::default());
    assert!(
        codes(&report.calls[0])
            .iter()
            .all(|c| c != "check-budget-exceeded")
    );
    let problem = serde_json::to_value(&report.calls[1].problems[0]).unwrap();
    assert_eq!(problem["code"], "check-budget-exceeded");
    assert_eq!(problem["argument"], "s[41]");
}
