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
    assert_eq!(g.roster.as_ref().map(|(r, _)| r.len()), Some(30));
}
