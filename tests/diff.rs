//! `muster diff`: the incident of the design record shown as a diff (a
//! tool entering pushes a calling tool out), moves that are moves and not
//! shifts, a base at a git revision, the JSON read back through this
//! file's own types, and the same bytes on every run.

mod common;

use common::{Fixture, muster, stdout};
use serde::Deserialize;
use std::path::Path;

// The diff JSON as docs/diff.md documents it, read with unknown fields refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Diff {
    format_version: u32,
    base: Side,
    head: Side,
    same_roster: bool,
    delta: Delta,
    changes: Vec<Change>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Side {
    source: String,
    agent: String,
    agent_version: u64,
    profile: Option<String>,
    provider: String,
    fingerprint: String,
    totals: Totals,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Totals {
    items: u32,
    item_cap: u32,
    tokens: u32,
    token_cap: u32,
    wrapper_tokens: u32,
    offered: u32,
    deferred: u32,
    cut: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Delta {
    items: i64,
    item_cap: i64,
    tokens: i64,
    token_cap: i64,
    wrapper_tokens: i64,
    slots_left: i64,
    tokens_left: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Change {
    name: String,
    change: String,
    base: Option<Placement>,
    head: Option<Placement>,
    rank_delta: Option<i64>,
    tokens_delta: i64,
    outranked_by: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Placement {
    status: String,
    code: String,
    rank: Option<u32>,
    tokens: Option<u32>,
    #[serde(default)]
    facts: Option<serde_json::Value>,
}

/// The bundled policies without the calling group (as before the record's
/// fix) in `base/`, and the same with workspace.list_files enabled in
/// `head/`: the change that squeezed a calling tool out.
fn incident() -> Fixture {
    let fx = Fixture::bundled();
    let muster_toml = fx.read("policies/muster.toml");
    let start = muster_toml.find("[[group]]").unwrap();
    let end = muster_toml.find("[[agent]]").unwrap();
    fx.write(
        "policies/muster.toml",
        &format!("{}{}", &muster_toml[..start], &muster_toml[end..]),
    );
    std::fs::rename(fx.policies(), fx.path().join("base")).unwrap();
    common::copy_dir(&fx.path().join("base"), &fx.path().join("head"));
    fx.edit("head/tools/20-workspace.toml", "default_roster = false", "");
    fx
}

fn diff_json(dir: &Path, args: &[&str]) -> Diff {
    let mut all = vec!["diff", "--format", "json", "--flags", "production"];
    all.extend_from_slice(args);
    serde_json::from_str(&stdout(dir, &all, 0)).expect("diff JSON in the documented shape")
}

#[test]
fn a_tool_entering_the_roster_is_shown_pushing_a_calling_tool_out() {
    let fx = incident();
    let d = diff_json(fx.path(), &["base", "head"]);
    assert_eq!(d.format_version, 1);
    assert!(!d.same_roster);
    assert_ne!(d.base.fingerprint, d.head.fingerprint);
    assert_eq!(
        (d.base.source.as_str(), d.head.source.as_str()),
        ("base", "head")
    );
    assert_eq!((d.head.agent.as_str(), d.head.agent_version), ("chat", 4));
    assert_eq!(d.head.profile.as_deref(), Some("production"));
    assert_eq!(d.head.provider, "openai");

    let kinds: Vec<(&str, &str)> = d
        .changes
        .iter()
        .map(|c| (c.change.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("entered", "workspace.list_files"),
            ("cut", "mcp.bland_read.list_calls")
        ],
        "the ranks every other tool shifted by are not moves"
    );
    let entered = &d.changes[0];
    let was = entered.base.as_ref().unwrap();
    assert_eq!(
        (was.status.as_str(), was.code.as_str()),
        ("cut", "not-enabled")
    );
    assert_eq!(entered.head.as_ref().unwrap().status, "offered");
    assert_eq!(entered.head.as_ref().unwrap().rank, Some(4));
    assert_eq!(was.rank, None);
    assert_eq!(
        entered.tokens_delta,
        i64::from(entered.head.as_ref().unwrap().tokens.unwrap())
    );

    let cut = &d.changes[1];
    let now = cut.head.as_ref().unwrap();
    assert_eq!(
        (now.status.as_str(), now.code.as_str()),
        ("cut", "item-cap")
    );
    assert_eq!(now.facts.as_ref().unwrap()["code"], "item-cap");
    assert_eq!(cut.outranked_by, ["workspace.list_files"]);
    assert_eq!(cut.base.as_ref().unwrap().status, "offered");
    assert_eq!(cut.rank_delta, Some(1));
    assert_eq!(
        cut.tokens_delta,
        -i64::from(cut.base.as_ref().unwrap().tokens.unwrap())
    );

    // The per-tool deltas add up to the total against the caps.
    let sum: i64 = d.changes.iter().map(|c| c.tokens_delta).sum();
    assert_eq!(sum + d.delta.wrapper_tokens, d.delta.tokens);
    assert_eq!(
        d.delta.tokens,
        i64::from(d.head.totals.tokens) - i64::from(d.base.totals.tokens)
    );
    assert_eq!(d.delta.tokens_left, -d.delta.tokens);
    assert_eq!((d.delta.items, d.delta.slots_left), (0, 0));
    assert_eq!((d.delta.item_cap, d.delta.token_cap), (0, 0));
    assert_eq!(d.head.totals.items, d.head.totals.offered);
    assert_eq!(d.head.totals.item_cap, 30);
    assert_eq!(d.head.totals.token_cap, 9000);
    assert!(d.head.totals.wrapper_tokens > 0);
    assert_eq!(d.head.totals.deferred, 0);
    assert_eq!(d.head.totals.cut, d.base.totals.cut);

    // The text and the markdown name the same facts.
    let text = stdout(
        fx.path(),
        &["diff", "base", "head", "--flags", "production"],
        0,
    );
    assert!(
        text.contains(
            "CUT (1)\n  mcp.bland_read.list_calls  offered #30 -> cut #31 (item-cap)  -330 tokens"
        ),
        "{text}"
    );
    assert!(text.contains("outranked by workspace.list_files"), "{text}");
    let md = stdout(
        fx.path(),
        &[
            "diff",
            "base",
            "head",
            "--flags",
            "production",
            "--format",
            "markdown",
        ],
        0,
    );
    assert!(
        md.contains(
            "| cut | `mcp.bland_read.list_calls` | offered #30 | cut #31 (item-cap) | -330 |"
        ),
        "{md}"
    );
}

#[test]
fn plan_files_and_policy_directories_give_the_same_diff() {
    let fx = incident();
    for side in ["base", "head"] {
        let plan = stdout(
            fx.path(),
            &[
                "plan",
                "--policies",
                side,
                "--flags",
                "production",
                "--format",
                "json",
            ],
            0,
        );
        fx.write(&format!("{side}.json"), &plan);
    }
    let from_dirs = diff_json(fx.path(), &["base", "head"]);
    let from_files = diff_json(fx.path(), &["base.json", "head.json"]);
    let names = |d: &Diff| {
        d.changes
            .iter()
            .map(|c| format!("{} {} {}", c.change, c.name, c.tokens_delta))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&from_dirs), names(&from_files));
    assert_eq!(from_dirs.delta.tokens, from_files.delta.tokens);
    assert_eq!(from_files.base.source, "base.json");
}

#[test]
fn a_lowered_cap_cuts_the_lowest_tool_and_pushes_nothing_in() {
    let fx = Fixture::bundled();
    let d = diff_json(fx.path(), &["policies", "policies", "--item-cap", "29"]);
    assert!(
        d.changes.is_empty(),
        "both sides planned with the same selection"
    );
    fx.write(
        "base.json",
        &stdout(
            fx.path(),
            &["plan", "--flags", "production", "--format", "json"],
            0,
        ),
    );
    fx.write(
        "head.json",
        &stdout(
            fx.path(),
            &[
                "plan",
                "--flags",
                "production",
                "--item-cap",
                "29",
                "--format",
                "json",
            ],
            0,
        ),
    );
    let d = diff_json(fx.path(), &["base.json", "head.json"]);
    let kinds: Vec<(&str, &str)> = d
        .changes
        .iter()
        .map(|c| (c.change.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(kinds[0], ("cut", "schedule.delete"), "{kinds:?}");
    assert!(
        kinds[1..].iter().all(|(k, _)| *k == "reason-changed"),
        "{kinds:?}"
    );
    let c = &d.changes[0];
    assert_eq!(c.head.as_ref().unwrap().code, "item-cap");
    assert!(c.outranked_by.is_empty(), "a lowered cap pushes nothing in");
    assert_eq!((d.delta.item_cap, d.delta.items), (-1, -1));
}

#[test]
fn a_reorder_within_the_roster_is_one_move() {
    let fx = Fixture::bundled();
    fx.write(
        "base.json",
        &stdout(
            fx.path(),
            &["plan", "--flags", "production", "--format", "json"],
            0,
        ),
    );
    let core = fx.read("policies/tools/10-core.toml");
    let at = core
        .find("[[tool]]\nname = \"system.current_time\"")
        .unwrap();
    fx.write("policies/tools/10-core.toml", &core[..at]);
    fx.write("policies/tools/75-time.toml", &core[at..]);
    let d = diff_json(fx.path(), &["base.json", "policies"]);
    let kinds: Vec<(&str, &str, Option<i64>)> = d
        .changes
        .iter()
        .map(|c| (c.change.as_str(), c.name.as_str(), c.rank_delta))
        .collect();
    assert_eq!(kinds, [("moved", "system.current_time", Some(24))]);
    assert!(d.same_roster.eq(&false));
    assert_eq!(d.delta.tokens, 0);
}

#[test]
fn the_base_can_be_the_policy_directory_at_a_git_revision() {
    let fx = incident();
    let repo = fx.path();
    std::fs::rename(repo.join("base"), repo.join("policies")).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "policies"]);
    git(&["commit", "-q", "-m", "base"]);
    // The work tree now holds the head; the index and HEAD keep the base.
    std::fs::remove_dir_all(repo.join("policies")).unwrap();
    std::fs::rename(repo.join("head"), repo.join("policies")).unwrap();
    let d = diff_json(repo, &["--base-rev", "HEAD"]);
    assert_eq!(d.base.source, "policies@HEAD");
    assert_eq!(d.head.source, "policies");
    let kinds: Vec<&str> = d.changes.iter().map(|c| c.change.as_str()).collect();
    assert_eq!(kinds, ["entered", "cut"]);

    // An unknown revision is bad input that says what to do.
    let out = muster(repo)
        .args(["diff", "--base-rev", "no-such-branch"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("git knows no commit \"no-such-branch\""),
        "{err}"
    );
    assert!(err.contains("git fetch"), "{err}");
}

#[test]
fn a_file_that_is_not_a_plan_is_bad_input_with_its_line() {
    let fx = Fixture::bundled();
    fx.write(
        "bad.json",
        "{\n  \"format_version\": 4,\n  \"agent\": 3\n}\n",
    );
    let out = muster(fx.path())
        .args(["diff", "bad.json", "policies"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("bad.json:3:"), "{err}");
    fx.write("old.json", "{\"format_version\": 2}");
    let out = muster(fx.path())
        .args(["diff", "old.json", "policies"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("old.json"), "{err}");
}

#[test]
fn every_format_gives_the_same_bytes_twice() {
    let fx = incident();
    for format in ["text", "json", "markdown"] {
        let args = [
            "diff",
            "base",
            "head",
            "--flags",
            "production",
            "--format",
            format,
        ];
        let first = stdout(fx.path(), &args, 0);
        let second = stdout(fx.path(), &args, 0);
        assert_eq!(first, second, "{format}");
    }
}

/// The cells of a markdown table row, split where GitHub splits them: at each `|` not escaped
/// with a backslash (inside code spans too).
fn cells(row: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in row.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    n
}

#[test]
fn a_bar_or_a_control_character_in_a_tool_name_stays_in_its_markdown_cell() {
    let fx = incident();
    let plan = stdout(
        fx.path(),
        &[
            "plan",
            "--policies",
            "base",
            "--flags",
            "production",
            "--format",
            "json",
        ],
        0,
    );
    fx.write("base.json", &plan);
    let name = "mcp.bland_read.list_calls";
    assert!(plan.contains(name));
    fx.write(
        "head.json",
        &plan.replace(name, "evil|name`x\\u001b]0;t\\u0007\\nnext|"),
    );
    let md = stdout(
        fx.path(),
        &["diff", "base.json", "head.json", "--format", "markdown"],
        0,
    );
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(rows.iter().any(|r| r.contains("evil")), "{md}");
    for row in rows
        .iter()
        .filter(|r| r.starts_with("| entered") || r.starts_with("| left"))
    {
        // Seven bars: six cells, like the header.
        assert_eq!(cells(row), 7, "{row}");
    }
    assert!(!md.contains(['\u{1b}', '\u{7}']), "{md:?}");
}
