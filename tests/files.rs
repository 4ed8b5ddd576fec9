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
