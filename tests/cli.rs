//! The command line: exit codes, and bad input answered with the file, the
//! line and what to change, never a panic.

mod common;

use common::{Fixture, muster};

const TOOL: &str = "[[tool]]\nname = \"a.tool\"\ndescription = \"A tool.\"\n";

fn stderr_of(fx: &Fixture, args: &[&str], code: i32) -> String {
    let assert = muster(fx.path()).args(args).assert().code(code);
    let out = assert.get_output();
    assert!(
        out.stdout.is_empty() || code != 2,
        "nothing on stdout for bad input"
    );
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn malformed_toml_names_file_and_line() {
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"a\"\ndescription = oops\n",
    )]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(err.contains("tools/t.toml:3:"), "{err}");
}

#[test]
fn an_unknown_key_is_refused_with_its_line() {
    let fx = Fixture::new(&[("policies/tools/t.toml", &format!("{TOOL}prority = 3\n"))]);
    let err = stderr_of(&fx, &["plan"], 2);
    assert!(err.contains("tools/t.toml:4:"), "{err}");
    assert!(err.contains("unknown field `prority`"), "{err}");
}

#[test]
fn a_tool_registered_twice_names_both_places() {
    let fx = Fixture::new(&[
        ("policies/tools/a.toml", TOOL),
        ("policies/tools/b.toml", &format!("\n\n{TOOL}")),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("tools/b.toml:4: tool \"a.tool\" is registered twice; first at"),
        "{err}"
    );
    assert!(err.contains("tools/a.toml:2"), "{err}");
}

#[test]
fn a_schema_that_is_not_an_object_is_refused() {
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        &format!("{TOOL}input_schema = {{ type = \"array\" }}\n"),
    )]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("input schema has type \"array\"; tool arguments must be an object"),
        "{err}"
    );
    let fx = Fixture::new(&[
        (
            "policies/tools/t.toml",
            &format!("{TOOL}input_schema_file = \"s.json\"\n"),
        ),
        ("policies/tools/s.json", "[1, 2]"),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("input schema is a list, not a JSON Schema object"),
        "{err}"
    );
}

#[test]
fn a_missing_schema_file_is_named() {
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        &format!("{TOOL}input_schema_file = \"schemas/none.json\"\n"),
    )]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(err.contains("tools/t.toml:4:"), "{err}");
    assert!(err.contains("schemas/none.json"), "{err}");
    assert!(err.contains("relative to the TOML file"), "{err}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let fx = Fixture::new(&[
        ("policies/tools/a.toml", &format!("{TOOL}colour = 1\n")),
        ("policies/tools/b.toml", "[[tool]]\nname = \"\"\n"),
        ("policies/muster.toml", "[caps]\nitems = 0\n"),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(err.contains("tools/a.toml:4:"), "{err}");
    assert!(
        err.contains("tools/b.toml:2: tool name \"\" is empty"),
        "{err}"
    );
    assert!(
        err.contains("muster.toml:2: caps.items = 0 is out of range"),
        "{err}"
    );
}

#[test]
fn a_flag_profile_that_does_not_exist_is_a_usage_error() {
    let fx = Fixture::bundled();
    let err = stderr_of(&fx, &["plan", "--flags", "prod"], 2);
    assert!(
        err.contains("flag profile \"prod\" does not exist"),
        "{err}"
    );
    assert!(err.contains("choose one of: production, staging"), "{err}");
}

#[test]
fn a_gate_naming_an_unknown_tool_is_bad_input() {
    let fx = Fixture::bundled();
    fx.write(
        "gates/typo.toml",
        "flags = \"production\"\n\nrequire = [\n  \"mcp.bland_read.list_call\",\n]\n",
    );
    let err = stderr_of(&fx, &["gate"], 2);
    assert!(err.contains("gates/typo.toml:4:"), "{err}");
    assert!(
        err.contains("\"mcp.bland_read.list_call\", which no policy registers"),
        "{err}"
    );
    assert!(
        err.contains("did you mean \"mcp.bland_read.list_calls\""),
        "{err}"
    );
}

#[test]
fn narrowing_blocks_are_validated_with_lines() {
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TOOL),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\nallow = [\"search\"]\n\n[mcp.params.search]\nscope = { value = \"handbook\" }\n\n[mcp.only]\nsearch = [\"query\", \"scope\", \"query\"]\nfetch = []\n",
        ),
        ("policies/mcp/kb.json", "{\"tools\": []}"),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(err.contains("s.toml:10: mcp server `kb`: `scope` of tool `search` is both listed in `only` and fixed by `params`"), "{err}");
    assert!(
        err.contains("s.toml:10: mcp server `kb`: `query` is repeated in `only` for `search`"),
        "{err}"
    );
    assert!(
        err.contains(
            "s.toml:11: mcp server `kb`: `only` names tool `fetch`, which `allow` does not list"
        ),
        "{err}"
    );
    assert!(
        err.contains("s.toml:11: mcp server `kb`: `only` for `fetch` is an empty list"),
        "{err}"
    );
}

#[test]
fn a_snapshot_that_is_not_json_names_its_line() {
    let fx = Fixture::new(&[
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
        ),
        (
            "policies/mcp/kb.json",
            "{\"tools\": [\n  {\"name\": \"x\",,}\n]}",
        ),
    ]);
    let err = stderr_of(&fx, &["plan"], 2);
    assert!(
        err.contains("kb.json:2: MCP server \"kb\": snapshot is not valid JSON"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_2_and_a_missing_policy_directory_says_what_to_do() {
    let fx = Fixture::new(&[]);
    let err = stderr_of(&fx, &["plan"], 2);
    assert!(
        err.contains("policy directory policies does not exist"),
        "{err}"
    );
    assert!(err.contains("--policies DIR"), "{err}");
    stderr_of(&fx, &["plan", "--format", "yaml"], 2);
    stderr_of(&fx, &["frobnicate"], 2);
}

#[test]
fn an_unknown_agent_names_the_known_ones() {
    let fx = Fixture::bundled();
    let err = stderr_of(&fx, &["why", "math.calculate", "--agent", "mail"], 2);
    assert!(err.contains("agent \"mail\" is not declared"), "{err}");
    assert!(err.contains("choose one of: chat"), "{err}");
}

#[test]
fn why_json_answers_for_an_unknown_name_with_the_closest() {
    let fx = Fixture::bundled();
    let out = muster(fx.path())
        .args(["why", "mcp.bland_read.list_call", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["status"], "unknown");
    assert_eq!(v["closest"][0], "mcp.bland_read.list_calls");
}

#[test]
fn validate_reports_counts_and_warnings_for_every_agent_and_profile() {
    let fx = Fixture::bundled();
    let out = muster(fx.path())
        .arg("validate")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(
            "valid (29 configured tools, 3 servers listing 19 tools, 1 agents, 2 flag profiles)"
        ),
        "{out}"
    );
}

#[test]
fn positional_parameter_lists_are_validated_with_lines() {
    let schema = "input_schema = { type = \"object\", properties = { path = { type = \"string\" }, start = { type = \"integer\" } }, required = [\"path\"] }\n";
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        &format!(
            "{TOOL}{schema}parameters = [\"start\", \"path\", \"path\"]\n\n[[tool]]\nname = \"v.tool\"\nvariadic = true\n{schema}parameters = [\"path\", \"start\"]\n"
        ),
    )]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(err.contains("tools/t.toml:5: tool \"a.tool\": required parameter \"path\" comes after optional parameter \"start\""), "{err}");
    assert!(err.contains("parameter \"path\" is listed twice"), "{err}");
    assert!(
        err.contains(
            "tools/t.toml:11: tool \"v.tool\" is variadic and has optional parameter \"start\""
        ),
        "{err}"
    );
    // A list that leaves a property out would lose what the model writes.
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        &format!("{TOOL}{schema}parameters = [\"path\"]\n"),
    )]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("tools/t.toml:5: tool \"a.tool\": parameters leaves out property \"start\""),
        "{err}"
    );
    // The nearest passing list: required first.
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        &format!("{TOOL}{schema}parameters = [\"path\", \"start\"]\n"),
    )]);
    muster(fx.path()).arg("validate").assert().success();
}

#[test]
fn the_extremes_of_numbers_and_nesting_are_answered_not_panicked() {
    // The lowest and highest priorities rank last and first.
    let fx = Fixture::new(&[(
        "policies/tools/t.toml",
        "[[tool]]\nname = \"low\"\npriority = -9223372036854775808\n\n[[tool]]\nname = \"high\"\npriority = 9223372036854775807\n",
    )]);
    let out = common::plan_value(fx.path(), &[]);
    assert_eq!(common::names_in(&out, "roster"), ["high", "low"]);

    // A schema nested past the limit is refused with its file.
    let mut deep = String::from("{\"type\": \"string\"}");
    for _ in 0..40 {
        deep = format!("{{\"type\": \"object\", \"properties\": {{\"a\": {deep}}}}}");
    }
    let fx = Fixture::new(&[
        (
            "policies/tools/t.toml",
            &format!("{TOOL}input_schema_file = \"deep.json\"\n"),
        ),
        ("policies/tools/deep.json", &deep),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("nests 81 levels deep; at most 64 are accepted"),
        "{err}"
    );

    // Caps of 0 are usage errors, like a policy's.
    let fx = Fixture::bundled();
    let err = stderr_of(&fx, &["plan", "--item-cap", "0"], 2);
    assert!(err.contains("--item-cap"), "{err}");
    stderr_of(&fx, &["gate", "--token-cap", "0"], 2);
}

#[test]
fn a_toml_entry_that_is_not_a_file_is_reported() {
    let fx = Fixture::new(&[("policies/tools/t.toml", TOOL)]);
    std::fs::create_dir_all(fx.path().join("policies/tools/more.toml")).unwrap();
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains("tools/more.toml: is not a readable file"),
        "{err}"
    );
}

#[test]
fn a_server_with_no_time_to_answer_and_a_missing_named_lock_are_refused() {
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TOOL),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"kb\"\ncommand = [\"kb-server\"]\nsnapshot = \"kb.json\"\ntimeout_secs = 0\n",
        ),
        ("policies/muster.toml", "[lock]\nfile = \"mcp.lokc\"\n"),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    // Issue 31 item 9: `timeout_secs` bounds discovery and every call.
    assert!(
        err.contains("timeout_secs = 0 leaves no time to list tools or answer a call"),
        "{err}"
    );
    assert!(
        err.contains("mcp.lokc named by [lock] file does not exist"),
        "{err}"
    );
}

#[test]
fn the_control_tool_cannot_take_a_discovered_tools_name() {
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TOOL),
        (
            "policies/muster.toml",
            "[deferral]\nenabled = true\ncontrol_tool = \"mcp.kb.search\"\n",
        ),
    ]);
    let err = stderr_of(&fx, &["validate"], 2);
    assert!(
        err.contains(
            "muster.toml:3: deferral.control_tool \"mcp.kb.search\" uses the reserved prefix"
        ),
        "{err}"
    );
}

/// `muster validate --format json` read back through its own types (docs/policy.md).
#[test]
fn validate_json_gives_the_counts_and_each_warning_with_its_plan() {
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Validation {
        format_version: u32,
        policies: String,
        configured_tools: usize,
        servers: usize,
        listed_tools: usize,
        agents: usize,
        profiles: usize,
        warnings: Vec<Swept>,
    }
    #[derive(Debug, serde::Deserialize)]
    struct Swept {
        code: String,
        message: String,
        agent: String,
        profile: Option<String>,
    }
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TOOL),
        (
            "policies/muster.toml",
            "[[group]]\nname = \"core\"\nmembers = [\"memory.serch\"]\n",
        ),
    ]);
    let out = muster(fx.path())
        .args(["validate", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Validation = serde_json::from_slice(&out).unwrap();
    assert_eq!(v.format_version, 1);
    assert!(v.policies.ends_with("policies"), "{}", v.policies);
    assert_eq!(
        (
            v.configured_tools,
            v.servers,
            v.listed_tools,
            v.agents,
            v.profiles
        ),
        (1, 0, 0, 1, 0)
    );
    assert_eq!(v.warnings.len(), 1, "{:?}", v.warnings);
    let w = &v.warnings[0];
    assert_eq!(w.code, "unmatched-group-member");
    assert_eq!((w.agent.as_str(), w.profile.as_deref()), ("default", None));
    // The text form carries the same data.
    let text = muster(fx.path())
        .arg("validate")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(
            "valid (1 configured tools, 0 servers listing 0 tools, 1 agents, 0 flag profiles)"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} [agent default, no profile]", w.message)),
        "{text}"
    );
}
