//! Issue 35 item 3 at the gateway: the trial's asks to the control tool, sent by the official
//! MCP Python SDK to `muster mcp` over stdio, in one chat, over the listings recorded from the
//! PyPI servers `mcp-server-git` and `mcp-server-time` and the npm reference servers
//! (`tests/fixtures/`). The time server's tools are offered, the rest deferred. The answers
//! are the session API's (`tests/load_asks.rs`): "already loaded" and "nothing found" only
//! when true, and "nothing found" names every server.
//!
//! Needs python3 with pip; the SDK is installed on first use.

mod common;

use common::Fixture;
use common::load_notes::Note;
use serde::Deserialize;
use std::path::Path;

const MUSTER: &str = env!("CARGO_BIN_EXE_muster");

#[derive(Debug, Deserialize)]
struct Seen {
    tools: Vec<String>,
    answers: Vec<Asked>,
}

#[derive(Debug, Deserialize)]
struct Asked {
    query: String,
    is_error: bool,
    text: String,
    load: Load,
}

/// The load answer in `_meta["dev.muster/gateway"].load`, read by this test's own types.
#[derive(Debug, Deserialize)]
struct Load {
    status: String,
    loaded: Vec<String>,
    notes: Vec<Note>,
}

#[test]
fn the_gateway_trials_asks_are_answered_truly_over_mcp() {
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 3\ntokens = 9000\n[deferral]\nenabled = true\n[lock]\non_mismatch = \"warn\"\n\
         [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
    )]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut servers = String::new();
    for (name, file) in [
        ("time", "tests/fixtures/mcp-real/mcp-server-time.json"),
        ("git", "tests/fixtures/mcp-real/mcp-server-git.json"),
        ("filesystem", "tests/fixtures/mcp/filesystem.json"),
        ("memory", "tests/fixtures/mcp/memory.json"),
        ("everything", "tests/fixtures/mcp/everything.json"),
    ] {
        let listing = std::fs::read_to_string(root.join(file)).unwrap();
        fx.write(&format!("policies/mcp/{name}.json"), &listing);
        let priority = if name == "time" {
            "priority = 10\n"
        } else {
            ""
        };
        servers.push_str(&format!(
            "[[mcp]]\nname = \"{name}\"\nsnapshot = \"{name}.json\"\n{priority}\n"
        ));
    }
    fx.write("policies/mcp/servers.toml", &servers);
    let policies = fx.path().join("policies");
    let policies = policies.to_str().unwrap();
    let queries = [
        "mcp__git__git_diff_staged",
        "stage files for commit",
        "current time in a time zone",
        "bake a cake",
    ];
    let mut args = vec![MUSTER, policies];
    args.extend(queries);
    let seen: Seen =
        serde_json::from_value(common::run_client("asks.py", &args, None)).expect("asks.py");
    assert_eq!(
        seen.tools,
        [
            "tools__load",
            "mcp__time__convert_time",
            "mcp__time__get_current_time"
        ]
    );
    let [staged, stage, time, cake] = &seen.answers[..] else {
        panic!("{seen:?}");
    };
    assert_eq!(
        staged.load.loaded,
        ["mcp.git.git_diff_staged"],
        "{}",
        staged.text
    );

    // Not "already loaded": a choice, git_diff_staged marked loaded, git_add beside it.
    assert_eq!(stage.query, "stage files for commit");
    assert!(!stage.is_error, "{}", stage.text);
    assert_eq!(stage.load.status, "choose", "{}", stage.text);
    let options: Vec<(&str, bool)> = stage.load.notes[0]
        .options
        .iter()
        .map(|o| (o.name.as_str(), o.loaded))
        .collect();
    assert_eq!(
        options,
        [
            ("mcp__git__git_diff_staged", true),
            ("mcp__git__git_add", false)
        ]
    );

    // Not "nothing found": the offered time tool, named as offered.
    assert!(!time.is_error, "{}", time.text);
    assert_eq!(time.load.status, "unchanged");
    assert_eq!(
        time.load.notes,
        [Note {
            code: "already-offered".into(),
            name: Some("mcp__time__get_current_time".into()),
            options: vec![],
            kinds: vec![],
        }]
    );
    assert_eq!(
        time.text,
        "mcp__time__get_current_time is already offered; call it directly."
    );

    // An ask no tool serves: nothing found, every server named, the offered one first.
    assert!(cake.is_error, "{}", cake.text);
    assert_eq!(cake.load.status, "refused");
    assert_eq!(cake.load.notes.len(), 1);
    assert_eq!(cake.load.notes[0].code, "nothing-found");
    assert_eq!(
        cake.load.notes[0].kinds,
        ["time", "everything", "filesystem", "git", "memory"].map(|s| format!("mcp__{s}"))
    );
    assert_eq!(
        cake.text,
        "No tool here matches \"bake a cake\" well; nothing was loaded. The tools here are of \
         these kinds: mcp__time, mcp__everything, mcp__filesystem, mcp__git, mcp__memory. Ask \
         again in their words, or by exact name."
    );
}
