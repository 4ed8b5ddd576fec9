//! Every gate in gates/ runs against the bundled policies under
//! `cargo test`, through the library (no binary involved).

use muster::contract::Status;
use muster::contract::{AddedTool, GateFailure, Reason};
use muster::gate;
use muster::policy::Inputs;
use std::path::Path;

#[test]
fn every_bundled_gate_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inputs = Inputs::load(&root.join("policies")).expect("bundled policies are valid");
    let gates = gate::load(&[root.join("gates")]).expect("bundled gates parse");
    assert!(!gates.is_empty());
    for g in &gates {
        let result = gate::run(&inputs, g, (None, None)).expect("gate input is valid");
        assert!(
            result.passed,
            "gate {} failed:\n{}",
            result.name,
            result
                .failures
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn the_production_gate_requires_the_calling_tools_and_pins_the_roster() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gates = gate::load(&[root.join("gates/production.toml")]).unwrap();
    let g = &gates[0];
    assert_eq!(g.selection.profile.as_deref(), Some("production"));
    let required: Vec<&str> = g.require.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        required,
        [
            "mcp.bland_call.start_call",
            "mcp.bland_read.get_call",
            "mcp.bland_read.list_calls"
        ]
    );
    assert_eq!(g.roster.as_ref().map(Vec::len), Some(30));
}

fn run_gate_text(text: &str) -> muster::gate::GateResult {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inputs = Inputs::load(&root.join("policies")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(&file, text).unwrap();
    let gates = gate::load(&[file]).unwrap();
    gate::run(&inputs, &gates[0], (None, None)).unwrap()
}

#[test]
fn a_gate_wanting_more_headroom_than_the_roster_leaves_fails_with_the_figures() {
    let result =
        run_gate_text("flags = \"production\"\nmin_headroom = { slots = 1, tokens = 2500 }\n");
    assert!(!result.passed);
    assert_eq!(
        result.failures,
        [
            GateFailure::SlotHeadroom { slots: 0, min: 1 },
            // 2060 while the planner counted nested objects by the 2023
            // `functions` rule (nested descriptions dropped); issue 21
            // counts them as the 2024 `tools` measurements bill them,
            // descriptions kept (docs/count.md), as 1929 did before.
            GateFailure::TokenHeadroom {
                tokens: 1929,
                min: 2500
            }
        ]
    );
    // The sentence is rendered from the data.
    assert_eq!(
        result.failures[0].to_string(),
        "headroom is 0 slot(s); the gate wants at least 1"
    );
    // The nearest passing gate: what the roster leaves.
    let result =
        run_gate_text("flags = \"production\"\nmin_headroom = { slots = 0, tokens = 1929 }\n");
    assert!(result.passed, "{:?}", result.failures);
}

#[test]
fn a_reordered_pin_fails_naming_the_first_difference() {
    let result = run_gate_text(
        "flags = \"production\"\nroster = [\"mcp.bland_read.get_call\", \"mcp.bland_call.start_call\"]\n",
    );
    assert!(!result.passed);
    let GateFailure::RosterDiffers {
        added,
        removed,
        reordered,
        line,
        ..
    } = &result.failures[0]
    else {
        panic!("{:?}", result.failures)
    };
    assert_eq!(*line, 2);
    assert!(removed.is_empty() && reordered.is_none());
    assert_eq!(
        added[0],
        AddedTool {
            name: "mcp.bland_read.list_calls".into(),
            position: 3
        }
    );
    assert!(
        result.failures[0]
            .to_string()
            .contains("+ mcp.bland_read.list_calls (now offered at position 3)")
    );
}

#[test]
fn a_gate_without_flags_misses_what_production_turns_on() {
    // The record's lesson: a gate that never enables production's flags
    // sees a different roster. Planned without the profile, the two
    // unsubscribe tools are absent and Gmail tools take their slots.
    let result = run_gate_text(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("gates/production.toml"),
        )
        .unwrap()
        .replace("flags = \"production\"", ""),
    );
    assert!(!result.passed);
    let GateFailure::RosterDiffers { removed, .. } = &result.failures[0] else {
        panic!("{:?}", result.failures)
    };
    let subscriptions = removed
        .iter()
        .find(|r| r.name == "email.subscriptions")
        .unwrap();
    assert_eq!(subscriptions.status, Some(Status::Cut));
    assert_eq!(
        subscriptions.reason,
        Some(Reason::FlagOff {
            flag: "AGENT_EMAIL_UNSUBSCRIBE_ENABLED".into(),
            server: None
        })
    );
}

#[test]
fn a_tool_named_twice_in_a_gate_is_bad_input_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(
        &file,
        "require = [\n  \"math.calculate\",\n  \"math.calculate\",\n]\n",
    )
    .unwrap();
    let err = gate::load(&[file]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("g.toml:3: require lists \"math.calculate\" twice"),
        "{text}"
    );
}

/// `muster gate --format json` read back through this test's own types, so
/// a renamed or retyped field fails here.
#[test]
fn the_gate_json_reads_back_as_documented() {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Result {
        name: String,
        file: String,
        passed: bool,
        failures: Vec<serde_json::Map<String, serde_json::Value>>,
        roster: Size,
        fingerprint: String,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Size {
        items: u32,
        item_cap: u32,
        tokens: u32,
        token_cap: u32,
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_muster"))
        .current_dir(root)
        .args(["gate", "--item-cap", "29", "--format", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let results: Vec<Result> = serde_json::from_slice(&out).unwrap();
    let production = results
        .iter()
        .find(|r| r.name == "production chat roster")
        .unwrap();
    assert!(!production.passed);
    assert_eq!(
        (production.roster.items, production.roster.item_cap),
        (29, 29)
    );
    let codes: Vec<&str> = production
        .failures
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["roster-differs"]);
    let removed = &production.failures[0]["removed"][0];
    assert_eq!(removed["reason"]["code"], "item-cap");
    assert_eq!(removed["status"], "cut");
}
