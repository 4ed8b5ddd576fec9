//! Issue 24, defect 1, at the service: small `/v1/check` bodies whose plan carries a `$ref`
//! "billion laughs" are checked on the async worker once the plan is compiled, and froze the
//! service (`/healthz` unanswered, SIGTERM ignored). Now each is refused `uncheckable-schema` at
//! once and `/healthz` answers after them; and a request that never finishes cannot hold the
//! SIGTERM drain past its deadline. Nothing here is timed: the client's timeout is generous, so
//! a regression makes a test fail, never hang.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Server, fixture};

#[test]
fn healthz_answers_after_checks_against_a_billion_laughs_schema() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let client = crate::common::http_builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client");
    let body = json!({
        "plan": {"format_version": 3, "roster": [{"name": "kb.search", "source": "mcp",
            "check": "strict", "input_schema": crate::common::laughs(40)}], "deferred": [], "findings": []},
        "turn": {"calls": [{"id": "1", "name": "kb.search", "arguments": {"x": "a"}}]}
    })
    .to_string();
    assert!(body.len() < 4096, "a small body: {}", body.len());
    // The first body compiles the plan; the rest are checked on the async worker.
    for _ in 0..4 {
        let reply = client
            .post(server.url("/v1/check"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .expect("POST /v1/check");
        assert_eq!(reply.status().as_u16(), 200);
        let report: Value =
            serde_json::from_str(&reply.text().expect("body")).expect("a check report");
        assert_eq!(report["verdict"], "refused", "{report}");
        assert_eq!(
            report["calls"][0]["problems"][0]["code"], "uncheckable-schema",
            "{report}"
        );
    }
    let health = client
        .get(server.url("/healthz"))
        .send()
        .expect("GET /healthz");
    assert_eq!(health.status().as_u16(), 200);
}

#[test]
fn sigterm_stops_the_service_when_a_request_never_finishes() {
    let fixture = fixture();
    // The request timeout is far off, so only the drain's deadline can end the request.
    let server = Server::start(
        fixture.path(),
        &[
            "--drain-timeout-ms",
            "200",
            "--request-timeout-ms",
            "3600000",
        ],
    );
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    // Headers promising a body that never comes: the request stays in flight.
    write!(
        stream,
        "POST /v1/plan HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: 100\r\nexpect: 100-continue\r\n\r\n",
        server.addr
    )
    .expect("headers");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("100 Continue");
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");

    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    assert_eq!(server.wait_event("shutdown").connections, Some(1));
    server.wait_event("drain-timeout");
    server.wait_event("stopped");
    let mut server = server;
    assert_eq!(server.child.wait().expect("exit").code(), Some(0));
}
