//! Caps that hold for the whole chat: `deferral.loads`, the plan's worst
//! case after loads, loads refused at the caps, the `loads_within_caps`
//! gate key, and the token provider per agent. Inline policies, read
//! through the library.

use muster::catalog::{Catalog, Selection};
use muster::contract::{CapMeasure, LoadNote, Reason};
use muster::plan::plan;
use muster::policy::Inputs;
use muster::session::{self, LoadRequest, Opened, SessionKeys};
use muster::tokens::{Provider, TokenCache};
use serde_json::Value;
use std::path::Path;

/// Eight tools of some 250 tokens each, `t.a` to `t.h`, highest
/// priority first.
fn tools() -> String {
    let words = vec!["word"; 250].join(" ");
    ('a'..='h')
        .enumerate()
        .map(|(n, c)| {
            format!(
                "[[tool]]\nname = \"t.{c}\"\ndescription = \"Tool {c}: {words}.\"\npriority = {}\n\n",
                100 - n
            )
        })
        .collect()
}

/// A policy of caps 4 items / 9,000 tokens, deferral on with
/// `max_loaded = 2`, `deferral_extra` added to `[deferral]` and
/// `agent_extra` to the one agent.
fn policy(deferral_extra: &str, agent_extra: &str) -> tempfile::TempDir {
    policy_capped(deferral_extra, agent_extra, 9000)
}

fn policy_capped(deferral_extra: &str, agent_extra: &str, tokens: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("muster.toml"),
        format!(
            "[caps]\nitems = 4\ntokens = {tokens}\n\n[deferral]\nenabled = true\nmax_loaded = 2\nmax_loaded_tokens = 4000\n{deferral_extra}\n\n[[agent]]\nname = \"chat\"\n{agent_extra}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/t.toml"), tools()).unwrap();
    dir
}

fn plan_json(dir: &Path, selection: &Selection) -> Value {
    let inputs = Inputs::load(dir).unwrap();
    let catalog = Catalog::build(&inputs, selection).unwrap();
    let plan = plan(&catalog, catalog.caps);
    serde_json::from_str(&plan.to_json_string()).unwrap()
}

fn problems(dir: &Path) -> String {
    Inputs::load(dir).unwrap_err().to_string()
}

#[test]
fn bad_loads_settings_are_refused_with_their_line() {
    let dir = policy("loads = \"sometimes\"", "");
    let err = problems(dir.path());
    assert!(
        err.contains("deferral.loads \"sometimes\" is not a choice"),
        "{err}"
    );
    assert!(err.contains("muster.toml:9"), "{err}");

    let dir = policy("loads = \"within-caps\"\nbeyond_items = 2", "");
    let err = problems(dir.path());
    assert!(
        err.contains("deferral.beyond_items is set but deferral.loads is \"within-caps\""),
        "{err}"
    );

    let dir = policy("beyond_tokens = -1", "");
    let err = problems(dir.path());
    assert!(
        err.contains("deferral.beyond_tokens = -1 is out of range"),
        "{err}"
    );

    let dir = policy("", "provider = \"gemini\"");
    let err = problems(dir.path());
    assert!(
        err.contains("agent \"chat\": provider \"gemini\" is not supported"),
        "{err}"
    );
}

#[test]
fn by_default_the_plan_says_loads_take_the_chat_past_the_caps() {
    let dir = policy("", "");
    let doc = plan_json(dir.path(), &Selection::default());
    let totals = &doc["totals"];
    assert_eq!(totals["items"], 4, "{totals}");
    assert_eq!(totals["after_loads"]["loads"], "beyond-caps");
    assert_eq!(totals["after_loads"]["items"], 6);
    assert_eq!(totals["after_loads"]["over_items"], 2);
    // Nothing is reserved: misses read as before.
    let missed = &doc["deferred"][0]["facts"];
    assert_eq!(missed["code"], "item-cap");
    assert!(missed.get("reserved_for_loads").is_none(), "{missed}");
}

#[test]
fn within_caps_reserves_room_for_loads_and_says_so() {
    let dir = policy("loads = \"within-caps\"", "");
    let inputs = Inputs::load(dir.path()).unwrap();
    let catalog = Catalog::build(&inputs, &Selection::default()).unwrap();
    let p = plan(&catalog, catalog.caps);
    // Caps 4 less 2 slots for loads: the control tool and one tool.
    assert_eq!(p.totals.items, 2);
    assert_eq!(p.after_loads().0, 4);
    let (i, _) = p.decision("t.b").unwrap();
    match p.reason(i) {
        Reason::ItemCap {
            offered_ahead,
            item_cap_needed,
            reserved_for_loads,
            ..
        } => {
            assert_eq!(offered_ahead, 2);
            assert_eq!(item_cap_needed, 5);
            assert_eq!(reserved_for_loads, 2);
        }
        other => panic!("t.b missed on {other:?}"),
    }
    assert!(
        p.detail(i).contains("2 are reserved for loads"),
        "{}",
        p.detail(i)
    );
    let doc: Value = serde_json::from_str(&p.to_json_string()).unwrap();
    assert_eq!(doc["totals"]["after_loads"]["over_items"], 0);
    assert_eq!(doc["headroom"]["slots"], 0);
}

/// A session under `deferral_extra`, with `names` loaded one call each;
/// the notes of each call.
fn load_each(deferral_extra: &str, names: &[&str]) -> Vec<Vec<LoadNote>> {
    load_each_in(&policy(deferral_extra, ""), names)
}

fn load_each_in(dir: &tempfile::TempDir, names: &[&str]) -> Vec<Vec<LoadNote>> {
    let inputs = Inputs::load(dir.path()).unwrap();
    let keys = SessionKeys::none();
    let mut cache = TokenCache::in_memory();
    let mut doc = session::new(
        &inputs,
        &Selection::default(),
        &Default::default(),
        &keys,
        &mut cache,
    )
    .unwrap();
    let mut all = Vec::new();
    for name in names {
        let Opened::Live(mut live) =
            session::open(&inputs, doc, &keys, Path::new("s.json"), &mut cache).unwrap()
        else {
            panic!("the pin holds");
        };
        let answer = live.load(&LoadRequest::Names(vec![name.to_string()]));
        all.push(answer.notes);
        doc = live.into_document();
    }
    all
}

#[test]
fn a_load_past_the_caps_and_their_bound_is_refused_with_the_figures() {
    // Beyond the caps by at most one item: the second load does not fit
    // beside the first, so it replaces it (issue 22: a load never locks a
    // tool the policy offers out), and says so.
    let notes = load_each("beyond_items = 1", &["t.d", "t.e"]);
    assert!(matches!(notes[0][0], LoadNote::Loaded { .. }), "{notes:?}");
    assert!(
        notes[1].contains(&LoadNote::Unloaded {
            tools: vec!["t__d".to_string()]
        }),
        "{notes:?}"
    );
    assert!(
        notes[1].contains(&LoadNote::Loaded {
            tools: vec!["t__e".to_string()]
        }),
        "{notes:?}"
    );
    // Beyond the caps by none: a tool past the item cap on its own is
    // refused with the figures.
    let notes = load_each("beyond_items = 0", &["t.d"]);
    assert_eq!(
        notes[0][0],
        LoadNote::Caps {
            measure: CapMeasure::Items,
            limit: 4,
            offered: 4,
            requested: 1,
            tools: vec!["t__d".to_string()],
        },
        "{notes:?}"
    );
    let text = notes[0][0].to_string();
    assert!(text.contains("at most 4 tools and is offered 4"), "{text}");
    // No tokens past the cap, a cap 200 tokens above the pinned offer
    // (the summary's budget, so the same roster is pinned): a tool of
    // some 250 tokens is refused by tokens, counted from the policy.
    let pinned = plan_json(policy("", "").path(), &Selection::default());
    let pinned_tokens = pinned["totals"]["tokens"].as_u64().unwrap() as u32;
    let tool_tokens = pinned["deferred"][0]["tokens"].as_u64().unwrap() as u32;
    assert!(tool_tokens > 200, "{tool_tokens}");
    let cap = pinned_tokens + 200;
    let dir = policy_capped("beyond_tokens = 0", "", cap);
    assert_eq!(
        plan_json(dir.path(), &Selection::default())["totals"]["tokens"],
        pinned_tokens
    );
    let notes = load_each_in(&dir, &["t.d"]);
    assert_eq!(
        notes[0][0],
        LoadNote::Caps {
            measure: CapMeasure::Tokens,
            limit: cap,
            offered: pinned_tokens,
            requested: tool_tokens,
            tools: vec!["t__d".to_string()],
        }
    );
    // Unbounded (the default): both load, past the item cap.
    let notes = load_each("", &["t.d", "t.e"]);
    assert!(matches!(notes[1][0], LoadNote::Loaded { .. }), "{notes:?}");
    // Within the caps: the reserved room takes the bound's loads.
    let notes = load_each("loads = \"within-caps\"", &["t.c", "t.d"]);
    assert!(matches!(notes[1][0], LoadNote::Loaded { .. }), "{notes:?}");
}

fn run_gate(dir: &Path, text: &str) -> muster::gate::GateResult {
    let file = dir.join("g.toml");
    std::fs::write(&file, text).unwrap();
    let inputs = Inputs::load(dir).unwrap();
    let gates = muster::gate::load(&[file]).unwrap();
    muster::gate::run(&inputs, &gates[0], (None, None)).unwrap()
}

#[test]
fn a_gate_can_require_loads_within_the_caps() {
    let dir = policy("", "");
    let result = run_gate(dir.path(), "loads_within_caps = true\n");
    assert!(!result.passed);
    let failure = serde_json::to_value(&result.failures[0]).unwrap();
    assert_eq!(failure["code"], "loads-beyond-caps", "{failure}");
    assert_eq!(failure["items"], 6);
    assert_eq!(failure["item_cap"], 4);

    let dir = policy("loads = \"within-caps\"", "");
    let result = run_gate(dir.path(), "loads_within_caps = true\n");
    assert!(result.passed, "{:?}", result.failures);
    // Without the key the default policy passes as before.
    let dir = policy("", "");
    assert!(run_gate(dir.path(), "name = \"plain\"\n").passed);
}

#[test]
fn an_agent_names_its_token_provider_and_a_request_overrides_it() {
    let dir = policy("", "provider = \"anthropic\"");
    let doc = plan_json(dir.path(), &Selection::default());
    assert_eq!(doc["provider"], "anthropic");
    let doc = plan_json(
        dir.path(),
        &Selection {
            provider: Some(Provider::Openai),
            ..Selection::default()
        },
    );
    assert_eq!(doc["provider"], "openai");
    let dir = policy("", "");
    assert_eq!(
        plan_json(dir.path(), &Selection::default())["provider"],
        "openai"
    );
}
