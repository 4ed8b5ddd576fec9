//! What the planner cuts, defers or warns about: tools too large for the tokens
//! left, misses deferred behind the control tool, uncheckable or bad schemas,
//! repeated names, policy entries matching nothing, separators providers
//! refuse, and annotation hints.

use super::{
    FactsDoc, PlanDoc, TWO_TOOLS, WarningKindDoc,
    common::{Fixture, muster},
    find, names, plan_json,
};

fn sized_tool(name: &str, words: usize) -> String {
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"{}\"\n\n",
        vec!["word"; words].join(" ")
    )
}

#[test]
fn a_tool_too_large_for_the_tokens_left_is_skipped_and_smaller_ones_fill_the_room() {
    let tools = [
        sized_tool("t.small1", 10),
        sized_tool("t.huge", 400),
        sized_tool("t.small2", 10),
    ]
    .concat();
    let fx = Fixture::new(&[("policies/tools/t.toml", &tools)]);
    let (_, doc) = plan_json(fx.path(), &["--token-cap", "200"]);
    assert_eq!(names(&doc.roster), ["t.small1", "t.small2"]);
    let huge = find(&doc, "t.huge");
    assert_eq!(
        (huge.status.as_str(), huge.code.as_str()),
        ("cut", "token-cap")
    );
    let FactsDoc::TokenCap {
        tokens,
        room,
        short,
        token_cap_needed,
        reserved_for_loads,
    } = huge.facts
    else {
        panic!("token-cap facts: {:?}", huge.facts)
    };
    assert_eq!(tokens - room, short);
    assert_eq!(token_cap_needed, 200 + short);
    assert_eq!(
        reserved_for_loads, None,
        "nothing is held for loads by default"
    );
    // why shows the skip and what it takes.
    let why = muster(fx.path())
        .args(["why", "t.huge", "--token-cap", "200"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let why = String::from_utf8(why).unwrap();
    assert!(why.contains("cut (token-cap)"), "{why}");
    assert!(why.contains("still offered: t.small2"), "{why}");
    assert!(
        why.contains(&format!("--token-cap {}", 200 + short)),
        "{why}"
    );
}

const DEFERRAL: &str = r#"
[caps]
items = 3

[deferral]
enabled = true
control_tool = "tools.load"
"#;

#[test]
fn with_deferral_the_control_tool_is_reserved_first_and_misses_are_deferred() {
    let tools = [
        sized_tool("t.one", 5),
        sized_tool("t.two", 5),
        sized_tool("t.three", 5),
        "[[tool]]\nname = \"t.pinned\"\ndeferrable = false\n".to_string(),
    ]
    .concat();
    let fx = Fixture::new(&[
        ("policies/muster.toml", DEFERRAL),
        ("policies/tools/t.toml", &tools),
    ]);
    let (_, doc) = plan_json(fx.path(), &[]);
    assert_eq!(names(&doc.roster), ["tools.load", "t.one", "t.two"]);
    assert_eq!(doc.roster[0].source, "control");
    assert_eq!(doc.roster[0].code, "control-tool");
    assert_eq!(doc.control_tool.as_deref(), Some("tools.load"));
    assert_eq!(doc.deferred.len(), 1);
    assert_eq!(doc.deferred[0].name, "t.three");
    assert_eq!(doc.deferred[0].code, "item-cap");
    assert_eq!(doc.deferred[0].status, "deferred");
    let pinned = find(&doc, "t.pinned");
    assert_eq!(
        (pinned.status.as_str(), pinned.code.as_str()),
        ("cut", "item-cap")
    );
    // The chat's worst case: one deferred tool can be loaded, past the
    // item cap of 3 (loads are "beyond-caps" by default).
    let after = doc.totals.after_loads.as_ref().expect("deferral is on");
    assert_eq!(after.loads, "beyond-caps");
    assert_eq!((after.items, after.over_items), (4, 1));
    assert!(after.tokens > doc.totals.tokens);
}

/// A strictly checked schema the validator cannot compile is warned about for each tool the
/// plan offers or defers, and not for one it cuts: a cut tool is never called, and compiling
/// every candidate's schema dominated a 100,000-tool plan (issue 13).
#[test]
fn uncheckable_schemas_are_warned_about_for_offered_and_deferred_tools_only() {
    let tool = |name: &str, deferrable: bool| {
        format!(
            "[[tool]]\nname = \"{name}\"\ndescription = \"Find.\"\ncheck = \"strict\"\ndeferrable = {deferrable}\ninput_schema = {{ type = \"object\", properties = {{ p = {{ type = \"string\", pattern = \"(\" }} }} }}\n\n"
        )
    };
    let tools = [
        tool("t.one", true),
        tool("t.two", true),
        tool("t.three", true),
        tool("t.pinned", false),
    ]
    .concat();
    let fx = Fixture::new(&[
        ("policies/muster.toml", DEFERRAL),
        ("policies/tools/t.toml", &tools),
    ]);
    let (_, doc) = plan_json(fx.path(), &[]);
    assert_eq!(names(&doc.roster), ["tools.load", "t.one", "t.two"]);
    assert_eq!(doc.deferred.len(), 1);
    assert_eq!(doc.deferred[0].name, "t.three");
    assert_eq!(find(&doc, "t.pinned").status, "cut");
    let warned: Vec<&str> = doc
        .warnings
        .iter()
        .filter_map(|w| match &w.kind {
            WarningKindDoc::UncheckableSchema { tool, why } => {
                assert!(!why.is_empty() && w.message.contains(tool.as_str()));
                Some(tool.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(warned, ["t.one", "t.two", "t.three"]);
}

#[test]
fn discovered_tools_with_bad_schemas_or_repeated_names_are_cut_with_their_codes() {
    let snapshot = r#"{"tools": [
        {"name": "twice", "inputSchema": "broken"},
        {"name": "twice", "description": "fine, but a repeat", "inputSchema": {"type": "object"}},
        {"name": "ok", "description": "fine", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "ok", "description": "again", "inputSchema": {"type": "object"}},
        {"name": "list", "inputSchema": ["not", "an", "object"]},
        {"name": "text", "inputSchema": {"type": "string"}}
    ]}"#;
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TWO_TOOLS),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"srv\"\nsnapshot = \"srv.json\"\n",
        ),
        ("policies/mcp/srv.json", snapshot),
    ]);
    let (_, doc) = plan_json(fx.path(), &[]);
    assert!(names(&doc.roster).contains(&"mcp.srv.ok"));
    // Every repeat is cut, even when the first copy was cut too: the name
    // means one tool or none.
    assert!(!names(&doc.roster).contains(&"mcp.srv.twice"));
    assert!(doc.warnings.iter().any(|w| w.code() == "no-lock"));
    let codes: Vec<(&str, &str)> = doc
        .cut
        .iter()
        .map(|m| (m.name.as_str(), m.code.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            ("mcp.srv.twice", "invalid-schema"),
            ("mcp.srv.twice", "duplicate-name"),
            ("mcp.srv.ok", "duplicate-name"),
            ("mcp.srv.list", "invalid-schema"),
            ("mcp.srv.text", "invalid-schema"),
        ]
    );
}

#[test]
fn policy_entries_that_match_nothing_are_warned_about() {
    let muster_toml = r#"
[[group]]
name = "core"
required = true
members = ["a.first", "a.missing"]

[[agent]]
name = "main"
enabled_tools = ["a.first", "b.nowhere"]
"#;
    let fx = Fixture::new(&[
        ("policies/muster.toml", muster_toml),
        ("policies/tools/t.toml", TWO_TOOLS),
        (
            "policies/flags/prod.toml",
            "flags = [\"NOBODY_USES_THIS\"]\n",
        ),
    ]);
    let (_, doc) = plan_json(fx.path(), &["--flags", "prod"]);
    assert_eq!(names(&doc.roster), ["a.first"]);
    assert_eq!(find(&doc, "b.second").code, "not-enabled");
    let codes: Vec<&str> = doc.warnings.iter().map(|w| w.code()).collect();
    assert!(codes.contains(&"unknown-enabled-tool"), "{codes:?}");
    assert!(codes.contains(&"unmatched-group-member"), "{codes:?}");
    assert!(codes.contains(&"unused-flag"), "{codes:?}");
    let unknown = doc
        .warnings
        .iter()
        .find(|w| w.code() == "unknown-enabled-tool")
        .unwrap();
    let WarningKindDoc::UnknownEnabledTool { tool, .. } = &unknown.kind else {
        panic!("{unknown:?}")
    };
    assert_eq!(tool, "b.nowhere");
    assert!(unknown.message.contains("b.nowhere"));
    assert!(unknown.file.as_deref().unwrap().ends_with("muster.toml"));
    assert_eq!(unknown.line, Some(9));
}

#[test]
fn a_separator_providers_refuse_is_a_policy_problem_with_file_and_line() {
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TWO_TOOLS),
        ("policies/muster.toml", "[names]\nseparator = \".\"\n"),
    ]);
    let out = muster(fx.path()).args(["plan"]).assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("muster.toml:2"), "{err}");
    assert!(err.contains("names.separator"), "{err}");
    // A valid one changes every provider name, and the counts follow them.
    fx.write("policies/muster.toml", "[names]\nseparator = \"-\"\n");
    let (_, doc) = plan_json(fx.path(), &[]);
    assert!(doc.roster.iter().all(|e| !e.provider_name.contains('.')));
    assert!(doc.roster.iter().any(|e| e.provider_name.contains('-')));
}

/// Issue 21 item 4: policy selectors over safety hints. The memory server
/// (its recorded listing) marks its delete tools destructive and its read
/// tools read-only.
#[test]
fn deny_hints_and_require_hints_cut_discovered_tools_by_their_annotations() {
    let memory = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/memory.json"),
    )
    .unwrap();
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TWO_TOOLS),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"memory\"\nsnapshot = \"memory.json\"\n",
        ),
        ("policies/mcp/memory.json", &memory),
        (
            "policies/muster.toml",
            "[[agent]]\nname = \"support\"\ndeny_hints = [\"destructive\"]\n\n[[agent]]\nname = \"reader\"\n",
        ),
    ]);
    let cut = |doc: &PlanDoc| -> Vec<(String, String)> {
        doc.cut
            .iter()
            .filter(|m| m.code == "hint-denied")
            .map(|m| {
                let FactsDoc::HintDenied {
                    hint, rule, agent, ..
                } = &m.facts
                else {
                    panic!("{:?}", m.facts)
                };
                assert_eq!(m.code, "hint-denied");
                (
                    m.name.clone(),
                    format!("{rule} {hint} {}", agent.as_deref().unwrap_or("-")),
                )
            })
            .collect()
    };
    let (_, support) = plan_json(fx.path(), &["--agent", "support"]);
    assert_eq!(
        cut(&support),
        [
            (
                "mcp.memory.delete_entities".to_string(),
                "deny destructive support".to_string()
            ),
            (
                "mcp.memory.delete_observations".to_string(),
                "deny destructive support".to_string()
            ),
            (
                "mcp.memory.delete_relations".to_string(),
                "deny destructive support".to_string()
            ),
        ]
    );
    assert!(names(&support.roster).contains(&"mcp.memory.create_entities"));
    // Another agent of the same policy keeps them.
    let (_, reader) = plan_json(fx.path(), &["--agent", "reader"]);
    assert!(cut(&reader).is_empty());
    // The server block's rule holds for every agent: only read-only tools.
    fx.write(
        "policies/mcp/s.toml",
        "[[mcp]]\nname = \"memory\"\nsnapshot = \"memory.json\"\nrequire_hints = [\"read-only\"]\n",
    );
    let (_, reader) = plan_json(fx.path(), &["--agent", "reader"]);
    let mut memory_offered: Vec<&str> = names(&reader.roster)
        .into_iter()
        .filter(|n| n.starts_with("mcp.memory."))
        .collect();
    memory_offered.sort();
    assert_eq!(
        memory_offered,
        [
            "mcp.memory.open_nodes",
            "mcp.memory.read_graph",
            "mcp.memory.search_nodes"
        ]
    );
    assert_eq!(cut(&reader).len(), 6);
    assert!(
        cut(&reader)
            .iter()
            .all(|(_, why)| why == "require read-only -")
    );
    // A hint name that is not one is refused with file and line.
    fx.write(
        "policies/mcp/s.toml",
        "[[mcp]]\nname = \"memory\"\nsnapshot = \"memory.json\"\ndeny_hints = [\"destructive\", \"dangerous\"]\n",
    );
    let err = muster(fx.path())
        .args(["validate"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("s.toml:4") && err.contains("\"dangerous\""),
        "{err}"
    );
}
