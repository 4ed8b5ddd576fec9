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
