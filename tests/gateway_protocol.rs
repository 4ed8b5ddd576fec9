//! The gateway keeps to the MCP and JSON-RPC rules where issue 30 (item
//! 15) found it did not, against real processes: scripted stdio servers
//! (tests/mcp-servers/scripted-server.mjs), a real HTTP server that refuses
//! credentials with a JSON body, and `muster mcp` / `muster serve`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Fixture, Served};
use serde_json::Value;

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// An HTTP server on a free loopback port that answers every POST `401`
/// with a JSON-RPC error body, as an MCP server behind a token check does.
struct Refusing {
    child: Child,
    port: u16,
}

impl Refusing {
    fn start() -> Self {
        let script = r#"
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get('content-length', 0))
        try:
            asked = json.loads(self.rfile.read(n) or b'{}')
        except ValueError:
            asked = {}
        out = json.dumps({"jsonrpc": "2.0", "id": asked.get("id"),
                          "error": {"code": -32001, "message": "Unauthorized: invalid token"}}).encode()
        self.send_response(401)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
        let mut child = Command::new("python3")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the port");
        Self { child, port }
    }
}

impl Drop for Refusing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A policy over scripted servers `both` (answers a call with a result and
/// an error), `huge` (answers with a 17 MiB line), `cancels` (never
/// answers, records what it is told) and, at `refusing`'s port, `locked`;
/// discovered. The directory the scripted servers write to is `run/`.
fn setup(refusing: u16) -> Fixture {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 20\n[[agent]]\nname = \"a\"\nversion = 1\ndefault = true\n",
    )]);
    let run = fx.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let block = |name: &str, mode: &str| {
        format!(
            "[[mcp]]\nname = \"{name}\"\ncommand = [\"node\", {script:?}, \"{mode}\"]\nsnapshot = \"{name}.json\"\n\
             timeout_secs = 60\nenv = {{ SCRIPTED_PID_DIR = {run:?} }}\n\n"
        )
    };
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "{}{}{}",
            block("both", "result-and-error"),
            block("huge", "huge-call"),
            block("cancels", "records-cancels")
        ),
    );
    common::stdout(fx.path(), &["discover"], 0);
    // `locked` cannot be discovered (it refuses muster): its snapshot is
    // another server's listing of the same tool.
    std::fs::copy(
        fx.path().join("policies/mcp/both.json"),
        fx.path().join("policies/mcp/locked.json"),
    )
    .unwrap();
    let servers = fx.read("policies/mcp/servers.toml");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "{servers}[[mcp]]\nname = \"locked\"\nurl = \"http://127.0.0.1:{refusing}/mcp\"\nsnapshot = \"locked.json\"\n"
        ),
    );
    fx
}

/// `muster mcp` on the fixture, its call log in `log`.
struct Gateway {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
    log: PathBuf,
}

impl Gateway {
    fn start(fx: &Fixture) -> Self {
        let log = fx.path().join("gateway.log");
        let mut child = Command::new(MUSTER)
            .current_dir(fx.path())
            .args(["mcp", "--policies", "policies"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("muster mcp");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Self { child, lines, log }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message with an id.
    fn answer(&mut self) -> Value {
        loop {
            let mut line = String::new();
            self.lines.read_line(&mut line).unwrap();
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.answer()
    }

    /// The call log's line for request `id`.
    fn logged(&self, id: &str) -> Value {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("no call log line for {id}"))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(id: u32, name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"q":"x"}}}}}}"#
    )
}

/// The first `notifications/cancelled` the `records-cancels` server was
/// sent (its `requestId`, and the ids of the calls it was sent), once it
/// came.
fn cancellation_told(run: &Path) -> Value {
    // The server appends the line: the file can exist, empty or with half
    // a line, before its first line is whole.
    let line = || {
        let text = std::fs::read_to_string(run.join("cancelled")).ok()?;
        text.split_once('\n').map(|(first, _)| first.to_owned())
    };
    assert!(
        poll(|| line().is_some()),
        "the server was told the call was cancelled"
    );
    serde_json::from_str(&line().unwrap()).unwrap()
}

/// Polls `done` for a generous while; whether it came to hold.
fn poll(mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// (b) A response holding both `result` and `error` is not JSON-RPC: the
/// call fails as a bad response, not forwarded as a result. (e) A 17 MiB
/// answer is a bad response too (it was logged `upstream-exited`), in the
/// answer and in the call log. (d) An HTTP `401` whose body is a JSON-RPC
/// error is refused credentials, not the server's own error.
#[test]
fn invalid_upstream_answers_get_their_codes() {
    let refusing = Refusing::start();
    let fx = setup(refusing.port);
    let mut gw = Gateway::start(&fx);

    let both = gw.ask(&call(1, "mcp__both__alpha"));
    assert_eq!(both["result"]["isError"], true, "{both}");
    let upstream = &both["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(upstream["code"], "upstream-bad-response", "{both}");
    assert_eq!(upstream["server"], "both");

    let huge = gw.ask(&call(2, "mcp__huge__alpha"));
    let upstream = &huge["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(
        upstream["code"],
        "upstream-bad-response",
        "{}",
        &huge.to_string()[..300.min(huge.to_string().len())]
    );
    assert_eq!(
        gw.logged("2")["codes"],
        serde_json::json!(["upstream-bad-response"])
    );

    let locked = gw.ask(&call(3, "mcp__locked__alpha"));
    assert_eq!(locked["result"]["isError"], true, "{locked}");
    let text = locked["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("refused muster's credentials (HTTP 401"),
        "a 401 with a JSON-RPC body is refused credentials: {text}"
    );
}

/// (a) A client's `notifications/cancelled` for a `tools/call`: muster stops
/// waiting for it, answers nothing for it, and tells the server, naming the
/// id muster gave the call there.
#[test]
fn a_cancelled_call_is_not_answered_and_the_server_is_told() {
    let refusing = Refusing::start();
    let fx = setup(refusing.port);
    let run = fx.path().join("run");
    let mut gw = Gateway::start(&fx);
    gw.send(&call(7, "mcp__cancels__alpha"));
    assert!(
        poll(|| std::fs::read_to_string(run.join("calls")).is_ok_and(|t| !t.is_empty())),
        "the call reached the server"
    );
    gw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user stopped it"}}"#);
    let told = cancellation_told(&run);
    let upstream_id = told["calls"][0].clone();
    assert_eq!(
        told["requestId"], upstream_id,
        "named by the server's id: {told}"
    );
    // Nothing is answered for 7; the gateway goes on.
    let pong = gw.ask(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(pong["id"], 8, "{pong}");
}

/// Issue 31 item 3: over HTTP too, a client's `notifications/cancelled`
/// (its own POST to the chat) stops a call in flight: its server is told,
/// naming the id muster gave the call, and the POST still waiting for the
/// call is answered `-32800` with nothing of a result.
#[test]
fn a_call_cancelled_over_http_tells_its_server_and_answers_nothing_of_it() {
    cancelled_over_http(false);
}

/// The same for a call that asked for progress, answered as a stream
/// (`src/serve/streamed.rs`): the stream ends with the `-32800`.
#[test]
fn a_streamed_call_cancelled_over_http_tells_its_server_and_ends_its_stream() {
    cancelled_over_http(true);
}

fn cancelled_over_http(progress: bool) {
    let refusing = Refusing::start();
    let fx = setup(refusing.port);
    let run = fx.path().join("run");
    let service = Service::start(&fx);
    let path = "/mcp/chats/cancelling";
    let (status, body) = service.post(
        path,
        "2025-11-25",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let mut asked = call(7, "mcp__cancels__alpha");
    if progress {
        asked = asked.replace(
            r#""params":{"#,
            r#""params":{"_meta":{"progressToken":"p7"},"#,
        );
    }
    let waiting = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| service.post(path, "2025-11-25", &asked));
        assert!(
            poll(|| std::fs::read_to_string(run.join("calls")).is_ok_and(|t| !t.is_empty())),
            "the call reached the server"
        );
        // Another chat's cancellation of its own call 7 stops nothing here.
        let (status, _) = service.post(
            "/mcp/chats/someone-else",
            "2025-11-25",
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        );
        assert_eq!(status, 202);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !run.join("cancelled").exists(),
            "another chat cancelled this call"
        );
        let (status, _) = service.post(
            path,
            "2025-11-25",
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user stopped it"}}"#,
        );
        assert_eq!(status, 202);
        waiting.join().unwrap()
    });
    let (status, mut body) = waiting;
    assert_eq!(status, 200, "{body}");
    if progress {
        // The stream's one message: the answer (the server sent no progress).
        let events: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(events.len(), 1, "{body}");
        body = events[0].to_string();
    }
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    let told = cancellation_told(&run);
    assert_eq!(
        told["requestId"], told["calls"][0],
        "named by the server's id: {told}"
    );
    // The chat goes on.
    let (status, body) = service.post(
        path,
        "2025-11-25",
        r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
    );
    assert_eq!(status, 200, "{body}");
}

/// `muster serve` on a free loopback port, killed on drop.
struct Service {
    served: Served,
}

impl Service {
    fn start(fx: &Fixture) -> Self {
        let served = Served::start(fx.path(), &[], &[]);
        Self { served }
    }

    /// A POST of `body` to `path` with `MCP-Protocol-Version: version`.
    fn post(&self, path: &str, version: &str, body: &str) -> (u16, String) {
        let mut socket = TcpStream::connect(&self.served.addr).unwrap();
        write!(
            socket,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            self.served.addr,
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        let _ = socket.read_to_string(&mut text);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }
}

/// (c) A bad `MCP-Protocol-Version` header on `/mcp` is answered `400`,
/// with the revisions muster speaks; a supported one is served.
#[test]
fn a_bad_protocol_version_header_is_answered_400() {
    let fx = Fixture::bundled();
    let service = Service::start(&fx);
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for bad in ["1900-01-01", "not-a-version", "2099-01-01"] {
        for path in ["/mcp", "/mcp/chats/versions"] {
            let (status, body) = service.post(path, bad, ping);
            assert_eq!(status, 400, "{bad} on {path}: {body}");
            let error: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(error["error"]["code"], -32022, "{body}");
            // Issue 31 item 9: the refusal answers the request's id.
            assert_eq!(error["id"], 1, "{body}");
            assert_eq!(error["error"]["data"]["requested"], bad);
            assert!(
                error["error"]["data"]["supported"]
                    .as_array()
                    .unwrap()
                    .contains(&Value::from("2025-11-25"))
            );
        }
    }
    for good in ["2025-11-25", "2026-07-28"] {
        let (status, body) = service.post("/mcp/chats/versions", good, ping);
        assert_eq!(status, 200, "{good}: {body}");
    }
}

/// `muster mcp` reads pipes as the runtime's own (woken by the kernel) and
/// anything else through tokio's blocking stdin/stdout: a file as stdin,
/// and stdout and stderr one file (as `> out 2>&1` makes them), is
/// answered in full, each line whole, the log beside it.
#[test]
fn a_file_as_stdin_and_one_file_for_stdout_and_stderr_are_served() {
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[caps]\nitems = 8\n[[agent]]\nname = \"a\"\nversion = 1\ndefault = true\n",
        ),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"math.calculate\"\ndescription = \"Evaluate.\"\n",
        ),
    ]);
    let input = fx.path().join("in.jsonl");
    let mut asked = String::from(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"file","version":"1"}}}"#,
    );
    asked.push('\n');
    for id in 1..=50 {
        asked.push_str(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        asked.push('\n');
    }
    asked.push_str(r#"{"jsonrpc":"2.0","id":51,"method":"tools/list"}"#);
    asked.push('\n');
    std::fs::write(&input, asked).unwrap();
    let out = fx.path().join("out.jsonl");
    let file = std::fs::File::create(&out).unwrap();
    let status = Command::new(MUSTER)
        .args(["mcp", "--policies"])
        .arg(fx.path().join("policies"))
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .expect("muster mcp");
    assert!(status.success(), "{status}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut answered = std::collections::BTreeSet::new();
    for line in text.lines() {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: a broken line {line:?}"));
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            assert!(message.get("result").is_some(), "{message}");
            answered.insert(id);
        }
    }
    assert_eq!(answered, (0..=51).collect(), "{text}");
    assert!(
        text.contains("gateway-started"),
        "the log is in the same file: {text}"
    );
}
