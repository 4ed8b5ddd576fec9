//! Traces (docs/gateway.md, "Traces"): with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! set, a forwarded call leaves a span for the call, one for its check and
//! one for the server's part at `<endpoint>/v1/traces`, under the caller's
//! W3C `traceparent` (in `_meta` over stdio, in the header over HTTP); a
//! load is a span of its own; each `/v1/*` request of `muster serve` is a
//! span under its `traceparent` header; and the server is sent a
//! `traceparent` naming muster's span for its part (a header and `_meta`
//! over HTTP, `_meta` over stdio), which a real server (the official MCP
//! Python SDK's, tests/mcp-clients/trace_server.py) reports it got. The
//! receiver reads spans with the official OpenTelemetry protobuf
//! definitions; the other server is the real everything server from npm.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Fixture, python_sdk, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn setup() -> Fixture {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[("policies/muster.toml", "")]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"get-sum\"]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

/// The receiver, its port, and the spans it prints, one per line.
struct Receiver {
    child: Child,
    _stdin: ChildStdin,
    spans: mpsc::Receiver<Value>,
    port: u16,
}

impl Receiver {
    fn start() -> Self {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/mcp-clients/otlp_receiver.py");
        let mut child = Command::new(python_sdk())
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let port = u16::try_from(first["port"].as_u64().unwrap()).unwrap();
        let (tx, spans) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&line).unwrap());
            }
        });
        Self {
            child,
            _stdin: stdin,
            spans,
            port,
        }
    }

    /// The next `n` spans, waiting at most 20 s for them.
    fn take(&self, n: usize) -> Vec<Value> {
        self.until(|got| got.len() >= n)
    }

    /// Spans as they arrive until `done` says they are all there, waiting
    /// at most 20 s for each.
    fn until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut got = Vec::new();
        while !done(&got) {
            let span = self
                .spans
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("only {} span(s) arrived: {got:?}", got.len()));
            assert!(span.get("refused").is_none(), "not OTLP: {span}");
            got.push(span);
        }
        got
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The span named `name`.
fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?}: {spans:?}"))
}

/// Whether every one of `names` has a span.
fn has_all(spans: &[Value], names: &[&str]) -> bool {
    names.iter().all(|n| spans.iter().any(|s| s["name"] == *n))
}

/// `child` is `parent`'s, in its trace, and within its time.
fn assert_child(child: &Value, parent: &Value) {
    assert_eq!(child["trace_id"], parent["trace_id"], "{child}\n{parent}");
    assert_eq!(
        child["parent_span_id"], parent["span_id"],
        "{child}\n{parent}"
    );
    let (start, end) = (child["start"].as_u64(), child["end"].as_u64());
    assert!(
        parent["start"].as_u64() <= start && start <= end && end <= parent["end"].as_u64(),
        "not within its parent: {child}\n{parent}"
    );
}

/// The call's span, its check's and the server's, with their links checked.
fn assert_spans(spans: &[Value], verdict: &str) {
    let call = named(spans, "tools/call mcp__everything__get-sum");
    let check = spans
        .iter()
        .find(|s| s["name"] == "check" && s["parent_span_id"] == call["span_id"])
        .unwrap_or_else(|| panic!("no check under the call: {spans:?}"));
    let upstream = named(spans, "upstream everything");
    assert_eq!(call["service"], "muster", "{call}");
    assert_eq!(call["trace_id"], TRACE, "{call}");
    assert_eq!(call["parent_span_id"], PARENT, "{call}");
    assert_eq!(call["kind"], 2, "a server span: {call}");
    assert_eq!(call["attributes"]["muster.verdict"], verdict, "{call}");
    assert_eq!(call["attributes"]["muster.server"], "everything", "{call}");
    assert_eq!(upstream["trace_id"], TRACE, "{upstream}");
    assert_child(upstream, call);
    assert_eq!(upstream["kind"], 3, "a client span: {upstream}");
    assert_child(check, call);
    assert_eq!(check["kind"], 1, "an internal span: {check}");
    assert_eq!(check["attributes"]["muster.verdict"], "ok", "{check}");
    assert_eq!(check["attributes"]["muster.codes"], json!([]), "{check}");
    assert!(
        check["end"].as_u64() <= upstream["start"].as_u64(),
        "checked before it was sent: {spans:?}"
    );
}

#[test]
fn a_forwarded_call_over_stdio_leaves_its_spans_under_the_callers_trace() {
    let fx = setup();
    let receiver = Receiver::start();
    let mut gw = Command::new(MUSTER)
        .current_dir(fx.path())
        .args(["mcp"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", receiver.port),
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start muster mcp");
    let mut stdin = gw.stdin.take().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3},
        "_meta": {"traceparent": format!("00-{TRACE}-{PARENT}-01")}}});
    writeln!(stdin, "{call}").unwrap();
    let mut lines = BufReader::new(gw.stdout.take().unwrap()).lines();
    let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], "The sum of 2 and 3 is 5.",
        "{answer}"
    );
    drop(stdin);
    assert!(gw.wait().unwrap().success());
    let spans = receiver.take(3);
    assert_spans(&spans, "forwarded");
    assert_eq!(spans[0]["authorization"], "Bearer t0ken");
}

#[test]
fn a_forwarded_call_over_http_joins_the_traceparent_header() {
    let fx = setup();
    let receiver = Receiver::start();
    let serve = common::Served::start(
        fx.path(),
        &[],
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        )],
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}}});
    let answer = common::http_client()
        .post(serve.url("/mcp/chats/traced"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .body(call.to_string())
        .send()
        .unwrap();
    assert_eq!(answer.status(), 200);
    let spans = receiver.take(3);
    drop(serve);
    assert_spans(&spans, "forwarded");
}

/// `muster mcp` in `fx` sending spans to `receiver`: the process, its
/// stdin and its stdout's lines.
fn muster_mcp(
    fx: &Fixture,
    receiver: &Receiver,
) -> (
    Child,
    ChildStdin,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut gw = Command::new(MUSTER)
        .current_dir(fx.path())
        .args(["mcp"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", receiver.port),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start muster mcp");
    let stdin = gw.stdin.take().unwrap();
    let lines = BufReader::new(gw.stdout.take().unwrap()).lines();
    (gw, stdin, lines)
}

/// Sends `message` and reads the answer.
fn ask(
    stdin: &mut ChildStdin,
    lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>,
    message: &Value,
) -> Value {
    writeln!(stdin, "{message}").unwrap();
    loop {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if line.get("id") == message.get("id") {
            return line;
        }
    }
}

#[test]
fn the_control_tools_load_is_a_span_of_its_own() {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 3\n[deferral]\nenabled = true\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"echo\", \"get-sum\", \"get-env\", \"get-tiny-image\"]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let receiver = Receiver::start();
    let (mut gw, mut stdin, mut lines) = muster_mcp(&fx, &receiver);
    let meta = json!({"traceparent": format!("00-{TRACE}-{PARENT}-01")});
    let load = ask(
        &mut stdin,
        &mut lines,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "tools__load", "arguments": {"query": "mcp__everything__get-sum"}, "_meta": meta}}),
    );
    assert_eq!(load["result"]["isError"], false, "{load}");
    let sum = ask(
        &mut stdin,
        &mut lines,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}, "_meta": meta}}),
    );
    assert_eq!(
        sum["result"]["content"][0]["text"], "The sum of 2 and 3 is 5.",
        "{sum}"
    );
    drop(stdin);
    assert!(gw.wait().unwrap().success());
    let spans = receiver.until(|s| {
        has_all(
            s,
            &[
                "tools/call tools__load",
                "load",
                "upstream everything",
                "tools/call mcp__everything__get-sum",
            ],
        ) && s.iter().filter(|s| s["name"] == "check").count() == 2
    });
    let call = named(&spans, "tools/call tools__load");
    assert_eq!(call["attributes"]["muster.verdict"], "loaded", "{call}");
    assert_eq!(call["parent_span_id"], PARENT, "{call}");
    let load = named(&spans, "load");
    assert_child(load, call);
    assert_eq!(load["kind"], 1, "an internal span: {load}");
    assert_eq!(load["attributes"]["muster.verdict"], "loaded", "{load}");
    assert_eq!(
        load["attributes"]["muster.tools.loaded"],
        json!(["mcp.everything.get-sum"]),
        "{load}"
    );
    assert_eq!(load["attributes"]["muster.tools.count"], 1, "{load}");
    // The load's call was checked too, before it loaded; no server took part.
    let check = spans
        .iter()
        .find(|s| s["name"] == "check" && s["parent_span_id"] == call["span_id"])
        .unwrap_or_else(|| panic!("no check under the load's call: {spans:?}"));
    assert!(check["end"].as_u64() <= load["start"].as_u64(), "{spans:?}");
    let upstream = named(&spans, "upstream everything");
    assert_ne!(upstream["parent_span_id"], call["span_id"], "{spans:?}");
    assert_spans(&spans, "forwarded");
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// tests/mcp-clients/trace_server.py listening on `port`, stopped when
/// dropped.
struct TraceServer(Child);

impl TraceServer {
    fn start(port: u16) -> Self {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/mcp-clients/trace_server.py");
        let mut child = Command::new(python_sdk())
            .arg(script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the traced server");
        for _ in 0..300 {
            if common::answers_http(port) {
                return Self(child);
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the traced server stopped before it listened: {status}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        panic!("the traced server did not listen");
    }
}

impl Drop for TraceServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn servers_are_sent_a_traceparent_naming_musters_span_for_their_part() {
    let port = free_port();
    let _server = TraceServer::start(port);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/trace_server.py");
    let fx = Fixture::new(&[("policies/muster.toml", "")]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"remote\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nsnapshot = \"remote.json\"\n\n\
             [[mcp]]\nname = \"local\"\ncommand = [{:?}, {script:?}, \"stdio\"]\nsnapshot = \"local.json\"\n",
            python_sdk()
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let receiver = Receiver::start();
    let (mut gw, mut stdin, mut lines) = muster_mcp(&fx, &receiver);
    // The caller's state, one member of it not W3C's (left out), and
    // baggage (never passed on).
    let meta = json!({
        "traceparent": format!("00-{TRACE}-{PARENT}-01"),
        "tracestate": "congo=t61rcWkgMzE,Not Valid=1",
        "baggage": "user=ada",
    });
    let mut seen = std::collections::BTreeMap::new();
    for (id, server) in [(1, "remote"), (2, "local")] {
        let answer = ask(
            &mut stdin,
            &mut lines,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": format!("mcp__{server}__seen"), "arguments": {}, "_meta": meta}}),
        );
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        seen.insert(server, serde_json::from_str::<Value>(text).unwrap());
    }
    drop(stdin);
    assert!(gw.wait().unwrap().success());
    let spans = receiver.until(|s| {
        has_all(
            s,
            &[
                "upstream remote",
                "upstream local",
                "tools/call mcp__remote__seen",
                "tools/call mcp__local__seen",
            ],
        )
    });
    for (server, got) in &seen {
        let upstream = named(&spans, &format!("upstream {server}"));
        let call = named(&spans, &format!("tools/call mcp__{server}__seen"));
        assert_child(upstream, call);
        assert_eq!(call["parent_span_id"], PARENT, "{call}");
        // The server got muster's span for its part, in the caller's trace.
        let sent = format!("00-{TRACE}-{}-01", upstream["span_id"].as_str().unwrap());
        assert_eq!(got["meta"]["traceparent"], sent, "{server}: {got}");
        assert_eq!(
            got["meta"]["tracestate"], "congo=t61rcWkgMzE",
            "{server}: {got}"
        );
        assert_eq!(got["meta"]["baggage"], Value::Null, "{server}: {got}");
        // The SDK's own OpenTelemetry middleware joined that span.
        assert_eq!(got["sdk"]["trace_id"], TRACE, "{server}: {got}");
        assert_eq!(
            got["sdk"]["span_id"], upstream["span_id"],
            "{server}: {got}"
        );
        if *server == "remote" {
            assert_eq!(got["header"]["traceparent"], sent, "{got}");
            assert_eq!(got["header"]["tracestate"], "congo=t61rcWkgMzE", "{got}");
            assert_eq!(got["header"]["baggage"], Value::Null, "{got}");
        } else {
            assert_eq!(got["header"]["traceparent"], Value::Null, "{got}");
        }
    }
}

/// POSTs `body` to `path` of the service at `addr` under the caller's
/// trace: the status and the body.
fn post_traced(addr: &str, path: &str, body: &Value) -> (u16, Value) {
    let answer = common::http_client()
        .post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .body(body.to_string())
        .send()
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().unwrap())
}

#[test]
fn each_v1_request_is_a_span_under_its_traceparent_header() {
    let fx = setup();
    let receiver = Receiver::start();
    let serve = common::Served::start(
        fx.path(),
        &[],
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", receiver.port),
        )],
    );
    let (status, plan) = post_traced(&serve.addr, "/v1/plan", &json!({}));
    assert_eq!(status, 200, "{plan}");
    let turn = json!({"calls": [{"id": "c1", "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}}]});
    let body = json!({"fingerprint": plan["fingerprint"], "turn": turn});
    let (status, checked) = post_traced(&serve.addr, "/v1/check", &body);
    assert_eq!(status, 200, "{checked}");
    let (status, refused) = post_traced(&serve.addr, "/v1/check", &json!({"turn": turn}));
    assert_eq!(status, 422, "{refused}");
    let (status, ran) = post_traced(&serve.addr, "/v1/call", &body);
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["outcome"], "ran", "{ran}");
    let spans = receiver.until(|s| {
        has_all(
            s,
            &[
                "POST /v1/plan",
                "POST /v1/call",
                "upstream everything",
                "tools/call mcp__everything__get-sum",
            ],
        ) && s.iter().filter(|s| s["name"] == "POST /v1/check").count() == 2
            && s.iter().filter(|s| s["name"] == "check").count() == 2
    });
    drop(serve);
    for span in spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("POST /v1/"))
    {
        assert_eq!(span["trace_id"], TRACE, "{span}");
        assert_eq!(span["parent_span_id"], PARENT, "{span}");
        assert_eq!(span["kind"], 2, "a server span: {span}");
        let a = &span["attributes"];
        assert_eq!(a["http.request.method"], "POST", "{span}");
        assert_eq!(
            format!("POST {}", a["http.route"].as_str().unwrap()),
            span["name"].as_str().unwrap()
        );
        if a["http.response.status_code"] == 200 {
            assert_eq!(a["muster.generation"], 1, "{span}");
        }
    }
    let checks: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "POST /v1/check")
        .collect();
    let codes: Vec<&Value> = checks
        .iter()
        .map(|s| &s["attributes"]["http.response.status_code"])
        .collect();
    assert!(
        codes.contains(&&json!(200)) && codes.contains(&&json!(422)),
        "{checks:?}"
    );
    let failed = checks
        .iter()
        .find(|s| s["attributes"]["http.response.status_code"] == 422)
        .unwrap();
    assert_eq!(
        failed["attributes"]["error.type"],
        refused["type"]
            .as_str()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap(),
        "{failed}\n{refused}"
    );
    let problem = refused["problems"][0]["code"].as_str().unwrap();
    assert!(
        failed["attributes"]["muster.codes"]
            .as_array()
            .unwrap()
            .contains(&json!(problem)),
        "{failed}\n{refused}"
    );
    // Each checked turn's check is a span under its request, as a
    // tools/call's is under the call (the refused request named no plan:
    // nothing was checked).
    let checked = checks
        .iter()
        .find(|s| s["attributes"]["http.response.status_code"] == 200)
        .unwrap();
    for request in [*checked, named(&spans, "POST /v1/call")] {
        let check = spans
            .iter()
            .find(|s| s["name"] == "check" && s["parent_span_id"] == request["span_id"])
            .unwrap_or_else(|| panic!("no check under {request}: {spans:?}"));
        assert_child(check, request);
        assert_eq!(check["kind"], 1, "internal: {check}");
        let a = &check["attributes"];
        assert_eq!(a["muster.verdict"], "run", "{check}");
        assert_eq!(a["muster.calls"], 1, "{check}");
        assert_eq!(
            a["muster.tools"],
            json!(["mcp__everything__get-sum"]),
            "{check}"
        );
        assert_eq!(a["muster.codes"], json!([]), "{check}");
    }
    // The turn's call runs under the /v1/call request, its server's part
    // under it.
    let request = named(&spans, "POST /v1/call");
    let call = named(&spans, "tools/call mcp__everything__get-sum");
    assert_child(call, request);
    assert_eq!(call["kind"], 1, "inside the request: {call}");
    assert_child(named(&spans, "upstream everything"), call);
}

#[test]
fn muster_call_is_traced_under_the_traceparent_it_is_handed() {
    let fx = setup();
    let receiver = Receiver::start();
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    let turn = json!({"calls": [{"id": "c1", "name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}}]});
    fx.write("turn.json", &turn.to_string());
    common::muster(fx.path())
        .args(["call", "--plan", "plan.json", "--turn", "turn.json"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", receiver.port),
        )
        .env("TRACEPARENT", format!("00-{TRACE}-{PARENT}-01"))
        .assert()
        .code(0);
    let spans = receiver.until(|s| {
        has_all(
            s,
            &[
                "muster call",
                "check",
                "tools/call mcp__everything__get-sum",
                "upstream everything",
            ],
        )
    });
    let run = named(&spans, "muster call");
    assert_eq!(run["trace_id"], TRACE, "{run}");
    assert_eq!(run["parent_span_id"], PARENT, "{run}");
    assert_eq!(run["attributes"]["muster.outcome"], "ran", "{run}");
    let check = named(&spans, "check");
    assert_child(check, run);
    assert_eq!(check["attributes"]["muster.verdict"], "run", "{check}");
    let call = named(&spans, "tools/call mcp__everything__get-sum");
    assert_child(call, run);
    assert_eq!(call["kind"], 1, "inside the run: {call}");
    assert_child(named(&spans, "upstream everything"), call);
}
