//! Issue 30, items 1, 4 and 16 (part), reproduced: one long word in a query
//! or a tool's description exhausted memory; a check ran on the service's
//! async worker and its enum branches were charged to no budget; a huge
//! unknown tool name cost a closest-name search over every name; a bad
//! queries file listed every line's error. Each input is run as a user
//! would send it. Nothing is timed: memory is bounded by running the CLI
//! under `ulimit -v`, so a regression fails instead of taking the machine.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Fixture, Served, stdout};
use serde_json::Value;

/// `n` letters in no repeating pattern a deletion set could collapse.
fn long_word(n: usize) -> String {
    (0..n)
        .map(|i| char::from(b'a' + ((i * 7 + i / 26) % 26) as u8))
        .collect()
}

/// The bundled policies with deferral on, one more deferred tool whose
/// description holds a 1,000-letter word, and a session pinned from them.
fn session_fixture() -> Fixture {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    fx.write(
        "policies/tools/90-long.toml",
        &format!(
            "[[tool]]\nname = \"notes.append\"\ndescription = \"Append a line to the notes. {}\"\n",
            long_word(1_000)
        ),
    );
    stdout(
        fx.path(),
        &["session", "new", "--flags", "production", "--out", "s.json"],
        0,
    );
    fx
}

/// muster run in `dir` with its address space capped at 1 GiB, so a
/// search that would take more fails at once instead of taking the
/// machine: (exit code, stdout, stderr).
fn capped(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_muster"))
        .args(args)
        .current_dir(dir)
        .env(
            "MUSTER_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("muster-cache"),
        )
        .output()
        .expect("run muster under ulimit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_two_thousand_letter_query_is_answered_within_a_gigabyte() {
    let fx = session_fixture();
    let query = long_word(2_000);
    let (code, out, err) = capped(
        fx.path(),
        &["session", "search", "s.json", &query, "--format", "json"],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["query"], query.as_str());
    assert!(answer["results"].is_array(), "{answer}");
}

#[test]
fn a_thousand_letter_word_in_a_description_costs_nothing_special() {
    let fx = session_fixture();
    let (code, out, err) = capped(
        fx.path(),
        &[
            "session",
            "search",
            "s.json",
            "append a line to my notes",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["results"][0]["name"], "notes.append", "{answer}");
    // The long word itself still matches as written.
    let (code, out, err) = capped(
        fx.path(),
        &[
            "session",
            "search",
            "s.json",
            &long_word(1_000),
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["results"][0]["name"], "notes.append", "{answer}");
}

/// A running `muster serve` on a free port, its address space capped at
/// 2 GiB; killed on drop.
fn start_capped(dir: &Path) -> Served {
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" serve --addr 127.0.0.1:0")
        .arg(env!("CARGO_BIN_EXE_muster"))
        .current_dir(dir)
        .env_remove("MUSTER_ADMIN_TOKEN")
        .env(
            "MUSTER_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("muster-cache"),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start muster serve");
    Served::from_child(child)
}

/// Posts one JSON-RPC message to `/mcp`: (status, session header, body).
fn mcp(
    serve: &Served,
    client: &reqwest::blocking::Client,
    body: &str,
    session: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut request = client
        .post(serve.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().expect("POST /mcp");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().expect("ascii").to_string());
    (status, session, response.text().expect("body"))
}

/// An initialized chat on `/mcp`: its session id.
fn chat(serve: &Served, client: &reqwest::blocking::Client) -> String {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, session, body) = mcp(serve, client, init, None);
    assert_eq!(status, 200, "{body}");
    let session = session.expect("initialize answers Mcp-Session-Id");
    let done = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(mcp(serve, client, done, Some(&session)).0, 202);
    session
}

#[test]
fn a_two_thousand_letter_load_query_over_mcp_is_answered_and_healthz_after() {
    let fx = session_fixture();
    let serve = start_capped(fx.path());
    let client = common::http_builder()
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .expect("client");
    let session = chat(&serve, &client);
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tools__load", "arguments": {"query": long_word(2_000)}}})
    .to_string();
    assert!(call.len() < 2_200, "a small body: {}", call.len());
    for _ in 0..2 {
        let (status, _, body) = mcp(&serve, &client, &call, Some(&session));
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("JSON-RPC");
        // Answered as the control tool answers a query nothing matches.
        let load = &answer["result"]["_meta"]["dev.muster/gateway"]["load"];
        assert_eq!(load["status"], "refused", "{answer}");
        assert_eq!(load["notes"][0]["code"], "nothing-found", "{answer}");
    }
    let health = client.get(serve.url("/healthz")).send().expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
}

/// A plan of one strict tool whose `xs` items must be one of `branches`
/// values, as an `enum` or as an `anyOf` of `const`s.
fn branching_plan(branches: usize, any_of: bool) -> muster::check::OfferedPlan {
    let values: Vec<String> = (0..branches).map(|i| format!("v{i}")).collect();
    let items = if any_of {
        serde_json::json!({"anyOf": values.iter().map(|v| serde_json::json!({"const": v})).collect::<Vec<_>>()})
    } else {
        serde_json::json!({ "enum": values })
    };
    let plan = serde_json::json!({"format_version": 3, "roster": [{"name": "t", "check": "strict",
        "input_schema": {"type": "object",
            "properties": {"xs": {"type": "array", "items": items}}}}]});
    muster::check::OfferedPlan::from_json(&plan.to_string(), "plan".as_ref()).expect("plan")
}

/// The report of one call of `t` whose `xs` holds `items` copies of the
/// last branch's value (each judged against every branch).
fn check_items(plan: &muster::check::OfferedPlan, branches: usize, items: usize) -> Value {
    let xs = vec![format!("v{}", branches - 1); items];
    let turn = serde_json::json!({"calls": [{"id": "1", "name": "t", "arguments": {"xs": xs}}]});
    let options = muster::check::CheckOptions::default();
    let report = muster::answer::check(plan, &turn.to_string(), "turn".as_ref(), &options)
        .expect("the turn reads");
    serde_json::to_value(&report).expect("report JSON")
}

#[test]
fn enum_and_any_of_branches_times_items_are_charged_to_the_check_budget() {
    for any_of in [false, true] {
        let plan = branching_plan(2_000, any_of);
        // 2,000 branches × 2,000 items: past the budget, refused naming the argument.
        let report = check_items(&plan, 2_000, 2_000);
        let call = &report["calls"][0];
        assert_eq!(call["status"], "refused", "{any_of}: {call}");
        let problem = &call["problems"][0];
        assert_eq!(problem["code"], "check-budget-exceeded", "{any_of}: {call}");
        let argument = problem["argument"].as_str().expect("the argument");
        assert!(argument.starts_with("xs"), "{any_of}: {argument}");
        // 100 items fit: the call passes.
        let report = check_items(&plan, 2_000, 100);
        assert_eq!(report["calls"][0]["status"], "ok", "{any_of}: {report}");
    }
}

#[test]
fn a_bad_queries_file_lists_the_first_problems_and_counts_the_rest() {
    let fx = session_fixture();
    let lines = muster::input::MAX_LISTED_PROBLEMS + 150;
    fx.write("q.jsonl", &"{bad\n".repeat(lines));
    let out = common::muster(fx.path())
        .args(["session", "search", "s.json", "--queries", "q.jsonl"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let listed = muster::input::MAX_LISTED_PROBLEMS;
    assert!(err.contains(&format!("q.jsonl:{listed}:")), "{err}");
    assert!(!err.contains(&format!("q.jsonl:{}:", listed + 1)), "{err}");
    // One more error line counts the rest, with its code.
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        listed + 1
    );
    assert!(
        err.contains("[more-problems]") || err.contains("150"),
        "{err}"
    );
}

/// docs/limits.md: a schema nested past `canon::MAX_SCHEMA_DEPTH` cuts its
/// tool as `invalid-schema`. A configured tool's failed the whole policy:
/// now it is cut with its finding and the rest plans; `validate` still
/// refuses it (tests/cli.rs).
#[test]
fn a_configured_tool_with_a_schema_nested_too_deep_is_cut_not_the_policy() {
    let mut deep = String::from("{\"type\": \"string\"}");
    for _ in 0..40 {
        deep = format!("{{\"type\": \"object\", \"properties\": {{\"a\": {deep}}}}}");
    }
    let fx = Fixture::new(&[
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a.fine\"\ndescription = \"Fine.\"\n\n\
             [[tool]]\nname = \"a.deep\"\ndescription = \"Deep.\"\ninput_schema_file = \"deep.json\"\n",
        ),
        ("policies/tools/deep.json", &deep),
    ]);
    let plan = common::plan_value(fx.path(), &[]);
    assert_eq!(common::names_in(&plan, "roster"), ["a.fine"]);
    let cut: Vec<(&str, &str)> = plan["cut"]
        .as_array()
        .expect("cut")
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["code"].as_str().unwrap()))
        .collect();
    assert_eq!(cut, [("a.deep", "invalid-schema")], "{plan}");
    let err = common::muster(fx.path())
        .arg("validate")
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&err);
    assert!(err.contains("a.deep"), "{err}");
}

/// The control tool's `query` is words or names, so one past
/// `search::MAX_QUERY_BYTES` is refused as typed data naming the limit, not
/// searched and not echoed back.
#[test]
fn a_load_query_past_the_byte_limit_is_refused_naming_the_limit() {
    let fx = session_fixture();
    let limit = muster::search::MAX_QUERY_BYTES;
    let query = "read my email ".repeat(limit / 14 + 1);
    assert!(query.len() > limit);
    let out = common::muster(fx.path())
        .args([
            "session", "load", "s.json", "--query", &query, "--format", "json",
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let answer: Value = serde_json::from_slice(&out).expect("load JSON");
    assert_eq!(answer["status"], "refused", "{answer}");
    let note = &answer["notes"][0];
    assert_eq!(note["code"], "query-too-long", "{answer}");
    assert_eq!(note["limit"], limit);
    assert_eq!(note["bytes"], query.len());
    assert!(out.len() < query.len(), "the query is not echoed");
    // At the limit it is searched.
    let query = "read my email ".repeat(limit / 14);
    let out = common::muster(fx.path())
        .args([
            "session", "load", "s.json", "--query", &query, "--format", "json",
        ])
        .output()
        .expect("muster runs");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("load JSON");
    assert_ne!(answer["notes"][0]["code"], "query-too-long", "{answer}");
}

/// Found by a hostile probe: `/v1/sessions/load` with 100,000 unknown
/// names answered one note per name (each with its closest names), 13
/// times the request's size, and planned the session again per name. One
/// load looks up at most `session::MAX_LOAD_NAMES` names; more are refused
/// as typed data naming the limit, none looked up.
#[test]
fn a_load_of_more_names_than_the_limit_is_refused_naming_the_limit() {
    let fx = session_fixture();
    let limit = muster::session::MAX_LOAD_NAMES;
    let load = |n: usize| -> Value {
        let mut args = vec!["session", "load", "s.json", "--format", "json"];
        let names: Vec<String> = (0..n).map(|i| format!("nosuch.tool{i}")).collect();
        for name in &names {
            args.extend(["--name", name]);
        }
        let out = common::muster(fx.path())
            .args(&args)
            .output()
            .expect("muster runs");
        serde_json::from_slice(&out.stdout).expect("load JSON")
    };
    let answer = load(limit + 1);
    assert_eq!(answer["status"], "refused", "{answer}");
    let notes = answer["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 1, "{answer}");
    assert_eq!(notes[0]["code"], "too-many-names", "{answer}");
    assert_eq!(notes[0]["names"], limit + 1);
    assert_eq!(notes[0]["limit"], limit);
    // At the limit, each name is looked up and answered.
    let answer = load(limit);
    let notes = answer["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), limit, "{answer}");
    assert!(
        notes.iter().all(|n| n["code"] == "unknown-tool"),
        "{answer}"
    );
}

/// Found by a hostile probe: the lenient check, which runs before the
/// strict one, judged each value against an enum's members uncharged, two
/// scans each when none matched: 40,000 values against 40,000 members took
/// 25 s of CPU, past the request's own 503, and were answered
/// `not-in-enum`. Its scans are charged to the same branch budget, so the
/// call is refused `check-budget-exceeded` naming the argument, also for a
/// tool checked leniently.
#[test]
fn the_lenient_checks_enum_scans_are_charged_to_the_check_budget() {
    let values: Vec<u32> = (0..40_000).collect();
    let plan = serde_json::json!({"format_version": 3, "roster": [{"name": "t",
        "input_schema": {"type": "object",
            "properties": {"xs": {"type": "array", "items": {"enum": values}}}}}]});
    let plan =
        muster::check::OfferedPlan::from_json(&plan.to_string(), "plan".as_ref()).expect("plan");
    let xs: Vec<u32> = (40_000..80_000).collect();
    let turn = serde_json::json!({"calls": [{"id": "1", "name": "t", "arguments": {"xs": xs}}]});
    let options = muster::check::CheckOptions::default();
    let report = muster::answer::check(&plan, &turn.to_string(), "turn".as_ref(), &options)
        .expect("the turn reads");
    let report = serde_json::to_value(&report).expect("report JSON");
    let call = &report["calls"][0];
    assert_eq!(call["status"], "refused", "{call}");
    assert_eq!(call["problems"].as_array().map(Vec::len), Some(1), "{call}");
    let problem = &call["problems"][0];
    assert_eq!(problem["code"], "check-budget-exceeded", "{call}");
    let argument = problem["argument"].as_str().expect("the argument");
    assert!(argument.starts_with("xs"), "{argument}");
}

/// A strict tool whose `v` is a chain of `depth` nested `anyOf`s through
/// `$defs`, two branches each, every one failing for a list.
fn nested_alternatives_plan(depth: usize) -> muster::check::OfferedPlan {
    let mut defs = serde_json::Map::new();
    for i in 0..depth {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            serde_json::json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("a{depth}"), serde_json::json!({"type": "string"}));
    let plan = serde_json::json!({"format_version": 3, "roster": [{"name": "t", "check": "strict",
        "input_schema": {"type": "object", "properties": {"v": {"$ref": "#/$defs/a0"}},
            "$defs": defs}}]});
    muster::check::OfferedPlan::from_json(&plan.to_string(), "plan".as_ref()).expect("plan")
}

/// Found by a hostile probe: the validator copies the value judged at a
/// failing `anyOf` into each branch's error, and again at each enclosing
/// one, so twelve nested alternatives over a list of 1,000 items (a 4 KB
/// request) took 670 MB, and 10,000 items 5.9 GB, within every budget.
/// The arguments are judged yes or no first, counting those copies; past
/// `MAX_CHECK_COPIES` the call is refused `check-budget-exceeded`, the
/// errors never built. A small failing call is still explained.
#[test]
fn nested_alternatives_over_a_long_list_are_refused_before_their_errors_are_built() {
    let call = |plan: &muster::check::OfferedPlan, items: usize| -> Value {
        let turn = serde_json::json!({"calls": [{"id": "1", "name": "t",
            "arguments": {"v": vec![0; items]}}]});
        let options = muster::check::CheckOptions::default();
        let report = muster::answer::check(plan, &turn.to_string(), "turn".as_ref(), &options)
            .expect("the turn reads");
        serde_json::to_value(&report).expect("report JSON")["calls"][0].clone()
    };
    let answer = call(&nested_alternatives_plan(12), 1_000);
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_eq!(
        answer["problems"][0]["code"], "check-budget-exceeded",
        "{answer}"
    );
    let answer = call(&nested_alternatives_plan(2), 3);
    assert_eq!(answer["status"], "refused", "{answer}");
    assert_ne!(
        answer["problems"][0]["code"], "check-budget-exceeded",
        "{answer}"
    );
}
