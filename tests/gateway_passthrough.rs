//! `resources/*` and `prompts/*` through the gateway (issue 31, item 4):
//! the official MCP Python SDK lists server-everything's prompts, resources
//! and templates through `muster mcp` (the SDK's default protocol and the
//! `initialize` handshake) and through `muster serve` (a chat's path and
//! plain `/mcp`), gets prompts with arguments, reads a listed resource and
//! resources made from templates, and is refused an unknown prompt and URI
//! with typed codes. What it gets is what it gets from the server directly,
//! names namespaced as the gateway names tools. Raw JSON-RPC over `muster
//! mcp` shows which servers a chat reaches (its agent's, with their flag on
//! and their switch on; no other is started), a URI two servers serve
//! refused as ambiguous, hostile text escaped, and the result budget.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use common::{Fixture, reference_server, stdout};
use muster::policy::mcp_name;
use muster::provider::{NamePolicy, spell};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// One server-everything block, discovered.
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
             allow = [\"get-sum\"]\n"
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    fx
}

/// `name` on server `everything`, as the gateway spells it.
fn spelt(name: &str) -> String {
    spell(&mcp_name("everything", name), &NamePolicy::default()).name
}

/// What a client through muster must see, against what it sees directly.
fn assert_passed(seen: &Value, direct: &Value) {
    assert_eq!(
        seen["capabilities"],
        json!({"prompts": true, "resources": true}),
        "{seen}"
    );
    // Each list: the server's own, in its order, each name namespaced.
    let renamed = |list: &Value| -> Value {
        let mut list = list.clone();
        for item in list.as_array_mut().unwrap() {
            let name = item["name"].as_str().unwrap().to_string();
            item["name"] = spelt(&name).into();
        }
        list
    };
    for key in ["prompts", "resources", "templates"] {
        assert!(!direct[key].as_array().unwrap().is_empty(), "{direct}");
        assert_eq!(seen[key], renamed(&direct[key]), "{key}: {seen}");
    }
    assert_eq!(seen["prompts"][1]["name"], "mcp__everything__args-prompt");
    for key in [
        "args_prompt",
        "simple_prompt",
        "resource_prompt",
        "read_listed",
        "read_template",
        "read_blob_template",
    ] {
        assert!(!direct[key].is_null(), "{direct}");
        assert_eq!(seen[key], direct[key], "{key}: {seen}");
    }
    assert_eq!(
        seen["args_prompt"]["messages"][0]["text"],
        "What's weather in Paris, Texas?"
    );
    let unknown = &seen["unknown_resource"];
    assert_eq!(unknown["code"], -32602, "{seen}");
    assert_eq!(unknown["data"]["code"], "unknown-resource", "{seen}");
    assert_eq!(unknown["data"]["uri"], "demo://nowhere/x", "{seen}");
    let unknown = &seen["unknown_prompt"];
    assert_eq!(unknown["code"], -32602, "{seen}");
    assert_eq!(unknown["data"]["code"], "unknown-prompt", "{seen}");
    // The server itself refuses them too, with no code of muster's.
    assert_eq!(direct["unknown_resource"]["code"], -32602, "{direct}");
    assert_eq!(direct["unknown_prompt"]["code"], -32602, "{direct}");
}

fn direct() -> Value {
    let everything = reference_server("server-everything");
    common::run_client(
        "passthrough.py",
        &["auto", "", "stdio", "node", &everything, "stdio"],
        None,
    )
}

#[test]
fn prompts_and_resources_reach_a_stdio_client_as_the_server_gives_them() {
    let fx = setup();
    let direct = direct();
    let policies = fx.path().join("policies");
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let args = [
            mode,
            "mcp__everything__",
            "stdio",
            MUSTER,
            "mcp",
            "--policies",
            policies.to_str().unwrap(),
        ];
        let seen = common::run_client("passthrough.py", &args, Some(fx.path()));
        assert_eq!(seen["protocol_version"], version, "{seen}");
        assert_passed(&seen, &direct);
    }
}

#[test]
fn prompts_and_resources_reach_an_http_client_at_a_chat_and_at_plain_mcp() {
    let fx = setup();
    let direct = direct();
    let serve = common::Served::start(fx.path(), &[], &[]);
    for path in ["/mcp/chats/passthrough-1", "/mcp"] {
        let url = serve.url(path);
        let seen = common::run_client(
            "passthrough.py",
            &["auto", "mcp__everything__", "http", &url],
            None,
        );
        assert_passed(&seen, &direct);
    }
}

/// `muster mcp` driven line by line.
struct Stdio_ {
    child: Child,
    lines: BufReader<ChildStdout>,
    next: u64,
}

impl Stdio_ {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(MUSTER)
            .current_dir(dir)
            .args(["mcp", "--policies", "policies"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("muster mcp");
        let lines = BufReader::new(child.stdout.take().unwrap());
        let mut gateway = Self {
            child,
            lines,
            next: 0,
        };
        let init = gateway.ask(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        gateway
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to `method` with `params`.
    fn ask(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let mut line = String::new();
            self.lines.read_line(&mut line).unwrap();
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    fn names(&mut self, method: &str, key: &str) -> Vec<String> {
        let answer = self.ask(method, json!({}));
        answer["result"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// server-everything three times: `everything` (its results held to 200
/// tokens), `gated` (only with the flag `extra`), `switched` (resources
/// and prompts off); agent `other` uses `gated` only. Each marks a file
/// when started, so a server never reached is seen as such.
fn three_servers() -> Fixture {
    let everything = reference_server("server-everything");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n\
         [[agent]]\nname = \"other\"\nversion = 1\nservers = [\"gated\"]\n",
    )]);
    let block = |name: &str, extra: &str| {
        format!(
            "[[mcp]]\nname = \"{name}\"\ncommand = [\"sh\", \"-c\", \"touch started-{name}; exec node {everything}\"]\n\
             snapshot = \"{name}.json\"\nallow = [\"get-sum\"]\n{extra}\n"
        )
    };
    fx.write(
        "policies/mcp/servers.toml",
        &[
            block("everything", "max_result_tokens = 200"),
            block("gated", "when = \"extra\""),
            block("switched", "resources = false\nprompts = false"),
        ]
        .concat(),
    );
    stdout(fx.path(), &["discover"], 0);
    for name in ["everything", "gated", "switched"] {
        std::fs::remove_file(fx.path().join(format!("started-{name}"))).unwrap();
    }
    fx
}

const DOC: &str = "demo://resource/static/document/architecture.md";

#[test]
fn a_chat_reaches_only_its_agent_s_servers_with_their_flag_and_switch_on() {
    let fx = three_servers();
    let started = |name: &str| fx.path().join(format!("started-{name}")).exists();

    let mut chat = Stdio_::start(fx.path(), &[]);
    let prompts = chat.names("prompts/list", "prompts");
    assert_eq!(prompts.len(), 4, "{prompts:?}");
    assert!(
        prompts.iter().all(|p| p.starts_with("mcp__everything__")),
        "{prompts:?}"
    );
    let read = chat.ask("resources/read", json!({"uri": DOC}));
    let contents = read["result"]["contents"]
        .as_array()
        .unwrap_or_else(|| panic!("{read}"));
    // Held to `everything`'s budget of 200 tokens: cut, the note last,
    // under the URI read, the counts in muster's `_meta`.
    assert_eq!(contents.len(), 2, "{read}");
    assert_eq!(contents[0]["uri"], DOC);
    let note = contents[1]["text"].as_str().unwrap();
    assert!(note.starts_with("[muster result-cut]"), "{note}");
    assert_eq!(contents[1]["uri"], DOC);
    let counts = &read["result"]["_meta"]["dev.muster/gateway"]["result"];
    assert_eq!(counts["cut"], true, "{read}");
    assert!(counts["tokens_after"].as_u64().unwrap() <= 200, "{read}");
    assert!(counts["tokens_before"].as_u64().unwrap() > 200, "{read}");
    drop(chat);
    assert!(started("everything"));
    assert!(
        !started("gated"),
        "a server whose flag is off is never started"
    );
    assert!(
        !started("switched"),
        "a server switched off is never started"
    );

    // With the flag on, `gated` serves the same URIs: a read is ambiguous.
    let mut chat = Stdio_::start(fx.path(), &["--flag", "extra"]);
    let prompts = chat.names("prompts/list", "prompts");
    assert_eq!(prompts.len(), 8, "{prompts:?}");
    assert_eq!(
        prompts[4], "mcp__gated__simple-prompt",
        "server name order: {prompts:?}"
    );
    for uri in [DOC, "demo://resource/dynamic/text/1"] {
        let refused = chat.ask("resources/read", json!({"uri": uri}));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(
            refused["error"]["data"]["code"], "ambiguous-resource",
            "{refused}"
        );
        assert_eq!(
            refused["error"]["data"]["servers"],
            json!(["everything", "gated"])
        );
    }
    let got = chat.ask(
        "prompts/get",
        json!({"name": "mcp__gated__args-prompt", "arguments": {"city": "Oslo"}}),
    );
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "What's weather in Oslo?",
        "{got}"
    );
    drop(chat);
    assert!(!started("switched"));

    // Agent `other` uses `gated` only, whose flag is off here: nothing.
    let mut chat = Stdio_::start(fx.path(), &["--agent", "other"]);
    assert!(chat.names("prompts/list", "prompts").is_empty());
    assert!(chat.names("resources/list", "resources").is_empty());
    let refused = chat.ask("resources/read", json!({"uri": DOC}));
    assert_eq!(
        refused["error"]["data"]["code"], "unknown-resource",
        "{refused}"
    );
    let refused = chat.ask(
        "prompts/get",
        json!({"name": "mcp__everything__simple-prompt"}),
    );
    assert_eq!(
        refused["error"]["data"]["code"], "unknown-prompt",
        "{refused}"
    );
    drop(chat);
    assert!(!started("switched"));
}

#[test]
fn hostile_and_malformed_requests_get_escaped_typed_errors() {
    let fx = setup();
    let mut chat = Stdio_::start(fx.path(), &[]);
    let refused = chat.ask(
        "resources/read",
        json!({"uri": "demo://x/\u{202e}evil\u{1b}[2J"}),
    );
    let text = refused.to_string();
    assert_eq!(refused["error"]["code"], -32602, "{text}");
    assert_eq!(
        refused["error"]["data"]["code"], "unknown-resource",
        "{text}"
    );
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains('\u{202e}') && !message.contains('\u{1b}'),
        "{message}"
    );
    assert!(message.contains("\\u{202E}"), "{message}");
    let long = format!("demo://{}", "a".repeat(9_000));
    let refused = chat.ask("resources/read", json!({"uri": long}));
    assert_eq!(refused["error"]["data"]["code"], "invalid-uri", "{refused}");
    for (method, params) in [
        ("resources/read", json!({})),
        ("prompts/get", json!({"name": 3})),
        (
            "prompts/get",
            json!({"name": "mcp__everything__args-prompt", "arguments": [1]}),
        ),
        ("prompts/list", json!({"cursor": "c1"})),
    ] {
        let refused = chat.ask(method, params);
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }
    // A server's own refusal passes under its own code, naming the server.
    let refused = chat.ask(
        "prompts/get",
        json!({"name": "mcp__everything__resource-prompt", "arguments": {"resourceType": "Nope", "resourceId": "1"}}),
    );
    assert!(refused["error"]["code"].as_i64().is_some(), "{refused}");
    assert_eq!(
        refused["error"]["data"]["server"], "everything",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`everything`"),
        "{refused}"
    );
}

/// A scripted server whose lists muster must bound and sort out, and a
/// server that cannot start: what is passed on, what is skipped and why,
/// and where each list was cut, all said in `_meta`.
#[test]
fn odd_lists_are_bounded_and_what_is_left_out_is_named() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\n[[agent]]\nname = \"a\"\nversion = 1\ndefault = true\n",
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"odd\"\ncommand = [\"node\", {:?}, \"odd-lists\"]\nsnapshot = \"odd.json\"\n\
             [[mcp]]\nname = \"broken\"\ncommand = [\"./no-such-server\"]\nsnapshot = \"broken.json\"\n",
            script.to_str().unwrap()
        ),
    );
    stdout(fx.path(), &["discover", "--server", "odd"], 0);
    let mut chat = Stdio_::start(fx.path(), &[]);

    let listed = chat.ask("prompts/list", json!({}));
    let result = &listed["result"];
    let names: Vec<&str> = result["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mcp__odd__a__b", "mcp__odd__fine"], "{listed}");
    let own = &result["_meta"]["dev.muster/gateway"];
    assert_eq!(
        own["skipped"],
        json!([
            {"server": "odd", "name": "a__b", "code": "name-collision"},
            {"server": "odd", "name": "evil\\u{202E}", "code": "invalid-name"},
        ]),
        "{listed}"
    );
    assert_eq!(own["unavailable"][0]["server"], "broken", "{listed}");
    assert_eq!(
        own["unavailable"][0]["code"], "upstream-cannot-start",
        "{listed}"
    );
    let got = chat.ask("prompts/get", json!({"name": "mcp__odd__a__b"}));
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "got a.b",
        "the server is asked for its own name: {got}"
    );

    let listed = chat.ask("resources/list", json!({}));
    let result = &listed["result"];
    assert_eq!(result["resources"].as_array().unwrap().len(), 9_999);
    let own = &result["_meta"]["dev.muster/gateway"];
    assert_eq!(
        own["cut"],
        json!([{"server": "odd", "code": "list-cut", "kept": 10_000}])
    );
    assert_eq!(own["skipped"][0]["code"], "invalid-uri", "{own}");

    let listed = chat.ask("resources/templates/list", json!({}));
    let result = &listed["result"];
    assert_eq!(result["resourceTemplates"].as_array().unwrap().len(), 255);
    let own = &result["_meta"]["dev.muster/gateway"];
    assert_eq!(own["cut"][0]["kept"], 256, "{own}");
    assert_eq!(
        own["skipped"],
        json!([{"server": "odd", "name": "t0", "code": "invalid-uri"}])
    );
    assert_eq!(result["resourceTemplates"][0]["name"], "mcp__odd__t1");

    let read = chat.ask("resources/read", json!({"uri": "odd://t5/x"}));
    assert_eq!(
        read["result"]["contents"][0]["text"], "read odd://t5/x",
        "{read}"
    );
    let read = chat.ask("resources/read", json!({"uri": "odd://r/9/999"}));
    assert_eq!(
        read["result"]["contents"][0]["text"], "read odd://r/9/999",
        "{read}"
    );
    for past in ["odd://t270/x", "odd://r/10/0"] {
        let refused = chat.ask("resources/read", json!({"uri": past}));
        assert_eq!(
            refused["error"]["data"]["code"], "unknown-resource",
            "{refused}"
        );
    }
}
