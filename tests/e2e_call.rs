//! The end-to-end proof that narrowing holds on a real call: `discover` and
//! `plan` a policy over the real reference servers, `check` a turn the
//! model got wrong, then forward the checked arguments to the real server
//! with `muster::discover::call_tool` and read what it answers.
//!
//! Needs node and npm; the pinned servers are installed on first use.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Fixture, check_value, plan_value, reference_server, stdout};
use muster::discover::{ServerSpec, call_tool};
use serde_json::{Value, json};

const TOOL: &str = "[[tool]]\nname = \"math.calculate\"\ndescription = \"Evaluate.\"\n";

fn toml_list(parts: &[&str]) -> String {
    let quoted: Vec<String> = parts.iter().map(|p| format!("{p:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

fn spec(name: &str, command: &[&str]) -> ServerSpec {
    let mut s = ServerSpec::new(
        name,
        command.iter().map(|c| c.to_string()).collect(),
        PathBuf::from("unused.json"),
    );
    // Generous: this bounds a hung server, it is not a speed assertion.
    s.timeout = Duration::from_secs(60);
    s
}

/// Discovers and plans the policy in `fx`, writes the plan and `turn`, and
/// runs `muster check --format json`, expecting exit `code`.
fn check(fx: &Fixture, turn: &Value, code: i32) -> Value {
    let plan = plan_value(fx.path(), &[]);
    fx.write("plan.json", &serde_json::to_string_pretty(&plan).unwrap());
    fx.write("turn.json", &serde_json::to_string_pretty(turn).unwrap());
    check_value(fx.path(), code)
}

/// The text of every `text` content block of a CallToolResult, joined.
fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content list: {result}"))
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `v`, an object, as the text `call_tool` sends.
fn object(v: &Value) -> String {
    assert!(v.is_object(), "not an object: {v}");
    v.to_string()
}

/// A policy directory with the filesystem server allowed `root/allowed`,
/// `notes.txt` and `plan.md` in it and a matching `notes.txt` in the
/// sibling `root/outside`; already discovered.
struct FsSetup {
    fx: Fixture,
    fs: String,
    allowed: String,
    outside: String,
}

fn fs_setup() -> FsSetup {
    let fx = Fixture::new(&[("policies/tools/t.toml", TOOL)]);
    let root = fx.path().join("root");
    let allowed = root.join("allowed");
    let outside = root.join("outside");
    for dir in [&allowed, &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(allowed.join("notes.txt"), "inside\n").unwrap();
    std::fs::write(allowed.join("plan.md"), "# plan\n").unwrap();
    std::fs::write(outside.join("notes.txt"), "outside\n").unwrap();
    // The server resolves symlinks in its allowed directories (a tempdir
    // may be under one), so give it and the policy the canonical path.
    let allowed = allowed
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let outside = outside
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let fs = reference_server("server-filesystem");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            r#"[[mcp]]
name = "fs"
command = {}
snapshot = "fs.json"
allow = ["search_files", "read_text_file"]

[mcp.params.search_files]
path = {{ value = {allowed:?} }}

[mcp.only]
search_files = ["pattern"]
"#,
            toml_list(&["node", &fs, &allowed])
        ),
    );
    let out = stdout(fx.path(), &["discover"], 0);
    assert!(out.contains("ok   fs:"), "{out}");
    FsSetup {
        fx,
        fs,
        allowed,
        outside,
    }
}

#[test]
fn a_narrowed_search_reaches_the_real_server_with_the_policy_path() {
    let FsSetup {
        fx,
        fs,
        allowed,
        outside,
    } = fs_setup();

    // The model searches where it should not, and adds an argument `only`
    // leaves out. (The server matches `pattern` as a glob on the relative path.)
    let model_wrote = json!({"pattern": "**/notes*", "path": outside, "excludePatterns": ["x"]});
    let turn = json!({"calls": [
        {"id": "c1", "name": "mcp.fs.search_files", "arguments": model_wrote}
    ]});
    let report = check(&fx, &turn, 0);
    assert_eq!(report["verdict"], "run", "{report:#}");
    let call = &report["calls"][0];
    assert_eq!(call["status"], "ok", "{call:#}");
    let arguments = &call["arguments"];
    assert_eq!(
        arguments,
        &json!({"pattern": "**/notes*", "path": allowed}),
        "excludePatterns dropped; path is the policy's, forwarded though `only` omits it"
    );
    let notes: Vec<(&str, &str)> = call["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["code"].as_str().unwrap(), n["argument"].as_str().unwrap()))
        .collect();
    assert!(
        notes.contains(&("outside-only-dropped", "excludePatterns")),
        "{notes:?}"
    );
    assert!(
        notes.contains(&("fixed-argument-dropped", "path")),
        "{notes:?}"
    );

    // Forward exactly what the check let through to the real server.
    let server = spec("fs", &["node", &fs, &allowed]);
    let result = call_tool(&server, "search_files", &object(arguments)).unwrap();
    assert_ne!(result["isError"], true, "{result:#}");
    let text = text_of(&result);
    let inside_notes = Path::new(&allowed).join("notes.txt");
    let outside_notes = Path::new(&outside).join("notes.txt");
    assert!(
        text.contains(inside_notes.to_str().unwrap()),
        "lists the allowed file: {text}"
    );
    assert!(
        !text.contains(outside_notes.to_str().unwrap()),
        "does not list the outside file: {text}"
    );
    assert!(!text.contains("plan.md"), "only what matches: {text}");

    // Control: a server allowed the whole root would search where the model
    // pointed if the call went through unnarrowed; narrowing is what keeps
    // the search in the allowed directory, not the server.
    let root = Path::new(&allowed).parent().unwrap().to_string_lossy();
    let wide = spec("fs-wide", &["node", &fs, &root]);
    let raw = call_tool(&wide, "search_files", &object(&model_wrote)).unwrap();
    let raw_text = text_of(&raw);
    assert!(
        raw_text.contains(outside_notes.to_str().unwrap()),
        "unnarrowed, the model's path is searched: {raw_text}"
    );
    let narrowed = call_tool(&wide, "search_files", &object(arguments)).unwrap();
    let narrowed_text = text_of(&narrowed);
    assert!(
        narrowed_text.contains(inside_notes.to_str().unwrap())
            && !narrowed_text.contains(outside_notes.to_str().unwrap()),
        "narrowed, only the policy's path is: {narrowed_text}"
    );
}

#[test]
fn a_search_without_its_pattern_is_refused_with_its_sibling() {
    let FsSetup { fx, allowed, .. } = fs_setup();
    let turn = json!({"calls": [
        {"id": "c1", "name": "mcp.fs.search_files", "arguments": {"path": allowed}},
        {"id": "c2", "name": "mcp.fs.read_text_file",
         "arguments": {"path": format!("{allowed}/notes.txt")}}
    ]});
    let report = check(&fx, &turn, 1);
    assert_eq!(report["verdict"], "refused", "{report:#}");
    let first = &report["calls"][0];
    assert_eq!(first["status"], "refused", "{first:#}");
    assert_eq!(first["refusal"], "arguments");
    assert_eq!(first["arguments"], Value::Null);
    assert!(
        first["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["code"] == "missing-argument" && p["argument"] == "pattern"),
        "{first:#}"
    );
    let second = &report["calls"][1];
    assert_eq!(second["status"], "not-run", "{second:#}");
    assert_eq!(second["refusal"], "turn");
    assert_eq!(second["arguments"], Value::Null);
}

#[test]
fn a_number_sent_as_text_is_coerced_and_the_real_server_sums_it() {
    let fx = Fixture::new(&[("policies/tools/t.toml", TOOL)]);
    let everything = reference_server("server-everything");
    let command = ["node", everything.as_str(), "stdio"];
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = {}\nsnapshot = \"everything.json\"\nallow = [\"get-sum\"]\n",
            toml_list(&command)
        ),
    );
    let out = stdout(fx.path(), &["discover"], 0);
    assert!(out.contains("ok   everything:"), "{out}");

    let model_wrote = json!({"a": "2", "b": 3});
    let turn = json!({"calls": [
        {"id": "s", "name": "mcp.everything.get-sum", "arguments": model_wrote}
    ]});
    let report = check(&fx, &turn, 0);
    assert_eq!(report["verdict"], "run", "{report:#}");
    let arguments = &report["calls"][0]["arguments"];
    assert_eq!(arguments, &json!({"a": 2, "b": 3}), "{report:#}");

    let server = spec("everything", &command);
    let result = call_tool(&server, "get-sum", &object(arguments)).unwrap();
    assert_ne!(result["isError"], true, "{result:#}");
    let text = text_of(&result);
    assert!(text.contains("is 5"), "{text}");

    // What coercion spares the model: the real server rejects "2" for a number.
    let raw = call_tool(&server, "get-sum", &object(&model_wrote)).unwrap();
    assert_eq!(raw["isError"], true, "{raw:#}");
    assert!(!text_of(&raw).contains("is 5"), "{raw:#}");
}

#[test]
fn an_unknown_server_tool_is_answered_not_panicked() {
    let everything = reference_server("server-everything");
    let server = spec("everything", &["node", &everything, "stdio"]);
    // The reference SDK answers an unknown tool with an error result; a
    // server that answered with a JSON-RPC error would give an Err naming
    // the server and the tool instead.
    match call_tool(&server, "no-such-tool", "{}") {
        Ok(result) => assert_eq!(result["isError"], true, "{result:#}"),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("`everything`") && text.contains("`no-such-tool`"),
                "{text}"
            );
        }
    }
}

/// Issue 12 item 3: strict checking refuses what the real server rejects and passes what it
/// accepts. server-everything's `get-resource-links` takes a `count` from 1 to 10, a bound the
/// lenient rules do not read.
#[test]
fn strict_checking_agrees_with_the_real_server() {
    let fx = Fixture::new(&[("policies/tools/t.toml", TOOL)]);
    let everything = reference_server("server-everything");
    let command = ["node", everything.as_str(), "stdio"];
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = {}\nsnapshot = \"everything.json\"\nallow = [\"get-resource-links\", \"get-sum\"]\n",
            toml_list(&command)
        ),
    );
    let out = stdout(fx.path(), &["discover"], 0);
    assert!(out.contains("ok   everything:"), "{out}");
    let server = spec("everything", &command);

    let too_many = json!({"count": 50});
    let turn = json!({"calls": [
        {"id": "l", "name": "mcp.everything.get-resource-links", "arguments": too_many}
    ]});
    let report = check(&fx, &turn, 1);
    let call = &report["calls"][0];
    assert_eq!(call["status"], "refused", "{report:#}");
    let problem = &call["problems"][0];
    assert_eq!(problem["code"], "schema-mismatch", "{report:#}");
    assert_eq!(
        (&problem["argument"], &problem["keyword"], &problem["limit"]),
        (&json!("count"), &json!("maximum"), &json!(10))
    );
    assert_eq!(
        problem["message"],
        "tool \"mcp.everything.get-resource-links\": argument \"count\" must be at most 10; got the number 50",
        "{report:#}"
    );
    let raw = call_tool(&server, "get-resource-links", &object(&too_many)).unwrap();
    assert_eq!(raw["isError"], true, "the server rejects it too: {raw:#}");

    // The twins: a count in range, and a sum whose "2" the cast makes a number, pass the check
    // and the server accepts exactly what the check forwards.
    let turn = json!({"calls": [
        {"id": "l", "name": "mcp.everything.get-resource-links", "arguments": {"count": "3"}},
        {"id": "s", "name": "mcp.everything.get-sum", "arguments": {"a": "2", "b": 3}}
    ]});
    let report = check(&fx, &turn, 0);
    assert_eq!(report["verdict"], "run", "{report:#}");
    let links = &report["calls"][0]["arguments"];
    assert_eq!(links, &json!({"count": 3}));
    let result = call_tool(&server, "get-resource-links", &object(links)).unwrap();
    assert_ne!(result["isError"], true, "{result:#}");
    let sum = &report["calls"][1]["arguments"];
    let result = call_tool(&server, "get-sum", &object(sum)).unwrap();
    assert_ne!(result["isError"], true, "{result:#}");
    assert!(text_of(&result).contains("is 5"), "{result:#}");
}

/// Issue 24, defect 9: `call_tool` sent the arguments through rmcp's map of
/// `serde_json` values, so `18446744073709551616` reached the server as
/// `1.8446744073709552e+19` and an integer written `-0` as `-0.0`, where
/// docs/check.md says numbers go through as written. The official MCP
/// Python SDK's server shows the difference (its JSON reader keeps a big
/// integer an `int` and `-0` the integer 0; JavaScript servers read both
/// forms as the same number): it answers the `repr` of what it received.
#[test]
fn numbers_reach_the_server_as_the_model_wrote_them() {
    use muster::check::{CheckOptions, OfferedPlan, Status, Turn, check_turn};
    let python = common::python_sdk();
    let fx = Fixture::new(&[(
        "echo_server.py",
        "from typing import Any\n\
         from mcp.server.mcpserver import MCPServer\n\
         server = MCPServer(\"echo\")\n\
         @server.tool()\n\
         def echo(n: Any = None, items: Any = None) -> str:\n    \
             \"\"\"Answers the Python repr of what it received.\"\"\"\n    \
             return repr({\"n\": n, \"items\": items})\n\
         server.run()\n",
    )]);
    let plan = json!({"format_version": 3, "roster": [{"name": "echo", "source": "mcp",
        "check": "strict", "input_schema": {"type": "object", "properties": {
            "n": {"type": "integer"}, "items": {"type": "array", "items": {"type": "integer"}}}}}],
        "deferred": [], "findings": []});
    let plan = OfferedPlan::from_json(&plan.to_string(), Path::new("plan.json")).unwrap();
    let turn = r#"{"calls": [{"id": "1", "name": "echo",
        "arguments": {"n": 18446744073709551616, "items": [-0, 7]}}]}"#;
    let turn = Turn::from_json(turn, Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    assert_eq!(
        report.calls[0].status,
        Status::Ok,
        "{:?}",
        report.calls[0].problems
    );
    let text = report.calls[0]
        .arguments_text()
        .expect("an ok call's arguments");
    assert_eq!(text, r#"{"n":18446744073709551616,"items":[-0,7]}"#);
    let script = fx.path().join("echo_server.py");
    let server = spec(
        "echo",
        &[python.to_str().unwrap(), script.to_str().unwrap()],
    );
    let result = call_tool(&server, "echo", &text).unwrap();
    assert_eq!(
        text_of(&result),
        "{'n': 18446744073709551616, 'items': [0, 7]}",
        "{result}"
    );
}

/// Issue 34: `call_tool` speaks through the one MCP client, so it negotiates as the gateway
/// does: the official Python SDK's server, which speaks 2026-07-28, is reached through
/// `server/discover` at that revision (the old `call_tool` asked `initialize` for 2025-06-18
/// only, and the server answered at that).
#[test]
fn call_tool_negotiates_the_newest_revision_the_server_speaks() {
    let python = common::python_sdk();
    let fx = Fixture::new(&[(
        "version_server.py",
        "from mcp.server.mcpserver import MCPServer, Context\n\
         server = MCPServer(\"version\")\n\
         @server.tool()\n\
         def version(ctx: Context) -> str:\n    \
             \"\"\"Answers the protocol revision of the request.\"\"\"\n    \
             return str(ctx.protocol_version)\n\
         server.run()\n",
    )]);
    let script = fx.path().join("version_server.py");
    let server = spec(
        "version",
        &[python.to_str().unwrap(), script.to_str().unwrap()],
    );
    let result = call_tool(&server, "version", "{}").unwrap();
    assert_eq!(text_of(&result), "2026-07-28", "{result}");
}
