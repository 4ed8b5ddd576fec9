//! Discovery ergonomics against the real npm reference servers (issue 21
//! item 7): `cwd`, `${VAR}` in `env`, the stderr lines that hold the error,
//! and outcomes in declared order with servers run a few at a time.
//!
//! Needs node and npm (the pinned servers are installed on first use).

mod common;

use common::{muster, reference_server};
use muster::contract::{DiscoverAnswer, ServerDiscovery};
use std::path::Path;

/// A project directory whose `policies/mcp/m.toml` holds `mcp`.
fn project(mcp: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(policies.join("mcp")).unwrap();
    std::fs::write(policies.join("muster.toml"), "").unwrap();
    std::fs::write(policies.join("mcp/m.toml"), mcp).unwrap();
    dir
}

fn discover(dir: &Path, env: &[(&str, &str)]) -> DiscoverAnswer {
    let mut cmd = muster(dir);
    cmd.args(["discover", "--format", "json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn toml_str(p: &Path) -> String {
    serde_json::to_string(&p.to_string_lossy()).unwrap()
}

#[test]
fn a_server_starts_in_its_cwd_inside_the_policy_directory() {
    let memory = reference_server("server-memory");
    let dir = project(
        r#"[[mcp]]
name = "memory"
command = ["node", "./server.js"]
cwd = "servers/memory"
env = { MEMORY_FILE_PATH = "${MUSTER_TEST_MEMORY_FILE}" }
snapshot = "memory.json"
timeout_secs = 60
"#,
    );
    let cwd = dir.path().join("policies/servers/memory");
    std::fs::create_dir_all(&cwd).unwrap();
    // `./server.js` is found only when the server starts in `cwd`.
    std::os::unix::fs::symlink(&memory, cwd.join("server.js")).unwrap();
    let file = dir.path().join("graph.jsonl");
    let answer = discover(
        dir.path(),
        &[("MUSTER_TEST_MEMORY_FILE", &file.to_string_lossy())],
    );
    assert_eq!((answer.listed, answer.failed), (1, 0), "{answer:?}");
    let ServerDiscovery::Listed { tools, .. } = &answer.servers[0] else {
        panic!("{answer:?}");
    };
    assert!(*tools > 0);
}

#[test]
fn an_unset_variable_in_env_fails_that_server_alone_by_name() {
    let memory = reference_server("server-memory");
    let dir = project(&format!(
        r#"[[mcp]]
name = "needs-var"
command = ["node", {m}]
env = {{ MEMORY_FILE_PATH = "${{MUSTER_TEST_SURELY_UNSET_21}}/graph.jsonl" }}
snapshot = "a.json"

[[mcp]]
name = "fine"
command = ["node", {m}]
env = {{ MEMORY_FILE_PATH = "$${{literal}}.jsonl" }}
snapshot = "b.json"
timeout_secs = 60
"#,
        m = toml_str(Path::new(&memory))
    ));
    let answer = discover(dir.path(), &[]);
    assert_eq!((answer.listed, answer.failed), (1, 1), "{answer:?}");
    let ServerDiscovery::Failed {
        server, problems, ..
    } = &answer.servers[0]
    else {
        panic!("{answer:?}");
    };
    assert_eq!(server, "needs-var");
    assert_eq!(problems[0].code, "env-var-unset");
    assert!(
        problems[0].message.contains("MUSTER_TEST_SURELY_UNSET_21")
            && problems[0].message.contains("env.MEMORY_FILE_PATH"),
        "{problems:?}"
    );
    assert!(matches!(answer.servers[1], ServerDiscovery::Listed { .. }));
}

#[test]
fn a_failed_server_is_quoted_by_the_stderr_line_holding_its_error() {
    // The most common mistake: a command naming a file that is not there.
    // node prints the error, then a stack trace, then its version: the
    // last 3 lines alone never said what was wrong.
    let dir = project(
        r#"[[mcp]]
name = "typo"
command = ["node", "/nonexistent/muster-test/dist/index.js"]
snapshot = "typo.json"
timeout_secs = 60
"#,
    );
    let answer = discover(dir.path(), &[]);
    let ServerDiscovery::Failed { problems, .. } = &answer.servers[0] else {
        panic!("{answer:?}");
    };
    let message = &problems[0].message;
    assert!(
        message.contains("its stderr reports: Error: Cannot find module"),
        "{message}"
    );
    assert!(message.contains("its stderr ends with: "), "{message}");
}

#[test]
fn many_servers_are_listed_a_few_at_a_time_in_declared_order() {
    let memory = reference_server("server-memory");
    let everything = reference_server("server-everything");
    // More servers than MAX_PARALLEL, failing and succeeding, declared
    // in an order unlike the one they finish in.
    let mut mcp = String::new();
    let names: Vec<String> = (0..7).map(|i| format!("s{}", 7 - i)).collect();
    for (i, name) in names.iter().enumerate() {
        let command = match i % 3 {
            0 => format!(
                "[\"node\", {}, \"stdio\"]",
                toml_str(Path::new(&everything))
            ),
            1 => format!("[\"node\", {}]", toml_str(Path::new(&memory))),
            _ => "[\"node\", \"/nonexistent/x.js\"]".to_string(),
        };
        mcp.push_str(&format!(
            "[[mcp]]\nname = \"{name}\"\ncommand = {command}\nsnapshot = \"{name}.json\"\ntimeout_secs = 120\n\n"
        ));
    }
    let dir = project(&mcp);
    let answer = discover(dir.path(), &[]);
    let got: Vec<(&str, bool)> = answer
        .servers
        .iter()
        .map(|s| match s {
            ServerDiscovery::Listed { server, .. } => (server.as_str(), true),
            ServerDiscovery::Failed { server, .. } => (server.as_str(), false),
        })
        .collect();
    let want: Vec<(&str, bool)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i % 3 != 2))
        .collect();
    assert_eq!(got, want);
    assert_eq!(muster::discover::MAX_PARALLEL, 4);
}

#[test]
fn instructions_resources_and_prompts_are_kept_in_the_snapshot_and_never_planned() {
    let everything = reference_server("server-everything");
    let dir = project(&format!(
        "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {}, \"stdio\"]\nsnapshot = \"everything.json\"\ntimeout_secs = 120\n",
        toml_str(Path::new(&everything))
    ));
    let answer = discover(dir.path(), &[]);
    assert_eq!(answer.listed, 1, "{answer:?}");
    let snapshot = dir.path().join("policies/mcp/everything.json");
    let notes = muster::discover::read_snapshot_notes(&snapshot).unwrap();
    let instructions = notes.instructions.as_deref().unwrap_or_default();
    assert!(!instructions.is_empty(), "{notes:?}");
    assert!(instructions.chars().count() <= muster::discover::MAX_INSTRUCTIONS_CHARS);
    assert!(!notes.resources.is_empty(), "{notes:?}");
    assert!(notes.resources.iter().all(|r| !r.uri.is_empty()));
    assert!(!notes.prompts.is_empty(), "{notes:?}");
    assert!(notes.left_out.is_empty(), "{notes:?}");
    // The tools read as before.
    let tools = muster::discover::read_snapshot(&snapshot).unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));

    // Planned: the tools only, never a resource or a prompt.
    let plan = common::plan_value(dir.path(), &[]);
    let text = plan.to_string();
    for p in &notes.prompts {
        assert!(
            !common::names_in(&plan, "roster").contains(&format!("mcp.everything.{}", p.name))
                || tools.iter().any(|t| t.name == p.name),
            "prompt {} planned: {text}",
            p.name
        );
    }
    assert!(!text.contains(&notes.resources[0].uri), "{text}");
}

#[test]
fn a_snapshot_written_before_notes_were_kept_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(
        &path,
        r#"{"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}"#,
    )
    .unwrap();
    assert_eq!(muster::discover::read_snapshot(&path).unwrap().len(), 1);
    let notes = muster::discover::read_snapshot_notes(&path).unwrap();
    assert_eq!(notes, muster::discover::ServerNotes::default());
    // And one written with notes reads back through the typed structs.
    let tools = muster::discover::read_snapshot(&path).unwrap();
    let written = muster::discover::ServerNotes {
        instructions: Some("Use search first.".into()),
        prompts: vec![muster::discover::NotedPrompt {
            name: "p".into(),
            title: None,
            description: Some("d".into()),
            arguments: Vec::new(),
        }],
        ..Default::default()
    };
    std::fs::write(
        &path,
        muster::discover::snapshot_bytes_with(&tools, &written),
    )
    .unwrap();
    assert_eq!(
        muster::discover::read_snapshot_notes(&path).unwrap(),
        written
    );
    assert_eq!(muster::discover::read_snapshot(&path).unwrap(), tools);
}

/// A changed tool is shown as a reviewer needs it (issue 31 item 8): the
/// description word by word, the schema's paths, in text and JSON, server
/// text escaped. The recorded snapshot plays the old listing; the real
/// memory server lists the new one.
#[test]
fn discover_shows_what_changed_in_a_tool() {
    let memory = reference_server("server-memory");
    let dir = project(&format!(
        "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {}]\nsnapshot = \"memory.json\"\n\
         env = {{ MEMORY_FILE_PATH = {} }}\n",
        toml_str(Path::new(&memory)),
        toml_str(&dir_file("graph.jsonl"))
    ));
    discover(dir.path(), &[]);
    let snapshot = dir.path().join("policies/mcp/memory.json");
    let mut recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    let mut real = String::new();
    for tool in recorded["tools"].as_array_mut().unwrap() {
        if tool["name"] == "create_entities" {
            real = tool["description"].as_str().unwrap().to_string();
            let mut words: Vec<&str> = real.split(' ').collect();
            words.pop();
            words.push("\u{1b}[2Jinjected");
            tool["description"] = serde_json::json!(words.join(" "));
            tool["inputSchema"]["properties"]["extra"] = serde_json::json!({"type": "string"});
        }
    }
    std::fs::write(&snapshot, recorded.to_string()).unwrap();
    let last = real.rsplit(' ').next().unwrap().to_string();

    let out = muster(dir.path()).args(["discover"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains('\u{1b}'), "server text is escaped: {text:?}");
    assert!(
        text.contains(&format!("[-\\u{{001B}}[2Jinjected-]{{+{last}+}}")),
        "{text}"
    );
    assert!(
        text.contains(
            "         input schema:\n           - /properties/extra: {\"type\":\"string\"}\n"
        ),
        "{text}"
    );

    std::fs::write(&snapshot, recorded.to_string()).unwrap();
    let json = discover(dir.path(), &[]);
    let ServerDiscovery::Listed { diff, .. } = &json.servers[0] else {
        panic!("listed: {json:?}")
    };
    let change = diff
        .changed
        .iter()
        .find(|c| c.name == "create_entities")
        .expect("create_entities changed")
        .clone();
    let removed: Vec<&str> = change
        .details
        .description
        .iter()
        .filter(|s| s.op == muster::contract::SpanOp::Removed)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(removed, ["\u{1b}[2Jinjected"]);
    let paths: Vec<(&str, muster::contract::PathOp)> = change
        .details
        .schema_paths
        .iter()
        .map(|p| (p.path.as_str(), p.change))
        .collect();
    assert_eq!(
        paths,
        [("/properties/extra", muster::contract::PathOp::Removed)]
    );
}

fn dir_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "muster-discover-more-{}-{name}",
        std::process::id()
    ))
}

/// A server that answers `initialize` with 2024-11-05, as the archived reference servers
/// still do (here Brave Search from npm, pinned): its tools are listed and recorded, and a
/// call reaches it and comes back as its own tool result (here its refusal of arguments
/// without a `query`, which needs no network). Before, the start failed with "answered
/// initialize with protocol revision "2024-11-05"".
#[test]
fn a_server_of_revision_2024_11_05_is_listed_and_called() {
    let brave = reference_server("server-brave-search");
    let dir = project(&format!(
        r#"[[mcp]]
name = "brave"
command = ["node", {}]
env = {{ BRAVE_API_KEY = "not-a-key" }}
snapshot = "brave.json"
timeout_secs = 60
"#,
        toml_str(Path::new(&brave))
    ));
    let answer = discover(dir.path(), &[]);
    let ServerDiscovery::Listed { tools, .. } = &answer.servers[0] else {
        panic!("not listed: {:?}", answer.servers[0]);
    };
    assert_eq!(*tools, 2);
    let snapshot = std::fs::read_to_string(dir.path().join("policies/mcp/brave.json")).unwrap();
    assert!(
        snapshot.contains("\"brave_web_search\"") && snapshot.contains("\"brave_local_search\"")
    );

    let mut spec = muster::discover::ServerSpec::new(
        "brave",
        vec!["node".into(), brave.clone()],
        dir.path().join("unused.json"),
    );
    spec.env.insert("BRAVE_API_KEY".into(), "not-a-key".into());
    spec.timeout = std::time::Duration::from_secs(60);
    let result = muster::discover::call_tool(&spec, "brave_web_search", "{}").unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["content"][0]["text"], "Error: Invalid arguments for brave_web_search",
        "{result}"
    );
}
