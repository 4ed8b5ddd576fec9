//! What a session document may not do: grow with the deferred tools, be
//! edited or forged, lose a load to a concurrent one; and how a resume
//! reports a change by its cause. At the command line, on the bundled
//! policies with deferral on.

mod common;

use common::{Fixture, muster, stdout};
use serde_json::{Value, json};

const KEY_1: &str = "k1:0123456789abcdef0123456789abcdef";
const KEY_2: &str = "k2:fedcba9876543210fedcba9876543210";

fn deferring() -> Fixture {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    fx
}

/// Runs muster with `MUSTER_SESSION_KEY` set to `key` (none when empty);
/// the exit code and stdout, stderr.
fn run(fx: &Fixture, key: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = muster(fx.path());
    cmd.env_remove("MUSTER_SESSION_KEY")
        .env_remove("MUSTER_SESSION_KEY_FILE");
    if !key.is_empty() {
        cmd.env("MUSTER_SESSION_KEY", key);
    }
    let out = cmd.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_signed_document_is_refused_once_edited_and_keys_rotate() {
    let fx = deferring();
    let (code, _, err) = run(&fx, KEY_1, &["session", "new", "--out", "s.json"]);
    assert_eq!(code, 0, "{err}");
    let text = fx.read("s.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["signature"]["key"], "k1");
    assert!(
        !text.contains("0123456789abcdef0123"),
        "no secret in a document"
    );
    let (code, _, err) = run(&fx, KEY_1, &["session", "roster", "s.json"]);
    assert_eq!(code, 0, "{err}");

    // Raising the caps the roster was planned under: a document muster
    // could have written for other caps, so only the signature tells.
    let mut edited = doc.clone();
    edited["caps"]["items"] = json!(40);
    fx.write("e.json", &edited.to_string());
    let (code, _, err) = run(&fx, KEY_1, &["session", "roster", "e.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("e.json") && err.contains("signature does not match"),
        "{err}"
    );

    // Unsigned while a key is held; signed while none is; an unknown key.
    let mut unsigned = doc.clone();
    unsigned.as_object_mut().unwrap().remove("signature");
    fx.write("u.json", &unsigned.to_string());
    let (code, _, err) = run(&fx, KEY_1, &["session", "roster", "u.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("not signed"), "{err}");
    let (code, _, err) = run(&fx, "", &["session", "roster", "s.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("key \"k1\", which this muster does not hold"),
        "{err}"
    );
    let (code, _, err) = run(&fx, KEY_2, &["session", "roster", "s.json"]);
    assert_eq!(code, 2, "{err}");

    // Rotation: the new key signs, the old one still verifies.
    fx.write("keys", &format!("{KEY_2}\n{KEY_1}\n"));
    let mut cmd = muster(fx.path());
    let out = cmd
        .env_remove("MUSTER_SESSION_KEY")
        .env("MUSTER_SESSION_KEY_FILE", fx.path().join("keys"))
        .args([
            "session",
            "load",
            "s.json",
            "--query",
            "mcp.gmail_read.get_thread",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let loaded: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    assert_eq!(
        loaded["signature"]["key"], "k2",
        "re-signed with the first key"
    );
    assert_eq!(loaded["revision"], 1);

    // A malformed key is a usage error that never quotes the secret.
    let (code, _, err) = run(&fx, "k1:too-short-secret", &["session", "roster", "s.json"]);
    assert_eq!(code, 2);
    assert!(!err.contains("too-short-secret"), "{err}");
}

#[test]
fn forged_loads_are_refused_whatever_they_claim() {
    let fx = deferring();
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    stdout(
        fx.path(),
        &[
            "session",
            "load",
            "s.json",
            "--query",
            "mcp.gmail_read.get_thread",
        ],
        0,
    );
    let good: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    let roster: Value = serde_json::from_str(&stdout(
        fx.path(),
        &["session", "roster", "s.json", "--format", "json"],
        0,
    ))
    .unwrap();
    let max_loaded = roster["totals"]["max_loaded"].as_u64().unwrap() as usize;
    let deferred: Vec<String> = roster["deferred"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        deferred.len() > max_loaded,
        "the fixture defers more than may be loaded"
    );
    let refused = |doc: &Value, why: &str| {
        fx.write("f.json", &doc.to_string());
        let (code, _, err) = run(&fx, "", &["session", "roster", "f.json"]);
        assert_eq!(code, 2, "{why}: {err}");
        assert!(err.contains("f.json"), "{why}: {err}");
        err
    };

    // Every deferred tool "loaded", each with a made-up digest.
    let mut all = good.clone();
    all["loaded"] = deferred
        .iter()
        .map(|n| json!({"name": n, "digest": "0000000000000000", "parts": "00000000.00000000.00000000.00000000", "revision": 1}))
        .collect();
    let err = refused(&all, "past max_loaded");
    assert!(
        err.contains(&format!("deferral.max_loaded allows {max_loaded}")),
        "{err}"
    );
    // The loaded tool's digest edited: a definition the policy does not give.
    let mut digest = good.clone();
    digest["loaded"][0]["digest"] = json!("0123456789abcdef");
    let err = refused(&digest, "digest");
    assert!(err.contains("claims a definition"), "{err}");
    // The same tool twice, and revisions that skip.
    let mut twice = good.clone();
    let first = twice["loaded"][0].clone();
    twice["loaded"].as_array_mut().unwrap().push(first);
    let err = refused(&twice, "twice");
    assert!(err.contains("a second time"), "{err}");
    // A load made after the document's revision. (Gaps between loads'
    // revisions are no longer forged: a load that replaces earlier ones
    // leaves them, issue 22.)
    let mut skipped = good.clone();
    skipped["loaded"][0]["revision"] = json!(3);
    let err = refused(&skipped, "revision");
    assert!(err.contains("revision 3"), "{err}");
    // A roster tool offered by name that the pin does not have.
    let mut renamed = good.clone();
    renamed["roster"][1]["name"] = json!("math.not_a_tool");
    let err = refused(&renamed, "renamed");
    assert!(err.contains("not the ones its fingerprint pins"), "{err}");
}

#[test]
fn concurrent_loads_on_one_document_all_land_or_are_refused() {
    let fx = deferring();
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        "control_tool = \"tools.load\"\nmax_loaded = 20\nmax_loaded_tokens = 20000",
    );
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let roster: Value = serde_json::from_str(&stdout(
        fx.path(),
        &["session", "roster", "s.json", "--format", "json"],
        0,
    ))
    .unwrap();
    let names: Vec<String> = roster["deferred"].as_array().unwrap()[..8]
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let bin = env!("CARGO_BIN_EXE_muster");
    // Eight processes at once, each loading another tool into one file.
    let handles: Vec<_> = names
        .iter()
        .map(|name| {
            let dir = fx.path().to_path_buf();
            let name = name.clone();
            std::thread::spawn(move || {
                std::process::Command::new(bin)
                    .current_dir(&dir)
                    .env("MUSTER_CACHE_DIR", dir.join("cache"))
                    .env_remove("MUSTER_SESSION_KEY")
                    .env_remove("MUSTER_SESSION_KEY_FILE")
                    .args([
                        "session", "load", "s.json", "--name", &name, "--format", "json",
                    ])
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for handle in handles {
        let out = handle.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["status"], "loaded", "{answer:#}");
    }
    // Every load landed: none was written over by another.
    let doc: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    let mut loaded: Vec<String> = doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut revisions: Vec<u64> = doc["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["revision"].as_u64().unwrap())
        .collect();
    loaded.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(loaded, expected);
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=8).collect::<Vec<u64>>());
    assert_eq!(doc["revision"], 8);

    // A load meant for an older revision is refused, and changes nothing.
    let before = fx.read("s.json");
    let (code, out, err) = run(
        &fx,
        "",
        &[
            "session",
            "load",
            "s.json",
            "--revision",
            "3",
            "--query",
            "calendar",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("stale-revision") && err.contains("revision 8, not 3"),
        "{err}"
    );
    assert_eq!(fx.read("s.json"), before);
}

#[test]
fn a_removed_tool_is_one_change_not_a_list_of_moves() {
    let fx = deferring();
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let doc: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    let roster: Vec<String> = doc["roster"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    // Put math.calculate (early in the roster) behind a flag that is off:
    // every tool after it moves up one place, and a deferred tool may take
    // the freed slot.
    let gone = "math.calculate".to_string();
    assert!(roster[..5].contains(&gone), "{roster:?}");
    fx.edit(
        "policies/tools/10-core.toml",
        "name = \"math.calculate\"\n",
        "name = \"math.calculate\"\nwhen = \"MATH_ENABLED\"\n",
    );
    let (code, out, err) = run(
        &fx,
        "",
        &["session", "resume", "s.json", "--format", "json"],
    );
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let changes = report["changes"].as_array().unwrap();
    assert!(
        changes.contains(&json!({"change": "removed", "name": gone, "place": "roster"})),
        "{report:#}"
    );
    assert!(
        !changes.iter().any(|c| c["change"] == "moved"),
        "nothing was reordered: {report:#}"
    );
    let shifted: Vec<&Value> = changes
        .iter()
        .filter(|c| c["change"] == "shifted")
        .collect();
    assert_eq!(shifted.len(), 1, "{report:#}");
    assert!(shifted[0]["tools"].as_u64().unwrap() > 0);
    assert!(changes.len() <= 5, "by cause, not by position: {report:#}");
}

#[test]
fn a_document_stays_small_at_three_thousand_deferred_tools() {
    let fx = Fixture::new(&[(
        "policies/muster.toml",
        "[caps]\nitems = 30\ntokens = 9000\n\n[deferral]\nenabled = true\n\n[[agent]]\nname = \"chat\"\nversion = 1\n",
    )]);
    let mut tools = String::new();
    for i in 0..3_000 {
        tools.push_str(&format!(
            "[[tool]]\nname = \"records.tool_{i}\"\ndescription = \"Look up record kind {i} by its id and return its fields.\"\ninput_schema = {{ type = \"object\", properties = {{ id = {{ type = \"string\", description = \"Record {i} id.\" }} }}, required = [\"id\"] }}\n\n"
        ));
    }
    fx.write("policies/tools/all.toml", &tools);
    let (code, _, err) = run(&fx, KEY_1, &["session", "new", "--out", "s.json"]);
    assert_eq!(code, 0, "{err}");
    let text = fx.read("s.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(
        doc["deferred"]["count"].as_u64().unwrap() >= 2_900,
        "{}",
        doc["deferred"]
    );
    assert!(text.len() <= 8 * 1024, "{} bytes", text.len());
    // Loading stays within it too.
    let (code, _, err) = run(
        &fx,
        KEY_1,
        &["session", "load", "s.json", "--name", "records.tool_2999"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(fx.read("s.json").len() <= 8 * 1024);
}

#[test]
fn forged_loads_past_what_deferral_loads_allows_are_refused() {
    let fx = deferring();
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        "control_tool = \"tools.load\"\nloads = \"beyond-caps\"\nbeyond_items = 1",
    );
    stdout(
        fx.path(),
        &["session", "new", "--flags", "production", "--out", "s.json"],
        0,
    );
    let roster: Value = serde_json::from_str(&stdout(
        fx.path(),
        &["session", "roster", "s.json", "--format", "json"],
        0,
    ))
    .unwrap();
    let names: Vec<String> = roster["deferred"].as_array().unwrap()[..3]
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    // One load fits (30 + 1); a second is refused with the caps note.
    let (code, out, _) = run(
        &fx,
        "",
        &[
            "session", "load", "s.json", "--name", &names[0], "--name", &names[1], "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["loaded"].as_array().unwrap().len(), 1, "{answer:#}");
    assert_eq!(answer["notes"][1]["code"], "caps", "{answer:#}");
    // A document claiming both loads anyway is refused on the next read.
    let mut doc: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    let mut second = doc["loaded"][0].clone();
    second["name"] = json!(names[1]);
    doc["loaded"].as_array_mut().unwrap().push(second);
    fx.write("f.json", &doc.to_string());
    let (code, _, err) = run(&fx, "", &["session", "roster", "f.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("deferral.loads allows 31"), "{err}");
}

/// Issue 24, defect 6: a document's `loaded[].tokens` zeroed let a session
/// load 1,231 tokens under `max_loaded_tokens = 500`. Documents no longer
/// carry tokens: each loaded definition is recomputed, so loads that each
/// fit, put together in one document by hand, are refused for their sum.
#[test]
fn loads_put_together_past_max_loaded_tokens_are_refused() {
    let fx = deferring();
    stdout(fx.path(), &["session", "new", "--out", "probe.json"], 0);
    let roster: Value = serde_json::from_str(&stdout(
        fx.path(),
        &["session", "roster", "probe.json", "--format", "json"],
        0,
    ))
    .unwrap();
    let three: Vec<(String, u64)> = roster["deferred"].as_array().unwrap()[..3]
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let sum: u64 = three.iter().map(|(_, t)| t).sum();
    let cap = sum - 1;
    fx.edit(
        "policies/muster.toml",
        "control_tool = \"tools.load\"",
        &format!("control_tool = \"tools.load\"\nmax_loaded_tokens = {cap}"),
    );
    stdout(fx.path(), &["session", "new", "--out", "a.json"], 0);
    stdout(fx.path(), &["session", "new", "--out", "c.json"], 0);
    stdout(
        fx.path(),
        &[
            "session",
            "load",
            "a.json",
            "--name",
            &three[0].0,
            "--name",
            &three[1].0,
        ],
        0,
    );
    stdout(
        fx.path(),
        &["session", "load", "c.json", "--name", &three[2].0],
        0,
    );
    let mut a: Value = serde_json::from_str(&fx.read("a.json")).unwrap();
    let c: Value = serde_json::from_str(&fx.read("c.json")).unwrap();
    let mut third = c["loaded"][0].clone();
    third["revision"] = a["revision"].clone();
    a["loaded"].as_array_mut().unwrap().push(third);
    fx.write("m.json", &a.to_string());
    let (code, _, err) = run(&fx, "", &["session", "roster", "m.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "the loaded tools cost {sum} tokens; deferral.max_loaded_tokens allows {cap}"
        )),
        "{err}"
    );
}

/// Issue 24, defect 9: a UTF-8 byte-order mark before a session document
/// was "expected value" (turn files accepted one). `session load` through a
/// symbolic link replaced the link with a regular file and widened mode
/// 600 to 644: the link stays, the document it points to is the one
/// written, and its mode is kept.
#[cfg(unix)]
#[test]
fn a_session_document_with_a_byte_order_mark_or_behind_a_link_is_read_and_written_in_place() {
    use std::os::unix::fs::PermissionsExt;
    let fx = deferring();
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let text = fx.read("s.json");
    fx.write("bom.json", &format!("\u{feff}{text}"));
    stdout(fx.path(), &["session", "roster", "bom.json"], 0);

    std::fs::create_dir(fx.path().join("real")).unwrap();
    std::fs::rename(fx.path().join("s.json"), fx.path().join("real/s.json")).unwrap();
    let target = fx.path().join("real/s.json");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("real/s.json", fx.path().join("link.json")).unwrap();
    stdout(
        fx.path(),
        &[
            "session",
            "load",
            "link.json",
            "--query",
            "mcp.gmail_read.get_thread",
        ],
        0,
    );
    let link = std::fs::symlink_metadata(fx.path().join("link.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
    let written: Value = serde_json::from_str(&fx.read("real/s.json")).unwrap();
    assert_eq!(written["loaded"].as_array().unwrap().len(), 1, "{written}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// Issue 24, defect 6: `control_tool` set to another roster tool made
/// muster tell the model to call that tool to load, and an edited
/// `deferred[].definition_hash` or a reversed deferred list passed. The
/// document no longer carries a control tool (a document naming one is
/// refused), its deferred set is a count and digest rebuilt from the
/// policy and compared (an edit is the resume report, exit 1, never
/// served), and a reordered roster is refused.
#[test]
fn a_document_claiming_a_control_tool_or_an_edited_deferred_set_is_not_served() {
    let fx = deferring();
    stdout(fx.path(), &["session", "new", "--out", "s.json"], 0);
    let good: Value = serde_json::from_str(&fx.read("s.json")).unwrap();
    let roster = |doc: &Value| {
        fx.write("f.json", &doc.to_string());
        run(
            &fx,
            "",
            &["session", "roster", "f.json", "--format", "json"],
        )
    };
    let mut control = good.clone();
    control["control_tool"] = json!("math.calculate");
    let (code, _, err) = roster(&control);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field `control_tool`"), "{err}");

    for (field, value) in [
        ("digest", json!(format!("sha256:{}", "0".repeat(64)))),
        (
            "count",
            json!(good["deferred"]["count"].as_u64().unwrap() - 1),
        ),
    ] {
        let mut edited = good.clone();
        edited["deferred"][field] = value;
        let (code, out, err) = roster(&edited);
        assert_eq!(code, 1, "{field}: {out}{err}");
        assert!(out.contains("tool-pin-mismatch"), "{field}: {out}");
    }

    let mut reversed = good.clone();
    reversed["roster"].as_array_mut().unwrap().reverse();
    let (code, _, err) = roster(&reversed);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not the ones its fingerprint pins"), "{err}");
}
