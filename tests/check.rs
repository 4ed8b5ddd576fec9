//! The `check` report read back through its own types, as a consumer of the JSON would: the
//! field names and values documented in docs/check.md are the contract pinned here.

use std::path::Path;

use muster::ErrorKind;
use muster::check::{CheckOptions, OfferedPlan, Turn, check_turn};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Report {
    format_version: u32,
    verdict: String,
    calls: Vec<CallReport>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct CallReport {
    id: String,
    status: String,
    refusal: Option<String>,
    problems: Vec<Problem>,
    arguments: Option<Value>,
    notes: Vec<Note>,
    tool: Option<Resolved>,
}

/// The offered tool a call resolved to, as a client reads it.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Resolved {
    name: String,
    provider_name: Option<String>,
    mcp: Option<McpTool>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct McpTool {
    server: String,
    tool: String,
}

/// A note as a client reads it: a stable `code`, the call's id, the fields of that code, and the
/// sentence.
#[derive(Debug, Deserialize, PartialEq)]
struct Note {
    code: String,
    call: String,
    message: String,
    #[serde(flatten)]
    fields: serde_json::Map<String, Value>,
}

/// A problem as a client reads it: a stable `code`, the fields of that code, and the sentence.
#[derive(Debug, Deserialize, PartialEq)]
struct Problem {
    code: String,
    message: String,
    #[serde(flatten)]
    fields: serde_json::Map<String, Value>,
}

fn messages(problems: &[Problem]) -> Vec<&str> {
    problems.iter().map(|p| p.message.as_str()).collect()
}

const PLAN: &str = r##"{
  "format_version": 3,
  "budget": {"tokens": 6000, "used": 1480},
  "roster": [
    {"name": "mcp.bland_call.start_call", "provider_name": "mcp__bland_call__start_call",
     "source": "mcp", "server": "bland_call", "tool": "start_call", "tokens": 212, "coerce": true,
     "unknown_arguments": "refuse", "fixed": {"from_number": "+15550199"},
     "only": ["phone_number", "task", "max_duration"],
     "input_schema": {"type": "object", "required": ["phone_number", "task"],
       "properties": {
         "phone_number": {"type": "string", "description": "E.164 number to call"},
         "task": {"type": "string", "description": "What the agent on the call should do"},
         "max_duration": {"type": "integer", "description": "Minutes before hanging up"}}}},
    {"name": "email.send", "source": "configured", "tokens": 140,
     "input_schema": {"type": "object", "required": ["to", "subject", "body"],
       "additionalProperties": false,
       "properties": {
         "to": {"type": "array", "items": {"type": "string"}},
         "subject": {"type": "string"}, "body": {"type": "string"}}}},
    {"name": "memory.search", "source": "configured", "tokens": 96,
     "parameters": [{"name": "query", "required": true}, {"name": "limit", "required": false},
                    {"name": "scope", "required": false}],
     "input_schema": {"type": "object", "required": ["query"],
       "properties": {
         "query": {"type": "string"},
         "limit": {"type": "integer"},
         "scope": {"type": "string", "enum": ["notes", "mail", "calendar"]}}}},
    {"name": "tools.load", "source": "control", "tokens": 60,
     "input_schema": {"type": "object", "required": ["names"],
       "properties": {"names": {"type": "array", "items": {"type": "string"}}}}}
  ],
  "deferred": [
    {"name": "mcp.gmail_read.get_thread", "tokens": 120, "code": "item-cap",
     "detail": "outranked by 12 tools"}
  ],
  "control_tool": "tools.load",
  "findings": []
}"##;

fn check(turn: &str, options: CheckOptions) -> Report {
    let plan = OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap();
    let turn = Turn::from_json(turn, Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &options);
    let text = serde_json::to_string_pretty(&report).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_fitting_turn_runs_with_repaired_narrowed_and_cast_arguments() {
    let report = check(
        r#"{"calls": [
          {"id": "call_1", "name": "mcp.bland_call.start_call",
           "arguments": "{\"phone_number\": 15550100, \"task\": \"Book a table\", \"max_duration\": \"5\", \"from_number\": \"+1999\", \"voice\": \"nat\"}"},
          {"id": "call_2", "name": "email.send",
           "arguments": {"to": "[\"ana@example.com\"]", "subject": "Dinner", "body": ""}},
          {"id": "call_3", "name": "memory.search", "arguments": {"query": "dinner", "limit": 0}}
        ]}"#,
        CheckOptions::default(),
    );
    assert_eq!(report.verdict, "run");
    assert_eq!(report.format_version, 3);
    let ids: Vec<&str> = report.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    // Each call names the tool it resolved to: where to forward an MCP call.
    assert_eq!(
        report.calls[0].tool,
        Some(Resolved {
            name: "mcp.bland_call.start_call".into(),
            provider_name: Some("mcp__bland_call__start_call".into()),
            mcp: Some(McpTool {
                server: "bland_call".into(),
                tool: "start_call".into()
            }),
        })
    );
    assert_eq!(
        report.calls[1]
            .tool
            .as_ref()
            .map(|t| (t.name.as_str(), &t.mcp)),
        Some(("email.send", &None))
    );
    for call in &report.calls {
        assert_eq!(call.status, "ok");
        assert_eq!(call.refusal, None);
        assert!(call.problems.is_empty());
    }
    assert_eq!(
        report.calls[0].arguments,
        Some(
            json!({"phone_number": "15550100", "task": "Book a table", "max_duration": 5,
                    "from_number": "+15550199"})
        )
    );
    let codes: Vec<&str> = report.calls[0]
        .notes
        .iter()
        .map(|n| n.code.as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "arguments-unwrapped",
            "fixed-argument-dropped",
            "outside-only-dropped"
        ]
    );
    assert!(report.calls[0].notes.iter().all(|n| n.call == "call_1"));
    assert_eq!(report.calls[0].notes[1].fields["argument"], "from_number");
    assert_eq!(report.calls[0].notes[1].fields["value"], "+15550199");
    assert_eq!(report.calls[0].notes[2].fields["argument"], "voice");
    assert_eq!(
        report.calls[0].notes[2].fields["only"],
        json!(["phone_number", "task", "max_duration"])
    );
    let sentences: Vec<&str> = report.calls[0]
        .notes
        .iter()
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(
        sentences,
        [
            "call \"call_1\": the arguments were a JSON string holding an object; read as that object",
            "call \"call_1\": dropped argument \"from_number\": the policy sets it to \"+15550199\"",
            "call \"call_1\": dropped argument \"voice\": tool \"mcp.bland_call.start_call\" takes only \"phone_number\", \"task\", \"max_duration\"",
        ]
    );
    assert_eq!(
        report.calls[1].arguments,
        Some(json!({"to": ["ana@example.com"], "subject": "Dinner", "body": ""}))
    );
    assert_eq!(report.calls[1].notes.len(), 1);
    // A given 0 is forwarded, never dropped as "empty".
    assert_eq!(
        report.calls[2].arguments,
        Some(json!({"query": "dinner", "limit": 0}))
    );
}

#[test]
fn one_bad_call_refuses_the_turn_and_the_others_are_asked_again() {
    let report = check(
        r#"{"calls": [
          {"id": "a", "name": "memory.search", "arguments": {"query": "x"}},
          {"id": "b", "name": "mcp.bland_call.start_call", "arguments": {"task": ["call"], "max_duration": {"min": 3}}},
          {"id": "c", "name": "mcp.gmail_read.get_thread", "arguments": {"thread": "t1"}}
        ]}"#,
        CheckOptions::default(),
    );
    assert_eq!(report.verdict, "refused");
    let a = &report.calls[0];
    assert_eq!(
        (a.status.as_str(), a.refusal.as_deref()),
        ("not-run", Some("turn"))
    );
    assert_eq!(a.arguments, None);
    assert_eq!(
        messages(&a.problems),
        [
            "tool \"memory.search\": not run because calls \"b\" and \"c\" of this turn did not fit; send this call again together with the corrected calls"
        ]
    );
    let b = &report.calls[1];
    assert_eq!(
        (b.status.as_str(), b.refusal.as_deref()),
        ("refused", Some("arguments"))
    );
    assert_eq!(
        messages(&b.problems),
        [
            // The strict validator reports in the schema's property order.
            "tool \"mcp.bland_call.start_call\": argument \"task\" must be a string; got a list",
            "tool \"mcp.bland_call.start_call\": argument \"max_duration\" must be an integer; got an object",
            "tool \"mcp.bland_call.start_call\": argument \"phone_number\" is required and must be a string; got nothing",
        ]
    );
    // Clients act on codes and fields, not on the sentences.
    let codes: Vec<&str> = b.problems.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["wrong-type", "wrong-type", "missing-argument"]);
    assert_eq!(b.problems[1].fields["argument"], "max_duration");
    assert_eq!(b.problems[1].fields["expected"], json!(["integer"]));
    assert_eq!(
        b.problems[1].fields["got"],
        json!({"kind": "object", "len": 1})
    );
    assert_eq!(b.problems[2].fields["expected"], json!(["string"]));
    assert_eq!(a.problems[0].code, "not-run");
    assert_eq!(a.problems[0].fields["refused"], json!(["b", "c"]));
    assert_eq!(a.problems[0].fields["more"], 0);
    let c = &report.calls[2];
    assert_eq!(c.status, "refused");
    assert_eq!(c.problems[0].code, "deferred-tool");
    assert_eq!(c.problems[0].fields["control_tool"], "tools.load");
    assert_eq!(
        messages(&c.problems),
        [
            "tool \"mcp.gmail_read.get_thread\" is deferred, not loaded; call \"tools.load\" to load it first, then call it in a later turn"
        ]
    );
}

#[test]
fn enums_extra_names_and_unknown_tools_name_what_was_expected() {
    let report = check(
        r#"{"calls": [
          {"id": "1", "name": "memory.search", "arguments": {"query": "x", "scope": "web"}},
          {"id": "2", "name": "email.send", "arguments": {"to": ["a@x"], "subject": "s", "body": "b", "cc": ["b@x"]}},
          {"id": "3", "name": "memory.serch", "arguments": {}}
        ]}"#,
        CheckOptions::default(),
    );
    assert_eq!(
        messages(&report.calls[0].problems),
        [
            "tool \"memory.search\": argument \"scope\" must be one of \"notes\", \"mail\", \"calendar\"; got \"web\""
        ]
    );
    assert_eq!(
        messages(&report.calls[1].problems),
        [
            "tool \"email.send\": argument \"cc\" is not accepted; expected only \"body\", \"subject\", \"to\""
        ]
    );
    assert_eq!(report.calls[0].problems[0].code, "not-in-enum");
    assert_eq!(
        report.calls[0].problems[0].fields["allowed"],
        json!(["notes", "mail", "calendar"])
    );
    assert_eq!(
        report.calls[0].problems[0].fields["got"],
        json!({"kind": "string", "value": "web"})
    );
    assert_eq!(report.calls[1].problems[0].code, "not-accepted");
    assert_eq!(report.calls[2].problems[0].code, "unknown-tool");
    assert_eq!(
        report.calls[2].problems[0].fields["closest"][0],
        "memory.search"
    );
    assert!(report.calls[2].problems[0].message.starts_with(
        "tool \"memory.serch\" was not offered; expected an offered tool such as \"memory.search\""
    ));
}

#[test]
fn the_positional_form_is_a_list_in_declared_order() {
    let turn = r#"{"calls": [
        {"id": "1", "name": "memory.search", "arguments": {"scope": "MAIL", "query": "x"}},
        {"id": "2", "name": "email.send", "arguments": {"to": [], "subject": "s", "body": "b"}}
    ]}"#;
    let report = check(turn, CheckOptions { positional: true });
    assert_eq!(report.verdict, "run");
    assert_eq!(report.calls[0].arguments, Some(json!(["x", 0, "MAIL"])));
    assert_eq!(
        report.calls[1].arguments,
        Some(json!({"to": [], "subject": "s", "body": "b"}))
    );
    let named = check(turn, CheckOptions::default());
    assert_eq!(
        named.calls[0].arguments,
        Some(json!({"query": "x", "scope": "MAIL"}))
    );
}

#[test]
fn unreadable_input_is_an_input_error_naming_file_line_and_fix() {
    let err = Turn::from_json(
        "{\"calls\": [\n  {\"id\": 1, \"name\": \"x\"}\n]}",
        Path::new("turn.json"),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Input);
    let text = err.to_string();
    assert!(
        text.starts_with("turn.json:2: cannot read the turn: invalid type"),
        "{text}"
    );
    assert!(text.contains("help: give an object {\"calls\""), "{text}");
    let err = OfferedPlan::from_json("{\"roster\": 3}", Path::new("plan.json")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Input);
    assert!(
        err.to_string()
            .starts_with("plan.json:1: cannot read the plan")
    );
}

/// Issue 13: each not-run call named every refused call, so a turn of 10,000 calls alternating
/// good and bad printed 223 MB. The report must grow linearly with the turn.
#[test]
fn a_long_alternating_turn_gives_a_report_linear_in_its_size() {
    const CALLS: usize = 10_000;
    let long_id = "x".repeat(10_000);
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| {
            let id = if i == 1 {
                long_id.clone()
            } else {
                format!("call-{i}")
            };
            if i % 2 == 0 {
                json!({"id": id, "name": "memory.search", "arguments": {"query": "x"}})
            } else {
                json!({"id": id, "name": "memory.search", "arguments": {"query": "x", "scope": "web"}})
            }
        })
        .collect();
    let turn_text = json!({ "calls": calls }).to_string();
    let plan = OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap();
    let turn = Turn::from_json(&turn_text, Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    let json = serde_json::to_string(&report).unwrap();
    let text = report.render_text();
    // A few hundred bytes per call, whatever the number of refused siblings.
    let bound = 400 * CALLS + 2 * turn_text.len();
    assert!(json.len() < bound, "json {} bytes", json.len());
    assert!(text.len() < bound, "text {} bytes", text.len());

    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back.verdict, "refused");
    assert_eq!(back.calls.len(), CALLS);
    let not_run = &back.calls[0];
    assert_eq!(not_run.status, "not-run");
    assert_eq!(
        messages(&not_run.problems),
        [format!(
            "tool \"memory.search\": not run because calls \"{}…\", \"call-3\", \"call-5\" and {} more of this turn did not fit; send this call again together with the corrected calls",
            "x".repeat(64),
            CALLS / 2 - 3
        )]
    );
    assert!(
        back.calls
            .iter()
            .skip(1)
            .step_by(2)
            .all(|c| c.status == "refused")
    );
}

/// Issue 24, defect 9: `18446744073709551616` (2^64, a double exactly) was forwarded as
/// `1.8446744073709552e19` and an integer's `-0` as `-0.0`. The report writes each number of the
/// arguments as the model wrote it, sent as JSON or wrapped in a string, beside edits (a fixed
/// value added), and leaves a spelling alone when the call spells the same double two ways.
#[test]
fn integers_past_64_bits_and_minus_zero_are_forwarded_as_written() {
    #[derive(Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        calls: Vec<RawCall<'a>>,
    }
    #[derive(Deserialize)]
    struct RawCall<'a> {
        #[serde(borrow)]
        arguments: Option<&'a serde_json::value::RawValue>,
    }
    let plan = OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap();
    let turn = Turn::from_json(
        r#"{"calls": [
          {"id": "a", "name": "memory.search", "arguments": {"query": "x", "limit": 18446744073709551616}},
          {"id": "b", "name": "memory.search", "arguments": {"query": "x", "limit": -0}},
          {"id": "c", "name": "memory.search", "arguments": "{\"query\": \"x\", \"limit\": -0}"},
          {"id": "d", "name": "mcp.bland_call.start_call", "arguments": {"phone_number": "1", "task": "t", "max_duration": -0}},
          {"id": "e", "name": "memory.search", "arguments": {"query": "1e20", "limit": 100000000000000000000}},
          {"id": "f", "name": "memory.search", "arguments": {"query": "[-0.0]", "limit": -0}}
        ]}"#,
        Path::new("turn.json"),
    )
    .unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    let text = serde_json::to_string(&report).unwrap();
    let raw: Raw<'_> = serde_json::from_str(&text).unwrap();
    let forwarded: Vec<Option<&str>> = raw
        .calls
        .iter()
        .map(|c| c.arguments.map(|a| a.get()))
        .collect();
    assert_eq!(
        forwarded,
        [
            Some(r#"{"query":"x","limit":18446744073709551616}"#),
            Some(r#"{"query":"x","limit":-0}"#),
            Some(r#"{"query":"x","limit":-0}"#),
            // Cast where the tool's `coerce` is on, as `5.0` is to `5`: an integer either way.
            Some(r#"{"phone_number":"1","task":"t","max_duration":0,"from_number":"+15550199"}"#),
            Some(r#"{"query":"1e20","limit":100000000000000000000}"#),
            // `-0` and `-0.0` (in text the repair may read) are one double: serde_json's
            // spelling stands for both.
            Some(r#"{"query":"[-0.0]","limit":-0.0}"#),
        ],
        "{text}"
    );
}
