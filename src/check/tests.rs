//! One test per rule of the gateway, each beside its passing twin: what is refused and the
//! nearest thing that passes. Property tests at the end.

use super::*;
use crate::contract::{CallNote, CallProblem, CheckNote, CheckProblem};
use proptest::prelude::*;
use serde_json::json;
use std::borrow::Cow;
use std::path::Path;

const PLAN: &str = r##"{
  "format_version": 3,
  "roster": [
    {"name": "mcp.bland_call.start_call", "source": "mcp", "coerce": true,
     "unknown_arguments": "refuse",
     "input_schema": {"type": "object", "required": ["phone_number"],
       "properties": {"phone_number": {"type": "string"}, "task": {"type": "string"},
                      "max_duration": {"type": "integer"},
                      "record": {"type": "boolean"},
                      "voice": {"type": ["string", "null"]}}}},
    {"name": "email.send", "source": "configured",
     "input_schema": {"type": "object", "required": ["to", "subject"], "additionalProperties": false,
       "properties": {"to": {"type": "array", "items": {"type": "string"}},
                      "subject": {"type": "string"}, "body": {"type": "string"},
                      "headers": {"type": "object"}}}},
    {"name": "memory.search", "source": "configured", "unknown_arguments": "drop",
     "input_schema": {"type": "object", "required": ["query", "note"],
       "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                      "scope": {"enum": ["notes", "mail", "2"]},
                      "note": {"type": ["string", "null"]},
                      "filters": {"type": "array", "items": {"type": "object",
                         "properties": {"date": {"type": "string"}, "kind": {"enum": ["a", "b"]}}}},
                      "ref": {"$ref": "#/defs/x"}, "either": {"anyOf": [{"type": "string"}]},
                      "odd": {"type": "decimal"}}}},
    {"name": "mcp.files.search", "source": "mcp", "coerce": true, "unknown_arguments": "pass",
     "fixed": {"scope": "team-handbook"}, "only": ["query", "limit"],
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"},
       "limit": {"type": "number"}}}},
    {"name": "fs.read", "source": "configured",
     "parameters": [{"name": "path", "required": true}, {"name": "start", "required": false},
                    {"name": "count", "required": false}],
     "input_schema": {"type": "object", "required": ["path"],
       "properties": {"path": {"type": "string"}, "start": {"type": "integer"},
                      "count": {"type": "integer"}}}},
    {"name": "tools.load", "source": "control",
     "input_schema": {"type": "object", "required": ["names"],
       "properties": {"names": {"type": "array", "items": {"type": "string"}}}}}
  ],
  "deferred": [{"name": "mcp.gmail_read.get_thread", "tokens": 120, "code": "item-cap"}],
  "control_tool": "tools.load"
}"##;

fn plan() -> OfferedPlan {
    OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap()
}

fn turn(calls: &[(&str, Value)]) -> Turn {
    Turn {
        calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| Call {
                id: format!("c{}", i + 1),
                name: (*name).to_string(),
                arguments: arguments.clone(),
                unreadable: None,
            })
            .collect(),
    }
}

/// The report for one call of `tool` with `arguments`.
/// Checks `calls` as one turn and returns a report that owns its arguments.
fn check_calls(
    plan: &OfferedPlan,
    calls: &[(&str, Value)],
    options: &CheckOptions,
) -> Report<'static> {
    check_turn(plan, &turn(calls), options).into_owned()
}

fn one(tool: &str, arguments: Value) -> CallReport<'static> {
    let mut report = check_calls(&plan(), &[(tool, arguments)], &CheckOptions::default());
    report.calls.remove(0)
}

fn ok(tool: &str, arguments: Value) -> Value {
    let call = one(tool, arguments);
    assert_eq!(call.status, Status::Ok, "{:?}", call.problems);
    call.arguments.clone().unwrap().into_owned()
}

fn problems(tool: &str, arguments: Value) -> Vec<String> {
    let call = one(tool, arguments);
    assert_eq!(call.status, Status::Refused, "{:?}", call.arguments);
    assert_eq!(call.refusal, Some(Refusal::Arguments));
    assert!(call.arguments.is_none());
    messages(&call.problems)
}

/// The sentences of `problems`.
fn messages(problems: &[CheckProblem]) -> Vec<String> {
    problems.iter().map(|p| p.message.clone()).collect()
}

const CALL: &str = "mcp.bland_call.start_call";

#[test]
fn a_missing_required_argument_is_refused_and_a_given_one_passes() {
    let p = problems(CALL, json!({"task": "book"}));
    assert_eq!(
        p,
        [
            "tool \"mcp.bland_call.start_call\": argument \"phone_number\" is required and must be a string; got nothing"
        ]
    );
    ok(CALL, json!({"phone_number": "+15550100"}));
}

#[test]
fn null_for_a_required_argument_is_refused_unless_its_types_admit_null() {
    let p = problems(CALL, json!({"phone_number": null}));
    assert!(
        p[0].ends_with("argument \"phone_number\" must be a string; got null"),
        "{p:?}"
    );
    // "note" is required but declared ["string", "null"]: a nullable MCP-style parameter.
    let args = ok("memory.search", json!({"query": "q", "note": null}));
    assert_eq!(args, json!({"query": "q", "note": null}));
}

#[test]
fn null_for_an_optional_argument_passes_and_a_coercing_tool_gets_it_left_out() {
    let call = one(
        CALL,
        json!({"phone_number": "1", "task": null, "voice": null}),
    );
    assert_eq!(call.status, Status::Ok);
    // "task" excludes null, so a strict server would refuse it: sent as left out, and noted.
    assert_eq!(
        call.arguments.as_deref(),
        Some(&json!({"phone_number": "1", "voice": null}))
    );
    assert_eq!(call.notes.len(), 1);
    assert_eq!(
        call.notes[0].note,
        CallNote::NullOptionalDropped {
            call: "c1".into(),
            argument: "task".into()
        },
        "{:?}",
        call.notes
    );
    // A tool without coerce gets the null as given.
    let args = ok(
        "email.send",
        json!({"to": ["a@x"], "subject": "s", "body": null}),
    );
    assert_eq!(args["body"], Value::Null);
}

#[test]
fn a_list_or_object_where_text_is_declared_is_refused_and_a_number_passes() {
    let p = problems(CALL, json!({"phone_number": ["+1"], "task": {"a": 1}}));
    assert_eq!(p.len(), 2);
    assert!(p[0].ends_with("argument \"phone_number\" must be a string; got a list"));
    assert!(p[1].ends_with("argument \"task\" must be a string; got an object"));
    let args = ok(CALL, json!({"phone_number": 15550100, "task": true}));
    assert_eq!(args, json!({"phone_number": "15550100", "task": "true"}));
}

#[test]
fn an_object_where_an_integer_is_declared_is_refused_and_text_or_a_float_of_an_integer_passes() {
    let p = problems(CALL, json!({"phone_number": "1", "max_duration": {"m": 5}}));
    assert_eq!(
        p,
        [
            "tool \"mcp.bland_call.start_call\": argument \"max_duration\" must be an integer; got an object"
        ]
    );
    assert_eq!(
        ok(CALL, json!({"phone_number": "1", "max_duration": "5"}))["max_duration"],
        json!(5)
    );
    assert_eq!(
        ok(CALL, json!({"phone_number": "1", "max_duration": 5.0}))["max_duration"],
        json!(5)
    );
    // Issue 12: text no cast reads as an integer is refused, not forwarded to a server that
    // would reject it.
    assert_eq!(
        problems(CALL, json!({"phone_number": "1", "max_duration": "five"})),
        [
            "tool \"mcp.bland_call.start_call\": argument \"max_duration\" must be an integer; got the text \"five\""
        ]
    );
}

/// The argument-check record's list of what a tool commonly reads after a cast: each passes in
/// both coercion modes. Issue 12 must not take any of it away.
#[test]
fn the_record_pass_list_passes_in_both_modes() {
    let table = [
        (json!({"type": "integer"}), json!("5")),
        (json!({"type": "integer"}), json!(" 5 ")),
        (json!({"type": "integer"}), json!(5.0)),
        (json!({"type": "integer"}), json!("5.0")),
        (json!({"type": "number"}), json!("2.5")),
        (json!({"type": "number"}), json!(7)),
        (json!({"type": "string"}), json!(5)),
        (json!({"type": "string"}), json!(2.5)),
        (json!({"type": "string"}), json!(true)),
        (json!({"type": "boolean"}), json!("true")),
        (json!({"type": "boolean"}), json!("FALSE")),
        (json!({"type": "boolean"}), json!(1)),
        (json!({"type": "boolean"}), json!(0)),
        (json!({"type": "boolean"}), json!(1.0)),
        (json!({"type": ["string", "null"]}), Value::Null),
        (json!({"type": "null"}), Value::Null),
        (json!({"enum": ["2", "3"]}), json!(2)),
        (json!({"enum": [2, 3]}), json!("2")),
        (json!({"enum": ["notes", "mail"]}), json!("NOTES")),
        (json!({"enum": [[0], "x"]}), json!([0.0])),
        (json!({"enum": [{"a": 1}]}), json!({"a": 1.0})),
        (json!({"enum": ["a", null]}), Value::Null),
        (json!({"type": "array"}), json!("one")),
        (json!({"type": "integer", "minimum": 10}), json!(1)),
    ];
    for (schema, value) in table {
        for coerce in [false, true] {
            let report = run(
                root_object(schema.clone()),
                json!({ "arg": value.clone() }),
                coerce,
                UnknownArguments::Refuse,
            );
            assert_eq!(
                report.verdict,
                Verdict::Run,
                "{schema} {value} coerce={coerce}: {:?}",
                report.calls[0].problems
            );
        }
    }
}

/// Issue 12 items 1 and 2: scalars no cast reads, and nulls an enum leaves out, are refused in
/// both coercion modes; each has its passing twin in the table above.
#[test]
fn scalars_no_cast_reads_are_refused_in_both_modes() {
    let table = [
        (
            json!({"type": "integer"}),
            json!("soon"),
            "must be an integer; got the text \"soon\"",
        ),
        (
            json!({"type": "integer"}),
            json!(5.5),
            "must be an integer; got the number 5.5",
        ),
        (
            json!({"type": "integer"}),
            json!(true),
            "must be an integer; got the boolean true",
        ),
        (
            json!({"type": "integer"}),
            json!("5.5"),
            "must be an integer; got the text \"5.5\"",
        ),
        (
            json!({"type": "boolean"}),
            json!("maybe"),
            "must be a boolean; got the text \"maybe\"",
        ),
        (
            json!({"type": "boolean"}),
            json!(2),
            "must be a boolean; got the number 2",
        ),
        (
            json!({"type": "null"}),
            json!(0),
            "must be null; got the number 0",
        ),
        (
            json!({"type": "null"}),
            json!(""),
            "must be null; got the text \"\"",
        ),
        (
            json!({"type": "number"}),
            json!("foo"),
            "must be a number; got the text \"foo\"",
        ),
        (
            json!({"type": "number"}),
            json!(false),
            "must be a number; got the boolean false",
        ),
        (
            json!({"type": ["integer", "boolean"]}),
            json!("x"),
            "must be an integer or a boolean; got the text \"x\"",
        ),
        (
            json!({"enum": [[0], "x"]}),
            json!([1]),
            "must be one of a list, \"x\"; got a list",
        ),
        (
            json!({"enum": ["a", "b"]}),
            Value::Null,
            "must be one of \"a\", \"b\"; got null",
        ),
    ];
    for (schema, value, ends) in table {
        for coerce in [false, true] {
            let report = run(
                root_object(schema.clone()),
                json!({ "arg": value.clone() }),
                coerce,
                UnknownArguments::Refuse,
            );
            assert_eq!(
                report.verdict,
                Verdict::Refused,
                "{schema} {value} coerce={coerce}"
            );
            let problems = &report.calls[0].problems;
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(
                problems[0].message,
                format!("tool \"t\": argument \"arg\" {ends}")
            );
            assert_eq!(problems[0].message, problems[0].problem.to_string());
        }
    }
}

#[test]
fn text_and_numbers_a_boolean_reads_pass_and_are_cast_and_a_list_is_refused() {
    for (given, cast) in [
        (json!("true"), json!(true)),
        (json!("False"), json!(false)),
        (json!(1), json!(true)),
        (json!(0), json!(false)),
        (json!(false), json!(false)),
    ] {
        let args = ok(CALL, json!({"phone_number": "1", "record": given}));
        assert_eq!(args["record"], cast);
    }
    let p = problems(CALL, json!({"phone_number": "1", "record": [true]}));
    assert!(p[0].ends_with("\"record\" must be a boolean; got a list"));
}

#[test]
fn an_object_where_a_list_is_declared_is_refused_and_a_list_passes() {
    let p = problems("email.send", json!({"to": {"0": "a@x"}, "subject": "s"}));
    assert_eq!(
        p,
        ["tool \"email.send\": argument \"to\" must be a list; got an object"]
    );
    ok("email.send", json!({"to": ["a@x"], "subject": "s"}));
}

#[test]
fn text_or_a_list_where_an_object_is_declared_is_refused_and_an_object_passes() {
    let p = problems(
        "email.send",
        json!({"to": [], "subject": "s", "headers": "x-a: 1"}),
    );
    assert!(p[0].ends_with("argument \"headers\" must be an object; got the text \"x-a: 1\""));
    // A list is refused too: muster reads JSON, so an object never decodes to a list.
    let p = problems(
        "email.send",
        json!({"to": [], "subject": "s", "headers": ["x-a"]}),
    );
    assert!(p[0].ends_with("argument \"headers\" must be an object; got a list"));
    ok(
        "email.send",
        json!({"to": [], "subject": "s", "headers": {"x-a": "1"}}),
    );
}

#[test]
fn a_value_outside_an_enum_is_refused_and_one_in_another_case_or_as_a_number_passes() {
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "scope": "web"}),
    );
    assert_eq!(
        p,
        [
            "tool \"memory.search\": argument \"scope\" must be one of \"notes\", \"mail\", \"2\"; got \"web\""
        ]
    );
    // memory.search does not coerce: passes, forwarded as given.
    assert_eq!(
        ok(
            "memory.search",
            json!({"query": "q", "note": "", "scope": "NOTES"})
        )["scope"],
        json!("NOTES")
    );
    assert_eq!(
        ok(
            "memory.search",
            json!({"query": "q", "note": "", "scope": 2})
        )["scope"],
        json!(2)
    );
}

#[test]
fn a_coercing_tool_gets_the_declared_enum_member() {
    let text = PLAN.replace(
        "\"name\": \"memory.search\", \"source\": \"configured\",",
        "\"name\": \"memory.search\", \"source\": \"configured\", \"coerce\": true,",
    );
    assert_ne!(text, PLAN);
    let plan = OfferedPlan::from_json(&text, Path::new("plan.json")).unwrap();
    let report = check_calls(
        &plan,
        &[
            (
                "memory.search",
                json!({"query": "q", "note": "", "scope": "Mail"}),
            ),
            (
                "memory.search",
                json!({"query": "q", "note": "", "scope": 2}),
            ),
        ],
        &CheckOptions::default(),
    );
    assert_eq!(
        report.calls[0].arguments.as_ref().unwrap()["scope"],
        json!("mail")
    );
    assert_eq!(
        report.calls[1].arguments.as_ref().unwrap()["scope"],
        json!("2")
    );
}

/// What a coercing tool with the one argument `arg` of `schema` receives for `value`.
fn coerced_arg(schema: Value, value: Value) -> Value {
    let report = run(
        root_object(schema),
        json!({ "arg": value }),
        true,
        UnknownArguments::Refuse,
    );
    assert_eq!(
        report.verdict,
        Verdict::Run,
        "{:?}",
        report.calls[0].problems
    );
    report.calls[0].arguments.as_deref().unwrap()["arg"].clone()
}

#[test]
fn an_enum_member_given_exactly_is_kept_and_one_in_another_form_becomes_the_member() {
    // Refused before: the first loosely matching member replaced an exact one.
    assert_eq!(
        coerced_arg(json!({"enum": ["a", "A"]}), json!("A")),
        json!("A")
    );
    assert_eq!(
        coerced_arg(json!({"enum": ["a", "A"]}), json!("a")),
        json!("a")
    );
    assert_eq!(coerced_arg(json!({"enum": ["2", 2]}), json!(2)), json!(2));
    assert_eq!(
        coerced_arg(json!({"enum": ["2", 2]}), json!("2")),
        json!("2")
    );
    // The twins: with no exact member, the loose match still gives the declared member.
    assert_eq!(
        coerced_arg(json!({"enum": ["a", "b"]}), json!("A")),
        json!("a")
    );
    assert_eq!(
        coerced_arg(json!({"enum": ["2", "3"]}), json!(2)),
        json!("2")
    );
    // The quick pass clears the exact member as sent, as the full steps forward it.
    let mut tool = tool_with(root_object(json!({"enum": ["a", "A"]})));
    tool.coerce = true;
    let compiled = compiled::Compiled::new(&tool.input_schema);
    assert!(compiled.fits_as_sent(json!({"arg": "A"}).as_object().unwrap(), &tool));
    assert!(!compiled.fits_as_sent(json!({"arg": "B"}).as_object().unwrap(), &tool));
}

#[test]
fn large_integers_are_cast_exactly_and_ones_no_integer_type_holds_are_refused() {
    let number = json!({"type": "number"});
    let integer = json!({"type": "integer"});
    // Text of an integer becomes that integer, every digit kept, before any float.
    assert_eq!(
        coerced_arg(number.clone(), json!("18446744073709551615")),
        json!(u64::MAX)
    );
    assert_eq!(
        coerced_arg(number.clone(), json!("-9223372036854775808")),
        json!(i64::MIN)
    );
    assert_eq!(coerced_arg(number.clone(), json!(" 2.5 ")), json!(2.5));
    assert_eq!(
        coerced_arg(integer.clone(), json!("18446744073709551615")),
        json!(u64::MAX)
    );
    assert_eq!(
        coerced_arg(integer.clone(), json!(1e19)),
        json!(10_000_000_000_000_000_000u64)
    );
    assert_eq!(coerced_arg(integer.clone(), json!("5.0")), json!(5));
    // Beyond what an i64 or u64 holds, where an integer is declared: refused.
    let refused = |value: Value| {
        let report = run(
            root_object(integer.clone()),
            json!({ "arg": value }),
            true,
            UnknownArguments::Refuse,
        );
        assert_eq!(report.verdict, Verdict::Refused);
        messages(&report.calls[0].problems)
    };
    assert_eq!(
        refused(json!("18446744073709551616")),
        [
            "tool \"t\": argument \"arg\" must be an integer from -9223372036854775808 to 18446744073709551615; got \"18446744073709551616\""
        ]
    );
    for value in [json!("-9223372036854775809"), json!(1e20), json!("1e400")] {
        assert_eq!(refused(value.clone()).len(), 1, "{value}");
    }
    // The twins: a declared number takes it as a float, and a tool that does not coerce gets
    // it as given.
    assert_eq!(
        coerced_arg(
            json!({"type": ["integer", "number"]}),
            json!("18446744073709551616")
        ),
        json!(18_446_744_073_709_551_616.0)
    );
    let report = run(
        root_object(integer),
        json!({"arg": "18446744073709551616"}),
        false,
        UnknownArguments::Refuse,
    );
    assert_eq!(report.verdict, Verdict::Run);
    assert_eq!(
        report.calls[0].arguments.as_deref(),
        Some(&json!({"arg": "18446744073709551616"}))
    );
}

#[test]
fn a_name_excluded_by_additional_properties_false_is_refused_and_a_declared_one_passes() {
    let p = problems("email.send", json!({"to": [], "subject": "s", "cc": "b@x"}));
    assert_eq!(p.len(), 1);
    assert!(p[0].starts_with("tool \"email.send\": argument \"cc\" is not accepted; expected only \"body\", \"headers\", \"subject\", \"to\""), "{p:?}");
    ok("email.send", json!({"to": [], "subject": "s", "body": "b"}));
}

#[test]
fn an_undeclared_name_follows_the_tool_policy_refuse_drop_or_pass() {
    // refuse (the default)
    let p = problems(CALL, json!({"phone_number": "1", "limit": 3}));
    assert!(p[0].contains("argument \"limit\" is not declared"), "{p:?}");
    // drop
    let call = one(
        "memory.search",
        json!({"query": "q", "note": "", "offset": 3}),
    );
    assert_eq!(call.status, Status::Ok);
    assert_eq!(
        call.arguments.as_deref(),
        Some(&json!({"query": "q", "note": ""}))
    );
    assert_eq!(
        call.notes[0].note,
        CallNote::UndeclaredArgumentDropped {
            call: "c1".into(),
            argument: "offset".into()
        }
    );
    // pass
    let args = ok("mcp.files.search", json!({"query": "q"}));
    assert_eq!(args, json!({"query": "q", "scope": "team-handbook"}));
}

#[test]
fn nodes_the_check_cannot_read_are_skipped_and_never_refused() {
    let args = json!({"query": "q", "note": "", "ref": [[1]], "either": {"x": 1}, "odd": [1]});
    ok("memory.search", args);
    let plan = OfferedPlan::new(
        vec![tool_with(
            json!({"type": "object", "allOf": [{"required": ["x"]}]}),
        )],
        Vec::new(),
        None,
    );
    let report = check_calls(&plan, &[("t", json!({"y": 1}))], &CheckOptions::default());
    assert_eq!(report.verdict, Verdict::Run);
}

#[test]
fn a_nested_mismatch_names_its_path_and_a_fitting_nested_value_passes() {
    let filters = json!([{"date": "x"}, {"kind": "A"}, {"date": {"from": 1}, "kind": "c"}]);
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters}),
    );
    assert_eq!(
        p,
        [
            // Each value's own kind is judged as it is met, in name order; what is inside a
            // list or object that fits comes after its siblings.
            "tool \"memory.search\": argument \"filters[2].date\" must be a string; got an object",
            "tool \"memory.search\": argument \"filters[2].kind\" must be one of \"a\", \"b\"; got \"c\"",
        ]
    );
    let filters = json!([{"date": "x"}, {"kind": "A"}, {"date": "y", "kind": "b"}]);
    ok(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters}),
    );
}

#[test]
fn argument_names_that_are_not_plain_identifiers_are_quoted_in_paths() {
    let schema = json!({"type": "object", "additionalProperties": {"type": "integer"},
        "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    let report = run(
        schema.clone(),
        json!({"m": {"x[0]": [], "c.d": {}, "e\"f": [], "": [], "Ok_name-2": [], "_x": []},
               "a.b": []}),
        false,
        UnknownArguments::Pass,
    );
    assert_eq!(
        messages(&report.calls[0].problems),
        [
            // Undeclared members in the order the call wrote them.
            "tool \"t\": argument \"[\"a.b\"]\" must be an integer; got a list",
            "tool \"t\": argument \"m[\"x[0]\"]\" must be an integer; got a list",
            "tool \"t\": argument \"m[\"c.d\"]\" must be an integer; got an object",
            "tool \"t\": argument \"m[\"e\\\"f\"]\" must be an integer; got a list",
            "tool \"t\": argument \"m[\"\"]\" must be an integer; got a list",
            // The twins: names that are plain identifiers are written as they are.
            "tool \"t\": argument \"m.Ok_name-2\" must be an integer; got a list",
            "tool \"t\": argument \"m._x\" must be an integer; got a list",
        ]
    );
    // Notes name such arguments the same way.
    let mut tool = tool_with(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
    tool.only = Some(vec!["q".into()]);
    let plan = OfferedPlan::new(vec![tool], Vec::new(), None);
    let report = check_calls(
        &plan,
        &[("t", json!({"q": "x", "a.b": 1, "ab": 2}))],
        &CheckOptions::default(),
    );
    let messages: Vec<&str> = report.calls[0]
        .notes
        .iter()
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "call \"c1\": dropped argument \"[\"a.b\"]\": tool \"t\" takes only \"q\"",
            "call \"c1\": dropped argument \"ab\": tool \"t\" takes only \"q\"",
        ]
    );
    assert_eq!(report.calls[0].notes[0].note.code(), "outside-only-dropped");
}

#[test]
fn a_deferred_tool_asks_to_be_loaded_and_an_unknown_one_names_the_closest() {
    let p = problems("mcp.gmail_read.get_thread", json!({}));
    assert_eq!(
        p,
        [
            "tool \"mcp.gmail_read.get_thread\" is deferred, not loaded; call \"tools.load\" to load it first, then call it in a later turn"
        ]
    );
    let p = problems("email.sned", json!({}));
    assert!(
        p[0].starts_with(
            "tool \"email.sned\" was not offered; expected an offered tool such as \"email.send\""
        ),
        "{p:?}"
    );
    ok(
        "tools.load",
        json!({"names": ["mcp.gmail_read.get_thread"]}),
    );
}

#[test]
fn one_mismatch_refuses_the_whole_turn_and_a_fitting_turn_runs() {
    let calls = [
        ("fs.read", json!({"path": "a.rs"})),
        ("email.send", json!({"to": "nobody"})),
        ("tools.load", json!({"names": []})),
    ];
    let report = check_calls(&plan(), &calls, &CheckOptions::default());
    assert_eq!(report.verdict, Verdict::Refused);
    let status: Vec<_> = report.calls.iter().map(|c| (c.status, c.refusal)).collect();
    assert_eq!(
        status,
        [
            (Status::NotRun, Some(Refusal::Turn)),
            (Status::Refused, Some(Refusal::Arguments)),
            (Status::NotRun, Some(Refusal::Turn)),
        ]
    );
    assert_eq!(
        messages(&report.calls[0].problems),
        [
            "tool \"fs.read\": not run because call \"c2\" of this turn did not fit; send this call again together with the corrected call"
        ]
    );
    assert!(report.calls.iter().all(|c| c.arguments.is_none()));

    let calls = [
        ("fs.read", json!({"path": "a.rs"})),
        ("email.send", json!({"to": ["nobody@x"], "subject": "s"})),
        ("tools.load", json!({"names": []})),
    ];
    let report = check_calls(&plan(), &calls, &CheckOptions::default());
    assert_eq!(report.verdict, Verdict::Run);
    assert!(
        report
            .calls
            .iter()
            .all(|c| c.status == Status::Ok && c.refusal.is_none())
    );
}

#[test]
fn at_most_ten_problems_are_listed_and_the_rest_counted() {
    let filters: Vec<Value> = (0..13).map(|_| json!({"date": []})).collect();
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters}),
    );
    // Ten sentences in all: nine problems and one counting the other four.
    assert_eq!(p.len(), MAX_PROBLEMS);
    assert_eq!(
        p[9],
        "tool \"memory.search\": and 4 more problems not listed here"
    );
    assert_eq!(
        p[8],
        "tool \"memory.search\": argument \"filters[8].date\" must be a string; got a list"
    );
    // Eleven problems: nine listed, two counted.
    let filters: Vec<Value> = (0..11).map(|_| json!({"date": []})).collect();
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters}),
    );
    assert_eq!(p.len(), MAX_PROBLEMS);
    assert_eq!(
        p[9],
        "tool \"memory.search\": and 2 more problems not listed here"
    );
    // The twin: exactly ten problems are all listed.
    let filters: Vec<Value> = (0..10).map(|_| json!({"date": []})).collect();
    assert_eq!(
        problems(
            "memory.search",
            json!({"query": "q", "note": "", "filters": filters})
        )
        .len(),
        10
    );
}

#[test]
fn a_containers_own_kind_is_listed_before_problems_inside_its_siblings() {
    // `limit` (a list where an integer is declared) comes after `filters` in name order, and
    // `filters` holds more problems than are listed: its own problem must still be listed.
    let filters: Vec<Value> = (0..13).map(|_| json!({"date": []})).collect();
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters, "limit": [1]}),
    );
    assert_eq!(
        p[0],
        "tool \"memory.search\": argument \"limit\" must be an integer; got a list"
    );
    assert_eq!(
        p[1],
        "tool \"memory.search\": argument \"filters[0].date\" must be a string; got a list"
    );
    // The twin: `limit` given as an integer leaves only the problems inside `filters`.
    let filters: Vec<Value> = (0..13).map(|_| json!({"date": []})).collect();
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": filters, "limit": 1}),
    );
    assert_eq!(
        p[0],
        "tool \"memory.search\": argument \"filters[0].date\" must be a string; got a list"
    );
    // Inside a list too: an item that is not an object is listed before what is inside the
    // items that are.
    let p = problems(
        "memory.search",
        json!({"query": "q", "note": "", "filters": [{"date": []}, [], {"date": 1}]}),
    );
    assert_eq!(
        p,
        [
            "tool \"memory.search\": argument \"filters[1]\" must be an object; got a list",
            "tool \"memory.search\": argument \"filters[0].date\" must be a string; got a list",
        ]
    );
}

#[test]
fn false_zero_and_empty_text_are_forwarded_and_left_out_stays_out() {
    let args = ok(
        CALL,
        json!({"phone_number": "", "max_duration": 0, "record": false}),
    );
    assert_eq!(
        args,
        json!({"phone_number": "", "max_duration": 0, "record": false})
    );
    let args = ok(CALL, json!({"phone_number": "1"}));
    assert_eq!(args, json!({"phone_number": "1"}));
}

#[test]
fn a_tool_without_coerce_gets_values_as_given() {
    assert_eq!(
        ok("fs.read", json!({"path": 7, "start": "5"})),
        json!({"path": 7, "start": "5"})
    );
}

#[test]
fn wrapped_arguments_are_repaired_and_noted_and_plain_text_is_judged() {
    let call = one(
        "email.send",
        json!("{\"to\": \"[\\\"a@x\\\"]\", \"subject\": \"s\"}"),
    );
    assert_eq!(call.status, Status::Ok);
    assert_eq!(
        call.arguments.as_deref(),
        Some(&json!({"to": ["a@x"], "subject": "s"}))
    );
    assert_eq!(call.notes.len(), 2);
    let p = problems("email.send", json!("to: a@x"));
    assert_eq!(
        p,
        [
            "tool \"email.send\": the arguments must be an object; got a string that is not a JSON object"
        ]
    );
    let p = problems("email.send", json!([1]));
    assert!(p[0].ends_with("got a list"));
    // No arguments at all read as an empty object, judged like one.
    ok("mcp.files.search", Value::Null);
}

#[test]
fn blank_text_arguments_read_as_no_arguments_and_other_text_is_refused() {
    for blank in ["", "  ", " \n\t"] {
        let call = one("mcp.files.search", json!(blank));
        assert_eq!(call.status, Status::Ok, "{:?}", call.problems);
        assert_eq!(
            call.arguments.as_deref(),
            Some(&json!({"scope": "team-handbook"}))
        );
        assert_eq!(
            call.notes,
            [CheckNote::from(CallNote::BlankArguments {
                call: "c1".into()
            })]
        );
        assert_eq!(
            call.notes[0].message,
            "call \"c1\": the arguments were blank text; read as no arguments"
        );
        // Read as no arguments, a required argument is still missing.
        assert_eq!(
            problems("fs.read", json!(blank)),
            ["tool \"fs.read\": argument \"path\" is required and must be a string; got nothing"]
        );
    }
    // Null reads the same way, without a note.
    let call = one("mcp.files.search", Value::Null);
    assert_eq!(call.status, Status::Ok);
    assert!(call.notes.is_empty());
    // The twin: text that is not blank and not an object is refused.
    assert_eq!(
        problems("mcp.files.search", json!(" x ")),
        [
            "tool \"mcp.files.search\": the arguments must be an object; got a string that is not a JSON object"
        ]
    );
}

#[test]
fn wrapped_arguments_that_cannot_be_read_say_why_and_readable_ones_are_repaired() {
    let nested =
        |levels: usize| format!("{{\"a\": {}1{}}}", "[".repeat(levels), "]".repeat(levels));
    let refused = |text: String| {
        let report = run(
            json!({"type": "object"}),
            json!(text),
            false,
            UnknownArguments::Refuse,
        );
        assert_eq!(report.verdict, Verdict::Refused);
        messages(&report.calls[0].problems)
    };
    assert_eq!(
        refused(nested(200)),
        [
            "tool \"t\": the arguments must be an object; got a string that cannot be read as JSON: JSON text nested too deep (more than 128 levels) at column 133"
        ]
    );
    assert_eq!(
        refused("{\"a\":1e400}".to_string()),
        [
            "tool \"t\": the arguments must be an object; got a string that cannot be read as JSON: number out of range at column 10"
        ]
    );
    // The twins: the same objects within the parser's limits are read and noted.
    for text in [nested(100), "{\"a\":1e300}".to_string()] {
        let report = run(
            json!({"type": "object"}),
            json!(text),
            false,
            UnknownArguments::Refuse,
        );
        assert_eq!(
            report.verdict,
            Verdict::Run,
            "{:?}",
            report.calls[0].problems
        );
        assert_eq!(report.calls[0].notes.len(), 1);
    }
}

#[test]
fn narrowing_drops_what_only_excludes_and_sets_fixed_values() {
    let call = one(
        "mcp.files.search",
        json!({"query": "q", "scope": "all", "depth": 2, "limit": "3"}),
    );
    assert_eq!(call.status, Status::Ok);
    assert_eq!(
        call.arguments.as_deref(),
        Some(&json!({"query": "q", "limit": 3, "scope": "team-handbook"}))
    );
    assert_eq!(call.notes.len(), 2, "{:?}", call.notes);
}

#[test]
fn the_positional_form_lists_arguments_in_declared_order() {
    let options = CheckOptions { positional: true };
    let report = check_calls(
        &plan(),
        &[
            ("fs.read", json!({"count": 5, "path": "a.rs"})),
            ("fs.read", json!({"path": "a.rs"})),
            ("email.send", json!({"to": [], "subject": "s"})),
        ],
        &options,
    );
    assert_eq!(
        report.calls[0].arguments.as_deref(),
        Some(&json!(["a.rs", 0, 5]))
    );
    assert_eq!(report.calls[1].arguments.as_deref(), Some(&json!(["a.rs"])));
    // Tools without parameters keep the named form.
    assert_eq!(
        report.calls[2].arguments.as_deref(),
        Some(&json!({"to": [], "subject": "s"}))
    );
}

#[test]
fn the_same_inputs_give_byte_identical_json() {
    let calls = [
        (
            "memory.search",
            json!({"query": "q", "note": "", "zz": 1, "aa": 2, "scope": "x"}),
        ),
        ("email.send", json!({"to": ["a"], "subject": "s"})),
    ];
    let a = serde_json::to_string(&check_calls(&plan(), &calls, &CheckOptions::default())).unwrap();
    let b = serde_json::to_string(&check_calls(&plan(), &calls, &CheckOptions::default())).unwrap();
    assert_eq!(a, b);
}

#[test]
fn text_rendering_names_the_verdict_calls_problems_and_notes() {
    let calls = [
        ("fs.read", json!({"path": "a"})),
        ("email.send", json!("{\"to\": {}}")),
    ];
    let text = check_calls(&plan(), &calls, &CheckOptions::default()).render_text();
    assert!(
        text.starts_with("refused: 1 of 2 calls do not fit; nothing was run\n"),
        "{text}"
    );
    assert!(text.contains("call c1: not run (turn)"));
    assert!(
        text.contains(
            "call c2: refused (arguments)\n  - tool \"email.send\": argument \"to\" must be a list; got an object\n  - tool \"email.send\": argument \"subject\""
        ),
        "{text}"
    );
    assert!(text.contains("  note: call \"c2\": the arguments were a JSON string"));
    let text = check_calls(&plan(), &calls[..1], &CheckOptions::default()).render_text();
    assert!(
        text.contains("call c1: ok\n  arguments: {\"path\":\"a\"}"),
        "{text}"
    );
}

fn tool_with(schema: Value) -> OfferedTool {
    OfferedTool {
        name: "t".into(),
        provider_name: None,
        source: Source::Mcp,
        input_schema: schema,
        fixed: Map::new(),
        only: None,
        unknown_arguments: UnknownArguments::Refuse,
        coerce: true,
        check: crate::contract::CheckMode::Lenient,
        parameters: None,
        variadic: false,
    }
}

/// `levels` levels of `{"type": "object", "properties": {"a": ...}}` and the matching value
/// `{"a": {"a": ...}}`, ending in a string schema and the leaf `leaf`.
fn deep_pair(levels: usize, leaf: Value) -> (Value, Value) {
    let mut schema = json!({"type": "string"});
    let mut value = leaf;
    for i in 0..levels {
        if i % 3 == 2 {
            // Built by hand: `json!` would copy the nested value through serde, recursively.
            let mut node = Map::new();
            node.insert("type".into(), json!("array"));
            node.insert("items".into(), schema);
            schema = Value::Object(node);
            value = Value::Array(vec![value]);
        } else {
            let mut props = Map::new();
            props.insert("a".into(), schema);
            let mut node = Map::new();
            node.insert("type".into(), json!("object"));
            node.insert("required".into(), json!(["a"]));
            node.insert("properties".into(), Value::Object(props));
            schema = Value::Object(node);
            let mut map = Map::new();
            map.insert("a".into(), value);
            value = Value::Object(map);
        }
    }
    let mut args = Map::new();
    args.insert("a".into(), value);
    let mut props = Map::new();
    props.insert("a".into(), schema);
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), Value::Object(props));
    (Value::Object(root), Value::Object(args))
}

#[test]
fn schemas_and_arguments_nested_ten_thousand_deep_are_checked_without_overflow() {
    for (leaf, verdict) in [
        (json!("x"), Verdict::Run),
        (json!({"no": 1}), Verdict::Refused),
    ] {
        let (schema, arguments) = deep_pair(10_000, leaf);
        let plan = OfferedPlan::new(vec![tool_with(schema)], Vec::new(), None);
        let turn = Turn {
            calls: vec![Call {
                id: "c1".into(),
                name: "t".into(),
                arguments,
                unreadable: None,
            }],
        };
        let report = check_turn(&plan, &turn, &CheckOptions::default());
        assert_eq!(report.verdict, verdict);
        if verdict == Verdict::Refused {
            match &report.calls[0].problems[0].problem {
                CallProblem::WrongType {
                    argument,
                    expected,
                    got,
                    ..
                } => {
                    assert!(argument.starts_with("a.a[0].a.a[0]"), "{argument}");
                    assert_eq!(expected, &["string"]);
                    assert_eq!(got.kind, "object");
                }
                other => panic!("{other:?}"),
            }
        } else {
            assert_eq!(
                deep::depth(report.calls[0].arguments.as_deref().unwrap()),
                10_001
            );
        }
    }
}

// ---- property tests ----

/// A schema drawn from the keywords the check reads (and some it skips).
fn arb_schema() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"enum": ["a", "B", 2, true]})),
        Just(json!({"enum": ["a", "A", "2", 2]})),
        Just(json!({"type": "string", "enum": ["x", "y"]})),
        Just(json!({"$ref": "#/x"})),
        Just(json!({"anyOf": [{"type": "string"}]})),
        Just(json!({"type": "decimal"})),
        Just(json!({})),
        Just(json!(true)),
    ];
    scalar.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            (
                prop::collection::btree_map("[a-f]", inner.clone(), 0..5),
                any::<u8>(),
                prop_oneof![
                    Just(None),
                    Just(Some(json!(false))),
                    Just(Some(json!({"type": "string"})))
                ],
            )
                .prop_map(|(props, req_bits, additional)| {
                    let required: Vec<Value> = props
                        .keys()
                        .enumerate()
                        .filter(|(i, _)| req_bits & (1 << i) != 0)
                        .map(|(_, k)| json!(k))
                        .collect();
                    let mut node = json!({"type": "object", "required": required,
                        "properties": Value::Object(props.into_iter().collect())});
                    if let Some(a) = additional {
                        node["additionalProperties"] = a;
                    }
                    node
                }),
        ]
    })
}

/// A value generated to fit `schema`, including values a tool reads after a cast.
fn fitting(schema: &Value) -> BoxedStrategy<Value> {
    let Some(node) = schema.as_object() else {
        return arb_json().boxed();
    };
    if ["$ref", "anyOf"].iter().any(|k| node.contains_key(*k)) {
        return arb_json().boxed();
    }
    if let Some(members) = node.get("enum").and_then(Value::as_array) {
        let members = members.clone();
        return (0..members.len(), any::<bool>())
            .prop_map(move |(i, upper)| match &members[i] {
                Value::String(s) if upper => json!(s.to_uppercase()),
                Value::Number(n) if upper => json!(n.to_string()),
                other => other.clone(),
            })
            .boxed();
    }
    let ty = node.get("type").cloned();
    match ty.as_ref().and_then(Value::as_str) {
        Some("string") => prop_oneof![
            any::<String>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from)
        ]
        .boxed(),
        Some("integer") => prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(|u| json!(u.to_string())),
            any::<i32>().prop_map(|i| json!(i.to_string())),
            any::<i32>().prop_map(|i| json!(f64::from(i)))
        ]
        .boxed(),
        Some("number") => prop_oneof![
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<i32>().prop_map(|i| json!(i.to_string())),
            any::<u64>().prop_map(|u| json!(u.to_string()))
        ]
        .boxed(),
        Some("boolean") => prop_oneof![
            any::<bool>().prop_map(Value::from),
            Just(json!("true")),
            Just(json!(0)),
            Just(json!(1))
        ]
        .boxed(),
        Some("null") => Just(Value::Null).boxed(),
        Some("array") => {
            let items = node.get("items").cloned().unwrap_or(json!({}));
            prop::collection::vec(fitting(&items), 0..4)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("object") => {
            let props: Vec<(String, Value)> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            let required: Vec<String> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let members: Vec<BoxedStrategy<Option<(String, Value)>>> = props
                .into_iter()
                .map(|(name, schema)| {
                    let keep = required.contains(&name);
                    (fitting(&schema), any::<bool>())
                        .prop_map(move |(v, present)| (keep || present).then(|| (name.clone(), v)))
                        .boxed()
                })
                .collect();
            members
                .prop_map(|members| Value::Object(members.into_iter().flatten().collect()))
                .boxed()
        }
        Some(_) => arb_json().boxed(),
        None if ty.is_some() => {
            prop_oneof![any::<String>().prop_map(Value::from), Just(Value::Null)].boxed()
        }
        None => arb_json().boxed(),
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
        Just(json!("type")),
        Just(json!("object")),
        // Integers beyond what an i64 or u64 holds, as text and as numbers.
        Just(json!("18446744073709551616")),
        Just(json!(1e20)),
        Just(json!("1e400")),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("properties".to_string()),
                    Just("items".to_string()),
                    Just("required".to_string()),
                    Just("enum".to_string()),
                    Just("additionalProperties".to_string()),
                    "[a-c]",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn run(
    schema: Value,
    arguments: Value,
    coerce: bool,
    unknown: UnknownArguments,
) -> Report<'static> {
    let mut tool = tool_with(schema);
    tool.coerce = coerce;
    tool.unknown_arguments = unknown;
    let plan = OfferedPlan::new(vec![tool], Vec::new(), None);
    check_calls(&plan, &[("t", arguments)], &CheckOptions::default())
}

fn root_object(schema: Value) -> Value {
    json!({"type": "object", "properties": {"arg": schema}, "required": ["arg"]})
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn an_instance_generated_to_fit_a_schema_is_never_refused(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
        coerce in any::<bool>(),
    ) {
        let report = run(root_object(schema), json!({"arg": value}), coerce, UnknownArguments::Refuse);
        prop_assert_eq!(report.verdict, Verdict::Run, "{:?}", report.calls[0].problems);
    }

    #[test]
    fn arbitrary_schemas_and_arguments_never_panic(
        schema in prop_oneof![arb_json(), arb_schema()],
        arguments in arb_json(),
        coerce in any::<bool>(),
        wrap in any::<bool>(),
    ) {
        let arguments = if wrap { Value::String(arguments.to_string()) } else { arguments };
        for unknown in [UnknownArguments::Refuse, UnknownArguments::Drop, UnknownArguments::Pass] {
            let report = run(schema.clone(), arguments.clone(), coerce, unknown);
            prop_assert_eq!(report.calls.len(), 1);
            prop_assert!(report.calls[0].problems.len() <= MAX_PROBLEMS + 1);
            prop_assert!(report.calls[0].problems.len() <= MAX_PROBLEMS);
            serde_json::to_string(&report).unwrap();
        }
    }

    #[test]
    fn forwarded_arguments_pass_the_check_again_unchanged(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
    ) {
        let schema = root_object(schema);
        let first = run(schema.clone(), json!({"arg": value}), true, UnknownArguments::Refuse);
        let forwarded = first.calls[0].arguments.clone().unwrap().into_owned();
        let second = run(schema, forwarded.clone(), true, UnknownArguments::Refuse);
        prop_assert_eq!(second.calls[0].arguments.clone().map(Cow::into_owned), Some(forwarded));
    }
}

// ---- the quick pass ----

/// `tool` with `only`, `fixed` and the undeclared-name policy drawn by the property test.
fn narrowed_tool(
    schema: Value,
    coerce: bool,
    unknown: UnknownArguments,
    only: Option<Vec<String>>,
    fixed: Option<&str>,
) -> OfferedTool {
    let mut tool = tool_with(schema);
    tool.coerce = coerce;
    tool.unknown_arguments = unknown;
    tool.only = only;
    if let Some(name) = fixed {
        tool.fixed.insert(name.to_string(), json!("set"));
    }
    tool
}

/// `value` with every other member of each object, at every level, set to null.
fn with_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .enumerate()
                .map(|(i, (k, v))| {
                    (
                        k.clone(),
                        if i % 2 == 0 {
                            Value::Null
                        } else {
                            with_nulls(v)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_nulls).collect()),
        other => other.clone(),
    }
}

fn unknown_policy() -> impl Strategy<Value = UnknownArguments> {
    prop_oneof![
        Just(UnknownArguments::Refuse),
        Just(UnknownArguments::Drop),
        Just(UnknownArguments::Pass),
    ]
}

#[test]
fn the_quick_pass_clears_calls_that_fit_as_sent_and_leaves_the_rest_to_the_full_steps() {
    let plan = plan();
    let clears = |tool: &str, arguments: Value| {
        let (offered, compiled, _) = plan.entry(tool).unwrap();
        compiled.fits_as_sent(arguments.as_object().unwrap(), offered)
    };
    let call = "mcp.bland_call.start_call";
    assert!(clears(
        call,
        json!({"phone_number": "+1", "max_duration": 5, "voice": null})
    ));
    assert!(clears("email.send", json!({"to": ["a@x"], "subject": "s"})));
    assert!(clears(
        "memory.search",
        json!({"query": "q", "note": null, "scope": "mail"})
    ));
    assert!(clears(
        "mcp.files.search",
        json!({"query": "q", "limit": 2.5})
    ));
    // A cast, a null a coercing tool leaves out, a missing or undeclared name, a wrapped list,
    // an enum member in another case, a name outside `only` or a fixed one: the full steps.
    assert!(!clears(
        call,
        json!({"phone_number": "+1", "max_duration": "5"})
    ));
    assert!(!clears(call, json!({"phone_number": "+1", "task": null})));
    assert!(!clears(call, json!({"task": "t"})));
    assert!(!clears(call, json!({"phone_number": "+1", "speed": 2})));
    assert!(!clears(
        "email.send",
        json!({"to": "[\"a@x\"]", "subject": "s"})
    ));
    assert!(!clears(
        "memory.search",
        json!({"query": "q", "note": "n", "limit": [1]})
    ));
    assert!(!clears(
        "mcp.files.search",
        json!({"query": "q", "scope": "all"})
    ));
    assert!(!clears(
        "mcp.files.search",
        json!({"query": "q", "other": 1})
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_quick_pass_gives_the_same_report_as_the_full_steps(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
        stray in arb_json(),
        arbitrary in prop_oneof![arb_json(), arb_schema()],
        coerce in any::<bool>(),
        unknown in unknown_policy(),
        only in prop::option::of(prop::collection::vec(prop_oneof![Just("arg".to_string()), "[a-c]"], 0..3)),
        fixed in prop::option::of(prop_oneof![Just("arg"), Just("a"), Just("zz")]),
    ) {
        let fits = json!({"arg": value});
        let cases = [
            (root_object(schema.clone()), fits.clone()),
            // The whole arguments, or the one member, wrapped in a JSON string.
            (root_object(schema.clone()), Value::String(fits.to_string())),
            (root_object(schema.clone()), json!({"arg": fits["arg"].to_string()})),
            // Nulls in place of members, required or optional, at every level.
            (root_object(schema.clone()), json!({"arg": with_nulls(&fits["arg"])})),
            (root_object(schema.clone()), json!({"arg": stray.clone(), "a": 1})),
            // Blank text, read as no arguments.
            (json!({"type": "object", "properties": {"arg": schema}}), json!(" ")),
            (arbitrary, stray),
        ];
        for (schema, arguments) in cases {
            let tool = narrowed_tool(schema, coerce, unknown, only.clone(), fixed);
            let plan = OfferedPlan::new(vec![tool], Vec::new(), None);
            let turn = turn(&[("t", arguments)]);
            for options in [CheckOptions { positional: false }, CheckOptions { positional: true }] {
                let quick = check_turn_with(&plan, &turn, &options, true);
                let full = check_turn_with(&plan, &turn, &options, false);
                prop_assert_eq!(&quick, &full);
                // Borrowed exactly when nothing changed, either way.
                let borrowed = |r: &Report<'_>| {
                    matches!(r.calls[0].arguments, Some(Cow::Borrowed(_)))
                };
                prop_assert_eq!(borrowed(&quick), borrowed(&full));
            }
        }
    }
}

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
