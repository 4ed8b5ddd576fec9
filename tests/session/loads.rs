//! Loading deferred tools: why a tool is unavailable and the bounds loads stop
//! at, a server deferred together loaded as one entry, and a query that loads
//! only what was asked without locking a tool out.

use super::{
    common::{Fixture, stdout},
    deferring, doc, json_out,
};
use muster::contract::{LoadAnswer, LoadNote, LoadStatus};
use serde_json::json;
use std::path::Path;

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
