//! `subscriptions/listen` streams over `/mcp` (2026-07-28) and stopping,
//! against a real `muster serve` (issue 30, items 5 and 12): a client that
//! goes away releases its stream and its socket; streams are bounded per
//! chat; SIGTERM ends every open stream at once (each answered), so the
//! service stops without waiting out its drain; and a graceful stop leaves
//! no process an upstream server started, one that called `setsid` included.
//!
//! Counts are read from what muster exposes (the
//! `muster_gateway_listen_streams` gauge at `/metrics`) and from the
//! process's descriptors in `/proc`; the one deadline is a generous poll.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Fixture, Served};
use serde_json::Value;

const LISTEN: &str = r#"{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;

/// How long a poll waits before the test gives up: generous, not a bar.
const DEADLINE: Duration = Duration::from_secs(30);

/// A running `muster serve` over the bundled policies, killed on drop.
struct Service {
    served: Served,
}

impl Service {
    fn start(fx: &Fixture) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(fx.path())
            .env("MUSTER_CACHE_DIR", fx.path().join("cache"))
            .env("MUSTER_SESSION_KEY", "k1:0123456789abcdef0123456789abcdef")
            .env_remove("MUSTER_SESSION_KEY_FILE")
            .env_remove("MUSTER_ADMIN_TOKEN")
            .args(["serve", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("muster serve");
        let served = Served::from_child(child);
        Self { served }
    }

    fn pid(&self) -> u32 {
        self.served.pid()
    }

    /// Descriptors the service holds open now.
    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// The `muster_gateway_listen_streams` gauge.
    fn streams(&self) -> Option<u64> {
        let (status, body) = self.request("GET", "/metrics", "");
        assert_eq!(status, 200, "{body}");
        body.lines()
            .find_map(|l| l.strip_prefix("muster_gateway_listen_streams "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// One request on its own connection: status and body.
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let mut socket = TcpStream::connect(&self.served.addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            socket,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
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

    /// Opens a listen stream on chat `chat` and reads up to its
    /// acknowledgement; the socket is returned open. `Err` holds the
    /// status and body of a refusal.
    fn listen(&self, chat: &str) -> Result<TcpStream, (u16, String)> {
        let mut socket = TcpStream::connect(&self.served.addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            socket,
            "POST /mcp/chats/{chat} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{LISTEN}",
            self.served.addr,
            LISTEN.len()
        )
        .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = socket.read(&mut buf).expect("the stream answers");
            assert!(
                n > 0,
                "closed before answering: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if text.contains("notifications/subscriptions/acknowledged") {
                assert!(text.starts_with("HTTP/1.1 200"), "{text}");
                return Ok(socket);
            }
            if let Some((head, body)) = text.split_once("\r\n\r\n")
                && !head.starts_with("HTTP/1.1 200")
                && body.ends_with('}')
            {
                let status = head.split(' ').nth(1).unwrap().parse().unwrap();
                return Err((status, body.to_string()));
            }
        }
    }
}

/// Polls `done` until it holds or [`DEADLINE`] passes; how long it took.
fn poll(mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < DEADLINE {
        if done() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn abandoned_listen_streams_are_released() {
    let fx = Fixture::bundled();
    let service = Service::start(&fx);
    let before = service.fds();
    let sockets: Vec<TcpStream> = (0..100)
        .map(|n| service.listen(&format!("abandon-{n}")).unwrap())
        .collect();
    assert_eq!(service.streams(), Some(100));
    assert!(
        service.fds() >= before + 100,
        "each open stream holds its socket"
    );
    // The clients go away without a word.
    drop(sockets);
    let took = poll(|| service.streams() == Some(0) && service.fds() <= before + 5);
    println!(
        "100 abandoned listen streams released in {took:?} (fds {} -> {})",
        before,
        service.fds()
    );
    assert!(
        took.is_some(),
        "still open: {:?} streams, {} fds (were {before})",
        service.streams(),
        service.fds()
    );
    // The service still answers.
    assert_eq!(service.request("GET", "/healthz", "").0, 200);
}

#[test]
fn listen_streams_are_bounded_per_chat() {
    let fx = Fixture::bundled();
    let service = Service::start(&fx);
    let limit = muster::gateway::listen::MAX_STREAMS_PER_CHAT;
    let kept: Vec<TcpStream> = (0..limit)
        .map(|_| service.listen("crowded").unwrap())
        .collect();
    let (status, body) = service
        .listen("crowded")
        .expect_err("one stream past the chat's bound is refused");
    assert_eq!(status, 429, "{body}");
    let refusal: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refusal["id"], "sub-1");
    assert_eq!(refusal["error"]["data"]["code"], "too-many-listen-streams");
    assert_eq!(refusal["error"]["data"]["scope"], "chat");
    assert_eq!(refusal["error"]["data"]["limit"], limit);
    // Another chat is not affected, and a closed stream frees its place.
    drop(service.listen("quiet").unwrap());
    drop(kept);
    assert!(
        poll(|| service.listen("crowded").is_ok()).is_some(),
        "a stream closed by its client frees its place"
    );
}

#[test]
fn sigterm_ends_open_listen_streams_at_once() {
    let fx = Fixture::bundled();
    let mut service = Service::start(&fx);
    let mut sockets: Vec<TcpStream> = (0..3)
        .map(|n| service.listen(&format!("open-{n}")).unwrap())
        .collect();
    let started = Instant::now();
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(
        unsafe { libc::kill(service.pid() as i32, libc::SIGTERM) },
        0
    );
    let exited = poll(|| service.served.try_wait().is_some());
    println!(
        "muster serve with 3 open listen streams stopped {:?} after SIGTERM",
        started.elapsed()
    );
    assert!(exited.is_some(), "still running {DEADLINE:?} after SIGTERM");
    // Each stream was answered before it ended: the listen request's result.
    for socket in &mut sockets {
        let mut rest = String::new();
        let _ = socket.read_to_string(&mut rest);
        assert!(
            rest.contains(r#""id":"sub-1","result""#),
            "a stream ended at shutdown is answered: {rest:?}"
        );
    }
}

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Issue 30, item 12: an upstream server started by `/mcp` that starts a
/// grandchild in a session of its own (`setsid`) leaves nothing running
/// once `muster serve` has stopped gracefully (SIGTERM).
#[cfg(target_os = "linux")]
#[test]
fn a_graceful_stop_leaves_no_upstream_process_behind_even_one_that_called_setsid() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[[agent]]\nname = \"a\"\nversion = 1\ndefault = true\n",
    )]);
    let pids = fx.path().join("run");
    std::fs::create_dir_all(&pids).unwrap();
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"esc\"\ncommand = [\"node\", {script:?}, \"detached\"]\nsnapshot = \"esc.json\"\n\
             env = {{ SCRIPTED_PID_DIR = {pids:?} }}\n"
        ),
    );
    common::stdout(fx.path(), &["discover"], 0);
    let _ = std::fs::remove_file(pids.join("pids"));
    let mut service = Service::start(&fx);
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__esc__alpha","arguments":{"q":"x"}}}"#;
    let (status, body) = service.request("POST", "/mcp/chats/esc", call);
    assert_eq!(status, 200, "{body}");
    let started: Vec<i32> = std::fs::read_to_string(pids.join("pids"))
        .expect("the server was started and wrote its pids")
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(
        started.len(),
        3,
        "the server, its child, its setsid grandchild"
    );
    assert!(started.iter().all(|&p| alive(p)));
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(
        unsafe { libc::kill(service.pid() as i32, libc::SIGTERM) },
        0
    );
    assert!(
        poll(|| service.served.try_wait().is_some()).is_some(),
        "muster serve still running after SIGTERM"
    );
    let gone = poll(|| started.iter().all(|&p| !alive(p)));
    let left: Vec<i32> = started.iter().copied().filter(|&p| alive(p)).collect();
    for &p in &left {
        // SAFETY: kill(2); cleans up after a failing test.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(
        gone.is_some(),
        "still running after serve stopped: {left:?} of {started:?}"
    );
}
