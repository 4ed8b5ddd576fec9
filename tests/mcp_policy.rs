//! `[[mcp]]` blocks reached over Streamable HTTP (`url`, `headers`) or
//! stdio (`command`, `cwd`, `env`), with `${VAR}` references: what loads,
//! and every refusal with its code, file and line (issues 20 and 21).

use muster::policy::{Inputs, expand_vars};
use muster::problem_code as code;
use std::path::Path;

const TOOL: &str = "[[tool]]\nname = \"a\"\ndescription = \"A tool.\"\n";

/// A policy directory with `mcp/m.toml` holding `mcp`.
fn dir_with(mcp: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("muster.toml"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/t.toml"), TOOL).unwrap();
    std::fs::create_dir_all(dir.path().join("mcp")).unwrap();
    std::fs::write(dir.path().join("mcp/m.toml"), mcp).unwrap();
    dir
}

/// Every problem of the policy in `dir`: code, line, message.
fn refusals(dir: &Path) -> Vec<(String, Option<usize>, String)> {
    let err = Inputs::load(dir).expect_err("the policy is refused");
    err.problems()
        .iter()
        .map(|p| {
            assert!(
                p.file.as_ref().is_some_and(|f| f.ends_with("mcp/m.toml")),
                "{p:?}"
            );
            (p.code.to_string(), p.line, p.message.clone())
        })
        .collect()
}

#[test]
fn a_url_block_keeps_url_and_headers_as_written() {
    let dir = dir_with(
        r#"[[mcp]]
name = "gh"
url = "https://api.example.com/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}", X-Plain = "a$$b" }
snapshot = "gh.json"
"#,
    );
    let inputs = Inputs::load(dir.path()).unwrap();
    let s = &inputs.policy.servers[0];
    assert_eq!(s.url.as_deref(), Some("https://api.example.com/mcp"));
    assert_eq!(s.command, None);
    assert_eq!(s.headers["Authorization"], "Bearer ${GITHUB_TOKEN}");
    assert_eq!(s.headers["X-Plain"], "a$$b");
    assert_eq!(s.cwd, None);
}

#[test]
fn a_command_block_takes_cwd_inside_the_policy_directory_and_vars_in_env() {
    let dir = dir_with(
        r#"[[mcp]]
name = "fs"
command = ["node", "server.js"]
cwd = "servers/fs"
env = { TOKEN = "${FS_TOKEN}", HOME_DIR = "$HOME" }
snapshot = "fs.json"
"#,
    );
    std::fs::create_dir_all(dir.path().join("servers/fs")).unwrap();
    let inputs = Inputs::load(dir.path()).unwrap();
    let s = &inputs.policy.servers[0];
    assert_eq!(
        s.cwd.as_deref(),
        Some(dir.path().join("servers/fs").as_path())
    );
    assert_eq!(s.env["TOKEN"], "${FS_TOKEN}");
    assert_eq!(s.env["HOME_DIR"], "$HOME");
    assert_eq!(s.url, None);
}

#[test]
fn url_and_command_together_are_a_conflict_at_the_url_line() {
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\ncommand = [\"prog\"]\nurl = \"https://h/mcp\"\nsnapshot = \"x.json\"\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, code::CONFLICT);
    assert_eq!(got[0].1, Some(4));
    assert!(
        got[0].2.contains("both url and command (line 3)"),
        "{got:?}"
    );
}

#[test]
fn a_block_with_neither_command_url_nor_snapshot_is_refused() {
    let dir = dir_with("[[mcp]]\nname = \"x\"\n");
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::MISSING_VALUE);
    assert!(
        got[0].2.contains("neither command, url nor snapshot"),
        "{got:?}"
    );
}

#[test]
fn a_snapshot_only_block_still_loads() {
    let dir = dir_with("[[mcp]]\nname = \"x\"\nsnapshot = \"x.json\"\n");
    std::fs::write(dir.path().join("mcp/x.json"), r#"{"tools": []}"#).unwrap();
    let inputs = Inputs::load(dir.path()).unwrap();
    assert_eq!(inputs.policy.servers[0].url, None);
}

#[test]
fn bad_urls_are_refused_with_their_line() {
    for (url, why) in [
        ("ftp://h/mcp", "not an http:// or https:// URL"),
        ("https://", "has no host"),
        ("https://user:pw@h/mcp", "credentials"),
        ("https://h/m cp", "spaces"),
    ] {
        let dir = dir_with(&format!(
            "[[mcp]]\nname = \"x\"\nsnapshot = \"x.json\"\nurl = \"{url}\"\n"
        ));
        let got = refusals(dir.path());
        assert_eq!(got[0].0, code::INVALID_VALUE, "{url}: {got:?}");
        assert_eq!(got[0].1, Some(4), "{url}");
        assert!(got[0].2.contains(why), "{url}: {got:?}");
        assert!(
            !got[0].2.contains("pw@"),
            "a URL's credentials are not repeated"
        );
    }
}

#[test]
fn headers_without_url_and_cwd_without_command_are_conflicts() {
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\ncommand = [\"p\"]\nsnapshot = \"x.json\"\nheaders = { A = \"b\" }\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::CONFLICT, "{got:?}");
    assert_eq!(got[0].1, Some(5));
    assert!(
        got[0].2.contains("headers are sent only to a url"),
        "{got:?}"
    );

    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\nsnapshot = \"x.json\"\ncwd = \".\"\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::CONFLICT, "{got:?}");
    assert_eq!(got[0].1, Some(5));
    assert!(
        got[0].2.contains("cwd is where a command starts"),
        "{got:?}"
    );
}

#[test]
fn malformed_references_and_header_names_are_refused_where_written() {
    let dir = dir_with(
        r#"[[mcp]]
name = "x"
url = "https://h/mcp"
snapshot = "x.json"
headers = { "Bad Name" = "v", Authorization = "Bearer ${TOKEN" }
[[mcp]]
name = "y"
command = ["p"]
snapshot = "y.json"
env = { A = "${1X}" }
"#,
    );
    let got = refusals(dir.path());
    let codes: Vec<_> = got.iter().map(|(c, l, _)| (c.as_str(), *l)).collect();
    assert_eq!(
        codes,
        [
            (code::INVALID_VALUE, Some(5)),
            (code::INVALID_VALUE, Some(5)),
            (code::INVALID_VALUE, Some(10)),
        ],
        "{got:?}"
    );
    // Headers are read in name order.
    assert!(
        got[0]
            .2
            .contains("headers.Authorization has a `${` with no closing `}`")
    );
    assert!(
        got[1].2.contains("\"Bad Name\" is not an HTTP header name"),
        "{got:?}"
    );
    assert!(got[2].2.contains("env.A names the variable \"1X\""));
}

#[test]
fn a_cwd_outside_the_policy_directory_is_refused() {
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\ncommand = [\"p\"]\nsnapshot = \"x.json\"\ncwd = \"../elsewhere\"\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::OUTSIDE_POLICY_DIRECTORY, "{got:?}");
    assert_eq!(got[0].1, Some(5));
}

#[cfg(unix)]
#[test]
fn a_cwd_linked_out_of_the_policy_directory_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\ncommand = [\"p\"]\nsnapshot = \"x.json\"\ncwd = \"link\"\n",
    );
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::OUTSIDE_POLICY_DIRECTORY, "{got:?}");
    assert!(got[0].2.contains("symbolic link"), "{got:?}");
}

#[test]
fn a_cwd_that_is_not_a_directory_is_refused() {
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\ncommand = [\"p\"]\nsnapshot = \"x.json\"\ncwd = \"missing\"\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::FILE_MISSING, "{got:?}");
    assert!(got[0].2.contains("not a directory"), "{got:?}");
}

#[test]
fn expand_vars_names_the_unset_variable_server_and_key_never_a_value() {
    // A name no environment sets.
    let err = expand_vars(
        "Bearer ${MUSTER_TEST_SURELY_UNSET_VAR_20}",
        "gh",
        "headers.Authorization",
    )
    .unwrap_err();
    let p = &err.problems()[0];
    assert_eq!(p.code, code::ENV_VAR_UNSET);
    assert!(
        p.message.contains("MUSTER_TEST_SURELY_UNSET_VAR_20"),
        "{p:?}"
    );
    assert!(p.message.contains("`gh`"), "{p:?}");
    assert!(p.message.contains("headers.Authorization"), "{p:?}");
    assert!(!p.message.contains("Bearer"), "{p:?}");
    assert_eq!(expand_vars("a$$b", "gh", "k").unwrap(), "a$b");
}

#[test]
fn headers_the_transport_sets_itself_are_refused() {
    let dir = dir_with(
        "[[mcp]]\nname = \"x\"\nurl = \"https://h/mcp\"\nsnapshot = \"x.json\"\nheaders = { mcp-session-id = \"1\" }\n",
    );
    let got = refusals(dir.path());
    assert_eq!(got[0].0, code::CONFLICT, "{got:?}");
    assert_eq!(got[0].1, Some(5));
    assert!(
        got[0].2.contains("set by the MCP transport itself"),
        "{got:?}"
    );
}
