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

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Fixture, HttpServer, inspector, reference_server, stdout};
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

/// A `muster mcp` process with piped stdio, stopped on drop.
struct Piped {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl Piped {
    fn start(policies: &Path) -> Self {
        Self::start_with(policies, &[], Stdio::null())
    }

    fn start_with(policies: &Path, env: &[(&str, &str)], stderr: Stdio) -> Self {
        let mut child = Command::new(MUSTER)
            .args(["mcp", "--policies"])
            .arg(policies)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start muster mcp");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Self { child, lines }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Sends `line` and reads its answer, passing over notifications.
    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        loop {
            let message = self.read();
            if message.get("id").is_some() {
                return message;
            }
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn bad_json_rpc_gets_its_codes_and_the_gateway_keeps_serving() {
    let fx = setup("");
    let mut gw = Piped::start(&fx.policies());
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap_or_else(|| panic!("{v}"));
    let parse = gw.ask("{not json");
    assert_eq!((code(&parse), &parse["id"]), (-32700, &Value::Null));
    let batch = gw.ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(code(&batch), -32600);
    let version = gw.ask(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#);
    assert_eq!((code(&version), &version["id"]), (-32600, &json!(2)));
    let null_id = gw.ask(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    assert_eq!(code(&null_id), -32600);
    let future = gw.ask(
        r#"{"jsonrpc":"2.0","id":"v","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#,
    );
    assert_eq!((code(&future), &future["id"]), (-32022, &json!("v")));
    assert_eq!(future["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(future["error"]["data"]["supported"][0], "2026-07-28");
    let discover = gw.ask(r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}}"#);
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let listen =
        gw.ask(r#"{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{}}"#);
    assert_eq!(code(&listen), -32602);
    // At most 16 subscriptions stay open on one connection.
    for i in 0..16 {
        gw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":"s{i}","method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}}}}}}"#
        ));
        let ack = gw.read();
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(format!("s{i}"))
        );
    }
    let seventeenth = gw.ask(
        r#"{"jsonrpc":"2.0","id":"s16","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#,
    );
    assert_eq!(
        (code(&seventeenth), &seventeenth["id"]),
        (-32602, &json!("s16"))
    );
    // resources/list passes through now (tests/gateway_passthrough.rs);
    // subscribing to a resource does not.
    let unknown = gw.ask(
        r#"{"jsonrpc":"2.0","id":"m","method":"resources/subscribe","params":{"uri":"x://y"}}"#,
    );
    assert_eq!((code(&unknown), &unknown["id"]), (-32601, &json!("m")));
    let no_name = gw.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#);
    assert_eq!(code(&no_name), -32602);
    let args = gw.ask(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp__everything__echo","arguments":[1]}}"#,
    );
    assert_eq!(code(&args), -32602);
    let init = gw.ask(r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}"#);
    assert_eq!(code(&init), -32602);
    let cursor =
        gw.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"x"}}"#);
    assert_eq!(code(&cursor), -32602);
    // A notification gets no answer; the next request still does.
    gw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let ping = gw.ask(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    let sum = gw.ask(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"mcp__everything__get-sum","arguments":{"a":1,"b":2}}}"#,
    );
    assert_eq!(
        sum["result"]["content"][0]["text"],
        "The sum of 1 and 2 is 3."
    );
}

#[test]
fn a_hung_or_dead_server_fails_only_its_own_calls() {
    let scripted =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let extra = format!(
        "[[mcp]]\nname = \"slow\"\ncommand = [\"node\", {s:?}, \"hang-calls\"]\nsnapshot = \"slow.json\"\ntimeout_secs = 5\npriority = 10\n\n\
         [[mcp]]\nname = \"dies\"\ncommand = [\"node\", {s:?}, \"exits-calling\"]\nsnapshot = \"dies.json\"\npriority = 10\n",
        s = scripted.to_str().unwrap()
    );
    let fx = setup(&extra);
    // A real server that dies as it starts: node cannot find its entry
    // point (recorded from the memory server's listing).
    std::fs::copy(
        fx.path().join("policies/mcp/memory.json"),
        fx.path().join("policies/mcp/crash.json"),
    )
    .unwrap();
    fx.write(
        "policies/mcp/crash.toml",
        "[[mcp]]\nname = \"crash\"\ncommand = [\"node\", \"/nonexistent/muster-test/index.js\"]\n\
         snapshot = \"crash.json\"\nallow = [\"read_graph\"]\npriority = 10\n",
    );
    let mut gw = Piped::start(&fx.policies());
    let call = |id: u32, name: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
        )
    };
    let hung = gw.ask(&call(1, "mcp__slow__alpha", r#"{"q":"x"}"#));
    assert_eq!(hung["result"]["isError"], true, "{hung}");
    let meta = &hung["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(
        (meta["code"].as_str(), meta["server"].as_str()),
        (Some("upstream-timed-out"), Some("slow"))
    );
    // Issue 31 item 9: the timeout as configured, not what a deadline left
    // ("4.999998578s").
    assert_eq!(
        hung["result"]["content"][0]["text"],
        "MCP server `slow` did not answer within 5 s"
    );
    let dead = gw.ask(&call(2, "mcp__dies__alpha", r#"{"q":"x"}"#));
    let meta = &dead["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(meta["code"], "upstream-exited", "{dead}");
    let text = dead["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`dies`") && text.contains("exited"), "{text}");
    // A server that cannot start is named once, and what it said on stderr
    // comes after what happened.
    let crashed = gw.ask(&call(5, "mcp__crash__read_graph", "{}"));
    let meta = &crashed["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(meta["code"], "upstream-cannot-start", "{crashed}");
    let text = crashed["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.matches("crash`").count(), 1, "{text}");
    assert!(
        text.starts_with(
            "MCP server `crash` could not be started: exited (closed its stdout) before answering; its stderr ends with: "
        ),
        "{text}"
    );
    // Within its backoff the dead server fails fast, by name.
    let again = gw.ask(&call(3, "mcp__dies__alpha", r#"{"q":"x"}"#));
    let meta = &again["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(meta["code"], "upstream-down", "{again}");
    // The other servers go on.
    let sum = gw.ask(&call(4, "mcp__everything__get-sum", r#"{"a":20,"b":22}"#));
    assert_eq!(
        sum["result"]["content"][0]["text"],
        "The sum of 20 and 22 is 42."
    );
}

fn tool_call(id: u32, name: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
    )
}

#[test]
fn a_server_that_changes_a_tool_under_a_chat_is_refused_until_reviewed() {
    let scripted =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let extra = format!(
        "[[mcp]]\nname = \"rug\"\ncommand = [\"node\", {s:?}, \"turns-destructive\"]\nsnapshot = \"rug.json\"\npriority = 10\n",
        s = scripted.to_str().unwrap()
    );
    let fx = setup(&extra);
    // The memory server was recorded with another description of
    // create_entities than it lists now (as after an upgrade).
    let snapshot = fx.path().join("policies/mcp/memory.json");
    let text = std::fs::read_to_string(&snapshot).unwrap();
    let mut recorded: Value = serde_json::from_str(&text).unwrap();
    for tool in recorded["tools"].as_array_mut().unwrap() {
        if tool["name"] == "create_entities" {
            tool["description"] = json!("Create entities (as recorded before the upgrade).");
        }
    }
    std::fs::write(&snapshot, serde_json::to_string_pretty(&recorded).unwrap()).unwrap();
    let graph = fx.path().join("graph.jsonl");

    let mut gw = Piped::start(&fx.policies());
    // The rug pull: read-only when listed, destructive after its first call.
    let first = gw.ask(&tool_call(1, "mcp__rug__alpha", r#"{"q":"x"}"#));
    assert_eq!(first["result"]["isError"], Value::Null, "{first}");
    assert!(
        first["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha ran")
    );
    let second = gw.ask(&tool_call(2, "mcp__rug__alpha", r#"{"q":"x"}"#));
    assert_eq!(second["result"]["isError"], true, "{second}");
    let drift = &second["result"]["_meta"]["dev.muster/gateway"]["drift"];
    assert_eq!(drift["server"], "rug");
    assert_eq!(drift["refused"], true);
    assert!(
        drift["changes"]
            .as_array()
            .unwrap()
            .contains(&json!("safety-hint-weakened")),
        "{drift}"
    );
    let text = second["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`rug`") && text.contains("muster lock"),
        "{text}"
    );
    // The upgraded memory server's changed tool is refused before it runs:
    // the graph file is never written.
    let listed = gw.ask(r#"{"jsonrpc":"2.0","id":30,"method":"tools/list"}"#);
    let offered = listed["result"]["tools"].to_string();
    if !offered.contains("mcp__memory__create_entities") {
        let load = gw.ask(&tool_call(
            31,
            "tools__load",
            r#"{"query":"mcp__memory__create_entities"}"#,
        ));
        assert_eq!(load["result"]["isError"], false, "{load}");
    }
    let created = gw.ask(&tool_call(
        3,
        "mcp__memory__create_entities",
        r#"{"entities":[{"name":"Ada","entityType":"person","observations":[]}]}"#,
    ));
    let drift = &created["result"]["_meta"]["dev.muster/gateway"]["drift"];
    assert_eq!(drift["changes"], json!(["description"]), "{created}");
    assert!(!graph.exists(), "a drifted tool reached its server");
    // Unchanged tools of the same servers go on.
    let sum = gw.ask(&tool_call(
        4,
        "mcp__everything__get-sum",
        r#"{"a":1,"b":2}"#,
    ));
    assert_eq!(
        sum["result"]["content"][0]["text"],
        "The sum of 1 and 2 is 3."
    );
    drop(gw);

    // lock.on_mismatch = "warn": forwarded, and the record says it.
    let policy = fx.path().join("policies/muster.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(&policy, format!("{text}[lock]\non_mismatch = \"warn\"\n")).unwrap();
    let mut gw = Piped::start(&fx.policies());
    gw.ask(&tool_call(1, "mcp__rug__alpha", r#"{"q":"x"}"#));
    let warned = gw.ask(&tool_call(2, "mcp__rug__alpha", r#"{"q":"y"}"#));
    assert!(
        warned["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha ran"),
        "{warned}"
    );
    let drift = &warned["result"]["_meta"]["dev.muster/gateway"]["drift"];
    assert_eq!(
        drift["refused"], false,
        "the answer says what the log says: {warned}"
    );
}

#[test]
fn a_server_over_streamable_http_is_called_and_its_header_secret_stays_out() {
    let remote = HttpServer::start("server-everything");
    let fx = setup("");
    let servers = fx.path().join("policies/mcp/servers.toml");
    let mut text = std::fs::read_to_string(&servers).unwrap();
    text.push_str(&format!(
        "\n[[mcp]]\nname = \"remote\"\nurl = \"{url}\"\nsnapshot = \"remote.json\"\n\
         headers = {{ Authorization = \"Bearer ${{MUSTER_TEST_SECRET}}\" }}\n\
         allow = [\"get-sum\"]\npriority = 20\n\n\
         [[mcp]]\nname = \"nokey\"\nurl = \"{url}\"\nsnapshot = \"nokey.json\"\n\
         headers = {{ Authorization = \"Bearer ${{MUSTER_TEST_UNSET}}\" }}\n\
         allow = [\"get-sum\"]\npriority = 20\n",
        url = remote.url("/mcp")
    ));
    std::fs::write(&servers, text).unwrap();
    const SECRET: &str = "s3cr3t-7d1c9e";
    // Discovered over HTTP too; `nokey` is recorded from `remote`'s listing
    // (its own cannot be discovered without its variable).
    let discovered = common::muster(fx.path())
        .args(["discover", "--server", "remote"])
        .env("MUSTER_TEST_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(discovered.status.success(), "{discovered:?}");
    std::fs::copy(
        fx.path().join("policies/mcp/remote.json"),
        fx.path().join("policies/mcp/nokey.json"),
    )
    .unwrap();
    let log = fx.path().join("gateway.log");
    let mut gw = Piped::start_with(
        &fx.policies(),
        &[("MUSTER_TEST_SECRET", SECRET), ("MUSTER_TEST_UNSET", "")],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let mut answers = String::new();
    let sum = gw.ask(&tool_call(1, "mcp__remote__get-sum", r#"{"a":40,"b":2}"#));
    answers.push_str(&sum.to_string());
    assert_eq!(
        sum["result"]["content"][0]["text"], "The sum of 40 and 2 is 42.",
        "{sum}"
    );
    // Several calls share one session (and one listing).
    for id in 2..6 {
        let again = gw.ask(&tool_call(id, "mcp__remote__get-sum", r#"{"a":1,"b":1}"#));
        assert_eq!(
            again["result"]["content"][0]["text"],
            "The sum of 1 and 1 is 2."
        );
    }
    // An empty variable is filled as empty; a refused call never leaves.
    let refused = gw.ask(&tool_call(7, "mcp__remote__get-sum", r#"{"a":"x","b":1}"#));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    answers.push_str(&refused.to_string());
    drop(gw);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(r#""server":"remote""#), "{logged}");
    for text in [&logged, &answers] {
        assert!(!text.contains(SECRET), "the header's value leaked: {text}");
    }

    // A variable that is not set: the server is not reached, and the
    // error names the variable, the server and the header.
    let mut gw = Piped::start(&fx.policies());
    let unset = gw.ask(&tool_call(1, "mcp__nokey__get-sum", r#"{"a":1,"b":2}"#));
    let meta = &unset["result"]["_meta"]["dev.muster/gateway"]["upstream"];
    assert_eq!(meta["code"], "upstream-cannot-start", "{unset}");
    let text = unset["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("MUSTER_TEST_UNSET") && text.contains("headers.Authorization"),
        "{text}"
    );
}

/// A running `muster serve` on a free loopback port, stopped on drop.
struct Serve {
    child: std::process::Child,
    addr: String,
}

impl Serve {
    fn start(fx: &Fixture) -> Self {
        let mut child = Command::new(MUSTER)
            .current_dir(fx.path())
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("MUSTER_ADMIN_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start muster serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = common::serve_address(&mut lines);
        // Keep draining stderr so the service never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Self { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_python_sdk_runs_the_whole_flow_over_streamable_http() {
    let fx = setup("");
    let serve = Serve::start(&fx);
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
    let serve = Serve::start(&fx);
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
    let serve = Serve::start(&fx);
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
    let deleted = client
        .delete(serve.url("/mcp"))
        .header("mcp-session-id", &session)
        .send()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let (status, _, _) = post("/mcp", ping, &[("mcp-session-id", &session)]);
    assert_eq!(status, 404);
}
