//! Requests a server sends its client in the middle of a call, relayed
//! through muster (docs/gateway.md, "Requests from servers"): the official
//! MCP Python SDK with elicitation and sampling callbacks calls
//! server-everything's `trigger-elicitation-request` and
//! `trigger-sampling-request` (tools it offers only to a client declaring
//! those capabilities) through `muster mcp`, `/mcp/chats/{id}` and plain
//! `/mcp`, at its default revision (2026-07-28: muster answers
//! `input_required` and the client's retry carries its answers) and at
//! 2025-11-25 (the server's requests are sent to the client on the call's
//! stream). Each time the client is asked what it is asked directly and the
//! tool answers what it answers directly; fastmcp's client at its defaults
//! and the official TypeScript SDK's client too. A client that declares neither is told what its client lacks, and
//! nothing reaches the server.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::{Fixture, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");
const ELICIT: &str = "trigger-elicitation-request";
const SAMPLE: &str = "trigger-sampling-request";
const GREET: &str = "greet";

/// A policy over server-everything that lets it ask for elicitation and
/// sampling; discovered as a client declaring both, so its two conditional
/// tools are recorded.
fn setup(relay: &str) -> Fixture {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             {relay}\nallow = [\"get-sum\", {ELICIT:?}, {SAMPLE:?}]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

const BOTH: &str = "relay = [\"elicitation\", \"sampling\"]";

/// What the client saw directly, per mode.
fn direct(mode: &str) -> Value {
    let everything = reference_server("server-everything");
    let seen = common::run_client("relay.py", &[mode, "stdio", "node", &everything], None);
    assert_eq!(seen["asked"].as_array().map(Vec::len), Some(2), "{seen}");
    seen
}

fn assert_as_direct(seen: &Value, direct: &Value, version: &str) {
    assert_eq!(seen["protocol_version"], version, "{seen}");
    assert_eq!(
        seen["asked"], direct["asked"],
        "asked what it is asked directly: {seen}"
    );
    assert_eq!(
        seen["calls"], direct["calls"],
        "answered as directly: {seen}"
    );
    assert!(
        seen["calls"][ELICIT]["text"]
            .as_str()
            .is_some_and(|t| t.contains("- Name: Ada Lovelace")),
        "{seen}"
    );
}

#[test]
fn elicitation_and_sampling_reach_a_stdio_client_at_either_revision() {
    let fx = setup(BOTH);
    let policies = fx.path().join("policies");
    let args = |mode| {
        vec![
            mode,
            "stdio",
            MUSTER,
            "mcp",
            "--policies",
            policies.to_str().unwrap(),
        ]
    };
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let seen = common::run_client("relay.py", &args(mode), Some(fx.path()));
        assert_as_direct(&seen, &direct(mode), version);
    }
    // A client that declares neither is told so; it is never asked.
    let seen = common::run_client("relay.py", &args("none"), Some(fx.path()));
    assert_eq!(seen["asked"], json!([]), "{seen}");
    for tool in [ELICIT, SAMPLE] {
        let call = &seen["calls"][tool];
        assert_eq!(call["is_error"], true, "{seen}");
        let text = call["text"].as_str().unwrap();
        assert!(
            text.contains("only to a client that declares") && !text.contains("no longer lists"),
            "{seen}"
        );
    }
}

#[test]
fn elicitation_and_sampling_reach_an_http_client_at_either_revision() {
    let fx = setup(BOTH);
    let serve = common::Served::start(fx.path(), &[], &[]);
    for path in ["/mcp/chats/relay-1", "/mcp"] {
        let url = serve.url(path);
        for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
            let seen = common::run_client("relay.py", &[mode, "http", &url], None);
            assert_as_direct(&seen, &direct(mode), version);
        }
    }
}

/// fastmcp's client at its defaults, with elicitation and sampling
/// handlers, through `muster mcp` and `/mcp/chats/{id}`, as directly.
#[test]
fn fastmcp_at_its_defaults_is_asked_and_answers_through_muster() {
    let fx = setup(BOTH);
    let everything = reference_server("server-everything");
    let direct = common::run_client("fastmcp_relay.py", &["stdio", "node", &everything], None);
    assert_eq!(
        direct["asked"].as_array().map(Vec::len),
        Some(2),
        "{direct}"
    );
    let policies = fx.path().join("policies");
    let args = [
        "stdio",
        MUSTER,
        "mcp",
        "--policies",
        policies.to_str().unwrap(),
    ];
    let seen = common::run_client("fastmcp_relay.py", &args, Some(fx.path()));
    assert_eq!(seen, direct, "through muster mcp");
    let serve = common::Served::start(fx.path(), &[], &[]);
    let url = serve.url("/mcp/chats/fastmcp-relay");
    let seen = common::run_client("fastmcp_relay.py", &["http", &url], None);
    assert_eq!(seen, direct, "through /mcp/chats/{{id}}");
}

/// What the official TypeScript SDK's client (2025-11-25) saw, run with
/// `args` (`tests/mcp-servers/relay-client.mjs`).
fn typescript(args: &[&str]) -> Value {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/relay-client.mjs");
    let out = Command::new("node")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The TypeScript SDK's client, declaring elicitation and sampling, through
/// `muster mcp` and `/mcp/chats/{id}`, as directly.
#[test]
fn the_typescript_sdk_is_asked_and_answers_through_muster() {
    let fx = setup(BOTH);
    let everything = reference_server("server-everything");
    let direct = typescript(&["stdio", "node", &everything]);
    assert_eq!(
        direct["asked"].as_array().map(Vec::len),
        Some(2),
        "{direct}"
    );
    let policies = fx.path().join("policies");
    let seen = typescript(&[
        "stdio",
        MUSTER,
        "mcp",
        "--policies",
        policies.to_str().unwrap(),
    ]);
    assert_eq!(seen, direct, "through muster mcp");
    let serve = common::Served::start(fx.path(), &[], &[]);
    let url = serve.url("/mcp/chats/typescript-relay");
    assert_eq!(
        typescript(&["http", &url]),
        direct,
        "through /mcp/chats/{{id}}"
    );
}

/// Without `relay`, the server is told nothing of the client's
/// capabilities: its conditional tools are never listed, so never offered.
/// A 2026-07-28 server asks by answering `input_required` (the official
/// Python SDK's server does, for a tool whose argument is elicited): a
/// 2026-07-28 client is handed that result and its retry reaches the
/// server; for a 2025-11-25 client muster asks the client itself and calls
/// again with its answers.
#[test]
fn a_2026_server_asking_for_input_is_answered_through_muster() {
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    let python = common::python_sdk();
    let server =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/asking_server.py");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"asking\"\ncommand = [{python:?}, {server:?}]\nsnapshot = \"asking.json\"\nrelay = [\"elicitation\"]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let policies = fx.path().join("policies");
    let python = python.to_str().unwrap();
    let server = server.to_str().unwrap();
    for mode in ["auto", "legacy"] {
        let direct = common::run_client("relay.py", &[mode, "stdio", python, server], None);
        assert_eq!(
            direct["calls"][GREET]["text"], "Hi, Ada Lovelace!",
            "{direct}"
        );
        let args = [
            mode,
            "stdio",
            MUSTER,
            "mcp",
            "--policies",
            policies.to_str().unwrap(),
        ];
        let seen = common::run_client("relay.py", &args, Some(fx.path()));
        assert_eq!(seen["calls"], direct["calls"], "{mode}: {seen}");
        assert_eq!(seen["asked"], direct["asked"], "{mode}: {seen}");
    }
}

#[test]
fn a_server_without_relay_never_hears_of_the_clients_capabilities() {
    let fx = setup("");
    let policies = fx.path().join("policies");
    let args = [
        "auto",
        "stdio",
        MUSTER,
        "mcp",
        "--policies",
        policies.to_str().unwrap(),
    ];
    let seen = common::run_client("relay.py", &args, Some(fx.path()));
    assert_eq!(
        seen["calls"],
        json!({ELICIT: null, SAMPLE: null, GREET: null}),
        "{seen}"
    );
    assert_eq!(seen["asked"], json!([]), "{seen}");
}

/// One `muster mcp` spoken to line by line.
struct McpStdio {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl McpStdio {
    fn start(fx: &Fixture) -> Self {
        let mut child = Command::new(MUSTER)
            .current_dir(fx.path())
            .args(["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    fn ask(&mut self, message: Value) -> Value {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        let line = self.lines.next().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 2026-07-28 `tools/call` of the elicitation tool by a client declaring
/// elicitation, with `extra` params.
fn modern_call(id: u64, arguments: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": format!("mcp__everything__{ELICIT}"),
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The retry is checked against the call its state was given for; a state
/// muster never gave, or one given for another call, is refused with a
/// code and the call waiting goes on to its answer.
#[test]
fn a_retry_must_name_the_call_its_state_was_given_for() {
    let fx = setup(BOTH);
    let mut mcp = McpStdio::start(&fx);
    let first = mcp.ask(modern_call(1, json!({}), json!({})));
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let state = result["requestState"].as_str().unwrap().to_string();
    assert!(state.len() > 30, "128 random bits: {state}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{first}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["name"])
    );

    let unknown = mcp.ask(modern_call(
        2,
        json!({}),
        json!({"requestState": "muster-00000000000000000000000000000000", "inputResponses": {}}),
    ));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        unknown["error"]["data"]["code"], "unknown-request-state",
        "{unknown}"
    );

    let mut other = modern_call(
        3,
        json!({"a": 1, "b": 2}),
        json!({"requestState": state, "inputResponses": {}}),
    );
    other["params"]["name"] = json!("mcp__everything__get-sum");
    let other = mcp.ask(other);
    assert_eq!(
        other["error"]["data"]["code"], "request-state-mismatch",
        "{other}"
    );

    let answer = json!({"action": "accept", "content": {"name": "Grace Hopper"}});
    let done = mcp.ask(modern_call(
        4,
        json!({}),
        json!({"requestState": state, "inputResponses": {key.as_str(): answer}}),
    ));
    let text = done["result"]["content"][1]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("- Name: Grace Hopper"), "{done}");
    // Used once: the same state again names nothing.
    let again = mcp.ask(modern_call(
        5,
        json!({}),
        json!({"requestState": state, "inputResponses": {}}),
    ));
    assert_eq!(
        again["error"]["data"]["code"], "unknown-request-state",
        "{again}"
    );
}

/// `relay` names only what muster relays, each once, on its own line.
#[test]
fn a_relay_list_names_only_what_muster_relays() {
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        "[[mcp]]\nname = \"s\"\ncommand = [\"true\"]\nsnapshot = \"s.json\"\nrelay = [\n  \"elicitation\",\n  \"mind-reading\",\n  \"elicitation\",\n]\n",
    );
    let (err, got) = common::load_refused(&fx);
    common::assert_problems(&got, &[("invalid-value", 7), ("duplicate", 8)]);
    let text = err.to_string();
    assert!(text.contains("mind-reading"), "{text}");
}
