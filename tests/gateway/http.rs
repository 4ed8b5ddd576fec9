//! The gateway over `muster serve`'s streamable HTTP: the Python SDK's flow,
//! the Inspector CLI keeping a chat addressed by path, and what the transport
//! refuses.

use super::{
    assert_flow,
    common::{self, Served, inspector},
    run_python, setup,
};
use serde_json::{Value, json};
use std::process::Command;

#[test]
fn the_python_sdk_runs_the_whole_flow_over_streamable_http() {
    let fx = setup("");
    let serve = Served::start(fx.path(), &[], &[]);
    let seen = run_python(&["legacy", "http", &serve.url("/mcp")], fx.path());
    assert_eq!(seen["protocol_version"], "2025-11-25", "{seen}");
    assert_flow(&seen);
    // 2026-07-28 has no session header: the chat is the path, and the list
    // change rides the listen stream.
    std::fs::remove_file(fx.path().join("graph.jsonl")).unwrap();
    let seen = run_python(
        &["auto", "http", &serve.url("/mcp/chats/modern-1")],
        fx.path(),
    );
    assert_eq!(seen["protocol_version"], "2026-07-28", "{seen}");
    assert_eq!(seen["honored"], json!(["toolsListChanged"]), "{seen}");
    assert_eq!(
        seen["subscription"].as_array().map(Vec::len),
        Some(1),
        "{seen}"
    );
    assert_flow(&seen);
}

#[test]
fn the_inspector_cli_keeps_a_chat_addressed_by_path_over_http() {
    let fx = setup("");
    let serve = Served::start(fx.path(), &[], &[]);
    let chat = serve.url("/mcp/chats/inspector-chat");
    let cli = |args: &[&str]| -> Value {
        let out = Command::new(inspector())
            .args(["--cli", &chat, "--transport", "http"])
            .args(args)
            .current_dir(fx.path())
            .output()
            .expect("run the MCP Inspector CLI");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "inspector: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let names = |listed: &Value| -> Vec<String> {
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let before = names(&cli(&["--method", "tools/list"]));
    assert_eq!(before.len(), 8, "{before:?}");
    let loaded = cli(&[
        "--method",
        "tools/call",
        "--tool-name",
        "tools__load",
        "--tool-arg",
        "query=mcp__memory__read_graph",
    ]);
    assert_eq!(loaded["isError"], false, "{loaded}");
    // A new connection to the same path sees the load.
    let after = names(&cli(&["--method", "tools/list"]));
    assert_eq!(after.len(), 9, "{after:?}");
    assert_eq!(after[8], "mcp__memory__read_graph");
    let graph = cli(&[
        "--method",
        "tools/call",
        "--tool-name",
        "mcp__memory__read_graph",
    ]);
    assert!(
        graph["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("entities"),
        "{graph}"
    );
}

#[test]
fn the_http_transport_refuses_what_it_cannot_serve() {
    let fx = setup("");
    let serve = Served::start(fx.path(), &[], &[]);
    let client = common::http_client();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let post = |path: &str, body: &str, headers: &[(&str, &str)]| {
        let mut request = client
            .post(serve.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().expect("POST");
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string());
        (status, session, response.text().unwrap())
    };
    let get = client.get(serve.url("/mcp")).send().unwrap();
    assert_eq!(get.status().as_u16(), 405);
    // No session and not initialize (ping and server/discover need no chat).
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let (status, _, body) = post("/mcp", list, &[]);
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = post("/mcp", ping, &[]);
    assert_eq!(status, 200, "{body}");
    // Text that is not JSON is a parse error with or without a chat (a
    // hostile probe found -32600 here).
    let (status, _, body) = post("/mcp", "{oops", &[]);
    assert_eq!(status, 400, "{body}");
    let parse: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(parse["error"]["code"], -32700, "{body}");
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    let (status, session, body) = post("/mcp", discover, &[]);
    assert_eq!((status, session), (200, None), "{body}");
    assert!(
        body.contains(r#""supportedVersions":["2026-07-28""#),
        "{body}"
    );
    let (status, _, body) = post("/mcp", list, &[("mcp-session-id", "gone")]);
    assert_eq!(status, 404, "{body}");
    let gone: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        gone["id"], 1,
        "the error answers the request it is about: {body}"
    );
    let (status, _, body) = post("/mcp/chats/a", ping, &[("origin", "https://evil.example")]);
    assert_eq!(status, 403, "{body}");
    // Issue 31 item 9: an HTTP-level refusal answers the id it knows.
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["id"], 1, "{body}");
    let (status, _, body) = post("/mcp/chats/bad%20id", ping, &[]);
    assert_eq!(status, 400, "{body}");
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["id"], 1, "{body}");
    // Initialize starts a chat; its id is the session; DELETE ends it.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, session, body) = post("/mcp", init, &[]);
    assert_eq!(status, 200, "{body}");
    let session = session.expect("initialize answers Mcp-Session-Id");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    let (status, _, _) = post(
        "/mcp",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[("mcp-session-id", &session)],
    );
    assert_eq!(status, 202);
    let (status, _, body) = post("/mcp", "{oops", &[("mcp-session-id", &session)]);
    assert_eq!(status, 200, "a JSON-RPC error rides a 200: {body}");
    let parse: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(parse["error"]["code"], -32700);
    // Another site's page ends no chat, by header or by path (a hostile
    // probe found DELETE never asked for the Origin).
    for path in ["/mcp".to_string(), format!("/mcp/chats/{session}")] {
        let refused = client
            .delete(serve.url(&path))
            .header("mcp-session-id", &session)
            .header("origin", "https://evil.example")
            .send()
            .unwrap();
        assert_eq!(refused.status().as_u16(), 403, "{path}");
    }
    let (status, _, body) = post("/mcp", ping, &[("mcp-session-id", &session)]);
    assert_eq!(status, 200, "the chat is still kept: {body}");
    let deleted = client
        .delete(serve.url("/mcp"))
        .header("mcp-session-id", &session)
        .send()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let (status, _, _) = post("/mcp", ping, &[("mcp-session-id", &session)]);
    assert_eq!(status, 404);
}
