//! Issue 35 item 3: the control tool's decision on plain asks over real servers' tool
//! listings. Five servers as `muster discover` recorded them: the npm reference servers
//! (`tests/fixtures/mcp/`: everything, filesystem, memory) and the PyPI servers
//! `mcp-server-git` and `mcp-server-time` (`tests/fixtures/mcp-real/`, with their licence).
//! The time server's two tools are offered, as in the gateway trial; the rest are deferred
//! behind the control tool. Each ask is decided and judged as `tests/common/load_asks.rs`
//! says. `RIVAL` (src/session/load.rs) was chosen on these asks; `tests/load_asks_servers.rs`
//! holds asks over twenty servers that nothing was chosen on.

mod common;

use common::load_asks::{Ask, ask, decide};
use muster::catalog::Selection;
use muster::policy::Inputs;
use muster::session::{self, LoadRequest, NewSession, Opened, SessionKeys};
use muster::tokens::TokenCache;
use std::path::Path;

const STAGED: &[&str] = &["mcp.git.git_diff_staged"];
const NOW: &[&str] = &["mcp.time.get_current_time"];

/// The labelled asks. The first two are the gateway trial's.
const ASKS: &[Ask] = &[
    ask("stage files for commit", STAGED, &["mcp.git.git_add"]),
    ask("current time in a time zone", &[], NOW),
    ask("stage files for commit", &[], &["mcp.git.git_add"]),
    ask("what's today's date", &[], NOW),
    ask("current time in Tokyo", &[], NOW),
    ask("what time is it", &[], NOW),
    ask(
        "convert 3pm in New York to London time",
        &[],
        &["mcp.time.convert_time"],
    ),
    ask(
        "which files have I modified",
        &[],
        &["mcp.git.git_status", "mcp.git.git_diff_unstaged"],
    ),
    ask("show what I staged", STAGED, STAGED),
    ask("show what I staged", &[], STAGED),
    ask("commit my changes", &[], &["mcp.git.git_commit"]),
    ask("show the commit history", &[], &["mcp.git.git_log"]),
    ask("switch to another branch", &[], &["mcp.git.git_checkout"]),
    ask("create a new branch", &[], &["mcp.git.git_create_branch"]),
    ask("list the branches", &[], &["mcp.git.git_branch"]),
    ask("unstage everything", &[], &["mcp.git.git_reset"]),
    ask(
        "read the README",
        &[],
        &["mcp.filesystem.read_text_file", "mcp.filesystem.read_file"],
    ),
    ask(
        "list the files in a folder",
        &[],
        &[
            "mcp.filesystem.list_directory",
            "mcp.filesystem.list_directory_with_sizes",
            "mcp.filesystem.directory_tree",
        ],
    ),
    ask("move a file", &[], &["mcp.filesystem.move_file"]),
    ask(
        "make a new folder",
        &[],
        &["mcp.filesystem.create_directory"],
    ),
    ask(
        "find files matching a pattern",
        &[],
        &["mcp.filesystem.search_files"],
    ),
    ask("write a file", &[], &["mcp.filesystem.write_file"]),
    ask(
        "replace a line in a file",
        &[],
        &["mcp.filesystem.edit_file"],
    ),
    ask(
        "remember that Alice likes tea",
        &[],
        &["mcp.memory.create_entities", "mcp.memory.add_observations"],
    ),
    ask(
        "what do I know about Alice",
        &[],
        &[
            "mcp.memory.search_nodes",
            "mcp.memory.open_nodes",
            "mcp.memory.read_graph",
        ],
    ),
    ask("forget Bob", &[], &["mcp.memory.delete_entities"]),
    ask(
        "show the whole knowledge graph",
        &[],
        &["mcp.memory.read_graph"],
    ),
    ask("add two numbers", &[], &["mcp.everything.get-sum"]),
    ask("echo a message back", &[], &["mcp.everything.echo"]),
    ask(
        "print the environment variables",
        &[],
        &["mcp.everything.get-env"],
    ),
    ask("bake a cake", &[], &[]),
    ask("book a flight to Paris", &[], &[]),
    ask("play a song", &[], &[]),
];

/// The servers, in the order declared; time ranks first and is offered.
const SERVERS: &[(&str, &str)] = &[
    ("time", "tests/fixtures/mcp-real/mcp-server-time.json"),
    ("git", "tests/fixtures/mcp-real/mcp-server-git.json"),
    ("filesystem", "tests/fixtures/mcp/filesystem.json"),
    ("memory", "tests/fixtures/mcp/memory.json"),
    ("everything", "tests/fixtures/mcp/everything.json"),
];

#[test]
fn the_control_tool_decides_plain_asks_over_real_servers() {
    let decided = decide(ASKS, SERVERS, 2);
    assert_eq!(
        decided.offered,
        [
            "tools.load",
            "mcp.time.convert_time",
            "mcp.time.get_current_time"
        ]
    );
    let misses = decided.misses;
    let right = ASKS.len() - misses.len();
    // The gateway trial's asks (the first two), and asks no tool serves, are decided right.
    for (n, miss) in &misses {
        assert!(*n > 1 && !ASKS[*n].expect.is_empty(), "{miss}");
    }
    assert!(right * 100 >= ASKS.len() * 75, "{misses:#?}");
}

/// A policy directory over [`SERVERS`], the time server's two tools offered.
fn policies() -> tempfile::TempDir {
    common::load_asks::policies(SERVERS, 2)
}

/// The gateway trial's two answers, pinned as the contract types them: "stage files for
/// commit" with `git_diff_staged` loaded is a choice marking it loaded beside `git_add`, not
/// "already loaded"; "current time in a time zone" names the offered time tool, not "nothing
/// found"; and an ask no tool serves names every server, the offered time server first.
#[test]
fn the_gateway_trials_asks_are_answered_truly() {
    use muster::contract::{LoadNote, LoadOption, LoadStatus};
    let dir = policies();
    let inputs = Inputs::load(dir.path()).expect("the policies load");
    let keys = SessionKeys::none();
    let mut cache = TokenCache::in_memory();
    let doc = session::new(
        &inputs,
        &Selection::default(),
        &NewSession::default(),
        &keys,
        &mut cache,
    )
    .unwrap();
    let Opened::Live(mut live) =
        session::open(&inputs, doc, &keys, Path::new("s.json"), &mut cache).unwrap()
    else {
        panic!("the pin holds");
    };
    let first = live.load(&LoadRequest::Names(vec![
        "mcp__git__git_diff_staged".into(),
    ]));
    assert_eq!(first.loaded, ["mcp.git.git_diff_staged"]);
    let stage = live.load(&LoadRequest::Query("stage files for commit".into()));
    assert_eq!(stage.status, LoadStatus::Choose, "{}", stage.answer);
    let [LoadNote::Choose { options, .. }] = stage.notes.as_slice() else {
        panic!("{:?}", stage.notes);
    };
    let option = |name: &str, loaded: bool| LoadOption {
        name: name.into(),
        description: String::new(),
        loaded,
        offered: false,
    };
    let marked: Vec<LoadOption> = options
        .iter()
        .map(|o| LoadOption {
            description: String::new(),
            ..o.clone()
        })
        .collect();
    assert_eq!(
        marked,
        [
            option("mcp__git__git_diff_staged", true),
            option("mcp__git__git_add", false)
        ]
    );
    assert_eq!(live.loaded_len(), 1, "a choice loads nothing");

    let time = live.load(&LoadRequest::Query("current time in a time zone".into()));
    assert_eq!(time.status, LoadStatus::Unchanged, "{}", time.answer);
    assert_eq!(
        time.notes,
        [LoadNote::AlreadyOffered {
            name: "mcp__time__get_current_time".into()
        }]
    );

    let cake = live.load(&LoadRequest::Query("bake a cake".into()));
    assert_eq!(cake.status, LoadStatus::Refused);
    assert_eq!(
        cake.notes,
        [LoadNote::NothingFound {
            query: "bake a cake".into(),
            kinds: ["time", "everything", "filesystem", "git", "memory"]
                .map(|s| format!("mcp__{s}"))
                .to_vec(),
            more: 0,
        }]
    );
}
