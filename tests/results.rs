//! Results are context too (issue 33): real servers' results through `muster mcp` (read by
//! the official MCP Python SDK) and `muster call`, held to their budgets and checked against
//! their tools' `outputSchema`.

mod common;

use std::path::Path;

use common::{Fixture, muster, python_sdk, reference_server, stdout};
use muster::tokens::Encoding;
use serde::Deserialize;
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// `_meta["dev.muster/gateway"].result`, read back by its own type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Counted {
    tokens_before: u64,
    #[serde(default)]
    tokens_before_estimated: bool,
    tokens_after: u64,
    bytes_before: u64,
    budget: Option<u64>,
    cut: bool,
    #[serde(default)]
    structured_tokens: Option<u64>,
    #[serde(default)]
    note: Option<Note>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Note {
    code: String,
    tool: String,
    tokens_before: u64,
    #[serde(default)]
    tokens_before_estimated: bool,
    bytes_before: u64,
    budget: u64,
    items_left_out: u64,
    paging: Vec<String>,
}

/// One call as `tests/mcp-clients/results.py` saw it.
#[derive(Debug, Deserialize)]
struct Seen {
    is_error: bool,
    texts: Vec<String>,
    structured: Option<Value>,
    meta: Option<Value>,
}

/// Two MiB of numbered lines, no two alike, beginning with a line a reader can find.
fn big_text() -> String {
    let mut text = String::from("BEGINNING OF THE FILE: muster keeps this line.\n");
    let mut i = 0u64;
    while text.len() < 2 << 20 {
        text.push_str(&format!(
            "line {i}: the quick brown fox {} jumps over the lazy dog {}\n",
            i * 7919 % 10007,
            i * 104_729 % 65_537
        ));
        i += 1;
    }
    text
}

/// A policy over server-filesystem (allowed a temp dir holding a 2 MiB file) with
/// `max_result_tokens = 2000`, server-everything's structured tool and the Python SDK
/// weather server; discovered. Returns the fixture, the big file's path and its text.
fn setup(results: &str) -> (Fixture, String, String) {
    let fs = reference_server("server-filesystem");
    let everything = reference_server("server-everything");
    let python = python_sdk();
    let weather = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/weather_server.py");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        &format!("[caps]\nitems = 40\ntokens = 60000\n{results}"),
    )]);
    let allowed = fx.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let allowed = allowed.canonicalize().unwrap();
    let file = allowed.join("big.txt");
    let text = big_text();
    std::fs::write(&file, &text).unwrap();
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"fs\"\ncommand = [\"node\", {fs:?}, {allowed:?}]\nsnapshot = \"fs.json\"\n\
             allow = [\"read_text_file\"]\nmax_result_tokens = 2000\n\n\
             [[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"get-structured-content\"]\n\n\
             [[mcp]]\nname = \"weather\"\ncommand = [{python:?}, {weather:?}]\nsnapshot = \"weather.json\"\n",
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    (fx, file.to_string_lossy().into_owned(), text)
}

/// The calls made through `muster mcp` by the official Python SDK.
fn through_mcp(fx: &Fixture, calls: &Value) -> Vec<Seen> {
    let args = [
        std::ffi::OsString::from(MUSTER),
        fx.policies().into(),
        calls.to_string().into(),
    ];
    let seen = common::run_client("results.py", &args, Some(fx.path()));
    serde_json::from_value(seen).unwrap_or_else(|e| panic!("{e}"))
}

/// `calls` run as one turn by `muster call` over the policy's plan: the answer and the call
/// log's lines.
fn muster_call(fx: &Fixture, calls: &Value) -> (Value, Vec<Value>) {
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    fx.write("turn.json", &json!({ "calls": calls }).to_string());
    let out = muster(fx.path()).args(common::CALL_JSON).assert().code(0);
    let answer: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let lines = String::from_utf8_lossy(&out.get_output().stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l.get("verdict").is_some())
        .collect();
    (answer, lines)
}

fn counted(meta: &Value) -> Counted {
    serde_json::from_value(meta["result"].clone()).unwrap_or_else(|e| panic!("{e}: {meta:#}"))
}

/// What a cut read of the big file must show, whichever front it came through.
fn assert_cut(texts: &[String], meta: &Value, file_text: &str) {
    let tokens: u32 = texts
        .iter()
        .map(|t| Encoding::O200kBase.count_text(t))
        .sum();
    assert!(tokens <= 2000, "{tokens} tokens arrived");
    assert!(tokens >= 1500, "the budget is used, not wasted: {tokens}");
    assert!(
        file_text.starts_with(&texts[0]) && texts[0].len() > 1000,
        "the text that arrives is the file's beginning"
    );
    let last = texts.last().unwrap();
    assert!(last.contains("result-cut"), "{last}");
    let count = counted(meta);
    assert!(count.cut);
    assert_eq!(count.budget, Some(2000));
    assert_eq!(u64::from(tokens), count.tokens_after);
    // Past the cut the text is not counted but estimated from what was.
    assert!(count.tokens_before_estimated);
    assert!(count.tokens_before > 400_000, "{count:?}");
    assert!(count.bytes_before > 2 << 20, "{count:?}");
    let note = count.note.expect("a cut result carries its note");
    assert_eq!(note.code, "result-cut");
    assert_eq!(note.budget, 2000);
    assert_eq!(note.tokens_before, count.tokens_before);
    assert!(note.tokens_before_estimated);
    assert!(last.contains("about "), "{last}");
    assert_eq!(note.bytes_before, count.bytes_before);
    assert_eq!(note.items_left_out, 0);
    assert_eq!(
        note.paging,
        ["tail", "head"],
        "server-filesystem's own paging arguments"
    );
    assert!(last.contains("`head`") && last.contains("`tail`"), "{last}");
}

#[test]
fn a_two_mib_file_arrives_within_its_budget_through_the_gateway_and_muster_call() {
    let (fx, file, text) = setup("");
    let seen = through_mcp(
        &fx,
        &json!([
            ["mcp__fs__read_text_file", {"path": file}],
            ["mcp__fs__read_text_file", {"path": file, "head": 3}],
        ]),
    );
    assert!(!seen[0].is_error);
    let meta = seen[0].meta.as_ref().expect("muster's _meta");
    assert_cut(&seen[0].texts, meta, &text);
    let note = counted(meta).note.unwrap();
    assert_eq!(note.tool, "mcp__fs__read_text_file");
    // Asking for less with the tool's own argument passes whole, and is counted.
    let small = counted(seen[1].meta.as_ref().unwrap());
    assert!(!small.cut && small.note.is_none(), "{small:?}");
    assert_eq!(seen[1].texts.len(), 1);
    assert!(text.starts_with(&seen[1].texts[0]));
    assert_eq!(small.tokens_before, small.tokens_after);
    assert!(!small.tokens_before_estimated);
    assert_eq!(
        u64::from(Encoding::O200kBase.count_text(&seen[1].texts[0])),
        small.tokens_after
    );

    // The same budget through `muster call`.
    let (answer, log) = muster_call(
        &fx,
        &json!([{"id": "c1", "name": "mcp__fs__read_text_file", "arguments": {"path": file}}]),
    );
    let result = &answer["results"][0]["result"];
    let texts: Vec<String> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    assert_cut(&texts, &result["_meta"]["dev.muster/gateway"], &text);
    // The call log counts what the client got.
    let line = &log[0];
    assert_eq!(line["codes"], json!(["result-cut"]), "{line}");
    assert_eq!(
        line["result_tokens"].as_u64(),
        Some(counted(&result["_meta"]["dev.muster/gateway"]).tokens_after)
    );
}

#[test]
fn a_result_that_breaks_its_output_schema_is_not_passed_on_as_a_success() {
    let (fx, _, _) = setup("[results]\nmax_result_tokens = 5000\n");
    let seen = through_mcp(
        &fx,
        &json!([
            ["mcp__weather__weather", {"city": "Oslo"}],
            ["mcp__weather__weather", {"city": "Oslo", "good": true}],
            ["mcp__everything__get-structured-content", {"location": "Chicago"}],
        ]),
    );
    // {"temp": "hot"} for a number: a tool error naming the path, nothing structured.
    let bad = &seen[0];
    assert!(bad.is_error, "{bad:?}");
    assert_eq!(bad.structured, None);
    let meta = bad.meta.as_ref().unwrap();
    let output = meta["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{meta:#}");
    assert_eq!(output[0]["code"], "output-schema-mismatch");
    assert_eq!(output[0]["path"], "temp");
    assert_eq!(output[0]["tool"], "mcp__weather__weather");
    assert!(bad.texts[0].contains("outputSchema"), "{:?}", bad.texts);
    assert!(
        !bad.texts.iter().any(|t| t.contains("\"hot\"}")),
        "the wrong value is withheld"
    );
    // The same tool keeping its promise passes, as do the reference server's structured results.
    for good in &seen[1..] {
        assert!(!good.is_error, "{good:?}");
        let meta = good.meta.as_ref().unwrap();
        assert!(meta.get("output").is_none(), "{meta:#}");
        assert!(counted(meta).structured_tokens.unwrap() > 0);
    }
    assert_eq!(seen[1].structured, Some(json!({"temp": 21.5})));
    assert_eq!(seen[2].structured.as_ref().unwrap()["humidity"], 82);
}

#[test]
fn with_warn_a_mismatch_passes_with_its_warning() {
    // Through `muster call`: the Python SDK client validates structured results itself and
    // would raise on what muster lets through here.
    let (fx, _, _) = setup("[results]\non_output_mismatch = \"warn\"\n");
    let (answer, log) = muster_call(
        &fx,
        &json!([{"id": "w", "name": "mcp__weather__weather", "arguments": {"city": "Oslo"}}]),
    );
    let result = &answer["results"][0]["result"];
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"], json!({"temp": "hot"}));
    let meta = &result["_meta"]["dev.muster/gateway"];
    assert_eq!(
        meta["output"][0]["code"], "output-schema-mismatch",
        "{meta:#}"
    );
    assert_eq!(meta["output"][0]["path"], "temp");
    let line = &log[0];
    assert_eq!(line["codes"], json!(["output-schema-mismatch"]), "{line}");
}

#[test]
fn a_budget_below_the_least_is_refused_naming_its_line() {
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[results]\nmax_result_tokens = 50\non_output_mismatch = \"drop\"\n",
        ),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
        ),
    ]);
    let out = muster(fx.path())
        .args(["validate", "--format", "json"])
        .assert()
        .code(2);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned()
        + &String::from_utf8_lossy(&out.get_output().stderr);
    assert!(text.contains("results.max_result_tokens = 50"), "{text}");
    assert!(
        text.contains("results.on_output_mismatch \\\"drop\\\"")
            || text.contains("results.on_output_mismatch \"drop\""),
        "{text}"
    );
}

#[test]
fn a_turns_results_share_the_turns_budget_in_the_turns_order() {
    let (fx, file, text) = setup("[results]\nmax_turn_result_tokens = 3000\n");
    let read = |id: &str| json!({"id": id, "name": "mcp__fs__read_text_file", "arguments": {"path": file}});
    let (answer, _) = muster_call(&fx, &json!([read("first"), read("second")]));
    let counts: Vec<Counted> = (0..2)
        .map(|i| counted(&answer["results"][i]["result"]["_meta"]["dev.muster/gateway"]))
        .collect();
    assert_eq!(
        counts[0].budget,
        Some(2000),
        "the call's own budget is the smaller"
    );
    assert_eq!(
        counts[1].budget,
        Some(3000 - counts[0].tokens_after),
        "the second gets what the first left of the turn's"
    );
    assert!(
        counts[0].tokens_after + counts[1].tokens_after <= 3000,
        "{counts:?}"
    );
    let second = answer["results"][1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with(second) && second.len() > 1000);
}

#[test]
fn a_calls_budget_is_the_smaller_of_its_servers_and_its_agents_else_the_default() {
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[results]\nmax_result_tokens = 9000\n\
             [[agent]]\nname = \"tight\"\nmax_result_tokens = 1500\n\
             [[agent]]\nname = \"loose\"\n",
        ),
        (
            "policies/mcp/servers.toml",
            "[[mcp]]\nname = \"small\"\ncommand = [\"small\"]\nmax_result_tokens = 2000\n\n[[mcp]]\nname = \"open\"\ncommand = [\"open\"]\n",
        ),
    ]);
    let inputs = muster::policy::Inputs::load(&fx.policies()).expect("a valid policy");
    let policy = &inputs.policy;
    let agent = |name: &str| policy.agent(Some(name), None);
    assert_eq!(policy.result_budget("small", agent("tight")), Some(1500));
    assert_eq!(policy.result_budget("small", agent("loose")), Some(2000));
    assert_eq!(policy.result_budget("open", agent("tight")), Some(1500));
    assert_eq!(policy.result_budget("open", agent("loose")), Some(9000));
    assert_eq!(policy.results.max_turn_result_tokens, None);
}

/// Issue 33, item 3: server-everything's `get-env` answers with its whole environment, which
/// holds the value muster filled from its own; through `muster call` the value never arrives.
#[test]
fn a_value_muster_filled_that_a_server_echoes_in_its_result_is_redacted() {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 40\ntokens = 60000\n",
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"get-env\"]\nenv = {{ SERVICE_TOKEN = \"${{MUSTER_TEST_RESULT_SECRET}}\" }}\n",
        ),
    );
    let secret = "tok-3f9a7c21-result-secret";
    let run = |args: &[&str]| {
        let out = muster(fx.path())
            .env("MUSTER_TEST_RESULT_SECRET", secret)
            .args(args)
            .assert()
            .code(0);
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    run(&["discover"]);
    fx.write("plan.json", &run(&["plan", "--format", "json"]));
    fx.write(
        "turn.json",
        &json!({"calls": [{"id": "e", "name": "mcp__everything__get-env", "arguments": {}}]})
            .to_string(),
    );
    let answer = run(&common::CALL_JSON);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let text = answer["results"][0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("SERVICE_TOKEN"),
        "the server did echo it: {text}"
    );
    assert!(!answer.to_string().contains(secret), "{answer}");
    assert!(text.contains("[redacted]"), "{text}");
}

/// Issue 33, item 4: `muster report --calls` shows each tool's result sizes from a call log
/// that `muster call` wrote running real calls (one cut read of a 2 MiB file, two small reads,
/// a structured result), and escapes the names a log holds.
#[test]
fn the_report_shows_result_sizes_per_tool_from_a_real_call_log() {
    let (fx, file, _) = setup("");
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    let read = |id: &str, args: Value| json!({"id": id, "name": "mcp__fs__read_text_file", "arguments": args});
    let calls = json!([
        read("big", json!({"path": file})),
        read("head", json!({"path": file, "head": 3})),
        read("tail", json!({"path": file, "tail": 40})),
        {"id": "s", "name": "mcp__everything__get-structured-content", "arguments": {"location": "Chicago"}},
    ]);
    fx.write("turn.json", &json!({ "calls": calls }).to_string());
    let out = muster(fx.path()).args(common::CALL_JSON).assert().code(0);
    let answer: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let after = |i: usize| {
        counted(&answer["results"][i]["result"]["_meta"]["dev.muster/gateway"]).tokens_after
    };
    let (big, head, tail) = (after(0), after(1), after(2));
    assert!(big > tail && tail > head, "{big} {tail} {head}");
    // The log as written, with one more line naming a tool as a hostile client might.
    let mut log = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    log.push_str("{\"tool\":\"mcp__x__<b>\",\"server\":\"x\",\"verdict\":\"forwarded\",\"codes\":[],\"result_tokens\":7}\n");
    fx.write("calls.log", &log);
    stdout(
        fx.path(),
        &["report", "--calls", "calls.log", "--out", "page.html"],
        0,
    );
    let page = std::fs::read_to_string(fx.path().join("page.html")).unwrap();
    let table = &page[page.find("<table id=\"result-sizes\">").expect("the table")..];
    let table = &table[..table.find("</table>").unwrap()];
    // Each row's cells: tool, server, results, p50, p99, largest, cut.
    let rows: Vec<Vec<String>> = table
        .split("<tr>")
        .skip(2)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let cell = &cell[cell.find('>').unwrap() + 1..];
                    cell[..cell.find("</td>").unwrap()].replace(',', "")
                })
                .collect()
        })
        .collect();
    let figures = |n: u64| n.to_string();
    assert_eq!(
        rows[0],
        [
            "mcp__fs__read_text_file".to_string(),
            "fs".into(),
            "3".into(),
            figures(tail),
            figures(big),
            figures(big),
            "1".into()
        ],
        "the largest p99 first: {table}"
    );
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows.iter()
            .any(|r| r[0] == "mcp__everything__get-structured-content"
                && r[2] == "1"
                && r[6] == "0")
    );
    assert!(page.contains("mcp__x__&lt;b&gt;") && !page.contains("mcp__x__<b>"));

    // A log that is not one is refused, naming the file.
    fx.write("not-a-log.txt", "hello\n");
    let out = muster(fx.path())
        .args(["report", "--calls", "not-a-log.txt"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(err.contains("not-a-log.txt: "), "{err}");
}
