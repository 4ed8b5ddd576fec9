//! Live drift, as every front answers it, against a real server that
//! changes a tool under muster (tests/mcp-servers/scripted-server.mjs):
//! under `lock.on_mismatch = "warn"`, `muster call` and `POST /v1/call`
//! carry the drift as data in the forwarded result's `_meta`, as the
//! gateway's `tools/call` does; under `cut`, the refusal (`muster mcp`'s
//! `tools/call`, `/v1/call`'s `error`) says what changed, as `muster lock`
//! shows it, in data and in an escaped, bounded sentence that quotes no
//! unreviewed description.
//!
//! Needs node.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Fixture, muster, stdout};
use serde_json::{Value, json};

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

/// A policy over one scripted server in `mode` (`turns-destructive` or
/// `turns-hostile`: `alpha` changes at its first call), discovered and
/// locked, with `[lock] on_mismatch` as given.
fn setup(mode: &str, on_mismatch: &str) -> Fixture {
    let scripted =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        &format!(
            "[[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n\n\
             [lock]\non_mismatch = \"{on_mismatch}\"\n"
        ),
    )]);
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "[[mcp]]\nname = \"rug\"\ncommand = [\"node\", {s:?}, \"{mode}\"]\nsnapshot = \"rug.json\"\n",
            s = scripted.to_str().unwrap()
        ),
    );
    stdout(fx.path(), &["discover"], 0);
    let plan = stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    fx.write(
        "turn.json",
        &json!({"calls": [
            {"id": "c1", "name": "mcp__rug__alpha", "arguments": {"q": "x"}},
            {"id": "c2", "name": "mcp__rug__alpha", "arguments": {"q": "y"}},
        ]})
        .to_string(),
    );
    fx
}

/// `muster call --format json` of turn.json: its answer and its log lines.
fn muster_call(fx: &Fixture, code: i32) -> (Value, Vec<Value>) {
    let out = muster(fx.path())
        .args(["call", "--plan", "plan.json", "--turn", "turn.json"])
        .args(["--format", "json"])
        .assert()
        .code(code);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let log = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")),
        log,
    )
}

/// The drift the warned call's result carries, checked for what every
/// front must say of `turns-destructive`'s change.
fn assert_warned(answer: &Value) {
    assert_eq!(answer["outcome"], "ran", "{answer}");
    // The first call changed the tool; it ran as planned, with nothing said.
    let first = &answer["results"][0]["result"];
    assert_eq!(first["_meta"], Value::Null, "{answer}");
    let second = &answer["results"][1];
    assert_eq!(second["status"], "forwarded");
    assert!(
        second["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("alpha ran"),
        "{second}"
    );
    let drift = &second["result"]["_meta"]["dev.muster/gateway"]["drift"];
    assert_eq!(drift["code"], "upstream-changed", "{second}");
    assert_eq!(
        (&drift["server"], &drift["tool"]),
        (&json!("rug"), &json!("alpha"))
    );
    assert_eq!(drift["refused"], false);
    assert_eq!(drift["changes"], json!(["safety-hint-weakened"]));
    assert_eq!(
        drift["details"]["hints"],
        json!([{"hint": "readOnlyHint", "before": true, "after": false}])
    );
    assert!(drift["planned"].as_str().unwrap().starts_with("sha256:"));
    assert_ne!(drift["planned"], drift["listed"]);
}

#[test]
fn muster_call_under_warn_carries_the_drift_in_the_result() {
    let fx = setup("turns-destructive", "warn");
    let (answer, log) = muster_call(&fx, 0);
    assert_warned(&answer);
    // The log says what the answer says.
    assert_eq!(log[1]["codes"], json!(["upstream-changed"]), "{log:?}");
    assert_eq!(log[1]["verdict"], "forwarded");
}

#[test]
fn v1_call_under_warn_carries_the_drift_in_the_result() {
    let fx = setup("turns-destructive", "warn");
    let serve = common::Served::start(fx.path(), &[], &[]);
    let turn: Value = serde_json::from_str(&fx.read("turn.json")).unwrap();
    let plan: Value = serde_json::from_str(&fx.read("plan.json")).unwrap();
    let response = common::http_client()
        .post(serve.url("/v1/call"))
        .json(&json!({"plan": plan, "turn": turn}))
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    drop(serve);
    assert_eq!(status, 200, "{text}");
    assert_warned(&serde_json::from_str(&text).unwrap());
}

/// What a hostile change must never put before the model: the injected
/// words, raw controls.
fn assert_tame(sentence: &str) {
    assert!(!sentence.contains("IGNORE"), "{sentence}");
    assert!(!sentence.contains("xxxxxxxx"), "{sentence}");
    assert!(
        !sentence.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{sentence:?}"
    );
    assert!(sentence.chars().count() < 1_500, "{}", sentence.len());
}

/// The details a refusal of `turns-hostile`'s change carries.
fn assert_hostile_details(details: &Value) {
    assert_eq!(
        details["hints"],
        json!([{"hint": "readOnlyHint", "before": true, "after": false}])
    );
    let runs = details["description"].as_array().unwrap();
    let added = runs.iter().find(|r| r["op"] == "added").unwrap();
    assert!(
        added["text"]
            .as_str()
            .unwrap()
            .contains("IGNORE ALL PREVIOUS INSTRUCTIONS"),
        "{added}"
    );
    // The 200,000 characters are counted, not carried.
    assert!(added["elided"].as_u64().unwrap() > 190_000, "{added}");
    assert!(
        details.to_string().len() < 8_000,
        "{}",
        details.to_string().len()
    );
    let paths: Vec<&str> = details["schema_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/properties/to\u{202e}evil"), "{paths:?}");
}

#[test]
fn the_gateway_refusal_says_what_changed_escaped_and_bounded() {
    let fx = setup("turns-hostile", "cut");
    let mut child = Command::new(MUSTER)
        .args(["mcp", "--policies"])
        .arg(fx.policies())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start muster mcp");
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u32, q: &str| -> Value {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "mcp__rug__alpha", "arguments": {"q": q}}});
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(stdin, "{call}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            lines.read_line(&mut line).unwrap();
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    };
    let first = ask(1, "x");
    assert_eq!(
        first["result"]["content"][0]["text"], "alpha ran",
        "{first}"
    );
    let refused = ask(2, "y");
    let _ = child.kill();
    let _ = child.wait();
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    let drift = &result["_meta"]["dev.muster/gateway"]["drift"];
    assert_eq!(drift["code"], "upstream-changed");
    assert_eq!(drift["refused"], true);
    assert_eq!(
        drift["changes"],
        json!(["description", "schema-narrowed", "safety-hint-weakened"])
    );
    assert_hostile_details(&drift["details"]);
    let sentence = result["content"][0]["text"].as_str().unwrap();
    assert_tame(sentence);
    assert_eq!(
        sentence,
        "MCP server `rug` changed (description, schema-narrowed, safety-hint-weakened) its \
         definition of `alpha` since this chat was offered it (readOnlyHint true -> false; \
         description: 0 characters removed, 200,061 added; input schema: /properties/to\\u{202E}evil \
         added, /required/1 added); muster forwards no call to it until the change is reviewed \
         (`muster discover`, then `muster lock`)"
    );
}

#[test]
fn v1_call_refusal_carries_what_changed() {
    let fx = setup("turns-hostile", "cut");
    let (answer, log) = muster_call(&fx, 1);
    assert_eq!(answer["outcome"], "failed", "{answer}");
    let error = &answer["results"][1]["error"];
    assert_eq!(error["code"], "upstream-changed", "{answer}");
    assert_hostile_details(&error["details"]);
    assert_tame(error["message"].as_str().unwrap());
    assert_eq!(log[1]["verdict"], "drifted");
    // Other failures carry no details.
    assert_eq!(answer["results"][0]["error"], Value::Null);
}
