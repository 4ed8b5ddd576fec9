//! Replicas of `muster serve` sharing one PostgreSQL store (Debian's
//! server, started by tests/common/postgres.rs): a load into a chat through
//! one replica reaches the chat's `subscriptions/listen` stream held by the
//! other (`LISTEN`/`NOTIFY`, docs/gateway.md "Across replicas"), in front
//! of the real memory server.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::postgres::Postgres;
use common::{Fixture, Served, reference_server, stdout};
use serde_json::{Value, json};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;

struct Replica {
    served: Served,
}

impl Replica {
    fn start(fx: &Fixture, sessions: &str) -> Self {
        let served = Served::start(fx.path(), &["--sessions", sessions], &[]);
        Self { served }
    }

    /// Opens a listen stream on `chat`; returns the socket after the
    /// acknowledgement.
    fn listen(&self, chat: &str) -> (TcpStream, String) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{META}}}}}"#
        );
        let mut socket = TcpStream::connect(&self.served.addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            socket,
            "POST /mcp/chats/{chat} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            self.served.addr,
            body.len()
        )
        .unwrap();
        let seen = read_until(
            &mut socket,
            String::new(),
            "notifications/subscriptions/acknowledged",
        );
        (socket, seen)
    }

    fn call(&self, chat: &str, tool: &str, arguments: Value) -> Value {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":{},"arguments":{arguments},{META}}}}}"#,
            json!(tool)
        );
        let answer = common::http_client()
            .post(self.served.url(&format!("/mcp/chats/{chat}")))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.json().unwrap()
    }
}

/// Reads `socket` onto `seen` until it holds `wanted`.
fn read_until(socket: &mut TcpStream, mut seen: String, wanted: &str) -> String {
    let mut buf = [0u8; 4096];
    while !seen.contains(wanted) {
        let n = socket
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("waiting for {wanted}: {e}; saw {seen}"));
        assert!(n > 0, "closed before {wanted}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

#[test]
fn a_load_on_one_replica_reaches_the_listen_stream_held_by_another() {
    let pg = Postgres::start("muster_replicas");
    let memory = reference_server("server-memory");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 2\ntokens = 9000\n[deferral]\nenabled = true\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    let graph = fx.path().join("graph.jsonl");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let a = Replica::start(&fx, &pg.url);
    let b = Replica::start(&fx, &pg.url);

    let (mut stream, seen) = a.listen("shared-chat");
    let loaded = b.call(
        "shared-chat",
        "tools__load",
        json!({"query": "mcp__memory__read_graph"}),
    );
    assert_eq!(loaded["result"]["isError"], false, "{loaded}");
    let seen = read_until(&mut stream, seen, "notifications/tools/list_changed");
    assert!(
        seen.contains(r#""io.modelcontextprotocol/subscriptionId":"sub""#) || seen.contains("sub"),
        "{seen}"
    );
    // And the load is the chat's on either replica.
    let graph = a.call("shared-chat", "mcp__memory__read_graph", json!({}));
    assert!(graph["result"]["isError"] != true, "{graph}");
}
