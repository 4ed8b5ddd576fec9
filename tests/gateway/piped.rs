//! `muster mcp` driven line by line over piped stdio: bad JSON-RPC, a hung or
//! dead server, a tool changed under a chat, and a server reached over
//! streamable HTTP with a header secret.

use super::{
    MUSTER,
    common::{self, HttpServer},
    setup,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

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
