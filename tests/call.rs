//! `POST /v1/call` and `muster call` against the real npm reference
//! servers: a turn that creates an entity and reads it back in one request;
//! a refused turn that leaves the server's state unchanged; a fixed
//! `params` value is what the server received; a hung server fails only
//! its own call. Answers are read back through this file's own types, as
//! docs/call.md documents them.
//!
//! Needs node and npm; the pinned packages are installed on first use.

mod common;

use std::path::Path;

use common::{Fixture, Served, muster, reference_server, stdout};
use serde::Deserialize;
use serde_json::{Value, json};

/// docs/call.md's answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallAnswer {
    format_version: u32,
    outcome: String,
    check: CheckReport,
    results: Vec<CallResult>,
}

/// docs/check.md's report, as much as these tests read.
#[derive(Debug, Deserialize)]
struct CheckReport {
    verdict: String,
    calls: Vec<CheckedCall>,
}

#[derive(Debug, Deserialize)]
struct CheckedCall {
    id: String,
    status: String,
    problems: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallResult {
    id: String,
    status: String,
    server: Option<String>,
    tool: Option<String>,
    arguments: Option<Value>,
    result: Option<ToolResult>,
    error: Option<UpstreamFailure>,
}

/// An MCP `tools/call` result, as the server sent it.
#[derive(Debug, Deserialize)]
struct ToolResult {
    content: Vec<Content>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default, rename = "structuredContent")]
    structured: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Content {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamFailure {
    code: String,
    server: String,
    rpc_code: Option<i64>,
    changes: Vec<String>,
    /// What changed, for `upstream-changed` (tests/drift.rs reads it).
    details: Option<Value>,
    message: String,
}

/// One call log line (docs/gateway.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogLine {
    chat: String,
    id: String,
    tool: String,
    server: Option<String>,
    verdict: String,
    codes: Vec<String>,
    upstream_ms: Option<f64>,
    total_ms: f64,
    #[serde(default)]
    arguments: Option<Value>,
    /// Tokens of a forwarded result's content (docs/results.md).
    #[serde(default)]
    result_tokens: Option<u64>,
}

/// A policy over the memory and everything reference servers and a server
/// that never answers a call (2 s timeout), caps wide enough to offer every
/// tool, one configured tool, and a fixed `message` for `echo`; already
/// discovered. Returns the fixture and the default plan's JSON text.
fn setup() -> (Fixture, String) {
    let memory = reference_server("server-memory");
    let everything = reference_server("server-everything");
    let scripted =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[caps]\nitems = 40\ntokens = 60000\n\
             [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
        ),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"math.calculate\"\ndescription = \"Evaluate.\"\n\
             [tool.input_schema]\ntype = \"object\"\nproperties = { expression = { type = \"string\" } }\n",
        ),
    ]);
    let graph = fx.path().join("graph.jsonl");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\n\n\
             [[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"echo\", \"get-sum\"]\n\n\
             [mcp.params.echo]\nmessage = {{ value = \"fixed by policy\" }}\n\n\
             [[mcp]]\nname = \"slow\"\ncommand = [\"node\", {s:?}, \"hang-calls\"]\nsnapshot = \"slow.json\"\ntimeout_secs = 2\n",
            s = scripted.to_str().unwrap()
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    (fx, plan)
}

/// A turn of `(id, name, arguments)` calls.
fn turn(calls: &[(&str, &str, Value)]) -> Value {
    json!({"calls": calls.iter().map(|(id, name, arguments)| {
        json!({"id": id, "name": name, "arguments": arguments})
    }).collect::<Vec<_>>()})
}

fn create(name: &str) -> Value {
    json!({"entities": [{"name": name, "entityType": "person", "observations": ["wrote programs"]}]})
}

/// The names of the entities a `read_graph` result holds.
fn entities(result: &ToolResult) -> Vec<String> {
    let text = result.content[0].text.as_deref().unwrap();
    let graph: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    graph["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

fn result(answer: &CallAnswer, i: usize) -> &ToolResult {
    answer.results[i]
        .result
        .as_ref()
        .unwrap_or_else(|| panic!("no result for call {i}: {answer:?}"))
}

/// A running `muster serve` on a free loopback port, stopped on drop; its
/// log lines are collected.
struct Serve {
    served: Served,
}

impl Serve {
    fn start(fx: &Fixture) -> Self {
        Self::start_with(fx, &[])
    }

    fn start_with(fx: &Fixture, args: &[&str]) -> Self {
        let served = Served::start(fx.path(), args, &[]);
        Self { served }
    }

    fn post(&self, body: &Value) -> (u16, String, String) {
        self.post_text(&body.to_string())
    }

    fn post_text(&self, body: &str) -> (u16, String, String) {
        let response = common::http_client()
            .post(self.served.url("/v1/call"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .expect("POST /v1/call");
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, kind, response.text().unwrap())
    }

    fn call(&self, body: &Value) -> CallAnswer {
        let (status, _, text) = self.post(body);
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn get(&self, path: &str) -> String {
        common::http_client()
            .get(self.served.url(path))
            .send()
            .unwrap()
            .text()
            .unwrap()
    }
}

#[test]
fn one_request_creates_an_entity_and_reads_it_back() {
    let (fx, plan) = setup();
    let serve = Serve::start(&fx);
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let answer = serve.call(&json!({
        "fingerprint": plan["fingerprint"],
        "turn": turn(&[
            ("c1", "mcp__memory__create_entities", create("Ada")),
            ("c2", "mcp__memory__read_graph", json!({})),
            ("c3", "math.calculate", json!({"expression": "1+1"})),
        ]),
    }));
    assert_eq!(answer.format_version, 1);
    assert_eq!(answer.outcome, "ran", "{answer:?}");
    assert_eq!(answer.check.verdict, "run");
    let ids: Vec<&str> = answer.results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"], "the turn's order");
    let c1 = &answer.results[0];
    assert_eq!(
        (c1.status.as_str(), c1.server.as_deref(), c1.tool.as_deref()),
        ("forwarded", Some("memory"), Some("create_entities"))
    );
    assert_ne!(result(&answer, 0).is_error, Some(true));
    assert_eq!(result(&answer, 0).content[0].kind, "text");
    // Calls to one server run in the turn's order: the read sees the write.
    assert_eq!(entities(result(&answer, 1)), ["Ada"]);
    // The server's structuredContent comes back as it sent it.
    assert_eq!(
        result(&answer, 1).structured.as_ref().unwrap()["entities"][0]["name"],
        "Ada"
    );
    // A configured tool is the host's to run, with the checked arguments.
    let c3 = &answer.results[2];
    assert_eq!(c3.status, "host");
    assert_eq!(c3.arguments, Some(json!({"expression": "1+1"})));
    assert!(c3.result.is_none() && c3.server.is_none());
    // Each call is counted like the gateway's.
    let metrics = serve.get("/metrics");
    assert!(
        metrics.contains(r#"muster_gateway_calls_total{server="memory",verdict="forwarded"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"muster_gateway_calls_total{server="none",verdict="host"} 1"#),
        "{metrics}"
    );
    // And each forwarded result's tokens, by tool (docs/results.md).
    assert!(
        metrics.contains(r#"muster_gateway_result_tokens_count{server="memory",tool="mcp__memory__read_graph"} 1"#),
        "{metrics}"
    );
    // And logged with no argument values.
    let log = serve.served.log();
    let logged: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("muster::gateway"))
        .collect();
    assert_eq!(logged.len(), 3, "{log:?}");
    assert!(!logged.iter().any(|l| l.contains("Ada")), "{logged:?}");
    // Issue 31 item 9: the service's call lines are `muster call`'s and
    // `muster mcp`'s records (the same members, `codes` a list, `server`
    // and `upstream_ms` null for a call left to the host) between the
    // service log's own members.
    let records: Vec<LogLine> = logged
        .iter()
        .map(|l| {
            let mut line: Value = serde_json::from_str(l).unwrap();
            let own = line.as_object_mut().unwrap();
            for key in [
                "timestamp",
                "level",
                "message",
                "caller",
                "client_id",
                "agent",
            ] {
                assert!(own.remove(key).is_some(), "{key} in {l}");
            }
            assert_eq!(own.remove("target"), Some(json!("muster::gateway")));
            serde_json::from_value(line).unwrap_or_else(|e| panic!("{e}: {l}"))
        })
        .collect();
    let host = records.iter().find(|r| r.verdict == "host").unwrap();
    assert_eq!((host.server.as_deref(), host.upstream_ms), (None, None));
    let forwarded = records.iter().find(|r| r.verdict == "forwarded").unwrap();
    assert_eq!(forwarded.server.as_deref(), Some("memory"));
    assert!(forwarded.codes.is_empty() && forwarded.upstream_ms.is_some());
}

#[test]
fn a_refused_turn_runs_no_call_and_leaves_the_server_unchanged() {
    let (fx, plan) = setup();
    let serve = Serve::start(&fx);
    let plan: Value = serde_json::from_str(&plan).unwrap();
    // One good call beside one that does not fit: all or nothing.
    let refused = serve.call(&json!({
        "plan": plan,
        "turn": turn(&[
            ("ok", "mcp__memory__create_entities", create("Bob")),
            ("bad", "mcp__memory__create_entities", json!({"entities": 7})),
        ]),
    }));
    assert_eq!(refused.outcome, "refused");
    assert_eq!(refused.check.verdict, "refused");
    assert_eq!(
        (
            refused.check.calls[0].id.as_str(),
            refused.check.calls[0].status.as_str()
        ),
        ("ok", "not-run")
    );
    assert_eq!(refused.check.calls[1].status, "refused");
    assert_eq!(refused.check.calls[1].problems[0]["code"], "wrong-type");
    for r in &refused.results {
        assert_eq!(r.status, "not-run", "{refused:?}");
        assert!(r.result.is_none() && r.error.is_none());
    }
    let read = serve.call(&json!({
        "plan": plan,
        "turn": turn(&[("r", "mcp__memory__read_graph", json!({}))]),
    }));
    assert_eq!(read.outcome, "ran");
    assert_eq!(entities(result(&read, 0)), Vec::<String>::new());
}

#[test]
fn a_fixed_value_is_what_the_server_receives() {
    let (fx, plan) = setup();
    let serve = Serve::start(&fx);
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let answer = serve.call(&json!({
        "plan": plan,
        "turn": turn(&[
            ("e", "mcp__everything__echo", json!({})),
            ("s", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        ]),
    }));
    assert_eq!(answer.outcome, "ran", "{answer:?}");
    // The same turn answers the same bytes: nothing timed rides in it.
    let body = json!({
        "plan": plan,
        "turn": turn(&[("s", "mcp__everything__get-sum", json!({"a": 2, "b": 3}))]),
    });
    assert_eq!(serve.post(&body).2, serve.post(&body).2);
    let echoed = result(&answer, 0).content[0].text.as_deref();
    assert_eq!(echoed, Some("Echo: fixed by policy"));
    assert_eq!(
        result(&answer, 1).content[0].text.as_deref(),
        Some("The sum of 2 and 3 is 5.")
    );
}

#[test]
fn a_hung_server_fails_only_its_own_call() {
    let (fx, plan) = setup();
    // The server's 2 s timeout bounds its call, not the service's shorter
    // request timeout: the answer is a typed per-call failure, not a 503.
    let serve = Serve::start_with(&fx, &["--request-timeout-ms", "1000"]);
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let answer = serve.call(&json!({
        "plan": plan,
        "turn": turn(&[
            ("h", "mcp__slow__alpha", json!({"q": "x"})),
            ("s", "mcp__everything__get-sum", json!({"a": 20, "b": 22})),
        ]),
    }));
    assert_eq!(answer.outcome, "failed", "{answer:?}");
    let hung = &answer.results[0];
    assert_eq!(hung.status, "failed");
    let error = hung.error.as_ref().unwrap();
    assert_eq!(
        (error.code.as_str(), error.server.as_str(), error.rpc_code),
        ("upstream-timed-out", "slow", None)
    );
    assert!(error.message.contains("`slow`"), "{error:?}");
    assert_eq!(answer.results[1].status, "forwarded");
    assert_eq!(
        result(&answer, 1).content[0].text.as_deref(),
        Some("The sum of 20 and 22 is 42.")
    );
}

#[test]
fn a_tool_its_server_changed_is_not_sent() {
    let (fx, _) = setup();
    // The memory server was recorded with another description of
    // create_entities than it lists now (as after an upgrade).
    let snapshot = fx.path().join("policies/mcp/memory.json");
    let mut recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    for tool in recorded["tools"].as_array_mut().unwrap() {
        if tool["name"] == "create_entities" {
            tool["description"] = json!("Create entities (as recorded before the upgrade).");
        }
    }
    std::fs::write(&snapshot, recorded.to_string()).unwrap();
    // The plan the policy makes now (a plan of the old snapshot is `plan-changed`).
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    let serve = Serve::start(&fx);
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let answer = serve.call(&json!({
        "plan": plan,
        "turn": turn(&[
            ("c1", "mcp__memory__create_entities", create("Ada")),
            ("c2", "mcp__memory__read_graph", json!({})),
        ]),
    }));
    assert_eq!(answer.outcome, "failed", "{answer:?}");
    let error = answer.results[0].error.as_ref().unwrap();
    assert_eq!(
        (error.code.as_str(), error.server.as_str()),
        ("upstream-changed", "memory")
    );
    assert_eq!(error.changes, ["description"]);
    let shown = error.details.as_ref().expect("what changed");
    let runs = shown["description"]
        .as_array()
        .expect("the description's diff");
    assert!(runs.iter().any(|r| r["op"] == "removed"), "{shown}");
    assert_eq!(answer.results[1].status, "forwarded");
    assert_eq!(entities(result(&answer, 1)), Vec::<String>::new());
    assert!(
        !fx.path().join("graph.jsonl").exists(),
        "a changed tool reached its server"
    );
}

#[test]
fn bad_input_is_a_problem_document() {
    let (fx, _) = setup();
    let serve = Serve::start(&fx);
    let (status, kind, text) = serve.post(&json!({"turn": {"calls": []}}));
    assert_eq!(status, 422, "{text}");
    assert_eq!(kind, "application/problem+json");
    let problem: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(problem["problems"][0]["code"], "conflict", "{problem}");
    let (status, kind, _) = serve.post(&json!({"plan": {}, "turn": {"calls": []}, "extra": 1}));
    assert_eq!((status, kind.as_str()), (422, "application/problem+json"));
    let (status, kind, _) = serve.post_text("{not json");
    assert_eq!((status, kind.as_str()), (400, "application/problem+json"));
}

#[test]
fn muster_call_runs_one_turn_and_exits() {
    let (fx, _) = setup();
    fx.write(
        "turn.json",
        &turn(&[
            ("c1", "mcp__memory__create_entities", create("Ada")),
            ("c2", "mcp__memory__read_graph", json!({})),
            ("c3", "mcp__everything__echo", json!({})),
        ])
        .to_string(),
    );
    let out = muster(fx.path())
        .args(["call", "--plan", "plan.json", "--turn", "turn.json"])
        .args(["--format", "json", "--log-arguments"])
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let answer: CallAnswer = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(answer.outcome, "ran");
    assert_eq!(entities(result(&answer, 1)), ["Ada"]);
    assert_eq!(
        result(&answer, 2).content[0].text.as_deref(),
        Some("Echo: fixed by policy")
    );
    // One log line per call on stderr, with the arguments forwarded when asked.
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<LogLine> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert_eq!(lines[0].id, r#""c1""#);
    assert_eq!(lines[0].verdict, "forwarded");
    assert_eq!(lines[0].tool, "mcp__memory__create_entities");
    assert_eq!(lines[0].codes, Vec::<String>::new());
    assert_eq!(lines[0].server.as_deref(), Some("memory"));
    assert_eq!(
        lines[2].arguments,
        Some(json!({"message": "fixed by policy"}))
    );
    assert!(lines.iter().all(|l| l.upstream_ms.is_some()
        && l.total_ms >= l.upstream_ms.unwrap()
        && l.chat.is_empty()));
    // Each forwarded result is counted: "Echo: fixed by policy" is a few tokens.
    assert!(
        lines.iter().all(|l| l.result_tokens.is_some_and(|t| t > 0)),
        "{err}"
    );

    // A refused turn exits 1 and reaches no server.
    fx.write(
        "refused.json",
        &turn(&[
            ("ok", "mcp__memory__create_entities", create("Bob")),
            (
                "bad",
                "mcp__memory__create_entities",
                json!({"entities": 7}),
            ),
        ])
        .to_string(),
    );
    let refused = stdout(
        fx.path(),
        &[
            "call",
            "--plan",
            "plan.json",
            "--turn",
            "refused.json",
            "--format",
            "json",
        ],
        1,
    );
    let refused: CallAnswer = serde_json::from_str(&refused).unwrap();
    assert_eq!(refused.outcome, "refused");
    fx.write(
        "read.json",
        &turn(&[("r", "mcp__memory__read_graph", json!({}))]).to_string(),
    );
    let read = stdout(
        fx.path(),
        &[
            "call",
            "--plan",
            "plan.json",
            "--turn",
            "read.json",
            "--format",
            "json",
        ],
        0,
    );
    let read: CallAnswer = serde_json::from_str(&read).unwrap();
    assert_eq!(entities(result(&read, 0)), ["Ada"], "Bob was never created");

    // A call its server never answers exits 1, the others' results kept.
    fx.write(
        "hung.json",
        &turn(&[
            ("h", "mcp__slow__alpha", json!({"q": "x"})),
            ("s", "mcp__everything__get-sum", json!({"a": 1, "b": 1})),
        ])
        .to_string(),
    );
    let hung = stdout(
        fx.path(),
        &[
            "call",
            "--plan",
            "plan.json",
            "--turn",
            "hung.json",
            "--format",
            "json",
        ],
        1,
    );
    let hung: CallAnswer = serde_json::from_str(&hung).unwrap();
    assert_eq!(hung.outcome, "failed");
    assert_eq!(
        hung.results[0].error.as_ref().map(|e| e.code.as_str()),
        Some("upstream-timed-out")
    );
    assert_eq!(hung.results[1].status, "forwarded");

    // Bad input exits 2.
    fx.write("broken.json", "{not json");
    muster(fx.path())
        .args(["call", "--plan", "plan.json", "--turn", "broken.json"])
        .assert()
        .code(2);
}
