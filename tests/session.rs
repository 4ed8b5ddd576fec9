//! Agent sessions end to end at the command line: the bundled
//! production-shaped policies with deferral on, plus the real filesystem
//! reference server discovered and locked; a session is created, searched,
//! loaded, checked, its loaded tool called on the real server, and resumed
//! before and after a pinned definition changes.
//!
//! Needs node and npm; the pinned servers are installed on first use.

mod common;
#[path = "session/findability.rs"]
mod findability;
#[path = "session/loads.rs"]
mod loads;

use common::{Fixture, muster, reference_server, stdout};
use muster::discover::{ServerSpec, call_tool};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The session document, read back by this test's own types: every field
/// the contract documents, and no other.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Doc {
    format_version: u32,
    id: Option<String>,
    revision: u64,
    agent: Agent,
    selection: DocSelection,
    provider: String,
    names: String,
    encoding: String,
    caps: DocCaps,
    fingerprint: String,
    roster: Vec<Pinned>,
    deferred: PinnedSet,
    loaded: Vec<Loaded>,
    signature: Option<Signature>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Agent {
    name: String,
    version: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DocSelection {
    profile: Option<String>,
    flags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DocCaps {
    items: u32,
    tokens: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Pinned {
    name: String,
    digest: String,
    parts: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PinnedSet {
    count: u32,
    digest: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Loaded {
    name: String,
    digest: String,
    parts: String,
    revision: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Signature {
    key: String,
    hmac: String,
}

fn doc(fx: &Fixture) -> Doc {
    serde_json::from_str(&fx.read("s.json")).expect("session document")
}

fn json_out(fx: &Fixture, args: &[&str], code: i32) -> Value {
    let out = stdout(fx.path(), args, code);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

/// The bundled policies with deferral on.
fn deferring() -> Fixture {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    fx
}

#[test]
fn a_session_finds_loads_checks_calls_and_resumes_on_the_real_filesystem_server() {
    let fx = deferring();
    let allowed = fx.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::write(allowed.join("notes.txt"), "table for two at seven\n").unwrap();
    let allowed = allowed.to_string_lossy().into_owned();
    let fs = reference_server("server-filesystem");
    let servers = fx.read("policies/mcp/servers.toml");
    fx.write(
        "policies/mcp/servers.toml",
        &format!(
            "{servers}\n[[mcp]]\nname = \"filesystem\"\ndescription = \"Files in the shared folder.\"\ncommand = [\"node\", {fs:?}, {allowed:?}]\nsnapshot = \"filesystem.json\"\n"
        ),
    );
    // Discovery records the real server's list; --lock accepts it after review.
    stdout(
        fx.path(),
        &["discover", "--server", "filesystem", "--lock"],
        0,
    );

    let created = json_out(
        &fx,
        &[
            "session",
            "new",
            "--flags",
            "production",
            "--out",
            "s.json",
            "--format",
            "json",
        ],
        0,
    );
    let pinned = doc(&fx);
    assert_eq!(
        created,
        serde_json::from_str::<Value>(&fx.read("s.json")).unwrap()
    );
    assert_eq!(pinned.format_version, 2);
    assert_eq!((pinned.revision, pinned.id.as_deref()), (0, None));
    assert_eq!(
        (pinned.provider.as_str(), pinned.names.as_str()),
        ("openai", "provider")
    );
    assert!(pinned.signature.is_none(), "no key, no signature");
    assert!(
        fx.read("s.json").len() < 8 * 1024,
        "a pin by digest stays small"
    );
    assert_eq!(
        (pinned.agent.name.as_str(), pinned.agent.version),
        ("chat", 4)
    );
    assert_eq!(pinned.selection.flags, ["AGENT_EMAIL_UNSUBSCRIBE_ENABLED"]);
    assert_eq!(pinned.roster.len(), 30);
    assert_eq!(pinned.roster[0].name, "tools.load");
    for calling in [
        "mcp.bland_call.start_call",
        "mcp.bland_read.get_call",
        "mcp.bland_read.list_calls",
    ] {
        assert!(pinned.roster.iter().any(|t| t.name == calling), "{calling}");
    }
    let roster = json_out(&fx, &["session", "roster", "s.json", "--format", "json"], 0);
    assert_eq!(roster["control_tool"], "tools.load");
    let deferred: Vec<&str> = roster["deferred"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(deferred.len() as u32, pinned.deferred.count);
    assert!(
        deferred.contains(&"mcp.filesystem.read_text_file"),
        "{deferred:?}"
    );
    assert!(
        deferred.contains(&"mcp.gmail_read.get_thread"),
        "{deferred:?}"
    );
    assert!(pinned.loaded.is_empty());

    // The control tool's description names what is behind it, spelt as the
    // model is given tool names (issue 31 item 9: one naming form).
    let roster = json_out(&fx, &["session", "roster", "s.json", "--format", "json"], 0);
    let control = &roster["roster"][0];
    assert_eq!(control["code"], "control-tool");
    let description = control["description"].as_str().unwrap();
    assert!(description.contains("mcp__filesystem"), "{description}");
    assert!(description.contains("mcp__gmail_read"), "{description}");
    assert_eq!(control["input_schema"]["required"], json!(["query"]));

    // Search finds the file reader from words a user would use; it
    // changes nothing.
    let before = fx.read("s.json");
    let found = json_out(
        &fx,
        &[
            "session",
            "search",
            "s.json",
            "show me what is inside a text file",
            "--format",
            "json",
        ],
        0,
    );
    let names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        names[..3].contains(&"mcp.filesystem.read_text_file"),
        "{names:?}"
    );
    assert_eq!(fx.read("s.json"), before);

    // A call to a deferred tool before it is loaded is refused, pointing at
    // the control tool.
    let path = format!("{allowed}/notes.txt");
    fx.write(
        "turn.json",
        &json!({"calls": [{"id": "1", "name": "mcp.filesystem.read_text_file", "arguments": {"path": path}}]})
            .to_string(),
    );
    let refused = json_out(
        &fx,
        &[
            "check",
            "--session",
            "s.json",
            "--turn",
            "turn.json",
            "--format",
            "json",
        ],
        1,
    );
    assert_eq!(refused["verdict"], "refused", "{refused:#}");
    assert!(refused.to_string().contains("tools.load"), "{refused:#}");

    // Loading by exact name, as the control tool is called.
    let loaded = json_out(
        &fx,
        &[
            "session",
            "load",
            "s.json",
            "--query",
            "mcp.filesystem.read_text_file",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(loaded["status"], "loaded", "{loaded:#}");
    assert_eq!(loaded["loaded"], json!(["mcp.filesystem.read_text_file"]));
    assert_eq!(loaded["notes"][0]["code"], "loaded");
    let after = doc(&fx);
    assert_eq!(after.loaded.len(), 1);
    assert_eq!(after.loaded[0].name, "mcp.filesystem.read_text_file");
    assert_eq!((after.revision, after.loaded[0].revision), (1, 1));
    // The model was given provider names: the answer speaks them.
    assert_eq!(
        loaded["answer"],
        "Loaded mcp__filesystem__read_text_file; call it directly from your next step."
    );
    assert_eq!(
        after.fingerprint, pinned.fingerprint,
        "the pin does not move"
    );

    // The offer grows at the end only.
    let grown = json_out(&fx, &["session", "roster", "s.json", "--format", "json"], 0);
    let (old, new) = (
        roster["roster"].as_array().unwrap(),
        grown["roster"].as_array().unwrap(),
    );
    assert_eq!(&new[..old.len()], &old[..]);
    assert_eq!(new.len(), old.len() + 1);
    assert_eq!(new[old.len()]["code"], "loaded");

    // Now the call checks, and what the check lets through runs on the
    // real server.
    let ok = json_out(
        &fx,
        &[
            "check",
            "--session",
            "s.json",
            "--turn",
            "turn.json",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(ok["verdict"], "run", "{ok:#}");
    let arguments = ok["calls"][0]["arguments"].to_string();
    let mut server = ServerSpec::new(
        "filesystem",
        vec!["node".into(), fs.clone(), allowed.clone()],
        PathBuf::from("unused.json"),
    );
    server.timeout = Duration::from_secs(60);
    let result = call_tool(&server, "read_text_file", &arguments).unwrap();
    assert_ne!(result["isError"], true, "{result:#}");
    assert!(
        result.to_string().contains("table for two at seven"),
        "{result}"
    );

    // Loading it again changes nothing.
    let again = json_out(
        &fx,
        &[
            "session",
            "load",
            "s.json",
            "--name",
            "mcp.filesystem.read_text_file",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(again["status"], "unchanged");
    assert_eq!(again["notes"][0]["code"], "already-loaded");

    // Nothing changed: the session resumes.
    let ok = json_out(&fx, &["session", "resume", "s.json", "--format", "json"], 0);
    assert_eq!(ok["status"], "ok");
    assert_eq!(ok["changes"], json!([]));
    assert_eq!(ok["fingerprint"]["now"], ok["fingerprint"]["pinned"]);

    // A pinned tool's description changes in its snapshot. Unreviewed, the
    // lock cuts it: the pin reports it removed from the roster.
    fx.edit(
        "policies/mcp/bland_read.json",
        "\"description\": \"",
        "\"description\": \"Changed upstream. ",
    );
    let first_tool = serde_json::from_str::<Value>(&fx.read("policies/mcp/bland_read.json"))
        .unwrap()["tools"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let changed_name = format!("mcp.bland_read.{first_tool}");
    let before = fx.read("s.json");
    let removed = json_out(&fx, &["session", "resume", "s.json", "--format", "json"], 1);
    assert_eq!(removed["status"], "tool-pin-mismatch");
    assert!(
        removed["changes"]
            .as_array()
            .unwrap()
            .contains(&json!({"change": "removed", "name": changed_name, "place": "roster"})),
        "{removed:#}"
    );
    // Reviewed and locked, the same tool is offered with a new description.
    stdout(fx.path(), &["lock", "--server", "bland_read"], 0);
    let changed = json_out(&fx, &["session", "resume", "s.json", "--format", "json"], 1);
    assert_eq!(changed["status"], "tool-pin-mismatch");
    assert_eq!(
        changed["changes"][0],
        json!({"change": "changed", "name": changed_name, "place": "roster", "what": ["description"]}),
        "{changed:#}"
    );
    assert_ne!(
        changed["fingerprint"]["now"],
        changed["fingerprint"]["pinned"]
    );
    // A mismatch never rewrites the document, and no verb serves it.
    assert_eq!(fx.read("s.json"), before);
    let text = stdout(fx.path(), &["session", "search", "s.json", "email"], 1);
    assert!(text.starts_with("tool-pin-mismatch"), "{text}");
    assert_eq!(fx.read("s.json"), before);
}

/// Exit code and stderr of a command expected to fail on input.
fn bad_input(fx: &Fixture, args: &[&str]) -> String {
    let out = muster(fx.path()).args(args).assert().code(2);
    String::from_utf8(out.get_output().stderr.clone()).unwrap()
}

#[test]
fn an_edited_or_foreign_document_is_refused_naming_the_field() {
    let fx = deferring();
    stdout(
        fx.path(),
        &["session", "new", "--flags", "production", "--out", "s.json"],
        0,
    );
    let text = fx.read("s.json");
    let mut value: Value = serde_json::from_str(&text).unwrap();

    value["revision"] = json!(1);
    value["loaded"] = json!([{"name": "math.calculate", "digest": "0123456789abcdef", "parts": "00000000.00000000.00000000.00000000", "revision": 1}]);
    fx.write("bad.json", &value.to_string());
    let err = bad_input(&fx, &["session", "roster", "bad.json"]);
    assert!(
        err.contains("bad.json")
            && err.contains("\"math.calculate\", which the session did not defer"),
        "{err}"
    );

    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["roster"].as_array_mut().unwrap().swap(1, 2);
    fx.write("bad.json", &value.to_string());
    let err = bad_input(&fx, &["session", "roster", "bad.json"]);
    assert!(err.contains("not the ones its fingerprint pins"), "{err}");

    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["format_version"] = json!(1);
    fx.write("bad.json", &value.to_string());
    let err = bad_input(&fx, &["session", "search", "bad.json", "mail"]);
    assert!(
        err.contains("format_version 1 is not the one this muster reads (2)"),
        "{err}"
    );

    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["extra"] = json!(true);
    fx.write("bad.json", &value.to_string());
    let err = bad_input(&fx, &["session", "load", "bad.json", "--query", "mail"]);
    assert!(err.contains("extra"), "{err}");

    fx.write("bad.json", "{\"format_version\": 1,");
    let err = bad_input(&fx, &["session", "resume", "bad.json"]);
    assert!(err.contains("bad.json:1"), "{err}");
}

#[test]
fn a_session_keeps_the_agent_version_it_was_pinned_to() {
    let fx = deferring();
    fx.edit(
        "policies/muster.toml",
        "[[agent]]\nname = \"chat\"",
        "[[agent]]\nname = \"chat\"\nversion = 3\nenabled_tools = [\"math.calculate\", \"workspace.list_files\"]\n\n[[agent]]\nname = \"chat\"",
    );
    stdout(fx.path(), &["session", "new", "--out", "v4.json"], 0);
    stdout(
        fx.path(),
        &["session", "new", "--agent-version", "3", "--out", "v3.json"],
        0,
    );
    let v4: Doc = serde_json::from_str(&fx.read("v4.json")).unwrap();
    let v3: Doc = serde_json::from_str(&fx.read("v3.json")).unwrap();
    assert_eq!(v4.agent.version, 4, "the newest version is current");
    assert_eq!(v3.agent.version, 3);
    assert!(v3.roster.iter().any(|t| t.name == "workspace.list_files"));
    assert!(!v4.roster.iter().any(|t| t.name == "workspace.list_files"));
    for s in ["v3.json", "v4.json"] {
        let ok = json_out(&fx, &["session", "resume", s, "--format", "json"], 0);
        assert_eq!(ok["status"], "ok", "{s}");
    }
    // Unknown versions are usage errors naming the versions there are.
    let err = muster(fx.path())
        .args(["session", "new", "--agent-version", "9", "--out", "x.json"])
        .assert()
        .code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("no version 9") && err.contains("3, 4"),
        "{err}"
    );

    // Retiring version 3 breaks its sessions' pin, not version 4's.
    fx.edit("policies/muster.toml", "version = 3\n", "version = 5\n");
    let gone = json_out(
        &fx,
        &["session", "resume", "v3.json", "--format", "json"],
        1,
    );
    assert_eq!(
        gone["changes"],
        json!([{"change": "agent-version-removed", "agent": "chat", "version": 3}])
    );
    assert_eq!(gone["fingerprint"]["now"], Value::Null);
    let ok = json_out(
        &fx,
        &["session", "resume", "v4.json", "--format", "json"],
        0,
    );
    assert_eq!(ok["status"], "ok");
}
