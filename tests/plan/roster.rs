//! The roster the planner offers and what its entries carry: the production
//! calling tools within both caps, byte-identical JSON, a tools-only
//! policy, entry fields, provider names, priority order, the fingerprint and
//! the context share.

use super::{
    FactsDoc, TWO_TOOLS, WarningKindDoc,
    common::{Fixture, muster},
    find, names, plan_json,
};

const CALLING: [&str; 3] = [
    "mcp.bland_call.start_call",
    "mcp.bland_read.get_call",
    "mcp.bland_read.list_calls",
];

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
