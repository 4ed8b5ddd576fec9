//! A 2026-07-28 client at its default settings pointed at plain `/mcp`
//! (docs/gateway.md, "Addressing a chat"): the official MCP Python SDK
//! lists, calls, and reaches deferred tools by calling them by name, each
//! message in a chat of its own; a refused call still never reaches the
//! real memory server.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Fixture, python_sdk, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

#[test]
fn the_python_sdk_at_its_defaults_lists_and_calls_at_plain_mcp() {
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
    let mut serve = Command::new(MUSTER)
        .current_dir(fx.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start muster serve");
    let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
    let addr = common::serve_address(&mut lines);
    std::thread::spawn(move || for _ in lines {});

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/plain.py");
    let out = Command::new(python_sdk())
        .arg(script)
        .arg(format!("http://{addr}/mcp"))
        .output()
        .expect("run the MCP Python SDK client");
    let _ = serve.kill();
    let _ = serve.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed: {}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));

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
    let kept = std::fs::read_to_string(&graph).unwrap();
    assert!(!kept.contains("Bob"), "{kept}");
}
