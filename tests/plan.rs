//! The planner on the bundled production-shaped policies and on inline
//! fixtures: every rule of the plan, read back through the JSON contract.

// The contract types name every field so deserialization checks the whole
// shape; not every field is asserted on.
#![allow(dead_code)]

mod common;

use common::{Fixture, muster};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The plan JSON contract, as a consumer reads it: independent of the
/// crate's own types, so a renamed or dropped field fails here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanDoc {
    format_version: u32,
    agent: AgentDoc,
    encoding: String,
    provider: String,
    control_tool: Option<String>,
    roster: Vec<RosterDoc>,
    deferred: Vec<MissDoc>,
    cut: Vec<MissDoc>,
    totals: TotalsDoc,
    headroom: HeadroomDoc,
    context: ContextDoc,
    fingerprint: String,
    warnings: Vec<WarningDoc>,
}

/// The tool section's share of a model's context (docs/plan-json.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextDoc {
    model: String,
    context_tokens: u32,
    tokens: u32,
    percent: f64,
    source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentDoc {
    name: String,
    version: u64,
    profile: Option<String>,
    flags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RosterDoc {
    name: String,
    provider_name: String,
    source: String,
    server: Option<String>,
    tool: Option<String>,
    rank: u32,
    code: String,
    group: Option<String>,
    tokens: u32,
    description: String,
    input_schema: serde_json::Value,
    fixed: BTreeMap<String, serde_json::Value>,
    only: Option<Vec<String>>,
    unknown_arguments: String,
    coerce: bool,
    check: String,
    parameters: Option<Vec<ParameterDoc>>,
    variadic: bool,
    /// MCP tools, as the server listed them (absent when it did not).
    title: Option<serde_json::Value>,
    annotations: Option<serde_json::Value>,
    output_schema: Option<serde_json::Value>,
    #[serde(rename = "_meta")]
    meta: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParameterDoc {
    name: String,
    required: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MissDoc {
    name: String,
    provider_name: String,
    source: String,
    status: String,
    code: String,
    rank: Option<u32>,
    tokens: Option<u32>,
    detail: String,
    facts: FactsDoc,
}

/// A decision's facts, tagged by code: this test's own reading of the
/// contract, so a renamed or retyped field fails here.
#[derive(Debug, Deserialize)]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
#[allow(dead_code)]
enum FactsDoc {
    ItemCap {
        offered_ahead: u32,
        item_cap_needed: u32,
        displace: Vec<String>,
        reserved_for_loads: Option<u32>,
    },
    TokenCap {
        tokens: u32,
        room: u32,
        short: u32,
        token_cap_needed: u32,
        reserved_for_loads: Option<u32>,
    },
    FlagOff {
        flag: String,
        server: Option<String>,
    },
    NotEnabled {
        agent: String,
        by: String,
        server: Option<String>,
    },
    DuplicateName {
        name: String,
    },
    InvalidSchema {
        problem: serde_json::Value,
    },
    Denied {
        server: String,
        tool: String,
    },
    NotAllowed {
        server: String,
        tool: String,
    },
    FixedUndeclared {
        server: String,
        tool: String,
        arguments: Vec<String>,
    },
    RequiredUnreachable {
        server: String,
        tool: String,
        arguments: Vec<String>,
    },
    LockMismatch {
        server: String,
        tool: String,
        locked: Option<String>,
        current: String,
        lock_file: String,
        #[serde(default)]
        changes: Vec<String>,
    },
    HintDenied {
        server: String,
        tool: String,
        hint: String,
        rule: String,
        agent: Option<String>,
    },
    ProviderNameCollision {
        provider_name: String,
        other: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TotalsDoc {
    items: u32,
    item_cap: u32,
    tokens: u32,
    token_cap: u32,
    wrapper_tokens: u32,
    candidates: u32,
    offered: u32,
    deferred: u32,
    cut: u32,
    after_loads: Option<AfterLoadsDoc>,
}

/// Present only when the control tool is offered.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AfterLoadsDoc {
    loads: String,
    items: u32,
    tokens: u32,
    over_items: u32,
    over_tokens: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadroomDoc {
    slots: u32,
    tokens: u32,
    next: Vec<NextDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NextDoc {
    tier: String,
    outcome: String,
    displaces: Option<String>,
}

/// A warning: its kind's code and typed fields, the rendered message, and
/// where it is written.
#[derive(Debug, Deserialize)]
struct WarningDoc {
    #[serde(flatten)]
    kind: WarningKindDoc,
    message: String,
    file: Option<String>,
    line: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "code", rename_all = "kebab-case", deny_unknown_fields)]
#[allow(dead_code)]
enum WarningKindDoc {
    RequiredNotOffered {
        tool: String,
        status: String,
        reason: FactsDoc,
    },
    UnknownEnabledTool {
        agent: String,
        tool: String,
    },
    EnabledDiscoveredTool {
        agent: String,
        tool: String,
    },
    UnmatchedGroupMember {
        group: String,
        tool: String,
    },
    UnusedFlag {
        flag: String,
    },
    UnmatchedAllow {
        server: String,
        tool: String,
    },
    UnmatchedDeny {
        server: String,
        tool: String,
    },
    UnmatchedToolPriority {
        server: String,
        tool: String,
    },
    NoLock {
        lock_file: String,
    },
    OnlyUndeclared {
        server: String,
        tool: String,
        argument: String,
    },
    RequiredUnreachable {
        server: String,
        tool: String,
        argument: String,
    },
    NoSnapshot {
        server: String,
    },
    LockMismatch {
        name: String,
        reason: FactsDoc,
    },
    ControlToolCut {
        tool: String,
    },
    UncheckableSchema {
        tool: String,
        why: String,
    },
    ProviderNameRewritten {
        tool: String,
        provider_name: String,
        length: usize,
        characters: Vec<String>,
    },
}

impl WarningDoc {
    fn code(&self) -> &'static str {
        match &self.kind {
            WarningKindDoc::RequiredNotOffered { .. } => "required-not-offered",
            WarningKindDoc::UnknownEnabledTool { .. } => "unknown-enabled-tool",
            WarningKindDoc::EnabledDiscoveredTool { .. } => "enabled-discovered-tool",
            WarningKindDoc::UnmatchedGroupMember { .. } => "unmatched-group-member",
            WarningKindDoc::UnusedFlag { .. } => "unused-flag",
            WarningKindDoc::UnmatchedAllow { .. } => "unmatched-allow",
            WarningKindDoc::UnmatchedDeny { .. } => "unmatched-deny",
            WarningKindDoc::UnmatchedToolPriority { .. } => "unmatched-tool-priority",
            WarningKindDoc::NoLock { .. } => "no-lock",
            WarningKindDoc::OnlyUndeclared { .. } => "only-undeclared",
            WarningKindDoc::RequiredUnreachable { .. } => "required-unreachable",
            WarningKindDoc::NoSnapshot { .. } => "no-snapshot",
            WarningKindDoc::LockMismatch { .. } => "lock-mismatch",
            WarningKindDoc::ControlToolCut { .. } => "control-tool-cut",
            WarningKindDoc::UncheckableSchema { .. } => "uncheckable-schema",
            WarningKindDoc::ProviderNameRewritten { .. } => "provider-name-rewritten",
        }
    }
}

const CALLING: [&str; 3] = [
    "mcp.bland_call.start_call",
    "mcp.bland_read.get_call",
    "mcp.bland_read.list_calls",
];

fn plan_json(dir: &std::path::Path, args: &[&str]) -> (String, PlanDoc) {
    let out = muster(dir)
        .args(["plan", "--format", "json"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    let doc: PlanDoc = serde_json::from_str(&text).expect("plan JSON matches the contract");
    (text, doc)
}

fn names(entries: &[RosterDoc]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

fn find<'a>(doc: &'a PlanDoc, name: &str) -> &'a MissDoc {
    doc.cut
        .iter()
        .chain(&doc.deferred)
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("{name} is neither cut nor deferred"))
}

#[test]
fn production_roster_offers_the_calling_tools_within_both_caps() {
    let fx = Fixture::bundled();
    let (_, doc) = plan_json(fx.path(), &["--flags", "production"]);
    assert_eq!(doc.format_version, 4);
    assert_eq!(doc.encoding, "o200k_base");
    assert_eq!(doc.provider, "openai");
    assert_eq!(doc.agent.name, "chat");
    assert_eq!(doc.agent.profile.as_deref(), Some("production"));
    assert_eq!(doc.agent.flags, ["AGENT_EMAIL_UNSUBSCRIBE_ENABLED"]);
    let offered = names(&doc.roster);
    assert_eq!(&offered[..3], CALLING, "calling tools rank first");
    for e in &doc.roster[..3] {
        assert_eq!(e.code, "required");
        assert_eq!(e.group.as_deref(), Some("calling"));
        assert_eq!(e.source, "mcp");
    }
    assert_eq!(doc.totals.items, 30);
    assert_eq!(doc.totals.item_cap, 30);
    assert_eq!(doc.totals.token_cap, 9000);
    assert!(
        (6500..=8500).contains(&doc.totals.tokens),
        "production roster costs {} tokens",
        doc.totals.tokens
    );
    let sum: u32 = doc.roster.iter().map(|e| e.tokens).sum();
    assert_eq!(doc.totals.tokens, sum + doc.totals.wrapper_tokens);
    // 27 configured tools: 28 exist under production flags, list_files is
    // left out of the default roster.
    assert_eq!(
        doc.roster
            .iter()
            .filter(|e| e.source == "configured")
            .count(),
        27
    );
    assert!(offered.contains(&"email.unsubscribe"));
    assert!(!offered.contains(&"workspace.list_files"));
    assert_eq!(find(&doc, "workspace.list_files").code, "not-enabled");
    assert_eq!(find(&doc, "skill.load").code, "flag-off");
    let thread = find(&doc, "mcp.gmail_read.get_thread");
    assert_eq!(
        (thread.status.as_str(), thread.code.as_str()),
        ("cut", "item-cap")
    );
    assert_eq!(doc.headroom.slots, 0);
    assert_eq!(doc.headroom.tokens, 9000 - doc.totals.tokens);
    // The start-up share: the provider's default model, half-up to 2 decimals.
    assert_eq!(
        (doc.context.model.as_str(), doc.context.context_tokens),
        ("gpt-4o", 128_000)
    );
    assert_eq!(doc.context.tokens, doc.totals.tokens);
    let hundredths = (u64::from(doc.totals.tokens) * 20_000 + 128_000) / 256_000;
    assert_eq!(doc.context.percent, hundredths as f64 / 100.0);
    assert!(
        doc.context
            .source
            .starts_with("https://platform.openai.com/")
    );
    assert!(doc.fingerprint.starts_with("sha256:") && doc.fingerprint.len() == 71);
    // Every candidate appears exactly once.
    assert_eq!(
        doc.totals.candidates as usize,
        doc.roster.len() + doc.deferred.len() + doc.cut.len()
    );
    assert_eq!(doc.totals.candidates, 29 + 19);
}

#[test]
fn production_plan_json_is_pinned() {
    let fx = Fixture::bundled();
    let (text, _) = plan_json(fx.path(), &["--flags", "production"]);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("production_plan", value);
}

#[test]
fn same_inputs_give_byte_identical_json() {
    let fx = Fixture::bundled();
    let (a, _) = plan_json(fx.path(), &["--flags", "production"]);
    let (b, _) = plan_json(fx.path(), &["--flags", "production"]);
    assert_eq!(a, b);
}

#[test]
fn roster_entries_carry_what_a_call_check_needs() {
    let fx = Fixture::bundled();
    let (_, doc) = plan_json(fx.path(), &["--flags", "production"]);
    let start = &doc.roster[0];
    assert_eq!(start.server.as_deref(), Some("bland_call"));
    assert_eq!(start.tool.as_deref(), Some("start_call"));
    assert_eq!(start.unknown_arguments, "refuse");
    assert!(start.coerce, "MCP tools forward cast values by default");
    assert_eq!(
        start.check, "strict",
        "MCP tools are checked strictly by default"
    );
    assert!(start.fixed.is_empty() && start.only.is_none());
    let calc = doc
        .roster
        .iter()
        .find(|e| e.name == "math.calculate")
        .unwrap();
    assert!(!calc.coerce);
    assert_eq!(calc.check, "lenient");
    assert!(calc.input_schema["properties"]["expression"].is_object());
    assert!(!calc.description.is_empty());
    assert!(calc.parameters.is_none() && !calc.variadic && calc.rank == 4);
}

/// A minimal policy: only tools/*.toml, every default applies.
const TWO_TOOLS: &str = r#"
[[tool]]
name = "a.first"
description = "First tool."
input_schema = { type = "object", properties = { q = { type = "string" } } }

[[tool]]
name = "b.second"
description = "Second tool."
"#;

#[test]
fn a_directory_with_only_tools_is_a_complete_policy() {
    let fx = Fixture::new(&[("policies/tools/t.toml", TWO_TOOLS)]);
    let (_, doc) = plan_json(fx.path(), &[]);
    assert_eq!(names(&doc.roster), ["a.first", "b.second"]);
    assert_eq!((doc.totals.item_cap, doc.totals.token_cap), (30, 9000));
    assert_eq!(doc.agent.name, "default");
    assert!(doc.control_tool.is_none());
    assert!(doc.warnings.is_empty());
}

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

/// Issue 21 item 4: a host could not apply a confirmation rule from the
/// plan, which dropped the annotations a server listed.
#[test]
fn roster_entries_carry_the_title_annotations_output_schema_and_meta_listed() {
    let snapshot = r#"{"tools": [
        {"name": "read", "title": "Read", "description": "Reads.",
         "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true, "openWorldHint": false},
         "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
         "_meta": {"vendor/x": 1}, "icons": []},
        {"name": "plain", "description": "Plain.", "inputSchema": {"type": "object"}}
    ]}"#;
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", TWO_TOOLS),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"srv\"\nsnapshot = \"srv.json\"\n",
        ),
        ("policies/mcp/srv.json", snapshot),
    ]);
    let (text, doc) = plan_json(fx.path(), &[]);
    let read = doc
        .roster
        .iter()
        .find(|e| e.name == "mcp.srv.read")
        .unwrap();
    assert_eq!(read.title, Some(serde_json::json!("Read")));
    assert_eq!(
        read.annotations,
        Some(serde_json::json!({"readOnlyHint": true, "openWorldHint": false}))
    );
    assert_eq!(
        read.output_schema.as_ref().unwrap()["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(read.meta, Some(serde_json::json!({"vendor/x": 1})));
    // A tool that lists none of them, and a configured tool, carry none.
    for e in doc.roster.iter().filter(|e| e.name != "mcp.srv.read") {
        assert!(
            e.title.is_none()
                && e.annotations.is_none()
                && e.output_schema.is_none()
                && e.meta.is_none(),
            "{}",
            e.name
        );
    }
    assert!(!text.contains("icons"), "icons are not carried");
    // The fingerprint covers them: a flipped hint is another roster.
    fx.write(
        "policies/mcp/srv.json",
        &snapshot.replace("\"readOnlyHint\": true", "\"readOnlyHint\": false"),
    );
    let (_, flipped) = plan_json(fx.path(), &[]);
    assert_ne!(flipped.fingerprint, doc.fingerprint);
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
fn priority_overrides_declared_order_and_the_fingerprint_follows_the_roster() {
    let fx = Fixture::new(&[("policies/tools/t.toml", TWO_TOOLS)]);
    let (_, before) = plan_json(fx.path(), &[]);
    fx.edit(
        "policies/tools/t.toml",
        "name = \"b.second\"",
        "name = \"b.second\"\npriority = 5",
    );
    let (_, after) = plan_json(fx.path(), &[]);
    assert_eq!(names(&after.roster), ["b.second", "a.first"]);
    assert_ne!(before.fingerprint, after.fingerprint);
    assert_eq!(after.headroom.next.len(), 3);
    assert!(
        after
            .headroom
            .next
            .iter()
            .all(|n| n.outcome == "fits" && n.displaces.is_none())
    );
    assert!(
        after
            .headroom
            .next
            .iter()
            .any(|n| n.tier == "configured, priority 5")
    );
}

#[test]
fn the_agent_version_is_part_of_the_fingerprint() {
    let fx = Fixture::bundled();
    let (_, v4) = plan_json(fx.path(), &[]);
    fx.edit("policies/muster.toml", "version = 4", "version = 5");
    let (_, v5) = plan_json(fx.path(), &[]);
    assert_eq!(names(&v4.roster), names(&v5.roster));
    assert_ne!(v4.fingerprint, v5.fingerprint);
}

#[test]
fn provider_names_are_given_beside_muster_names_and_a_collision_cuts_the_later_tool() {
    let long = format!("search_{}", "x".repeat(70));
    let snapshot = format!(
        r#"{{"tools": [
        {{"name": "get_thread", "description": "Get a thread.", "inputSchema": {{"type": "object"}}}},
        {{"name": "{long}", "description": "Long.", "inputSchema": {{"type": "object"}}}},
        {{"name": "suche_é", "description": "Accented.", "inputSchema": {{"type": "object"}}}}
    ]}}"#
    );
    let tools = r#"
[[tool]]
name = "web.search"
description = "Search the web."
input_schema = { type = "object" }

[[tool]]
name = "web__search"
description = "Spelt the way the first is sent."
input_schema = { type = "object" }
"#;
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", tools),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"mail\"\nsnapshot = \"mail.json\"\n",
        ),
        ("policies/mcp/mail.json", &snapshot),
    ]);
    let (_, doc) = plan_json(fx.path(), &[]);
    let spelt: Vec<(&str, &str)> = doc
        .roster
        .iter()
        .map(|e| (e.name.as_str(), e.provider_name.as_str()))
        .collect();
    assert!(spelt.contains(&("web.search", "web__search")), "{spelt:?}");
    assert!(spelt.contains(&("mcp.mail.get_thread", "mcp__mail__get_thread")));
    for (_, provider) in &spelt {
        assert!(
            !provider.is_empty()
                && provider.len() <= 64
                && provider
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{provider}"
        );
    }
    // The later of the two tools sent as web__search is cut, naming the other.
    let cut = find(&doc, "web__search");
    assert_eq!(cut.code, "provider-name-collision");
    match &cut.facts {
        FactsDoc::ProviderNameCollision {
            provider_name,
            other,
        } => assert_eq!(
            (provider_name.as_str(), other.as_str()),
            ("web__search", "web.search")
        ),
        other => panic!("{other:?}"),
    }
    // The long and the accented names are rewritten, and the plan says so.
    let rewritten: Vec<(&str, usize, &[String])> = doc
        .warnings
        .iter()
        .filter_map(|w| match &w.kind {
            WarningKindDoc::ProviderNameRewritten {
                tool,
                length,
                characters,
                ..
            } => Some((tool.as_str(), *length, characters.as_slice())),
            _ => None,
        })
        .collect();
    let long_name = format!("mcp.mail.{long}");
    assert_eq!(
        rewritten,
        [
            (long_name.as_str(), 88, &[][..]),
            ("mcp.mail.suche_é", 18, &["U+00E9".to_string()][..]),
        ]
    );
    // `why` answers in muster names, from the same facts.
    let out = muster(fx.path())
        .args(["why", "web__search", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let why: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(why["code"], "provider-name-collision");
    assert_eq!(why["facts"]["other"], "web.search");
    assert_eq!(
        why["to_fit"],
        serde_json::json!([{"action": "spell-apart", "other": "web.search"}])
    );
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

#[test]
fn plan_states_the_rosters_share_of_the_chosen_models_context() {
    let fx = Fixture::bundled();
    let (_, doc) = plan_json(
        fx.path(),
        &["--flags", "production", "--model", "gpt-4.1-2025-04-14"],
    );
    assert_eq!(doc.context.model, "gpt-4.1-2025-04-14");
    assert_eq!(doc.context.context_tokens, 1_047_576);
    let table = muster(fx.path())
        .args(["plan", "--flags", "production"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8(table).unwrap();
    let line = table.lines().nth(2).unwrap();
    assert!(
        line.starts_with(&format!("start-up: {} tools ≈ ", doc.roster.len()))
            && line.ends_with(" % of gpt-4o's 128,000-token context"),
        "{table}"
    );
    let err = muster(fx.path())
        .args(["plan", "--model", "no-such-model"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("does not know the context window of model \"no-such-model\""),
        "{err}"
    );
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
