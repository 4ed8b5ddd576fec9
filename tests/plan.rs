//! The planner on the bundled production-shaped policies and on inline
//! fixtures: every rule of the plan, read back through the JSON contract.

// The contract types name every field so deserialization checks the whole
// shape; not every field is asserted on.
#![allow(dead_code)]

mod common;
#[path = "plan/cuts.rs"]
mod cuts;
#[path = "plan/roster.rs"]
mod roster;

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

// Stays in this file: insta names and finds the snapshot
// (`snapshots/plan__production_plan.snap`) by the test's module path.
#[test]
fn production_plan_json_is_pinned() {
    let fx = Fixture::bundled();
    let (text, _) = plan_json(fx.path(), &["--flags", "production"]);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("production_plan", value);
}
