//! Open chats across a reviewed change (docs/gateway.md, "When the policy
//! changes under a chat"): the official MCP Python SDK at its default
//! settings keeps one chat open through `muster serve` while the servers
//! are discovered again, the policies reloaded, and then a tool the chat
//! was pinned to is changed and reloaded; over stdio, a chat kept in
//! SQLite is resumed by a new `muster mcp` after such a change. Real
//! reference servers from npm behind it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use common::{Fixture, Served, python_sdk, reference_server, stdout};
use serde_json::Value;

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// The everything server with a fixed `message` for `echo`, under `extra`
/// policy settings; already discovered.
fn setup(extra: &str) -> Fixture {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        &format!(
            "[caps]\nitems = 8\ntokens = 9000\n[deferral]\nenabled = true\n{extra}\n\
             [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n"
        ),
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {everything:?}]\nsnapshot = \"everything.json\"\n\
             allow = [\"echo\", \"get-sum\"]\n\n\
             [mcp.params.echo]\nmessage = {{ value = \"fixed by policy\" }}\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

/// A reviewed change to `echo`: its fixed value.
fn change_echo(fx: &Fixture) {
    fx.edit(
        "policies/mcp/servers.toml",
        "fixed by policy",
        "fixed by the reviewed policy",
    );
}

/// `follow.py` running, one step answered per [`Client::step`].
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Client {
    fn start(args: &[&str], dir: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-clients/follow.py");
        let mut child = Command::new(python_sdk())
            .arg(script)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run the MCP Python SDK client");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// What the client saw at its next step.
    fn seen(&mut self) -> Value {
        let line = self
            .lines
            .next()
            .expect("the client printed a step")
            .expect("read the client");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Lets the client take its next step and returns what it saw.
    fn step(&mut self) -> Value {
        writeln!(self.stdin, "go").unwrap();
        self.seen()
    }

    fn finish(mut self) {
        writeln!(self.stdin).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the Python client failed: {status}");
    }
}

/// A step in which everything the chat does works.
fn assert_works(seen: &Value, echo: &str) {
    assert!(seen.get("error").is_none(), "{seen}");
    assert_eq!(seen["sum"]["text"], "The sum of 2 and 3 is 5.", "{seen}");
    assert_eq!(seen["echo"]["text"], format!("Echo: {echo}"), "{seen}");
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__everything__get-sum"),
        "{seen}"
    );
}

/// A running `muster serve` on a free loopback port, stopped on drop.
struct Serve {
    served: Served,
}

impl Serve {
    fn start(fx: &Fixture) -> Self {
        let served = Served::start(fx.path(), &[], &[]);
        Self { served }
    }

    fn reload(&self) {
        let answer = common::http_client()
            .post(self.served.url("/v1/admin/reload"))
            .send()
            .expect("reload");
        assert_eq!(answer.status(), 200, "{:?}", answer.text());
    }
}

#[test]
fn an_open_chat_keeps_listing_and_calling_across_reloads_and_a_reviewed_change() {
    let fx = setup("");
    let serve = Serve::start(&fx);
    let url = serve.served.url("/mcp/chats/kept-1");
    let mut client = Client::start(&["http", &url], fx.path());
    let first = client.seen();
    assert_eq!(first["protocol_version"], "2026-07-28", "{first}");
    assert_works(&first, "fixed by policy");

    // Rediscovery and a reload that change nothing the chat holds.
    stdout(fx.path(), &["discover"], 0);
    serve.reload();
    let second = client.step();
    assert_works(&second, "fixed by policy");
    assert!(second["list_meta"].is_null(), "{second}");

    // A reviewed change to a tool the chat was pinned to: the chat follows
    // it, is told its list changed, and the report says what changed.
    change_echo(&fx);
    serve.reload();
    let third = client.step();
    assert_works(&third, "fixed by the reviewed policy");
    let report = &third["list_meta"]["repinned"];
    assert_eq!(report["status"], "tool-pin-mismatch", "{third}");
    let changed: Vec<&Value> = report["changes"].as_array().unwrap().iter().collect();
    assert!(
        changed
            .iter()
            .any(|c| c["name"] == "mcp.everything.echo" && c["change"] == "changed"),
        "{third}"
    );
    assert!(
        !changed
            .iter()
            .any(|c| c["name"] == "mcp.everything.get-sum"),
        "an unchanged tool is not reported: {third}"
    );
    let told = third["changes"].as_array().unwrap();
    assert_eq!(
        told.iter().filter(|c| *c == "ToolsListChanged").count(),
        1,
        "one list change on the listen stream: {third}"
    );
    // The chat goes on after the change as any other.
    let fourth = client.step();
    assert_works(&fourth, "fixed by the reviewed policy");
    assert!(fourth["list_meta"].is_null(), "{fourth}");
    client.finish();
}

#[test]
fn chats_refuse_keeps_the_old_answer_and_session_end_ends_a_kept_chat() {
    let fx = setup("[lock]\nchats = \"refuse\"\n");
    let policies = fx.path().join("policies");
    let store = format!("sqlite:{}", fx.path().join("chats.db").display());
    let stdio = |chat: &str| -> Client {
        Client::start(
            &["stdio", MUSTER, policies.to_str().unwrap(), chat, &store],
            fx.path(),
        )
    };
    let mut client = stdio("kept-2");
    assert_works(&client.seen(), "fixed by policy");
    client.finish();

    change_echo(&fx);
    let mut client = stdio("kept-2");
    let refused = client.seen();
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    client.finish();

    // Ended by a command, not by SQL: the same id starts afresh.
    let ended = stdout(
        fx.path(),
        &["session", "end", "kept-2", "--sessions", &store],
        0,
    );
    assert!(ended.contains("kept-2"), "{ended}");
    stdout(
        fx.path(),
        &["session", "end", "kept-2", "--sessions", &store],
        1,
    );
    let mut client = stdio("kept-2");
    assert_works(&client.seen(), "fixed by the reviewed policy");
    client.finish();
}

#[test]
fn a_chat_kept_in_sqlite_follows_a_reviewed_change_across_restarts() {
    let fx = setup("");
    let policies = fx.path().join("policies");
    let store = format!("sqlite:{}", fx.path().join("chats.db").display());
    let stdio = || -> Client {
        Client::start(
            &[
                "stdio",
                MUSTER,
                policies.to_str().unwrap(),
                "kept-3",
                &store,
            ],
            fx.path(),
        )
    };
    let mut client = stdio();
    assert_works(&client.seen(), "fixed by policy");
    client.finish();
    change_echo(&fx);
    let mut client = stdio();
    let seen = client.seen();
    assert_works(&seen, "fixed by the reviewed policy");
    assert_eq!(seen["list_meta"]["repinned"]["status"], "tool-pin-mismatch");
    client.finish();
}
