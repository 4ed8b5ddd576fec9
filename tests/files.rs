//! Files muster reads and writes, as an attacker or a careless operator
//! would try them (issue 24): writers racing on one file, and (below)
//! symbolic links out of the policy directory and absurdly long names.

mod common;

use common::{Fixture, muster};
use std::path::Path;
use std::process::{Command, Stdio};

const SERVERS: usize = 6;

fn listing(tool: &str) -> String {
    format!(
        r#"{{"tools": [{{"name": "{tool}", "description": "Tool {tool}.", "inputSchema": {{"type": "object"}}}}]}}"#
    )
}

/// A policy with `SERVERS` server blocks `s0`…, each with a recorded
/// snapshot and, with `command`, a way to start it.
fn servers(command: Option<&str>) -> Fixture {
    let mut blocks = String::new();
    for i in 0..SERVERS {
        blocks.push_str(&format!(
            "[[mcp]]\nname = \"s{i}\"\nsnapshot = \"s{i}.json\"\n"
        ));
        if let Some(command) = command {
            blocks.push_str(&format!("command = {command}\n"));
        }
    }
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[caps]\nitems = 30\ntokens = 9000\n\n[[agent]]\nname = \"chat\"\nversion = 1\n",
        ),
        ("policies/mcp/servers.toml", &blocks),
    ]);
    if command.is_none() {
        for i in 0..SERVERS {
            fx.write(
                &format!("policies/mcp/s{i}.json"),
                &listing(&format!("t{i}")),
            );
        }
    }
    fx
}

/// Starts one muster per server at once, each naming its own server, and
/// waits for all: every one must succeed.
fn race(dir: &Path, args: &[&str]) {
    let children: Vec<_> = (0..SERVERS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_muster"))
                .current_dir(dir)
                .env("MUSTER_NO_WARM", "1")
                .args(args)
                .args(["--server", &format!("s{i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("muster starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("muster ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The servers the lock file holds entries for.
fn locked(fx: &Fixture) -> Vec<String> {
    let lock: toml::Table = toml::from_str(&fx.read("policies/mcp.lock")).expect("lock TOML");
    lock.get("mcp")
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

fn every_server() -> Vec<String> {
    (0..SERVERS).map(|i| format!("s{i}")).collect()
}

/// Issue 24 item 5: six parallel `muster lock --server X` kept 1 to 3 of
/// the six servers. Each round starts from no lock file.
#[test]
fn parallel_locks_of_different_servers_all_land() {
    let fx = servers(None);
    for _ in 0..5 {
        let _ = std::fs::remove_file(fx.path().join("policies/mcp.lock"));
        race(fx.path(), &["lock"]);
        assert_eq!(locked(&fx), every_server());
    }
}

/// The same for `discover --lock` against a live server: each server's
/// snapshot is written and the lock keeps every server.
#[test]
fn parallel_discoveries_with_lock_all_land() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let command = format!("[\"node\", {:?}, \"paged\"]", script.to_string_lossy());
    let fx = servers(Some(&command));
    race(fx.path(), &["discover", "--lock"]);
    assert_eq!(locked(&fx), every_server());
    for i in 0..SERVERS {
        let snapshot = fx.read(&format!("policies/mcp/s{i}.json"));
        assert!(snapshot.contains("\"alpha\""), "{snapshot}");
    }
    // And the policy plans with what was recorded.
    muster(fx.path()).args(["plan"]).assert().success();
}

const MUSTER_TOML: &str =
    "[caps]\nitems = 30\ntokens = 9000\n\n[[agent]]\nname = \"chat\"\nversion = 1\n";
/// A schema whose text must never reach a roster: it stands for a private
/// file outside the policy directory.
const SECRET: &str =
    r#"{"type": "object", "properties": {"PRIVATE_KEY_MATERIAL": {"type": "string"}}}"#;

/// A policy directory `policies/` with one plain tool, beside a private
/// directory `private/` holding the secret as a schema, a tools file and a
/// snapshot.
fn beside_private() -> Fixture {
    let secret_tools = format!(
        "[[tool]]\nname = \"leak\"\ndescription = \"PRIVATE_KEY_MATERIAL\"\ninput_schema = {SECRET}\n"
    );
    let secret_listing = format!(
        r#"{{"tools": [{{"name": "leak", "description": "PRIVATE_KEY_MATERIAL", "inputSchema": {SECRET}}}]}}"#
    );
    Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        (
            "policies/tools/plain.toml",
            "[[tool]]\nname = \"plain\"\ndescription = \"A tool.\"\n",
        ),
        ("private/secret.json", SECRET),
        ("private/tools.toml", &secret_tools),
        ("private/listing.json", &secret_listing),
    ])
}

#[cfg(unix)]
fn link(fx: &Fixture, target: &str, at: &str) {
    let at = fx.path().join(at);
    std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
    std::os::unix::fs::symlink(target, at).expect("symlink");
}

/// `plan --format openai` over the fixture: it must refuse (exit 2) with
/// the outside-the-directory problem naming `file`, and print nothing of
/// the secret.
fn refused(fx: &Fixture, file: &str) {
    let out = muster(fx.path())
        .args(["plan", "--format", "openai"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("PRIVATE_KEY_MATERIAL"), "{stdout}");
    assert!(
        stderr.contains(file)
            && stderr.contains("points outside the policy directory")
            && stderr.contains("symbolic link"),
        "{stderr}"
    );
}

/// Issue 24 item 3: a schema file that is a link to a file outside the
/// policy directory was read and sent to the provider.
#[cfg(unix)]
#[test]
fn a_schema_file_linked_from_outside_is_refused() {
    let fx = beside_private();
    fx.write(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"t\"\ndescription = \"T.\"\ninput_schema_file = \"schema.json\"\n",
    );
    link(
        &fx,
        "../../private/secret.json",
        "policies/tools/schema.json",
    );
    refused(&fx, "policies/tools/t.toml");
}

#[cfg(unix)]
#[test]
fn a_directory_linked_from_outside_is_refused() {
    let fx = beside_private();
    fx.write(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"t\"\ndescription = \"T.\"\ninput_schema_file = \"schemas/secret.json\"\n",
    );
    link(&fx, "../../private", "policies/tools/schemas");
    refused(&fx, "policies/tools/t.toml");
}

#[cfg(unix)]
#[test]
fn a_tools_file_linked_from_outside_is_refused() {
    let fx = beside_private();
    link(&fx, "../../private/tools.toml", "policies/tools/more.toml");
    refused(&fx, "policies/tools/more.toml");
}

#[cfg(unix)]
#[test]
fn a_tools_directory_linked_from_outside_is_refused() {
    let fx = beside_private();
    std::fs::remove_dir_all(fx.path().join("policies/tools")).expect("rm tools");
    std::fs::create_dir_all(fx.path().join("private/tools")).expect("mkdir");
    std::fs::rename(
        fx.path().join("private/tools.toml"),
        fx.path().join("private/tools/t.toml"),
    )
    .expect("mv");
    link(&fx, "../private/tools", "policies/tools");
    refused(&fx, "policies/tools/t.toml");
}

#[cfg(unix)]
#[test]
fn a_snapshot_linked_from_outside_is_refused() {
    let fx = beside_private();
    fx.write(
        "policies/mcp/s.toml",
        "[[mcp]]\nname = \"s\"\nsnapshot = \"s.json\"\n",
    );
    link(&fx, "../../private/listing.json", "policies/mcp/s.json");
    refused(&fx, "policies/mcp/s.toml");
}

#[cfg(unix)]
#[test]
fn a_snapshot_to_be_written_through_a_linked_directory_is_refused() {
    // Not recorded yet: `discover` would create it outside.
    let fx = beside_private();
    fx.write(
        "policies/mcp/s.toml",
        "[[mcp]]\nname = \"s\"\ncommand = [\"true\"]\nsnapshot = \"out/s.json\"\n",
    );
    link(&fx, "../../private", "policies/mcp/out");
    let out = muster(fx.path()).args(["discover"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(!fx.path().join("private/s.json").exists());
}

/// Links that stay inside the policy directory are its owner's choice and
/// still work: a schema file, a directory and a tools file, each a link to
/// somewhere else in the directory.
#[cfg(unix)]
#[test]
fn links_within_the_policy_directory_still_work() {
    let fx = beside_private();
    fx.write(
        "policies/shared/s.json",
        r#"{"type": "object", "properties": {"q": {"type": "string"}}}"#,
    );
    fx.write(
        "policies/shared/extra.toml",
        "[[tool]]\nname = \"extra\"\ndescription = \"Extra.\"\n",
    );
    fx.write(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"t\"\ndescription = \"T.\"\ninput_schema_file = \"s.json\"\n\n\
         [[tool]]\nname = \"u\"\ndescription = \"U.\"\ninput_schema_file = \"dir/s.json\"\n",
    );
    link(&fx, "../shared/s.json", "policies/tools/s.json");
    link(&fx, "../shared", "policies/tools/dir");
    link(&fx, "../shared/extra.toml", "policies/tools/extra.toml");
    let roster = common::stdout(fx.path(), &["plan", "--format", "openai"], 0);
    let roster: serde_json::Value = serde_json::from_str(&roster).expect("JSON");
    let names: Vec<&str> = roster
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names.len(), 4, "{roster}");
    for name in ["t", "u", "extra", "plain"] {
        assert!(names.contains(&name), "{name}: {roster}");
    }
}

/// The lock muster finds by itself (`mcp.lock`) follows the same rule: as
/// a link out, it is neither read nor written through.
#[cfg(unix)]
#[test]
fn a_lock_file_linked_from_outside_is_refused_and_not_written() {
    let fx = beside_private();
    link(&fx, "../private/secret.json", "policies/mcp.lock");
    refused(&fx, "policies/mcp.lock");
    muster(fx.path()).args(["lock"]).assert().code(2);
    assert_eq!(fx.read("private/secret.json"), SECRET);
}

/// A name of 70,000 bytes: past `u16::MAX`, the widest the formatter pads.
fn huge() -> String {
    "n".repeat(70_000)
}

/// Runs `args`, which must refuse with exit 2 (never a panic's 101) and a
/// `name-too-long` problem that does not quote the whole name.
fn too_long(fx: &Fixture, args: &[&str]) -> String {
    let out = muster(fx.path()).args(args).assert().code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let text = format!("{stdout}{stderr}");
    assert!(text.contains("[name-too-long]"), "{text}");
    assert!(
        text.len() < 4096,
        "the name is not quoted whole: {} bytes",
        text.len()
    );
    text
}

/// Issue 24 item 4: `muster plan` panicked (exit 101) on a name of 65,536
/// bytes or more: the table padded to it.
#[test]
fn a_configured_tool_name_of_70000_bytes_is_refused_not_panicked() {
    let tools = format!("[[tool]]\nname = \"{}\"\ndescription = \"Long.\"\n", huge());
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        ("policies/tools/t.toml", &tools),
    ]);
    too_long(&fx, &["plan"]);
    too_long(&fx, &["validate"]);
}

#[test]
fn a_recorded_tool_name_of_70000_bytes_is_refused_not_panicked() {
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"s\"\nsnapshot = \"s.json\"\n",
        ),
        ("policies/mcp/s.json", &listing(&huge())),
    ]);
    let text = too_long(&fx, &["plan"]);
    assert!(text.contains("policies/mcp/s.json"), "{text}");
}

#[test]
fn a_server_name_of_70000_bytes_is_refused_not_panicked() {
    let mcp = format!("[[mcp]]\nname = \"{}\"\nsnapshot = \"s.json\"\n", huge());
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        ("policies/mcp/s.toml", &mcp),
        ("policies/mcp/s.json", &listing("t")),
    ]);
    too_long(&fx, &["plan"]);
}

/// A server that lists such a name fails discovery as `invalid-listing`,
/// and its snapshot is not written, so `plan` keeps working.
#[test]
fn a_listed_tool_name_of_70000_bytes_fails_discovery() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let mcp = format!(
        "[[mcp]]\nname = \"s\"\ncommand = [\"node\", {:?}, \"long-name\"]\nsnapshot = \"s.json\"\n",
        script.to_string_lossy()
    );
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        ("policies/mcp/s.toml", &mcp),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"plain\"\ndescription = \"A tool.\"\n",
        ),
    ]);
    let out = muster(fx.path())
        .args(["discover", "--format", "json"])
        .assert()
        .code(2);
    let answer: serde_json::Value =
        serde_json::from_slice(&out.get_output().stdout).expect("discover JSON");
    let server = &answer["servers"][0];
    assert_eq!(server["reason"], "invalid-listing", "{answer}");
    let message = server["problems"][0]["message"]
        .as_str()
        .expect("a message");
    assert!(message.contains("[name-too-long]"), "{message}");
    assert!(message.len() < 1024, "{message}");
    assert!(!fx.path().join("policies/mcp/s.json").exists());
    muster(fx.path()).args(["plan"]).assert().success();
}

/// A long name within the limit is planned and shown whole; the table's
/// column stops widening at 60 bytes and the name overflows it.
#[test]
fn a_long_but_legal_name_renders_whole() {
    let name = format!("t{}", "x".repeat(1023));
    let tools = format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"Long.\"\n\n[[tool]]\nname = \"short\"\ndescription = \"Short.\"\n"
    );
    let fx = Fixture::new(&[
        ("policies/muster.toml", MUSTER_TOML),
        ("policies/tools/t.toml", &tools),
    ]);
    let table = common::stdout(fx.path(), &["plan"], 0);
    let row = |tool: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(tool))
            .unwrap_or_else(|| panic!("a row for {tool}: {table}"))
            .to_string()
    };
    assert!(row(&name).contains(&name));
    // `rank  tool  source`: the short name is padded to the cap, not to
    // the long one.
    let short = row("short");
    let source_at = short.find("configured").expect("the source column");
    assert_eq!(source_at, 4 + 2 + 60 + 2, "{short}");
}
