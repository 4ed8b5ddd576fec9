//! `muster check` at the command line, on the plan of the bundled
//! production-shaped policies: exit codes, both formats, and bad input.

mod common;

use common::{CHECK_JSON, Fixture, check_value, muster, stdout};
use serde_json::Value;

fn setup(turn: &str) -> Fixture {
    let fx = Fixture::bundled();
    let plan = stdout(
        fx.path(),
        &["plan", "--flags", "production", "--format", "json"],
        0,
    );
    fx.write("plan.json", &plan);
    fx.write("turn.json", turn);
    fx
}

fn check_json(fx: &Fixture, code: i32) -> Value {
    check_value(fx.path(), code)
}

#[test]
fn a_fitting_turn_runs_with_repaired_and_cast_arguments() {
    let fx = setup(
        r#"{"calls": [
            {"id": "c1", "name": "memory.search", "arguments": "{\"query\": \"seat preference\", \"limit\": \"5\"}"},
            {"id": "c2", "name": "mcp.bland_call.start_call", "arguments": {"phone_number": "+14155550100", "task": "Book a table for two at 7pm.", "max_duration": "12"}}
        ]}"#,
    );
    let report = check_json(&fx, 0);
    assert_eq!(report["verdict"], "run");
    let c1 = &report["calls"][0];
    assert_eq!(c1["status"], "ok");
    assert_eq!(c1["refusal"], Value::Null);
    // Configured tools are not cast by default: "5" passes and rides as given.
    assert_eq!(c1["arguments"]["limit"], "5");
    assert_eq!(c1["notes"][0]["code"], "arguments-unwrapped", "{c1}");
    assert_eq!(c1["notes"][0]["call"], "c1", "{c1}");
    // MCP tools are cast: their servers validate strictly.
    assert_eq!(report["calls"][1]["arguments"]["max_duration"], 12);
}

#[test]
fn one_mismatch_refuses_the_whole_turn_and_names_what_to_fix() {
    let fx = setup(
        r#"{"calls": [
            {"id": "a", "name": "memory.search", "arguments": {"query": "x", "limit": {"n": 5}}},
            {"id": "b", "name": "system.current_time", "arguments": {}}
        ]}"#,
    );
    let report = check_json(&fx, 1);
    assert_eq!(report["verdict"], "refused");
    let a = &report["calls"][0];
    assert_eq!(
        (a["status"].as_str(), a["refusal"].as_str()),
        (Some("refused"), Some("arguments"))
    );
    assert_eq!(a["arguments"], Value::Null);
    assert_eq!(a["problems"][0]["code"], "wrong-type");
    assert_eq!(a["problems"][0]["argument"], "limit");
    let problem = a["problems"][0]["message"].as_str().unwrap();
    assert!(
        problem.contains("memory.search") && problem.contains("\"limit\""),
        "{problem}"
    );
    assert!(
        problem.contains("integer") && problem.contains("object"),
        "{problem}"
    );
    let b = &report["calls"][1];
    assert_eq!(
        (b["status"].as_str(), b["refusal"].as_str()),
        (Some("not-run"), Some("turn"))
    );

    // Text form, same exit code.
    let text = stdout(
        fx.path(),
        &["check", "--plan", "plan.json", "--turn", "turn.json"],
        1,
    );
    assert!(text.contains("refused"), "{text}");
}

#[test]
fn a_cut_tool_is_an_unknown_tool_with_the_closest_offered_names() {
    let fx = setup(
        r#"{"calls": [{"id": "x", "name": "mcp.gmail_read.get_thread", "arguments": {"thread_id": "1"}}]}"#,
    );
    let report = check_json(&fx, 1);
    assert_eq!(report["calls"][0]["problems"][0]["code"], "unknown-tool");
    let problem = report["calls"][0]["problems"][0]["message"]
        .as_str()
        .unwrap();
    assert!(problem.contains("mcp.gmail_read.get_thread"), "{problem}");
    assert!(
        problem.contains("not offered") || problem.contains("was not offered"),
        "{problem}"
    );
}

#[test]
fn unreadable_plan_or_turn_exits_2_naming_the_file() {
    let fx = setup("{\"calls\": [\n  {\"id\": 1,,}\n]}");
    let assert = muster(fx.path())
        .args(["check", "--plan", "plan.json", "--turn", "turn.json"])
        .assert()
        .code(2);
    let err = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(err.contains("turn.json:2"), "{err}");
    let assert = muster(fx.path())
        .args(["check", "--plan", "missing.json", "--turn", "turn.json"])
        .assert()
        .code(2);
    let err = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(err.contains("missing.json"), "{err}");
}

#[test]
fn a_bad_value_inside_arguments_refuses_the_call_and_the_turn_file_is_still_read() {
    let fx = setup(
        r#"{"calls": [
            {"id": "a", "name": "memory.search", "arguments": {"query": "x", "limit": 1e400}},
            {"id": "b", "name": "memory.search", "arguments": {"query": "\ud800"}},
            {"id": "c", "name": "memory.search", "arguments": {"query": "x", "limit": 5}}
        ]}"#,
    );
    let report = check_json(&fx, 1);
    let a = &report["calls"][0];
    assert_eq!(a["status"], "refused");
    assert_eq!(a["problems"][0]["code"], "unreadable-arguments");
    assert_eq!(
        a["problems"][0]["message"],
        "tool \"memory.search\": the arguments cannot be read as JSON: number out of range at column 29; send them again as valid JSON"
    );
    assert_eq!(report["calls"][1]["status"], "refused");
    assert_eq!(report["calls"][2]["status"], "not-run");
    // The twin: the same calls with readable arguments run.
    let fx = setup(
        r#"{"calls": [
            {"id": "a", "name": "memory.search", "arguments": {"query": "x", "limit": 1e300}},
            {"id": "b", "name": "memory.search", "arguments": {"query": "\ud83d\ude00"}}
        ]}"#,
    );
    let report = check_json(&fx, 0);
    assert_eq!(report["calls"][1]["arguments"]["query"], "\u{1F600}");
}

#[test]
fn a_call_id_used_twice_exits_2_naming_the_id_and_line() {
    let turn = "{\"calls\": [\n  {\"id\": \"a\", \"name\": \"memory.search\", \"arguments\": {\"query\": \"x\"}},\n  {\"id\": \"a\", \"name\": \"memory.search\", \"arguments\": {\"query\": \"y\"}}\n]}";
    let fx = setup(turn);
    let assert = muster(fx.path())
        .args(["check", "--plan", "plan.json", "--turn", "turn.json"])
        .assert()
        .code(2);
    let err = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("turn.json:3: call id \"a\" is used by two calls of the turn (calls 1 and 2, on lines 2 and 3)"),
        "{err}"
    );
    // The twin: distinct ids run.
    let fx = setup(&turn.replacen("\"a\"", "\"b\"", 1));
    assert_eq!(check_json(&fx, 0)["verdict"], "run");
}

/// The policy chooses the check mode: a value that is not a choice is refused with its file and
/// line; a strict tool whose schema the validator cannot compile is warned about by `plan` and
/// `validate`, and every call to it is refused (fail closed), while the same tool checked
/// leniently runs.
#[test]
fn the_check_mode_is_validated_and_an_uncheckable_strict_schema_fails_closed() {
    let tool = |check: &str| {
        format!(
            "[[tool]]\nname = \"a.find\"\ndescription = \"Find.\"\ncheck = \"{check}\"\ninput_schema = {{ type = \"object\", properties = {{ p = {{ type = \"string\", pattern = \"(\" }} }} }}\n"
        )
    };
    let fx = Fixture::new(&[("policies/tools/t.toml", &tool("sometimes"))]);
    let out = muster(fx.path()).args(["validate"]).assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("t.toml:4") && err.contains("check = \"sometimes\" is not a choice"),
        "{err}"
    );

    let fx = Fixture::new(&[("policies/tools/t.toml", &tool("strict"))]);
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    let doc: Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(doc["roster"][0]["check"], "strict");
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "uncheckable-schema")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert!(warning["message"].as_str().unwrap().contains("a.find"));
    let validate = stdout(fx.path(), &["validate"], 0);
    assert!(validate.contains("a.find"), "{validate}");
    fx.write("plan.json", &plan);
    fx.write(
        "turn.json",
        r#"{"calls": [{"id": "1", "name": "a.find", "arguments": {"p": "x"}}]}"#,
    );
    let report = check_json(&fx, 1);
    assert_eq!(
        report["calls"][0]["problems"][0]["code"],
        "uncheckable-schema"
    );

    let fx = Fixture::new(&[("policies/tools/t.toml", &tool("lenient"))]);
    fx.write(
        "plan.json",
        &stdout(fx.path(), &["plan", "--format", "json"], 0),
    );
    fx.write(
        "turn.json",
        r#"{"calls": [{"id": "1", "name": "a.find", "arguments": {"p": "x"}}]}"#,
    );
    assert_eq!(check_json(&fx, 0)["verdict"], "run");
}

#[test]
fn a_plan_named_by_its_fingerprint_is_checked_only_while_the_policy_still_makes_it() {
    let fx = setup(
        r#"{"calls": [{"id": "c1", "name": "math.calculate", "arguments": {"expression": "1"}}]}"#,
    );
    let plan: Value = serde_json::from_str(&fx.read("plan.json")).expect("plan");
    let fingerprint = plan["fingerprint"].as_str().expect("fingerprint");
    let by_plan = stdout(fx.path(), &CHECK_JSON, 0);
    let by_name = [
        "check",
        "--fingerprint",
        fingerprint,
        "--flags",
        "production",
        "--turn",
        "turn.json",
        "--format",
        "json",
    ];
    assert_eq!(stdout(fx.path(), &by_name, 0), by_plan);

    // A what-if cap makes another plan: refused unjudged, exit 1.
    let mut capped = by_name.to_vec();
    capped.extend(["--item-cap", "5"]);
    // Read back through this test's own type: the shape docs/check.md gives.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlanChanged {
        code: String,
        format_version: u32,
        offered: String,
        now: String,
    }
    let changed: PlanChanged =
        serde_json::from_str(&stdout(fx.path(), &capped, 1)).expect("plan-changed, nothing else");
    assert_eq!(changed.code, "plan-changed");
    assert_eq!(changed.format_version, 1);
    assert_eq!(changed.offered, fingerprint);
    assert_ne!(changed.now, fingerprint);
    assert!(changed.now.starts_with("sha256:"), "{}", changed.now);

    // The tool's description changes in the policy: the same.
    fx.edit(
        "policies/tools/10-core.toml",
        "Evaluate an arithmetic expression exactly",
        "Evaluate an arithmetic expression",
    );
    let text = stdout(fx.path(), &by_name[..by_name.len() - 2], 1);
    assert!(text.starts_with("plan changed:"), "{text}");

    // Not a fingerprint; or a selection given with --plan: exit 2.
    let bad = muster(fx.path())
        .args(["check", "--fingerprint", "sha256:12", "--turn", "turn.json"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&bad.get_output().stderr).to_string();
    assert!(err.contains("fingerprint"), "{err}");
    muster(fx.path())
        .args([
            "check",
            "--plan",
            "plan.json",
            "--flags",
            "production",
            "--turn",
            "turn.json",
        ])
        .assert()
        .code(2);
}
