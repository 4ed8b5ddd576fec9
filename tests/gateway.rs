//! muster as an MCP gateway, driven by clients nobody here wrote: the
//! official MCP Python SDK (pip `mcp`) and the MCP Inspector's CLI (npm
//! `@modelcontextprotocol/inspector`), in front of the real reference
//! servers from npm. The flow a host goes through: list, call the control
//! tool, be told the list changed, call the loaded tool, read the real
//! server's answer; a refused call provably never reaches its server; a
//! fixed `params` value is what the server received.
//!
//! Needs node, npm and python3 with pip; the pinned packages are installed
//! on first use.

mod common;
#[path = "gateway/http.rs"]
mod http;
#[path = "gateway/piped.rs"]
mod piped;

use std::path::Path;
use std::process::Command;

use common::{Fixture, inspector, reference_server, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// A policy over the memory and everything reference servers (and, with
/// `extra`, more server blocks), eight items so the memory tools are
/// mostly deferred, one configured tool the gateway leaves to the host,
/// and a fixed `message` for `echo`; already discovered.
fn setup(extra: &str) -> Fixture {
    let memory = reference_server("server-memory");
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[caps]\nitems = 8\ntokens = 9000\n[deferral]\nenabled = true\n\
             [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
        ),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"math.calculate\"\ndescription = \"Evaluate.\"\n",
        ),
    ]);
    let graph = fx.path().join("graph.jsonl");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\n\n\
             [[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"echo\", \"get-sum\", \"get-env\", \"get-structured-content\", \"trigger-long-running-operation\"]\n\n\
             [mcp.params.echo]\nmessage = {{ value = \"fixed by policy\" }}\n\n{extra}"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

fn run_python(args: &[&str], dir: &Path) -> Value {
    common::run_client("flow.py", args, Some(dir))
}

/// What every transport must show for the flow `flow.py` drives.
fn assert_flow(seen: &Value) {
    let names = |key: &str| -> Vec<String> {
        seen[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key}: {seen}"))
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    let first = names("first_list");
    assert_eq!(first[0], "tools__load", "the control tool leads: {first:?}");
    assert_eq!(first.len(), 8, "the item cap holds: {first:?}");
    assert!(
        !first.iter().any(|n| n.contains("math")),
        "configured tools are left to the host: {first:?}"
    );
    assert!(!first.contains(&"mcp__memory__read_graph".to_string()));
    assert!(
        seen["instructions"]
            .as_str()
            .unwrap()
            .contains("math.calculate"),
        "the start says which tools the host keeps: {seen}"
    );
    assert_eq!(seen["early"]["is_error"], true, "{seen}");
    assert!(
        seen["early"]["text"]
            .as_str()
            .unwrap()
            .contains("call \"tools__load\""),
        "{seen}"
    );
    assert_eq!(seen["load"]["is_error"], false, "{seen}");
    assert_eq!(seen["notifications"], json!(["tools/list_changed"]));
    let second = names("second_list");
    assert_eq!(&second[..8], &first[..], "a load appends: {second:?}");
    assert_eq!(second[8], "mcp__memory__read_graph");
    // Refused before the server: nothing was created.
    assert_eq!(seen["refused"]["is_error"], true, "{seen}");
    assert_eq!(
        seen["refused"]["meta"]["check"]["problems"][0]["code"],
        "wrong-type"
    );
    let empty: Value = serde_json::from_str(seen["graph_after_refused"].as_str().unwrap()).unwrap();
    assert_eq!(empty["entities"], json!([]), "{seen}");
    assert_eq!(seen["created"]["is_error"], false, "{seen}");
    let graph: Value = serde_json::from_str(seen["graph_after_created"].as_str().unwrap()).unwrap();
    assert_eq!(graph["entities"][0]["name"], "Ada", "{seen}");
    // The fixed value rode: the model sent nothing.
    assert_eq!(seen["echo"]["text"], "Echo: fixed by policy", "{seen}");
    assert_eq!(seen["sum"]["text"], "The sum of 2 and 3 is 5.", "{seen}");
    assert_eq!(seen["unknown"]["code"], -32602, "{seen}");
}

#[test]
fn the_python_sdk_runs_the_whole_flow_over_stdio() {
    let fx = setup("");
    let policies = fx.policies();
    let policies = policies.to_str().unwrap();
    let seen = run_python(&["legacy", "stdio", MUSTER, policies], fx.path());
    assert_eq!(seen["protocol_version"], "2025-11-25", "{seen}");
    assert_flow(&seen);
    // The SDK's default probes server/discover and speaks 2026-07-28: no
    // handshake, and the list change arrives on its listen stream only.
    std::fs::remove_file(fx.path().join("graph.jsonl")).unwrap();
    let seen = run_python(&["auto", "stdio", MUSTER, policies], fx.path());
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
fn the_inspector_cli_lists_and_calls_over_stdio() {
    let fx = setup("");
    // The inspector prints the result, and exits 1 after a result with
    // `isError` (printing its own error after the result).
    let cli = |args: &[&str], ok: bool| -> Value {
        let out = Command::new(inspector())
            .arg("--cli")
            .args([MUSTER, "mcp", "--policies"])
            .arg(fx.policies())
            .args(args)
            .current_dir(fx.path())
            .output()
            .expect("run the MCP Inspector CLI");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.success(),
            ok,
            "inspector: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let first = serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .next();
        first
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("no JSON result: {text}"))
    };
    let listed = cli(&["--method", "tools/list"], true);
    let tools = listed["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 8, "{listed}");
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .expect("echo is offered");
    assert_eq!(
        echo["inputSchema"]["properties"],
        json!({}),
        "the fixed argument is hidden from the model: {echo}"
    );
    // What the server declared for hosts rides along unchanged.
    let snapshot: Value = serde_json::from_str(&fx.read("policies/mcp/memory.json")).unwrap();
    let listed = |name: &str| {
        snapshot["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap()
    };
    let create = tools
        .iter()
        .find(|t| t["name"] == "mcp__memory__create_entities")
        .expect("create_entities is offered");
    let server = listed("create_entities");
    assert_eq!(create["title"], server["title"], "{create}");
    assert_eq!(create["annotations"], server["annotations"], "{create}");
    assert!(create["annotations"].is_object(), "{server}");
    // Issue 31 item 9: `execution` (task support) was dropped.
    assert_eq!(create["execution"], server["execution"], "{create}");
    assert!(create["execution"].is_object(), "{server}");
    let sum = cli(
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "mcp__everything__get-sum",
            "--tool-arg",
            "a=2",
            "--tool-arg",
            "b=40",
        ],
        true,
    );
    assert_eq!(
        sum["content"][0]["text"], "The sum of 2 and 40 is 42.",
        "{sum}"
    );
    let refused = cli(
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "mcp__everything__get-sum",
            "--tool-arg",
            "a=2",
        ],
        false,
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["_meta"]["dev.muster/gateway"]["check"]["problems"][0]["code"],
        "missing-argument"
    );
}
