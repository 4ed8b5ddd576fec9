//! Traces (docs/gateway.md, "Traces"): with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! set, a forwarded call leaves a span for the call and one for the
//! server's part at `<endpoint>/v1/traces`, under the caller's W3C
//! `traceparent` (in `_meta` over stdio, in the header over HTTP). The
//! receiver reads them with the official OpenTelemetry protobuf
//! definitions; the server is the real everything server from npm.

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
        let mut got = Vec::new();
        while got.len() < n {
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

/// The call's span and the server's, with their links checked.
fn assert_spans(spans: &[Value], verdict: &str) {
    let call = spans
        .iter()
        .find(|s| s["name"] == "tools/call mcp__everything__get-sum")
        .unwrap_or_else(|| panic!("no call span: {spans:?}"));
    let upstream = spans
        .iter()
        .find(|s| s["name"] == "upstream everything")
        .unwrap_or_else(|| panic!("no upstream span: {spans:?}"));
    assert_eq!(call["service"], "muster", "{call}");
    assert_eq!(call["trace_id"], TRACE, "{call}");
    assert_eq!(call["parent_span_id"], PARENT, "{call}");
    assert_eq!(call["kind"], 2, "a server span: {call}");
    assert_eq!(call["attributes"]["muster.verdict"], verdict, "{call}");
    assert_eq!(call["attributes"]["muster.server"], "everything", "{call}");
    assert_eq!(upstream["trace_id"], TRACE, "{upstream}");
    assert_eq!(upstream["parent_span_id"], call["span_id"], "{upstream}");
    assert_eq!(upstream["kind"], 3, "a client span: {upstream}");
    assert!(
        call["start"].as_u64() <= upstream["start"].as_u64(),
        "{spans:?}"
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
    let spans = receiver.take(2);
    assert_spans(&spans, "forwarded");
    assert_eq!(spans[0]["authorization"], "Bearer t0ken");
}

#[test]
fn a_forwarded_call_over_http_joins_the_traceparent_header() {
    let fx = setup();
    let receiver = Receiver::start();
    let (mut serve, addr) = common::start_serve(
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
        .post(format!("http://{addr}/mcp/chats/traced"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .body(call.to_string())
        .send()
        .unwrap();
    assert_eq!(answer.status(), 200);
    let spans = receiver.take(2);
    let _ = serve.kill();
    let _ = serve.wait();
    assert_spans(&spans, "forwarded");
}
