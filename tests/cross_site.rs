//! Issue 30, item 3: a page on another site cannot drive `muster serve`.
//! Headless Chromium loads a page from another origin (a second 127.0.0.1
//! port) that sends a no-cors `text/plain` POST to `/v1/call`; the real
//! memory server must not run the call (its graph file stays unwritten).
//! Plain requests pin the rules themselves: an `Origin` that is not
//! loopback is 403 `origin-refused`, a `Host` that is not a loopback name
//! with the bound port is 421 `host-refused` (DNS rebinding), and a POST
//! body that is not `application/json` is 415 `unsupported-media-type`.
//!
//! Needs node and npm (the memory server) and, for the browser case,
//! chromium (skipped with a note without it).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Fixture, Served, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// A policy over the memory server, discovered; the graph file it would
/// write; the default plan's fingerprint.
fn setup() -> (Fixture, PathBuf, String) {
    let memory = reference_server("server-memory");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 40\ntokens = 60000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    let graph = fx.path().join("graph.jsonl");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\n",
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let plan: Value =
        serde_json::from_str(&stdout(fx.path(), &["plan", "--format", "json"], 0)).unwrap();
    let fingerprint = plan["fingerprint"].as_str().unwrap().to_string();
    (fx, graph, fingerprint)
}

/// `muster serve` on a free loopback port, its request log kept; stopped
/// on drop.
struct Serve {
    served: Served,
    port: u16,
}

impl Serve {
    fn start(dir: &Path) -> Self {
        let served = Served::start(dir, &[], &[]);
        let port = served.addr.rsplit(':').next().unwrap().parse().unwrap();
        Self { served, port }
    }

    /// A request to `path` with `headers` and `body` (POST when given).
    fn send(&self, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, Value) {
        let client = common::http_client();
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut request = match body {
            Some(body) => client.post(url).body(body.to_string()),
            None => client.get(url),
        };
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().expect("the request is answered");
        let status = response.status().as_u16();
        let text = response.text().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The statuses the request log recorded for `endpoint`, once it has
    /// at least `n` (the log is read on another thread).
    fn statuses(&self, endpoint: &str, n: usize) -> Vec<u64> {
        for _ in 0..200 {
            if self.recorded(endpoint).len() >= n {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.recorded(endpoint)
    }

    fn recorded(&self, endpoint: &str) -> Vec<u64> {
        self.log()
            .iter()
            .filter(|l| l["endpoint"] == endpoint)
            .filter_map(|l| l["status"].as_u64())
            .collect()
    }

    /// Its log lines so far that are JSON, read.
    fn log(&self) -> Vec<Value> {
        self.served
            .log()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Serves `page` as HTML to every request on a free loopback port (another
/// origin than the service's), until the test ends.
fn serve_page(page: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    port
}

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MUSTER_CHROMIUM") {
        return Some(path.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
}

fn create(name: &str) -> Value {
    json!({"calls": [{"id": "c1", "name": "mcp__memory__create_entities",
        "arguments": {"entities": [{"name": name, "entityType": "person", "observations": []}]}}]})
}

#[test]
fn a_page_on_another_origin_cannot_run_a_call() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED the browser check: no chromium on PATH (or set MUSTER_CHROMIUM)");
        return;
    };
    let (fx, graph, fingerprint) = setup();
    let serve = Serve::start(fx.path());
    let body = json!({"fingerprint": fingerprint, "turn": create("Mallory")}).to_string();
    let page = format!(
        "<!doctype html><title>waiting</title><script>\
         fetch('http://127.0.0.1:{port}/v1/call', {{method: 'POST', mode: 'no-cors', \
         headers: {{'Content-Type': 'text/plain'}}, body: {body:?}}})\
         .then(() => document.title = 'sent', e => document.title = 'failed ' + e);\
         </script>",
        port = serve.port,
        body = body,
    );
    let page_port = serve_page(page);
    // The page from another loopback port (its Origin is loopback, so the
    // Content-Type rule refuses it), then from another site's name
    // (resolved to 127.0.0.1 by the browser; its Origin is refused).
    for (n, (host, status)) in [("127.0.0.1", 415), ("evil.test", 403)]
        .into_iter()
        .enumerate()
    {
        let profile = tempfile::tempdir().unwrap();
        let out = Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("--host-resolver-rules=MAP evil.test 127.0.0.1")
            .args(["--virtual-time-budget=10000", "--dump-dom"])
            .arg(format!("http://{host}:{page_port}/"))
            .output()
            .expect("chromium runs");
        let dom = String::from_utf8_lossy(&out.stdout);
        assert!(
            dom.contains("<title>sent</title>"),
            "{host}: the page did not send: {dom}"
        );
        // The request reached muster (its log has it) and was refused there.
        let statuses = serve.statuses("/v1/call", n + 1);
        assert_eq!(statuses.last(), Some(&status), "{host}: {:?}", serve.log());
        assert!(!graph.exists(), "{host}: the memory server ran the call");
    }
    assert_eq!(serve.statuses("/v1/call", 2).len(), 2);
}

#[test]
fn origin_host_and_content_type_rules() {
    const ACCEPT: &str = "application/json, text/event-stream";
    let (fx, graph, fingerprint) = setup();
    let serve = Serve::start(fx.path());
    let port = serve.port;
    let json_type = ("content-type", "application/json");
    let plan = Some("{}");
    // Another site's page: 403, whatever the body.
    let (status, problem) = serve.send(
        "/v1/plan",
        &[json_type, ("origin", "http://evil.example")],
        plan,
    );
    assert_eq!(status, 403, "{problem}");
    assert_eq!(problem["problems"][0]["code"], "origin-refused");
    let here = format!("http://localhost:{port}");
    let (status, _) = serve.send("/v1/plan", &[json_type, ("origin", &here)], plan);
    assert_eq!(status, 200);
    // DNS rebinding: a name that is not loopback, or another port.
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        "127.0.0.1:1".into(),
    ] {
        let (status, problem) = serve.send("/v1/plan", &[json_type, ("host", &host)], plan);
        assert_eq!(status, 421, "{host}: {problem}");
        assert_eq!(problem["problems"][0]["code"], "host-refused", "{host}");
        let (status, _) = serve.send("/v1/sessions/abc", &[("host", &host)], None);
        assert_eq!(status, 421, "{host}");
        // The gateway too: a rebound page reaches no chat.
        let ping = Some(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let (status, _) = serve.send(
            "/mcp/chats/rebound",
            &[json_type, ("accept", ACCEPT), ("host", &host)],
            ping,
        );
        assert_eq!(status, 421, "/mcp {host}");
    }
    let ping = Some(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let here_host = format!("127.0.0.1:{port}");
    let (status, answer) = serve.send(
        "/mcp/chats/here",
        &[json_type, ("accept", ACCEPT), ("host", &here_host)],
        ping,
    );
    assert_eq!(status, 200, "{answer}");
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
    ] {
        let (status, problem) = serve.send("/v1/plan", &[json_type, ("host", &host)], plan);
        assert_eq!(status, 200, "{host}: {problem}");
    }
    // A body that is not sent as JSON: 415, and the call never runs.
    let call = json!({"fingerprint": fingerprint, "turn": create("Eve")}).to_string();
    for kind in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = kind.map(|k| ("content-type", k)).into_iter().collect();
        for path in ["/v1/call", "/v1/plan", "/v1/sessions"] {
            let (status, problem) = serve.send(path, &headers, Some(&call));
            assert_eq!(status, 415, "{path} {kind:?}: {problem}");
            assert_eq!(problem["problems"][0]["code"], "unsupported-media-type");
        }
    }
    assert!(!graph.exists(), "the memory server ran a call");
    let (status, _) = serve.send(
        "/v1/call",
        &[("content-type", "application/json; charset=utf-8")],
        Some(&call),
    );
    assert_eq!(status, 200);
    assert!(graph.exists(), "the call sent as JSON ran");
    // A reload takes no body, so it needs no Content-Type.
    let (status, _) = serve.send("/v1/admin/reload", &[], Some(""));
    assert_eq!(status, 200);
}

/// Issue 30, item 16: bound beyond loopback, the service says at start that
/// `/mcp` and `/v1/call` are open to whoever reaches it; bound to loopback,
/// or with `[auth]`, it does not.
#[test]
fn listening_beyond_loopback_is_warned_about_at_start() {
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n",
    )]);
    let keyed = format!(
        "[[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n\n[auth]\n\n\
         [[auth.key]]\nname = \"ci\"\nagents = [\"chat\"]\nhash = \"sha256:{}\"\n",
        "a".repeat(64)
    );
    // With `[auth]`, every call needs a caller's token: nothing to warn of.
    for (addr, policy, warned) in [
        ("0.0.0.0:0", String::new(), true),
        ("127.0.0.1:0", String::new(), false),
        ("0.0.0.0:0", keyed, false),
    ] {
        std::fs::write(fx.path().join("policies/muster.toml"), policy).unwrap();
        let mut child = Command::new(MUSTER)
            .current_dir(fx.path())
            .args(["serve", "--addr", addr])
            .env_remove("MUSTER_ADMIN_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start muster serve");
        let mut events = Vec::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let log: Value = serde_json::from_str(&line.unwrap()).unwrap_or_default();
            events.push((log["event"].clone(), log["level"].clone()));
            if log["event"] == "start" {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let warning = (json!("open-beyond-loopback"), json!("WARN"));
        assert_eq!(events.contains(&warning), warned, "{addr}: {events:?}");
    }
}
