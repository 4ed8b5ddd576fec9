//! Every gate in gates/ runs against the bundled policies under
//! `cargo test`, through the library (no binary involved).

use muster::gate;
use muster::policy::Policy;
use std::path::Path;

#[test]
fn every_bundled_gate_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy = Policy::load(&root.join("policies")).expect("bundled policies are valid");
    let gates = gate::load(&[root.join("gates")]).expect("bundled gates parse");
    assert!(!gates.is_empty());
    for g in &gates {
        let result = gate::run(&policy, g, (None, None)).expect("gate input is valid");
        assert!(
            result.passed,
            "gate {} failed:\n{}",
            result.name,
            result.failures.join("\n")
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
    let policy = Policy::load(&root.join("policies")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(&file, text).unwrap();
    let gates = gate::load(&[file]).unwrap();
    gate::run(&policy, &gates[0], (None, None)).unwrap()
}

#[test]
fn a_gate_wanting_more_headroom_than_the_roster_leaves_fails_with_the_figures() {
    let result =
        run_gate_text("flags = \"production\"\nmin_headroom = { slots = 1, tokens = 2500 }\n");
    assert!(!result.passed);
    assert!(
        result
            .failures
            .contains(&"headroom is 0 slot(s); the gate wants at least 1".to_string()),
        "{:?}",
        result.failures
    );
    assert!(
        result
            .failures
            .iter()
            .any(|f| f.starts_with("headroom is 1957 tokens; the gate wants at least 2500")),
        "{:?}",
        result.failures
    );
    // The nearest passing gate: what the roster leaves.
    let result =
        run_gate_text("flags = \"production\"\nmin_headroom = { slots = 0, tokens = 1957 }\n");
    assert!(result.passed, "{:?}", result.failures);
}

#[test]
fn a_reordered_pin_fails_naming_the_first_difference() {
    let result = run_gate_text(
        "flags = \"production\"\nroster = [\"mcp.bland_read.get_call\", \"mcp.bland_call.start_call\"]\n",
    );
    assert!(!result.passed);
    let failure = &result.failures[0];
    assert!(
        failure.contains("roster differs from the one pinned"),
        "{failure}"
    );
    assert!(
        failure.contains("+ mcp.bland_read.list_calls (now offered at position 3)"),
        "{failure}"
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
    assert!(
        result.failures[0].contains("- email.subscriptions (now cut (flag-off)"),
        "{:?}",
        result.failures
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
