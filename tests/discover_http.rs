//! Discovery over Streamable HTTP against a real server: the npm reference
//! `server-everything`, started as `streamableHttp` on a free loopback
//! port. Discover it, lock it, plan from its snapshot; and a header filled
//! from `${VAR}` never shows in any output, file or error (issue 20 item 1).
//!
//! Needs node and npm (the pinned servers are installed on first use).

mod common;

use common::{HttpServer, muster};
use muster::contract::{DiscoverAnswer, ServerDiscovery};
use std::path::Path;

/// The value the secret header's variable holds: recognizable in any output.
const SECRET: &str = "sekrit-7f3a9c-do-not-print";

/// A project directory whose `policies/mcp/m.toml` holds `mcp`.
fn project(mcp: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(policies.join("mcp")).unwrap();
    std::fs::write(policies.join("muster.toml"), "").unwrap();
    std::fs::write(policies.join("mcp/m.toml"), mcp).unwrap();
    dir
}

/// `muster ARGS` in `dir` with the secret in its environment: exit code,
/// stdout and stderr.
fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = muster(dir)
        .args(args)
        .env("MUSTER_TEST_SECRET", SECRET)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Every file under `dir`, read as text, with its path.
fn all_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_files(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
    out
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the secret:\n{text}");
    assert!(
        !text.contains("sekrit"),
        "{what} shows part of the secret:\n{text}"
    );
}

#[test]
fn server_everything_over_http_is_discovered_locked_and_planned() {
    let server = HttpServer::start("server-everything");
    let dir = project(&format!(
        r#"[[mcp]]
name = "everything"
url = "{}"
headers = {{ Authorization = "Bearer ${{MUSTER_TEST_SECRET}}", X-Client = "muster-test" }}
snapshot = "everything.json"
"#,
        server.url("/mcp")
    ));

    let (code, out, err) = run(dir.path(), &["discover", "--format", "json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let answer: DiscoverAnswer = serde_json::from_str(&out).unwrap();
    assert_eq!((answer.listed, answer.failed), (1, 0));
    let ServerDiscovery::Listed { tools, server, .. } = &answer.servers[0] else {
        panic!("{out}");
    };
    assert_eq!(server, "everything");
    assert!(*tools >= 10, "{out}");
    let snapshot: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("policies/mcp/everything.json")).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = snapshot["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    let echo = snapshot["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(
        echo["inputSchema"]["required"],
        serde_json::json!(["message"])
    );

    let (code, out, err) = run(dir.path(), &["lock"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let lock = std::fs::read_to_string(dir.path().join("policies/mcp.lock")).unwrap();
    assert!(lock.contains("\"echo\"") || lock.contains("echo"), "{lock}");

    let (code, out, err) = run(dir.path(), &["plan", "--format", "json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        common::names_in(&plan, "roster")
            .iter()
            .any(|n| n.ends_with("echo")),
        "{out}"
    );

    // Nothing recorded or printed holds the filled header.
    for (path, text) in all_files(dir.path()) {
        assert_no_secret(&path, &text);
        if !path.ends_with(".toml") {
            assert!(
                !text.contains("Bearer"),
                "{path} records the header:\n{text}"
            );
        }
    }
    assert_no_secret("plan", &out);
}

#[test]
fn a_failing_http_server_never_shows_the_filled_header() {
    let server = HttpServer::start("server-everything");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = project(&format!(
        r#"[[mcp]]
name = "wrong-path"
url = "{}"
headers = {{ Authorization = "Bearer ${{MUSTER_TEST_SECRET}}" }}
snapshot = "a.json"
timeout_secs = 20

[[mcp]]
name = "nothing-there"
url = "http://127.0.0.1:{closed}/mcp"
headers = {{ X-Api-Key = "${{MUSTER_TEST_SECRET}}" }}
snapshot = "b.json"
timeout_secs = 20

[[mcp]]
name = "unset"
url = "{}"
headers = {{ Authorization = "Bearer ${{MUSTER_TEST_SURELY_UNSET_VAR}}" }}
snapshot = "c.json"
"#,
        server.url("/not-mcp"),
        server.url("/mcp"),
    ));
    for args in [
        &["discover", "--format", "json"][..],
        &["discover"][..],
        &["discover", "--lock"][..],
    ] {
        let (code, out, err) = run(dir.path(), args);
        assert_ne!(code, 0, "{args:?}: {out}\n{err}");
        assert_no_secret(&format!("{args:?} stdout"), &out);
        assert_no_secret(&format!("{args:?} stderr"), &err);
    }
    let (_, out, _) = run(dir.path(), &["discover", "--format", "json"]);
    let answer: DiscoverAnswer = serde_json::from_str(&out).unwrap();
    assert_eq!((answer.listed, answer.failed), (0, 3), "{out}");
    let ServerDiscovery::Failed { problems, .. } = &answer.servers[2] else {
        panic!("{out}");
    };
    assert_eq!(problems[0].code, "env-var-unset", "{out}");
    assert!(
        problems[0].message.contains("MUSTER_TEST_SURELY_UNSET_VAR")
            && problems[0].message.contains("headers.Authorization"),
        "{out}"
    );
    for (path, text) in all_files(dir.path()) {
        assert_no_secret(&path, &text);
    }
}
