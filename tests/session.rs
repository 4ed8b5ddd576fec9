//! Agent sessions end to end at the command line: the bundled
//! production-shaped policies with deferral on, plus the real filesystem
//! reference server discovered and locked; a session is created, searched,
//! loaded, checked, its loaded tool called on the real server, and resumed
//! before and after a pinned definition changes.
//!
//! Needs node and npm; the pinned servers are installed on first use.

mod common;

use common::{Fixture, muster, reference_server, stdout};
use muster::contract::{LoadAnswer, LoadNote, LoadStatus};
use muster::discover::{ServerSpec, call_tool};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
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
fn loads_say_why_a_tool_is_unavailable_and_stop_at_the_bounds() {
    let fx = deferring();
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        "control_tool = \"tools.load\"\nmax_loaded = 3",
    );
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let load = |args: &[&str], code: i32| {
        let mut all = vec!["session", "load", "s.json", "--format", "json"];
        all.extend_from_slice(args);
        json_out(&fx, &all, code)
    };

    // Cut by policy: never loaded, and the answer says why, in the names
    // the model was given.
    let cut = load(&["--name", "workspace.list_files"], 1);
    assert_eq!(cut["status"], "refused");
    assert_eq!(
        cut["notes"][0],
        json!({"code": "not-deferred", "name": "workspace__list_files", "status": "cut", "reason": "not-enabled"})
    );
    // A session whose model reads muster's names is answered in them.
    stdout(
        fx.path(),
        &["session", "new", "--names", "muster", "--out", "m.json"],
        0,
    );
    let muster_names = json_out(
        &fx,
        &[
            "session",
            "load",
            "m.json",
            "--name",
            "workspace__list_files",
            "--format",
            "json",
        ],
        1,
    );
    assert_eq!(muster_names["notes"][0]["name"], "workspace.list_files");
    // The unsubscribe flag is off without the production profile.
    let off = load(&["--name", "email.unsubscribe"], 1);
    assert_eq!(off["notes"][0]["reason"], "flag-off");
    let unknown = load(&["--name", "mcp.gmail_read.get_thred"], 1);
    assert_eq!(unknown["notes"][0]["code"], "unknown-tool");
    assert_eq!(
        unknown["notes"][0]["closest"][0],
        "mcp__gmail_read__get_thread"
    );
    let offered = load(&["--name", "math.calculate"], 0);
    assert_eq!(offered["status"], "unchanged");
    assert_eq!(offered["notes"][0]["code"], "already-offered");
    let nothing = load(&["--query", "zzzz qqqq"], 1);
    assert_eq!(nothing["notes"][0]["code"], "nothing-found");
    assert!(doc(&fx).loaded.is_empty(), "nothing loaded yet");

    // Provider spelling is read as the muster name.
    let two = load(
        &[
            "--query",
            "mcp__gmail_read__get_thread, mcp.gmail_read.get_message",
        ],
        0,
    );
    assert_eq!(
        two["loaded"],
        json!(["mcp.gmail_read.get_thread", "mcp.gmail_read.get_message"])
    );
    // Past the bound a load replaces the earliest loads (issue 22: loads
    // were append-only, so a full session could load nothing more), and
    // the answer names what it unloaded.
    let over = load(
        &[
            "--name",
            "mcp.gmail_read.get_label",
            "--name",
            "mcp.gmail_read.get_draft",
        ],
        0,
    );
    assert_eq!(
        over["loaded"],
        json!(["mcp.gmail_read.get_label", "mcp.gmail_read.get_draft"])
    );
    assert_eq!(
        over["notes"][1],
        json!({"code": "unloaded", "tools": ["mcp__gmail_read__get_thread"]})
    );
    let names: Vec<String> = doc(&fx).loaded.into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "mcp.gmail_read.get_message",
            "mcp.gmail_read.get_label",
            "mcp.gmail_read.get_draft"
        ]
    );
    // The document it leaves opens: its loads still check out.
    stdout(fx.path(), &["session", "roster", "s.json"], 0);
    let full = fx.read("s.json");
    let again = load(&["--name", "mcp.gmail_read.get_draft"], 0);
    assert_eq!(again["status"], "unchanged");
    assert_eq!(fx.read("s.json"), full, "a refused load changes nothing");
}

#[test]
fn a_server_deferred_together_is_found_and_loaded_as_one_entry() {
    let fx = deferring();
    fx.edit(
        "policies/mcp/servers.toml",
        "name = \"gmail_read\"",
        "name = \"gmail_read\"\ndescription = \"Read-only Gmail: threads, messages, drafts, labels and settings.\"\ndefer_together = true",
    );
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        "control_tool = \"tools.load\"\nmax_loaded = 20\nmax_loaded_tokens = 20000",
    );
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let found = json_out(
        &fx,
        &[
            "session",
            "search",
            "s.json",
            "read my gmail threads",
            "--format",
            "json",
        ],
        0,
    );
    let first = &found["results"][0];
    assert_eq!(first["name"], "mcp.gmail_read");
    assert_eq!(first["entry"], "kind");
    let members = first["tools"].as_array().unwrap().len();
    assert!(members > 10, "{first:#}");
    // A member's name loads the whole kind.
    let loaded = json_out(
        &fx,
        &[
            "session",
            "load",
            "s.json",
            "--name",
            "mcp.gmail_read.get_thread",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(loaded["loaded"].as_array().unwrap().len(), members);
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

#[test]
fn a_findability_gate_fails_when_a_description_change_hides_a_tool() {
    let fx = deferring();
    fx.write(
        "gates/find.toml",
        "name = \"gmail findability\"\nflags = \"production\"\n\n[findability]\nqueries = \"find.jsonl\"\nk = 3\nmin_recall = 1.0\n",
    );
    fx.write(
        "gates/find.jsonl",
        concat!(
            "{\"query\": \"the whole email conversation\", \"expect\": [\"mcp.gmail_read.get_thread\"]}\n",
            "{\"query\": \"is my out of office auto reply on\", \"expect\": [\"mcp.gmail_read.get_vacation_settings\"]}\n",
            "{\"query\": \"which labels do I have in my mailbox\", \"expect\": [\"mcp.gmail_read.list_labels\"]}\n",
            "{\"query\": \"work out 17 percent of 230\", \"expect\": [\"math.calculate\"]}\n",
        ),
    );
    let gate = |code: i32| json_out(&fx, &["gate", "gates/find.toml", "--format", "json"], code);
    let passed = gate(0);
    let found = &passed[0]["findability"];
    assert_eq!(
        (found["found"].as_u64(), found["total"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(found["recall"], 1.0);

    // The server rewrites a description; after review it is locked, and the
    // tool can no longer be found by what users ask for.
    // (Its name still says "vacation settings", which its meaning finds,
    // so the new description points elsewhere.)
    fx.edit(
        "policies/mcp/gmail_read.json",
        "Get the vacation auto-reply settings",
        "Return the settings object of the account's spam and junk mail filters",
    );
    stdout(fx.path(), &["lock", "--server", "gmail_read"], 0);
    let failed = gate(1);
    let found = &failed[0]["findability"];
    assert_eq!(found["found"], 3);
    assert_eq!(found["recall"], 0.75);
    assert_eq!(found["missed"][0]["line"], 2);
    assert_eq!(
        found["missed"][0]["expect"],
        json!(["mcp.gmail_read.get_vacation_settings"])
    );
    assert_eq!(
        failed[0]["failures"][0],
        json!({"code": "findability", "k": 3, "found": 3, "total": 4, "recall": 0.75, "min_recall": 1.0})
    );

    // A query expecting a tool no policy registers is bad input.
    fx.write(
        "gates/find.jsonl",
        "{\"query\": \"x\", \"expect\": [\"mcp.gmail_read.nope\"]}\n",
    );
    let err = muster(fx.path())
        .args(["gate", "gates/find.toml"])
        .assert()
        .code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("find.jsonl:1") && err.contains("mcp.gmail_read.nope"),
        "{err}"
    );
}

/// Issue 22 item 2, tried as a new user would: "bake a cake" loaded two
/// Gmail tools; "read a text file" also loaded `write_file`; three
/// near-ties filled the token budget so the right tool could never load.
/// Now an unrelated ask loads nothing and names the kinds there are, a
/// near-tie is answered as a choice, a clear winner or an exact name loads
/// one tool, and a full budget makes room instead of locking the tool out.
#[test]
fn a_query_loads_only_what_was_asked_and_never_locks_a_tool_out() {
    let fx = deferring();
    // The real filesystem server's recorded list, reviewed without a lock.
    let listing = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/filesystem.json"),
    )
    .unwrap();
    fx.write("policies/mcp/filesystem.json", &listing);
    let servers = fx.read("policies/mcp/servers.toml");
    fx.write(
        "policies/mcp/servers.toml",
        &format!("{servers}\n[[mcp]]\nname = \"filesystem\"\nsnapshot = \"filesystem.json\"\n"),
    );
    let policy = fx.read("policies/muster.toml");
    fx.write(
        "policies/muster.toml",
        &format!("{policy}\n[lock]\non_mismatch = \"warn\"\n"),
    );
    let new = |fx: &Fixture| {
        stdout(
            fx.path(),
            &["session", "new", "--flags", "production", "--out", "s.json"],
            0,
        )
    };
    new(&fx);
    let load = |args: &[&str], code: i32| {
        let mut all = vec!["session", "load", "s.json", "--format", "json"];
        all.extend_from_slice(args);
        serde_json::from_value::<LoadAnswer>(json_out(&fx, &all, code)).expect("a load answer")
    };
    let before = fx.read("s.json");

    let unrelated = load(&["--query", "bake a cake"], 1);
    assert_eq!(unrelated.status, LoadStatus::Refused);
    assert!(unrelated.loaded.is_empty());
    match &unrelated.notes[..] {
        [LoadNote::NothingFound { kinds, .. }] => {
            assert!(kinds.contains(&"mcp__filesystem".to_string()), "{kinds:?}");
            assert!(kinds.contains(&"mcp__gmail_read".to_string()), "{kinds:?}");
        }
        notes => panic!("{notes:?}"),
    }
    assert_eq!(fx.read("s.json"), before, "nothing loaded");

    // Two readers fit about equally: the model is asked to pick, in its
    // names; the writer is not among them.
    let tie = load(&["--query", "read a text file"], 0);
    assert_eq!(tie.status, LoadStatus::Choose);
    assert!(tie.loaded.is_empty());
    let options: Vec<&str> = match &tie.notes[..] {
        [LoadNote::Choose { options, .. }] => options.iter().map(|o| o.name.as_str()).collect(),
        notes => panic!("{notes:?}"),
    };
    assert!(
        options.contains(&"mcp__filesystem__read_text_file"),
        "{options:?}"
    );
    assert!(
        !options.contains(&"mcp__filesystem__write_file"),
        "{options:?}"
    );
    assert!(tie.answer.contains("exact name"), "{}", tie.answer);
    assert_eq!(fx.read("s.json"), before, "a choice loads nothing");

    // The pick by name loads exactly that tool; a clear winner loads one.
    let picked = load(&["--query", "mcp__filesystem__read_text_file"], 0);
    assert_eq!(picked.loaded, ["mcp.filesystem.read_text_file"]);
    let clear = load(&["--query", "move a file"], 0);
    assert_eq!(clear.loaded, ["mcp.filesystem.move_file"]);

    // No lock-out: a budget that two loads fill still takes a third tool,
    // by unloading the earliest; a tool past the budget on its own is
    // refused, saying what it would take.
    let roster = json_out(&fx, &["session", "roster", "s.json", "--format", "json"], 0);
    let tokens = |name: &str| {
        roster["deferred"]
            .as_array()
            .unwrap()
            .iter()
            .chain(roster["roster"].as_array().unwrap())
            .find(|t| t["name"] == name)
            .and_then(|t| t["tokens"].as_u64())
            .unwrap_or_else(|| panic!("{name} in {roster}"))
    };
    let (read, moved, edit) = (
        tokens("mcp.filesystem.read_text_file"),
        tokens("mcp.filesystem.move_file"),
        tokens("mcp.filesystem.edit_file"),
    );
    let budget = read + moved + edit - 1;
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        &format!("control_tool = \"tools.load\"\nmax_loaded_tokens = {budget}"),
    );
    new(&fx);
    for name in ["mcp.filesystem.read_text_file", "mcp.filesystem.move_file"] {
        assert_eq!(load(&["--name", name], 0).loaded, [name]);
    }
    let third = load(&["--name", "mcp.filesystem.edit_file"], 0);
    assert_eq!(third.loaded, ["mcp.filesystem.edit_file"]);
    assert!(
        third.notes.contains(&LoadNote::Unloaded {
            tools: vec!["mcp__filesystem__read_text_file".into()]
        }),
        "{:?}",
        third.notes
    );
    // Loaded again by name, it unloads the next earliest.
    let back = load(&["--name", "mcp.filesystem.read_text_file"], 0);
    assert_eq!(back.loaded, ["mcp.filesystem.read_text_file"]);
    stdout(fx.path(), &["session", "roster", "s.json"], 0);

    fx.edit(
        "policies/muster.toml",
        &format!("max_loaded_tokens = {budget}"),
        &format!("max_loaded_tokens = {}", edit - 1),
    );
    new(&fx);
    let alone = load(&["--name", "mcp.filesystem.edit_file"], 1);
    assert_eq!(alone.status, LoadStatus::Refused);
    assert!(
        alone.answer.contains("alone is past the limit"),
        "{}",
        alone.answer
    );
}

/// Issue 22 item 2: a findability line may say what a load of its query
/// loads, exactly: one tool for a clear ask, nothing for an unrelated ask
/// (or one answered with a choice). The gate fails, naming the line, when
/// the control tool would load anything else.
#[test]
fn a_findability_line_can_say_what_its_ask_loads() {
    let fx = deferring();
    fx.write(
        "gates/find.toml",
        "name = \"loads\"\nflags = \"production\"\n\n[findability]\nqueries = \"find.jsonl\"\nk = 3\nmin_recall = 0.5\n",
    );
    let lines = concat!(
        "{\"query\": \"which labels do I have in my mailbox\", \"expect\": [\"mcp.gmail_read.list_labels\"], \"loads\": [\"mcp.gmail_read.list_labels\"]}\n",
        "{\"query\": \"bake a cake\", \"expect\": [\"mcp.gmail_read.get_thread\"], \"loads\": []}\n",
    );
    fx.write("gates/find.jsonl", lines);
    let gate = |code: i32| json_out(&fx, &["gate", "gates/find.toml", "--format", "json"], code);
    let passed = gate(0);
    assert_eq!(passed[0]["passed"], true, "{passed}");

    // The same ask said to load another tool fails on its line.
    fx.write(
        "gates/find.jsonl",
        &lines.replacen(
            "\"loads\": [\"mcp.gmail_read.list_labels\"]",
            "\"loads\": [\"mcp.gmail_read.get_label\"]",
            1,
        ),
    );
    let failed = gate(1);
    assert_eq!(
        failed[0]["failures"][0],
        json!({"code": "loads", "line": 1, "query": "which labels do I have in my mailbox",
               "expect": ["mcp.gmail_read.get_label"], "loaded": ["mcp.gmail_read.list_labels"]})
    );
}
