//! `muster serve` over real HTTP on 127.0.0.1: the built binary is started
//! on port 0 in a copy of the bundled policies, and every verb's body is
//! compared byte for byte with what the CLI prints for the same input.
//! Nothing here waits on a clock: the server's stderr lines say when it
//! listens, reloads and drains.

#[path = "serve/bounds.rs"]
mod bounds;
mod common;
#[path = "serve/generations.rs"]
mod generations;
#[path = "serve/hostile.rs"]
mod hostile;
#[path = "serve/memo.rs"]
mod memo;
#[path = "serve/openapi.rs"]
mod openapi;
#[path = "serve/verbs.rs"]
mod verbs;

use common::{Fixture, stdout};
use serde::Deserialize;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

/// A running `muster serve`, stopped on drop.
struct Server {
    child: Child,
    addr: String,
    /// The service's start line.
    start: Option<ServiceLog>,
    stderr: Receiver<String>,
    client: reqwest::blocking::Client,
}

impl Server {
    fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with_env(dir, args, &[])
    }

    /// [`Server::start`] with more environment variables.
    fn start_with_env(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(dir)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env_remove("MUSTER_ADMIN_TOKEN")
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start muster serve");
        let (send, stderr) = channel();
        let pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            addr: String::new(),
            start: None,
            stderr,
            client: common::http_client(),
        };
        let start = server.wait_event("start");
        server.addr = start
            .addr
            .clone()
            .expect("the start line names the address");
        server.start = Some(start);
        server
    }

    /// The next service log line (target `muster::serve`) of `event`,
    /// earlier lines skipped.
    fn wait_event(&self, event: &str) -> ServiceLog {
        loop {
            let line = self
                .stderr
                .recv()
                .unwrap_or_else(|_| panic!("muster serve ended before logging {event:?}"));
            let Ok(log) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if log["target"] == "muster::serve" && log["event"] == event {
                return serde_json::from_value(log).expect("a service log line");
            }
        }
    }

    /// The next stderr line starting with `prefix` (earlier lines skipped).
    fn wait_for(&self, prefix: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv()
                .unwrap_or_else(|_| panic!("muster serve ended before printing {prefix:?}"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn post(&self, path: &str, body: impl Into<String>) -> Reply {
        let response = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.into())
            .send()
            .expect("POST");
        Reply::from(response)
    }

    fn get(&self, path: &str) -> Reply {
        Reply::from(self.client.get(self.url(path)).send().expect("GET"))
    }

    fn delete(&self, path: &str) -> Reply {
        Reply::from(self.client.delete(self.url(path)).send().expect("DELETE"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone)]
struct Reply {
    status: u16,
    content_type: String,
    /// The `muster-policy-generation` header, when there is one.
    generation: Option<u64>,
    body: String,
}

impl From<reqwest::blocking::Response> for Reply {
    fn from(response: reqwest::blocking::Response) -> Self {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let generation = response
            .headers()
            .get("muster-policy-generation")
            .map(|v| v.to_str().expect("ascii").parse().expect("a number"));
        let body = response.text().expect("body");
        Self {
            status,
            content_type,
            generation,
            body,
        }
    }
}

/// One of the service's own log lines (start, reload, shutdown), read back
/// by this test's own type: every member the line may carry, typed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ServiceLog {
    timestamp: String,
    level: String,
    target: String,
    message: String,
    event: String,
    addr: Option<String>,
    policies: Option<String>,
    generation: Option<u64>,
    previous: Option<u64>,
    trigger: Option<String>,
    error_code: Option<String>,
    problems: Option<usize>,
    error: Option<String>,
    connections: Option<u64>,
    sessions: Option<String>,
    signed: Option<bool>,
    limit_ms: Option<u64>,
    admin: Option<String>,
}

/// A problem+json body, read back by this test's own type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ProblemBody {
    #[serde(rename = "type")]
    kind: String,
    title: String,
    status: u16,
    detail: String,
    problems: Vec<ProblemEntry>,
    omitted: Option<usize>,
    generation: Option<u64>,
    resume: Option<Value>,
    plan_changed: Option<Value>,
    stale_revision: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ProblemEntry {
    code: String,
    field: Option<String>,
    line: Option<usize>,
    message: String,
    help: Option<String>,
}

fn problem(reply: &Reply, status: u16, kind: &str) -> ProblemBody {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.content_type, "application/problem+json");
    let body: ProblemBody = serde_json::from_str(&reply.body).expect("problem+json");
    assert_eq!(body.kind, format!("urn:muster:problem:{kind}"));
    assert_eq!(body.status, status);
    coded(&body);
    body
}

/// Every problem of every problem+json these tests read has a code muster
/// documents: a property over all the requests the suite sends.
fn coded(body: &ProblemBody) {
    assert!(!body.problems.is_empty(), "{body:?}");
    for p in &body.problems {
        assert!(muster::is_kebab(&p.code), "{:?} in {body:?}", p.code);
        assert!(
            muster::problem_code::ALL.iter().any(|(c, _)| *c == p.code),
            "{:?} is not in docs/problems.md",
            p.code
        );
    }
}

/// The bundled policies with deferral on, so sessions have tools to load.
fn fixture() -> Fixture {
    let fixture = Fixture::bundled();
    fixture.edit(
        "policies/muster.toml",
        "[deferral]\nenabled = false",
        "[deferral]\nenabled = true",
    );
    fixture
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).expect("write");
    name.to_string()
}

#[test]
fn bad_input_is_problem_json_never_a_500() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &["--body-limit", "65536"]);

    let malformed = problem(&server.post("/v1/plan", "{\"agent\": "), 400, "input");
    assert_eq!(malformed.problems[0].field.as_deref(), Some("body"));

    let unknown = problem(
        &server.post("/v1/plan", r#"{"agnet": "chat"}"#),
        422,
        "input",
    );
    assert!(
        unknown.problems[0].message.contains("`agnet`"),
        "{unknown:?}"
    );

    problem(
        &server.post("/v1/plan", r#"{"agent": "nobody"}"#),
        422,
        "usage",
    );
    problem(
        &server.post("/v1/plan", r#"{"flags": "nightly"}"#),
        422,
        "usage",
    );
    problem(&server.post("/v1/plan", r#"{"item_cap": 0}"#), 422, "usage");
    problem(
        &server.post("/v1/plan", r#"{"item_cap": -1}"#),
        422,
        "input",
    );
    problem(
        &server.post("/v1/gate", r#"{"gates": ["../etc/passwd"]}"#),
        422,
        "usage",
    );
    problem(
        &server.post("/v1/check", r#"{"turn": {"calls": []}}"#),
        422,
        "usage",
    );
    let bad_turn = problem(
        &server.post(
            "/v1/check",
            r#"{"turn": {"cals": []}, "plan": {"roster": []}}"#,
        ),
        422,
        "input",
    );
    assert!(
        bad_turn
            .problems
            .iter()
            .all(|p| p.field.as_deref() == Some("plan") || p.field.as_deref() == Some("turn"))
    );

    let doc = server.post("/v1/sessions", "{}").body;
    let edited = doc.replacen(
        "\"loaded\":[]",
        "\"loaded\":[{\"name\": \"x.y\", \"tokens\": 1}]",
        1,
    );
    assert_ne!(edited, doc);
    let refused = problem(
        &server.post("/v1/sessions/roster", format!(r#"{{"session": {edited}}}"#)),
        422,
        "input",
    );
    assert_eq!(refused.problems[0].field.as_deref(), Some("session"));
    problem(
        &server.post(
            "/v1/sessions/search",
            format!(r#"{{"session": {doc}, "query": "x", "limit": 11}}"#),
        ),
        422,
        "usage",
    );

    let big = format!(r#"{{"agent": "{}"}}"#, "a".repeat(70_000));
    problem(&server.post("/v1/plan", big), 413, "body-too-large");

    problem(&server.get("/v1/nothing"), 404, "not-found");
    problem(&server.get("/v1/plan"), 405, "method-not-allowed");
}

#[test]
fn the_openapi_document_lists_every_route() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let doc: Value = serde_json::from_str(&server.get("/openapi.json").body).expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    let routes = [
        ("post", "/v1/plan"),
        ("post", "/v1/why"),
        ("post", "/v1/count"),
        ("post", "/v1/gate"),
        ("post", "/v1/check"),
        ("post", "/v1/call"),
        ("post", "/v1/sessions"),
        ("get", "/v1/sessions/{id}"),
        ("delete", "/v1/sessions/{id}"),
        ("post", "/v1/sessions/search"),
        ("post", "/v1/sessions/load"),
        ("post", "/v1/sessions/roster"),
        ("post", "/v1/sessions/resume"),
        ("post", "/v1/admin/reload"),
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
        ("get", "/openapi.json"),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    let distinct: std::collections::BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
    assert_eq!(paths.len(), distinct.len(), "{:?}", paths.keys());
    for (method, path) in routes {
        assert!(paths[path][method].is_object(), "{method} {path}");
        // And the route exists on the server: anything but 404.
        let reply = if method == "get" {
            server.get(path)
        } else {
            server.post(path, "{}")
        };
        assert_ne!(reply.status, 404, "{method} {path}");
    }
}

#[test]
fn sigterm_lets_the_request_in_flight_finish() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let body = r#"{"flags": "production"}"#;
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    write!(
        stream,
        "POST /v1/plan HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nexpect: 100-continue\r\n\r\n",
        server.addr,
        body.len()
    )
    .expect("headers");
    // The server asks for the body once the handler reads it: the request
    // is in flight.
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("100 Continue");
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");
    reader.read_line(&mut line).expect("blank line");

    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let shutdown = server.wait_event("shutdown");
    assert_eq!(shutdown.connections, Some(1));
    assert_eq!(shutdown.message, "shutting down: draining 1 connection(s)");
    stream.write_all(body.as_bytes()).expect("body");
    let mut response = String::new();
    reader.read_to_string(&mut response).expect("response");
    let (head, answer) = response.split_once("\r\n\r\n").expect("head and body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        answer,
        stdout(
            dir,
            &["plan", "--flags", "production", "--format", "json"],
            0
        )
    );
    server.wait_event("stopped");
    let mut server = server;
    let status = server.child.wait().expect("exit");
    assert_eq!(status.code(), Some(0));
}

/// One request's log line, read back by this test's own type.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct RequestLog {
    timestamp: String,
    level: String,
    target: String,
    message: String,
    method: String,
    endpoint: String,
    status: u16,
    latency_us: u64,
    generation: u64,
}

impl Server {
    /// The next request log line on stderr.
    fn next_request_log(&self) -> RequestLog {
        loop {
            let line = self.wait_for("{");
            let log: Value = serde_json::from_str(&line).expect("a JSON log line");
            if log["target"] == "muster::request" {
                return serde_json::from_value(log).expect("a request log line");
            }
        }
    }
}

#[test]
fn every_request_is_one_structured_log_line() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let start = server.start.as_ref().expect("start line");
    assert_eq!(
        (
            start.level.as_str(),
            start.policies.as_deref(),
            start.generation
        ),
        ("INFO", Some("policies"), Some(1))
    );
    assert_eq!(
        start.message,
        format!("listening on http://{}", server.addr)
    );
    assert_eq!(server.post("/v1/plan", "{}").status, 200);
    let log = server.next_request_log();
    assert_eq!(
        (
            log.level.as_str(),
            log.method.as_str(),
            log.endpoint.as_str(),
            log.status,
            log.generation
        ),
        ("INFO", "POST", "/v1/plan", 200, 1)
    );
    assert_eq!(log.message, "request");

    problem(&server.post("/v1/why", r#"{"tol": "x"}"#), 422, "input");
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.status), ("/v1/why", 422));

    problem(&server.get("/v1/nothing"), 404, "not-found");
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.status), ("unmatched", 404));

    assert_eq!(server.post("/v1/admin/reload", "").status, 200);
    let log = server.next_request_log();
    assert_eq!(
        (log.endpoint.as_str(), log.generation),
        ("/v1/admin/reload", 2)
    );
    assert_eq!(server.get("/healthz").status, 200);
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.generation), ("/healthz", 2));
}
