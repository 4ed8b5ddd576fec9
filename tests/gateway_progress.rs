//! A long tool's progress, heard through muster as it is heard directly:
//! the official MCP Python SDK at its default settings calls
//! server-everything's `trigger-long-running-operation` (which reports each
//! step with `notifications/progress` when asked) through `muster mcp`
//! and through `muster serve`'s `/mcp/chats/{id}`, with a progress callback,
//! and hears each step under its own token before the answer; without one
//! it hears none. The same call made to the server directly is the
//! reference.

mod common;

use common::{Fixture, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");
const TOOL: &str = "trigger-long-running-operation";

/// A policy over server-everything's long-running tool, listed (not
/// deferred); already discovered.
fn setup() -> Fixture {
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
             allow = [\"get-sum\", {TOOL:?}]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

/// What a client through muster must hear, as the server itself says it.
fn assert_relayed(seen: &Value, direct: &Value) {
    assert_eq!(seen["listed"], true, "{seen}");
    assert_eq!(seen["result"], direct["result"], "{seen}");
    assert_eq!(
        seen["progress"],
        json!([
            {"progress": 1.0, "total": 3.0, "message": null},
            {"progress": 2.0, "total": 3.0, "message": null},
            {"progress": 3.0, "total": 3.0, "message": null},
        ]),
        "every step, in order, before the answer: {seen}"
    );
    assert_eq!(seen["progress"], direct["progress"], "as heard directly");
    assert_eq!(seen["quiet_result"]["is_error"], false, "{seen}");
    assert_eq!(
        seen["heard_after"], 3,
        "a call that asked for none hears none: {seen}"
    );
    assert_eq!(seen["notified"], 3, "no progress beyond the steps: {seen}");
    assert_eq!(
        seen["tokens"], 1,
        "all under the one token the client gave: {seen}"
    );
}

fn direct() -> Value {
    let everything = reference_server("server-everything");
    let direct = common::run_client("progress.py", &[TOOL, "stdio", "node", &everything], None);
    assert_eq!(
        direct["progress"].as_array().map(Vec::len),
        Some(3),
        "{direct}"
    );
    direct
}

#[test]
fn progress_of_a_long_tool_reaches_a_stdio_client() {
    let fx = setup();
    let policies = fx.path().join("policies");
    let tool = format!("mcp__everything__{TOOL}");
    let args = [
        tool.as_str(),
        "stdio",
        MUSTER,
        "mcp",
        "--policies",
        policies.to_str().unwrap(),
    ];
    let seen = common::run_client("progress.py", &args, Some(fx.path()));
    assert_relayed(&seen, &direct());
}

/// Over HTTP, at a chat's own path and at plain `/mcp` (where a
/// 2026-07-28 client's every message is a chat of its own).
#[test]
fn progress_of_a_long_tool_reaches_an_http_client_on_its_post() {
    let fx = setup();
    let serve = common::Served::start(fx.path(), &[], &[]);
    let tool = format!("mcp__everything__{TOOL}");
    let direct = direct();
    for path in ["/mcp/chats/progress-1", "/mcp"] {
        let url = serve.url(path);
        let seen = common::run_client("progress.py", &[tool.as_str(), "http", &url], None);
        assert_relayed(&seen, &direct);
    }
}
