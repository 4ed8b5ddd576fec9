//! A 2026-07-28 client at its default settings pointed at plain `/mcp`
//! (docs/gateway.md, "Addressing a chat"): the official MCP Python SDK
//! lists, calls, and reaches deferred tools by calling them by name, each
//! message in a chat of its own; a refused call still never reaches the
//! real memory server. fastmcp's client at its defaults does the same.

mod common;

use common::{Fixture, Served, reference_server, stdout};
use serde_json::{Value, json};

/// A `muster serve` over the everything and memory reference servers, four
/// items so the memory tools are deferred; stopped on drop.
struct Serve {
    /// First, so it stops before the fixture's directory is removed.
    served: Served,
    fx: Fixture,
}

impl Serve {
    fn start() -> Self {
        let memory = reference_server("server-memory");
        let everything = reference_server("server-everything");
        let fx = Fixture::new(&[(
            "policies/muster.toml",
            "[caps]\nitems = 4\ntokens = 9000\n[deferral]\nenabled = true\n\
             [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
        )]);
        let graph = fx.path().join("graph.jsonl");
        fx.write(
            "policies/mcp/servers.toml",
            &format!(
                "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
                 allow = [\"get-sum\"]\n\n\
                 [[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
                 env = {{ MEMORY_FILE_PATH = {graph:?} }}\n"
            ),
        );
        stdout(fx.path(), &["discover"], 0);
        let served = Served::start(fx.path(), &[], &[]);
        Self { served, fx }
    }

    /// What `script` (in tests/mcp-clients) printed, pointed at plain `/mcp`.
    fn client(&self, script: &str) -> Value {
        common::run_client(script, &[self.served.url("/mcp")], None)
    }
}

#[test]
fn the_python_sdk_at_its_defaults_lists_and_calls_at_plain_mcp() {
    let serve = Serve::start();
    let seen = serve.client("plain.py");
    assert_eq!(seen["protocol_version"], "2026-07-28", "{seen}");
    let tools = seen["tools"].as_array().unwrap();
    assert_eq!(tools[0], "tools__load", "{seen}");
    assert!(
        !tools.contains(&json!("mcp__memory__read_graph")),
        "read_graph is deferred: {seen}"
    );
    assert_eq!(seen["sum"]["text"], "The sum of 2 and 3 is 5.", "{seen}");
    assert_eq!(seen["created"]["is_error"], false, "{seen}");
    let graph_seen: Value = serde_json::from_str(seen["graph"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(graph_seen["entities"][0]["name"], "Ada", "{seen}");
    assert_eq!(
        graph_seen["entities"].as_array().map(Vec::len),
        Some(1),
        "{seen}"
    );
    assert_eq!(seen["refused"]["is_error"], true, "{seen}");
    assert_eq!(
        seen["refused"]["meta"]["check"]["problems"][0]["code"], "wrong-type",
        "{seen}"
    );
    // Nothing outlives a message: the list is the plan's, as at first.
    assert_eq!(seen["tools_after"], seen["tools"], "{seen}");
    let kept = std::fs::read_to_string(serve.fx.path().join("graph.jsonl")).unwrap();
    assert!(!kept.contains("Bob"), "{kept}");
}

#[test]
fn fastmcp_at_its_defaults_lists_and_calls_at_plain_mcp() {
    let serve = Serve::start();
    let seen = serve.client("fastmcp_plain.py");
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__everything__get-sum")), "{seen}");
    assert_eq!(seen["sum"], "The sum of 2 and 3 is 5.", "{seen}");
    // A deferred tool, called through: the memory server's empty graph.
    let graph: Value = serde_json::from_str(seen["graph"].as_str().unwrap()).unwrap();
    assert_eq!(graph["entities"], json!([]), "{seen}");
}
