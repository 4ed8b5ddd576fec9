//! What is forwarded: kept falsy values, repaired wrapped arguments, narrowing, the
//! positional form, byte-identical JSON and the text rendering.

use super::*;

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
