//! Issue 30, items 1, 4 and 16 (part), reproduced: one long word in a query
//! or a tool's description exhausted memory; a check ran on the service's
//! async worker and its enum branches were charged to no budget; a huge
//! unknown tool name cost a closest-name search over every name; a bad
//! queries file listed every line's error. Each input is run as a user
//! would send it. Nothing is timed: memory is bounded by running the CLI
//! under `ulimit -v`, so a regression fails instead of taking the machine.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Fixture, stdout};
use serde_json::Value;

/// `n` letters in no repeating pattern a deletion set could collapse.
fn long_word(n: usize) -> String {
    (0..n)
        .map(|i| char::from(b'a' + ((i * 7 + i / 26) % 26) as u8))
        .collect()
}

/// The bundled policies with deferral on, one more deferred tool whose
/// description holds a 1,000-letter word, and a session pinned from them.
fn session_fixture() -> Fixture {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    fx.write(
        "policies/tools/90-long.toml",
        &format!(
            "[[tool]]\nname = \"notes.append\"\ndescription = \"Append a line to the notes. {}\"\n",
            long_word(1_000)
        ),
    );
    stdout(
        fx.path(),
        &["session", "new", "--flags", "production", "--out", "s.json"],
        0,
    );
    fx
}

/// muster run in `dir` with its address space capped at 1 GiB, so a
/// search that would take more fails at once instead of taking the
/// machine: (exit code, stdout, stderr).
fn capped(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_muster"))
        .args(args)
        .current_dir(dir)
        .env(
            "MUSTER_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("muster-cache"),
        )
        .output()
        .expect("run muster under ulimit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_two_thousand_letter_query_is_answered_within_a_gigabyte() {
    let fx = session_fixture();
    let query = long_word(2_000);
    let (code, out, err) = capped(
        fx.path(),
        &["session", "search", "s.json", &query, "--format", "json"],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["query"], query.as_str());
    assert!(answer["results"].is_array(), "{answer}");
}

#[test]
fn a_thousand_letter_word_in_a_description_costs_nothing_special() {
    let fx = session_fixture();
    let (code, out, err) = capped(
        fx.path(),
        &[
            "session",
            "search",
            "s.json",
            "append a line to my notes",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["results"][0]["name"], "notes.append", "{answer}");
    // The long word itself still matches as written.
    let (code, out, err) = capped(
        fx.path(),
        &[
            "session",
            "search",
            "s.json",
            &long_word(1_000),
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).expect("search JSON");
    assert_eq!(answer["results"][0]["name"], "notes.append", "{answer}");
}
