//! Issue 13, reproduced: reads that failed open, inputs read without bound,
//! and policy paths that reached outside the policy directory. Each must be
//! refused as bad input (exit 2) naming the path and what to do, never
//! planned around, hung on or read to the end of memory.
//!
//! Tests run as root, which can read a `chmod 000` directory, so an
//! unreadable directory is made as a file where the directory should be, or
//! as a dangling link.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{CHECK_JSON, Fixture, muster};
use muster::policy::Inputs;
use muster::{Error, ErrorKind};

const TOOL: &str = "[[tool]]\nname = \"a.tool\"\ndescription = \"A tool.\"\n";
const SERVER: &str = "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n";
const SNAPSHOT: &str = r#"{"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}"#;

/// A policy with a configured tool, a recorded server and a flag profile.
fn policy() -> Fixture {
    Fixture::new(&[
        ("policies/tools/t.toml", TOOL),
        ("policies/mcp/s.toml", SERVER),
        ("policies/mcp/kb.json", SNAPSHOT),
        ("policies/flags/production.toml", "flags = [\"x\"]\n"),
    ])
}

fn load_err(fx: &Fixture) -> Error {
    Inputs::load(&fx.policies()).expect_err("the policy must be refused")
}

/// The one problem about `path`, which must say what to do.
fn problem_at<'e>(err: &'e Error, path: &Path) -> &'e muster::Problem {
    let found: Vec<_> = err
        .problems()
        .iter()
        .filter(|p| p.file.as_deref() == Some(path))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one problem naming {}: {err}",
        path.display()
    );
    assert!(found[0].help.is_some(), "{}", found[0]);
    found[0]
}

/// Runs muster in the fixture with a time limit, expecting exit 2; returns stderr.
fn refused(fx: &Fixture, args: &[&str]) -> String {
    let assert = muster(fx.path())
        .args(args)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2);
    let out = assert.get_output();
    assert!(out.stdout.is_empty(), "nothing on stdout for bad input");
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

#[test]
fn the_fixture_is_valid_as_written() {
    let inputs = Inputs::load(&policy().policies()).unwrap();
    assert_eq!(inputs.policy.tools.len(), 1);
    assert_eq!(inputs.policy.servers.len(), 1);
    assert_eq!(inputs.policy.profiles.len(), 1);
}

#[test]
fn an_unreadable_tools_mcp_or_flags_directory_is_an_error_not_an_empty_set() {
    for sub in ["tools", "mcp", "flags"] {
        // A file where the directory should be.
        let fx = policy();
        let dir = fx.policies().join(sub);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "").unwrap();
        let err = load_err(&fx);
        assert_eq!(err.kind(), ErrorKind::Policy);
        problem_at(&err, &dir);
        let stderr = refused(&fx, &["validate"]);
        assert!(stderr.contains(&format!("{sub}/")), "{stderr}");

        // A link to nothing.
        let fx = policy();
        let dir = fx.policies().join(sub);
        std::fs::remove_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(fx.path().join("gone"), &dir).unwrap();
        problem_at(&load_err(&fx), &dir);
        refused(&fx, &["plan"]);
    }
    // A part that is simply absent is still fine.
    let fx = policy();
    std::fs::remove_dir_all(fx.policies().join("flags")).unwrap();
    Inputs::load(&fx.policies()).unwrap();
}

#[test]
fn fifos_and_devices_are_refused_wherever_an_input_is_read() {
    // muster.toml
    let fx = policy();
    mkfifo(&fx.policies().join("muster.toml"));
    problem_at(&load_err(&fx), &fx.policies().join("muster.toml"));
    refused(&fx, &["validate"]);

    // A snapshot.
    let fx = policy();
    let snapshot = fx.policies().join("mcp/kb.json");
    std::fs::remove_file(&snapshot).unwrap();
    mkfifo(&snapshot);
    assert_eq!(load_err(&fx).problems().len(), 1);
    refused(&fx, &["validate"]);

    // A schema file.
    let fx = policy();
    fx.write(
        "policies/tools/t.toml",
        &format!("{TOOL}input_schema_file = \"s.json\"\n"),
    );
    mkfifo(&fx.policies().join("tools/s.json"));
    assert_eq!(load_err(&fx).problems().len(), 1);
    refused(&fx, &["validate"]);

    // The lock, named by [lock] file.
    let fx = policy();
    fx.write("policies/muster.toml", "[lock]\nfile = \"/dev/zero\"\n");
    problem_at(&load_err(&fx), Path::new("/dev/zero"));
    refused(&fx, &["validate"]);

    // The check's plan and turn.
    let fx = policy();
    fx.write("plan.json", r#"{"format_version": 3, "roster": []}"#);
    fx.write("turn.json", r#"{"calls": []}"#);
    mkfifo(&fx.path().join("fifo"));
    let err = refused(&fx, &["check", "--plan", "fifo", "--turn", "turn.json"]);
    assert!(err.contains("fifo"), "{err}");
    let err = refused(
        &fx,
        &["check", "--plan", "plan.json", "--turn", "/dev/zero"],
    );
    assert!(err.contains("/dev/zero"), "{err}");
}

#[test]
fn an_input_past_the_size_cap_is_refused_without_reading_it() {
    let fx = policy();
    fx.write("turn.json", r#"{"calls": []}"#);
    // Sparse, so it costs no disk.
    let big = std::fs::File::create(fx.path().join("plan.json")).unwrap();
    big.set_len(muster::input::MAX_INPUT_BYTES + 1).unwrap();
    let err = refused(
        &fx,
        &["check", "--plan", "plan.json", "--turn", "turn.json"],
    );
    assert!(err.contains("plan.json"), "{err}");

    let big = std::fs::File::create(fx.policies().join("mcp/kb.json")).unwrap();
    big.set_len(muster::input::MAX_INPUT_BYTES + 1).unwrap();
    assert_eq!(load_err(&fx).problems().len(), 1);
}

#[test]
fn a_file_that_is_not_utf8_is_refused_with_its_line() {
    let fx = policy();
    std::fs::write(
        fx.policies().join("tools/t.toml"),
        b"[[tool]]\nname = \"a.tool\"\ndescription = \"\xff\"\n",
    )
    .unwrap();
    let err = load_err(&fx);
    let problem = problem_at(&err, &fx.policies().join("tools/t.toml"));
    assert_eq!(problem.line, Some(3));
}

#[test]
fn policy_paths_that_leave_the_policy_directory_are_refused() {
    let fx = policy();
    fx.write("outside.json", r#"{"type": "object"}"#);
    let outside = fx.path().join("outside.json");
    for named in [
        "../../outside.json".to_string(),
        "schemas/../../../outside.json".to_string(),
        outside.display().to_string(),
    ] {
        fx.write(
            "policies/tools/t.toml",
            &format!("{TOOL}input_schema_file = {named:?}\n"),
        );
        let err = load_err(&fx);
        let problem = problem_at(&err, &fx.policies().join("tools/t.toml"));
        assert_eq!(problem.line, Some(4), "{named}");
        refused(&fx, &["plan"]);
    }
    fx.write("policies/tools/t.toml", TOOL);
    fx.write(
        "policies/mcp/s.toml",
        "[[mcp]]\nname = \"kb\"\nsnapshot = \"../../outside.json\"\n",
    );
    let err = load_err(&fx);
    let problem = problem_at(&err, &fx.policies().join("mcp/s.toml"));
    assert_eq!(problem.line, Some(3));

    // Inside the policy directory, `..` is fine.
    fx.write("policies/shared/s.json", r#"{"type": "object"}"#);
    fx.write("policies/mcp/s.toml", SERVER);
    fx.write(
        "policies/tools/t.toml",
        &format!("{TOOL}input_schema_file = \"../shared/s.json\"\n"),
    );
    Inputs::load(&fx.policies()).unwrap();
}

/// Issue 13 item 7: a discovered name with a newline, a right-to-left
/// override or a zero-width space is cut as `invalid-name`, shown escaped,
/// never offered; the same characters in configured names are refused.
#[test]
fn names_with_hidden_characters_are_cut_or_refused() {
    let snapshot = serde_json::json!({"tools": [
        {"name": "line\nbreak", "inputSchema": {"type": "object"}},
        {"name": "evil\u{202E}txt", "inputSchema": {"type": "object"}},
        {"name": "zero\u{200B}width", "inputSchema": {"type": "object"}},
        {"name": "search", "inputSchema": {"type": "object"}},
    ]});
    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[[agent]]\nname = \"a\"\nversion = 1\n",
        ),
        ("policies/mcp/s.toml", SERVER),
        ("policies/mcp/kb.json", &snapshot.to_string()),
    ]);
    let out = muster(fx.path())
        .args(["plan", "--format", "json"])
        .assert()
        .success();
    let plan: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let roster: Vec<&str> = plan["roster"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(roster, ["mcp.kb.search"]);
    let cut: Vec<&serde_json::Value> = plan["cut"].as_array().unwrap().iter().collect();
    let facts: Vec<&serde_json::Value> = cut.iter().map(|c| &c["facts"]).collect();
    assert_eq!(
        facts,
        [
            &serde_json::json!({"code": "invalid-name", "server": "kb", "tool": "line\\u{000A}break",
                "character": "U+000A", "hidden": "control", "position": 4}),
            &serde_json::json!({"code": "invalid-name", "server": "kb", "tool": "evil\\u{202E}txt",
                "character": "U+202E", "hidden": "bidi", "position": 4}),
            &serde_json::json!({"code": "invalid-name", "server": "kb", "tool": "zero\\u{200B}width",
                "character": "U+200B", "hidden": "invisible", "position": 4}),
        ]
    );
    assert_eq!(cut[1]["name"], "mcp.kb.evil\\u{202E}txt");
    // The text plan keeps one line per tool and no hidden character.
    let out = muster(fx.path()).arg("plan").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        !text.contains('\u{202E}') && !text.contains('\u{200B}'),
        "{text}"
    );
    assert!(text.contains("mcp.kb.line\\u{000A}break"), "{text}");

    let fx = Fixture::new(&[
        (
            "policies/muster.toml",
            "[[group]]\nname = \"core\u{200B}\"\nmembers = [\"a.tool\"]\n\n\
             [[agent]]\nname = \"a\"\nversion = 1\n",
        ),
        (
            "policies/tools/t.toml",
            "[[tool]]\nname = \"a.tool\"\ndescription = \"A.\"\n\n\
             [[tool]]\nname = \"b.\u{202E}loot\"\ndescription = \"B.\"\n",
        ),
    ]);
    let err = load_err(&fx);
    let lines: Vec<(std::path::PathBuf, Option<usize>)> = err
        .problems()
        .iter()
        .map(|p| (p.file.clone().unwrap(), p.line))
        .collect();
    assert_eq!(
        lines,
        [
            (fx.policies().join("tools/t.toml"), Some(6)),
            (fx.policies().join("muster.toml"), Some(2)),
        ],
        "{err}"
    );
    assert!(err.problems().iter().all(|p| p.help.is_some()), "{err}");
}

/// Issue 13 item 5: a number no 64-bit integer or double holds exactly is
/// never forwarded rounded, in either check mode: the call is refused with
/// `lossy-number`, and the same digits sent as text are forwarded as written.
#[test]
fn a_number_that_would_lose_digits_refuses_its_call() {
    const BIG: &str = "123456789012345678901234567890";
    let fx = Fixture::new(&[(
        "plan.json",
        r#"{"format_version": 3, "roster": [
            {"name": "a.lenient", "check": "lenient", "coerce": true, "input_schema": {"type": "object",
             "properties": {"n": {"type": "number"}, "s": {"type": "string"}}}},
            {"name": "a.strict", "source": "mcp", "check": "strict", "coerce": true, "input_schema": {"type": "object",
             "properties": {"n": {"type": "number"}, "s": {"type": "string"}}}}]}"#,
    )]);
    let check = |turn: &str, code: i32| -> (String, serde_json::Value) {
        fx.write("turn.json", turn);
        let out = muster(fx.path())
            .args(["check", "--plan", "plan.json", "--turn", "turn.json"])
            .args(["--format", "json"])
            .assert()
            .code(code);
        let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let report = serde_json::from_str(&stdout).unwrap();
        (stdout, report)
    };
    for tool in ["a.lenient", "a.strict"] {
        // serde_json cannot hold the big number itself, so the turn is written as text.
        let turn = format!(
            r#"{{"calls": [
                {{"id": "raw", "name": "{tool}", "arguments": {{"n": {BIG}}}}},
                {{"id": "wrapped", "name": "{tool}", "arguments": "{{\"n\": {BIG}}}"}},
                {{"id": "fraction", "name": "{tool}", "arguments": {{"n": 1.23456789012345678901}}}}
            ]}}"#
        );
        let (stdout, report) = check(&turn, 1);
        assert!(
            !stdout.contains("e+29") && !stdout.contains("e29"),
            "{stdout}"
        );
        for (call, number) in
            report["calls"]
                .as_array()
                .unwrap()
                .iter()
                .zip([BIG, BIG, "1.23456789012345678901"])
        {
            assert_eq!(call["status"], "refused", "{call}");
            assert!(call["arguments"].is_null(), "{call}");
            let problem = &call["problems"][0];
            assert_eq!(problem["code"], "lossy-number", "{call}");
            assert_eq!(problem["number"], number, "{call}");
        }

        // The twins: text keeps every digit; numbers an integer type or a double holds
        // exactly (u64::MAX, 2^64) go through as they are.
        let turn = format!(
            r#"{{"calls": [
                {{"id": "text", "name": "{tool}", "arguments": {{"s": "{BIG}"}}}},
                {{"id": "max", "name": "{tool}", "arguments": {{"n": 18446744073709551615}}}},
                {{"id": "pow", "name": "{tool}", "arguments": "{{\"n\": 18446744073709551616}}"}}
            ]}}"#
        );
        let (stdout, report) = check(&turn, 0);
        let calls = report["calls"].as_array().unwrap();
        assert_eq!(calls[0]["arguments"], serde_json::json!({"s": BIG}));
        assert_eq!(calls[1]["arguments"]["n"], u64::MAX);
        assert_eq!(calls[2]["arguments"]["n"].as_f64(), Some(2f64.powi(64)));
        assert!(stdout.contains("18446744073709551615"), "{stdout}");
    }

    // Digits sent as text where a number is declared are not cast (a double would round
    // them). Checked leniently they go on as written; checked strictly, they are refused as
    // the server would refuse text for a number, never sent rounded.
    let turn = |tool: &str| {
        format!(r#"{{"calls": [{{"id": "t", "name": "{tool}", "arguments": {{"n": "{BIG}"}}}}]}}"#)
    };
    let (_, report) = check(&turn("a.lenient"), 0);
    assert_eq!(
        report["calls"][0]["arguments"],
        serde_json::json!({"n": BIG})
    );
    let (stdout, report) = check(&turn("a.strict"), 1);
    assert_eq!(
        report["calls"][0]["problems"][0]["code"], "wrong-type",
        "{stdout}"
    );
    assert!(
        !stdout.contains("e+29") && !stdout.contains("e29"),
        "{stdout}"
    );
}

/// Issue 13 item 8: `muster plan >&-` exited 0 having written nothing (Rust's
/// runtime reopens a closed stdout on /dev/null). Every command that writes
/// stdout fails instead, saying so; `>/dev/null` still succeeds.
#[test]
fn a_command_whose_stdout_is_closed_fails_saying_so() {
    let fx = Fixture::bundled();
    let plan = common::stdout(fx.path(), &["plan", "--format", "json"], 0);
    fx.write("plan.json", &plan);
    fx.write(
        "turn.json",
        r#"{"calls": [{"id": "c", "name": "no.such.tool", "arguments": {}}]}"#,
    );
    let run = |args: &str, redirect: &str| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" {args} {redirect}"))
            .arg(env!("CARGO_BIN_EXE_muster"))
            .current_dir(fx.path())
            .env("MUSTER_CACHE_DIR", fx.path().join("cache"))
            .env("MUSTER_NO_WARM", "1")
            .output()
            .expect("sh runs");
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    for (args, code) in [
        ("plan", 0),
        ("plan --format json", 0),
        ("validate", 0),
        ("check --plan plan.json --turn turn.json", 1),
        ("session new --out s.json", 0),
    ] {
        let (status, stderr) = run(args, ">&-");
        assert_eq!(status, Some(2), "muster {args} >&-: {stderr}");
        assert!(
            stderr.contains("cannot write output: standard output is closed"),
            "muster {args} >&-: {stderr}"
        );
        // Refused before doing anything: no session document is written.
        assert!(!fx.path().join("s.json").exists());
        let (status, stderr) = run(args, ">/dev/null");
        assert_eq!(status, Some(code), "muster {args} >/dev/null: {stderr}");
        std::fs::remove_file(fx.path().join("s.json")).ok();
    }
}

/// Issue 13 item 8: only the first wrong type of a TOML file was shown.
#[test]
fn every_wrong_type_in_a_policy_file_is_listed_with_its_line() {
    let fx = policy();
    fx.write(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"a.tool\"\npriority = \"high\"\n\n\
         [[tool]]\nname = \"b.tool\"\ndeferrable = \"no\"\nprority = 1\n\n\
         [[tool]]\nname = 3\n",
    );
    let err = load_err(&fx);
    let file = fx.policies().join("tools/t.toml");
    let lines: Vec<Option<usize>> = err
        .problems()
        .iter()
        .filter(|p| p.file.as_deref() == Some(file.as_path()))
        .map(|p| p.line)
        .collect();
    assert_eq!(lines, [Some(3), Some(7), Some(8), Some(11)], "{err}");
    assert!(err.problems().iter().all(|p| p.help.is_some()), "{err}");
    let stderr = refused(&fx, &["validate"]);
    for at in ["t.toml:3:", "t.toml:7:", "t.toml:8:", "t.toml:11:"] {
        assert!(stderr.contains(at), "{at} in {stderr}");
    }
}

/// A plan and a turn for the check's input tests: one tool taking `path`.
fn check_fixture(turn: &str) -> Fixture {
    Fixture::new(&[
        (
            "plan.json",
            r#"{"format_version": 3, "roster": [{"name": "a.b", "input_schema":
                {"type": "object", "properties": {"path": {"type": "string"}}}}]}"#,
        ),
        ("turn.json", turn),
    ])
}

/// Issue 13 item 8: a turn file with a byte-order mark was "expected value",
/// and `[]` was "invalid length 0, expected struct RawTurn with 1 element".
#[test]
fn a_turn_with_a_byte_order_mark_is_read_and_a_list_is_named_as_such() {
    let fx = check_fixture(
        "\u{feff}{\"calls\": [{\"id\": \"c\", \"name\": \"a.b\", \"arguments\": {\"path\": \"x\"}}]}",
    );
    muster(fx.path()).args(CHECK_JSON).assert().success();
    fx.write("turn.json", "\n[]\n");
    let stderr = refused(&fx, &CHECK_JSON);
    assert!(
        stderr.contains("turn.json:2: cannot read the turn: it is a list, not an object"),
        "{stderr}"
    );
    assert!(stderr.contains("help:"), "{stderr}");
    assert!(!stderr.contains("invalid length"), "{stderr}");
}

/// Issue 13 item 8: "recursion limit exceeded" said no line and not what it meant.
#[test]
fn input_nested_too_deep_is_named_with_its_line() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let fx = check_fixture(r#"{"calls": []}"#);
    fx.write(
        "plan.json",
        &format!(
            "{{\"format_version\": 3,\n\"roster\": [{{\"name\": \"a.b\", \"input_schema\": {deep}}}]}}"
        ),
    );
    let stderr = refused(&fx, &CHECK_JSON);
    assert!(
        stderr.contains("plan.json:2: cannot read the plan:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("JSON text nested too deep (more than 128 levels)"),
        "{stderr}"
    );
}

/// Issue 13 item 8: a member named twice inside a call's arguments took the
/// last value silently.
#[test]
fn a_member_named_twice_in_arguments_refuses_the_call() {
    let fx = check_fixture(
        r#"{"calls": [{"id": "c", "name": "a.b", "arguments": {"path": "a", "path": "b"}}]}"#,
    );
    let out = muster(fx.path()).args(CHECK_JSON).assert().code(1);
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let problem = &report["calls"][0]["problems"][0];
    assert_eq!(problem["code"], "unreadable-arguments", "{report}");
    assert!(
        problem["reason"]
            .as_str()
            .unwrap()
            .starts_with("member name \"path\" is given twice"),
        "{report}"
    );
    // The twin: distinct names go through.
    fx.write(
        "turn.json",
        r#"{"calls": [{"id": "c", "name": "a.b", "arguments": {"path": "a", "q": {"path": "b"}}}]}"#,
    );
    let plan = r#"{"format_version": 3, "roster": [{"name": "a.b", "input_schema":
        {"type": "object", "properties": {"path": {"type": "string"}, "q": {"type": "object"}}}}]}"#;
    fx.write("plan.json", plan);
    muster(fx.path()).args(CHECK_JSON).assert().success();
}

/// Issue 13 item 8: a server whose listing nests deeper than muster reads
/// was reported as printing "a line that is not JSON-RPC", and only when
/// its timeout ran out. It is reported at once, naming the server, the
/// tool and the depth limit: the timeout here is far longer than the test
/// waits for its answer, and the answer is not a timeout.
#[test]
fn a_listing_nested_too_deep_is_named_as_such_in_discovery() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/scripted-server.mjs");
    let fx = Fixture::new(&[
        ("policies/muster.toml", ""),
        (
            "policies/mcp/deep.toml",
            &format!(
                "[[mcp]]\nname = \"deep\"\ncommand = [\"node\", {:?}, \"deep\"]\nsnapshot = \"deep.json\"\ntimeout_secs = 600\n",
                script.to_string_lossy()
            ),
        ),
    ]);
    let assert = muster(fx.path())
        .args(["discover"])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(2);
    // discover reports each server on stdout.
    let out = assert.get_output();
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stderr.contains("mcp server `deep`: tool `deep` is nested more than 128 levels deep"),
        "{stderr}"
    );
    assert!(!stderr.contains("not JSON-RPC"), "{stderr}");
    assert!(!stderr.contains("timed out"), "{stderr}");
    assert!(!fx.policies().join("mcp/deep.json").exists());
}
