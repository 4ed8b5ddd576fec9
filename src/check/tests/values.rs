//! Argument values: required and null, each declared type and what is cast to it, enums,
//! large integers.

use super::*;

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
    let args = ok(CALL, json!({"phone_number": 15550100, "task": 2.5}));
    assert_eq!(args, json!({"phone_number": "15550100", "task": "2.5"}));
}

/// Issue 21 item 8: a lone scalar where a list is declared and a boolean where text is declared
/// are refused in both coercion modes: no tool reads them (Pydantic's lax mode, zod and JSON
/// Schema all refuse them), so forwarding them would only earn the server's refusal.
#[test]
fn a_lone_scalar_for_a_list_and_a_boolean_for_text_are_refused() {
    for (schema, value, message) in [
        (
            json!({"type": "array", "items": {"type": "string"}}),
            json!("one"),
            "argument \"arg\" must be a list; got the text \"one\"",
        ),
        (
            json!({"type": "array"}),
            json!(3),
            "argument \"arg\" must be a list; got the number 3",
        ),
        (
            json!({"type": "string"}),
            json!(true),
            "argument \"arg\" must be a string; got the boolean true",
        ),
        (
            json!({"type": ["integer", "string"]}),
            json!(false),
            "argument \"arg\" must be an integer or a string; got the boolean false",
        ),
    ] {
        for coerce in [false, true] {
            let report = run(
                root_object(schema.clone()),
                json!({ "arg": value.clone() }),
                coerce,
                UnknownArguments::Refuse,
            );
            assert_eq!(report.verdict, Verdict::Refused, "{schema} {value}");
            let got = &report.calls[0].problems[0].message;
            assert!(got.ends_with(message), "{got}");
        }
    }
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
    // The quick pass clears the exact member as sent, as the full steps forward it (within a
    // turn's budget, as every check runs: an enum's scans are charged to it).
    let _turn = crate::check::budget::Turn::open(crate::check::MAX_CHECK_STEPS);
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
