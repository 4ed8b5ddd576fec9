//! Argument names and paths, deferred and unknown tools, how one call decides the turn,
//! and how many problems are listed.

use super::*;

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

/// Found by the `repair` fuzz target: a name the schema requires without a `properties` entry
/// was dropped as undeclared, so the call went on without a required argument (and under
/// `refuse` no call could ever pass). It is declared: kept, under every policy.
#[test]
fn a_required_name_without_a_properties_entry_is_declared_not_dropped() {
    let schema = json!({
        "type": "object",
        "properties": {"qurey": {"type": "string"}},
        "required": ["query"]
    });
    for unknown in [
        UnknownArguments::Refuse,
        UnknownArguments::Drop,
        UnknownArguments::Pass,
    ] {
        let report = run(
            schema.clone(),
            json!({"query": "011", "quevy": "x"}),
            true,
            unknown,
        );
        let call = &report.calls[0];
        match unknown {
            // The misspelt name is still undeclared.
            UnknownArguments::Refuse => {
                assert_eq!(call.status, Status::Refused, "{call:?}");
                assert_eq!(call.problems.len(), 1, "{call:?}");
                assert!(
                    matches!(&call.problems[0].problem, CallProblem::UndeclaredArgument { argument, .. } if argument == "quevy"),
                    "{call:?}"
                );
            }
            UnknownArguments::Drop => {
                assert_eq!(call.status, Status::Ok, "{call:?}");
                assert_eq!(call.arguments.as_deref(), Some(&json!({"query": "011"})));
            }
            UnknownArguments::Pass => {
                assert_eq!(call.status, Status::Ok, "{call:?}");
                assert_eq!(
                    call.arguments.as_deref(),
                    Some(&json!({"query": "011", "quevy": "x"}))
                );
            }
        }
    }
    // Left out, it is missing.
    let report = run(schema, json!({}), true, UnknownArguments::Drop);
    assert_eq!(report.calls[0].status, Status::Refused);
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
