//! A turn read and checked against the plan of the bundled policy.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::check::{CheckOptions, OfferedPlan, Turn, check_turn};
use muster_fuzz::{assert_names, bundled_plan_json};
use std::path::Path;
use std::sync::OnceLock;

fn plan() -> &'static OfferedPlan {
    static PLAN: OnceLock<OfferedPlan> = OnceLock::new();
    PLAN.get_or_init(|| {
        OfferedPlan::from_json(bundled_plan_json(), Path::new("plan.json"))
            .expect("the bundled plan reads back")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("turn.json");
    let turn = match Turn::from_json(text, file) {
        Ok(turn) => turn,
        Err(err) => return assert_names(&err, file),
    };
    for positional in [false, true] {
        let report = check_turn(plan(), &turn, &CheckOptions { positional });
        assert_eq!(report.calls.len(), turn.calls.len());
        let _ = serde_json::to_string(&report).unwrap();
        let _ = report.render_text();
    }
});
