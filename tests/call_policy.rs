//! Issue 30, item 2: a plan a caller sends to `muster call` or `POST
//! /v1/call` names the plan; what may reach a server is the plan the policy
//! makes. Edited plans (a fixed value dropped, `only` widened, a schema
//! loosened, a roster entry added for a tool the policy cuts) are refused
//! and nothing reaches the real filesystem and memory servers: the tests
//! look at what the servers would have written.
//!
//! Needs node and npm; the pinned packages are installed on first use.

mod common;

use std::path::{Path, PathBuf};

use common::{Fixture, Served, muster, reference_server, stdout};
use serde_json::{Value, json};

/// A policy over the filesystem server (a sandbox directory; `write_file`
/// writes only `allowed.txt`, `edit_file` takes only `path` and `edits`)
/// and the memory server (only `read_graph` allowed: `create_entities` is
/// cut `not-allowed`), discovered, with the default plan in `plan.json`.
struct Setup {
    fx: Fixture,
    plan: Value,
    sandbox: PathBuf,
    graph: PathBuf,
}

fn setup() -> Setup {
    let fs = reference_server("server-filesystem");
    let memory = reference_server("server-memory");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 40\ntokens = 60000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    let sandbox = fx.path().join("sandbox");
    std::fs::create_dir(&sandbox).unwrap();
    let sandbox = sandbox.canonicalize().unwrap();
    let graph = fx.path().join("graph.jsonl");
    let allowed = sandbox.join("allowed.txt");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"fs\"\ncommand = [\"node\", {fs:?}, {sandbox:?}]\nsnapshot = \"fs.json\"\n\
             allow = [\"write_file\", \"edit_file\", \"list_allowed_directories\"]\n\n\
             [mcp.params.write_file]\npath = {{ value = {allowed:?} }}\n\n\
             [mcp.only]\nedit_file = [\"path\", \"edits\"]\n\n\
             [[mcp]]\nname = \"memory\"\ncommand = [\"node\", {memory:?}]\nsnapshot = \"memory.json\"\n\
             env = {{ MEMORY_FILE_PATH = {graph:?} }}\nallow = [\"read_graph\"]\n",
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let text = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &text);
    Setup {
        fx,
        plan: serde_json::from_str(&text).unwrap(),
        sandbox,
        graph,
    }
}

impl Setup {
    /// Everything in the sandbox, sorted.
    fn written(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.sandbox)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The roster entry named `name` of `plan`.
    fn entry<'p>(plan: &'p mut Value, name: &str) -> &'p mut Value {
        plan["roster"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is offered"))
    }

    /// Each edit a caller could make to widen what runs, with the turn that
    /// would use it.
    fn edits(&self) -> Vec<(&'static str, Value, Value)> {
        let evil = self.sandbox.join("evil.txt").to_string_lossy().into_owned();
        let made = self.sandbox.join("made.txt").to_string_lossy().into_owned();
        let mut fixed = self.plan.clone();
        let write = Self::entry(&mut fixed, "mcp.fs.write_file");
        write["fixed"] = json!({});
        write["input_schema"]["properties"]["path"] = json!({"type": "string"});
        let mut only = self.plan.clone();
        let edit = Self::entry(&mut only, "mcp.fs.edit_file");
        edit["only"] = Value::Null;
        edit["unknown_arguments"] = json!("pass");
        let mut schema = self.plan.clone();
        let write = Self::entry(&mut schema, "mcp.fs.write_file");
        write["input_schema"]["additionalProperties"] = json!(true);
        write["unknown_arguments"] = json!("pass");
        let mut extra = self.plan.clone();
        extra["roster"].as_array_mut().unwrap().push(json!({
            "name": "mcp.memory.create_entities",
            "provider_name": "mcp__memory__create_entities",
            "source": "mcp", "server": "memory", "tool": "create_entities",
            "input_schema": {"type": "object"}, "fixed": {}, "only": null,
            "unknown_arguments": "pass", "coerce": false, "check": "lenient",
        }));
        let write_evil = turn("mcp__fs__write_file", json!({"path": evil, "content": "x"}));
        vec![
            ("fixed", fixed, write_evil),
            (
                "only",
                only,
                turn(
                    "mcp__fs__edit_file",
                    json!({"path": made, "edits": [], "dryRun": false, "extra": 1}),
                ),
            ),
            (
                "input_schema",
                schema,
                turn("mcp__fs__write_file", json!({"content": "x", "path": evil})),
            ),
            (
                "extra roster entry",
                extra,
                turn(
                    "mcp__memory__create_entities",
                    json!({"entities": [{"name": "Mallory", "entityType": "person", "observations": []}]}),
                ),
            ),
        ]
    }
}

fn turn(name: &str, arguments: Value) -> Value {
    json!({"calls": [{"id": "c1", "name": name, "arguments": arguments}]})
}

#[test]
fn muster_call_refuses_an_edited_plan_and_no_server_runs_it() {
    let s = setup();
    for (what, plan, turn) in s.edits() {
        s.fx.write("edited.json", &plan.to_string());
        s.fx.write("turn.json", &turn.to_string());
        let out = muster(s.fx.path())
            .args(["call", "--plan", "edited.json", "--turn", "turn.json"])
            .args(["--format", "json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains("edited.json"), "{what}: {err}");
        assert_eq!(s.written(), Vec::<String>::new(), "{what}");
        assert!(
            !s.graph.exists(),
            "{what}: the memory server wrote its graph"
        );
    }
    // The plan as muster printed it runs, with the policy's fixed path.
    s.fx.write(
        "turn.json",
        &turn("mcp__fs__write_file", json!({"content": "x"})).to_string(),
    );
    stdout(
        s.fx.path(),
        &["call", "--plan", "plan.json", "--turn", "turn.json"],
        0,
    );
    assert_eq!(s.written(), ["allowed.txt"]);
    // A plan the policy no longer makes is `plan-changed` (exit 1), and
    // nothing runs.
    std::fs::remove_file(s.sandbox.join("allowed.txt")).unwrap();
    s.fx.edit("policies/mcp/servers.toml", "allowed.txt", "other.txt");
    let changed = stdout(s.fx.path(), &common::CALL_JSON, 1);
    let changed: Value = serde_json::from_str(&changed).unwrap();
    assert_eq!(changed["code"], "plan-changed");
    assert_eq!(s.written(), Vec::<String>::new());
}

/// `muster serve` on a free loopback port, stopped on drop.
struct Serve {
    served: Served,
}

impl Serve {
    fn start(dir: &Path) -> Self {
        let served = Served::start(dir, &[], &[]);
        Self { served }
    }

    fn call(&self, body: &Value) -> (u16, Value) {
        let response = common::http_client()
            .post(self.served.url("/v1/call"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .expect("POST /v1/call");
        let status = response.status().as_u16();
        (
            status,
            serde_json::from_str(&response.text().unwrap()).unwrap(),
        )
    }
}

#[test]
fn v1_call_refuses_an_edited_plan_and_no_server_runs_it() {
    let s = setup();
    let serve = Serve::start(s.fx.path());
    for (what, plan, turn) in s.edits() {
        let (status, problem) = serve.call(&json!({"plan": plan, "turn": turn}));
        assert_eq!(status, 422, "{what}: {problem}");
        assert_eq!(
            problem["problems"][0]["code"], "plan-not-from-policy",
            "{what}: {problem}"
        );
        assert_eq!(s.written(), Vec::<String>::new(), "{what}");
        assert!(
            !s.graph.exists(),
            "{what}: the memory server wrote its graph"
        );
    }
    // `/v1/check` judges the plan it is sent (nothing runs): the same edited
    // plan is read as sent there, and does not open the way for `/v1/call`.
    let (_, plan, edited_turn) = s.edits().remove(0);
    let checked = common::http_client()
        .post(serve.served.url("/v1/check"))
        .header("content-type", "application/json")
        .body(json!({"plan": plan, "turn": edited_turn}).to_string())
        .send()
        .unwrap();
    assert_eq!(checked.status().as_u16(), 200);
    let (status, _) = serve.call(&json!({"plan": plan, "turn": edited_turn}));
    assert_eq!(status, 422);
    assert_eq!(s.written(), Vec::<String>::new());
    // The plan as printed runs.
    let (status, answer) = serve.call(&json!({
        "plan": s.plan,
        "turn": turn("mcp__fs__write_file", json!({"content": "x"})),
    }));
    assert_eq!(
        (status, &answer["outcome"]),
        (200, &json!("ran")),
        "{answer}"
    );
    assert_eq!(s.written(), ["allowed.txt"]);
}
