//! The plan JSON `muster check` reads, then a few calls checked against it
//! so every schema the reader accepts is also compiled and applied.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::check::{CheckOptions, OfferedPlan, Turn, check_turn};
use muster_fuzz::assert_names;
use std::path::Path;

const ARGUMENTS: [&str; 4] = [
    r#"{}"#,
    r#""{\"a\": 1, \"query\": \"x\", \"b\": [true, {\"c\": null}], \"n\": 12345678901234567890}""#,
    r#"{"path": "/tmp", "limit": "10", "flag": "yes", "items": "[1, 2]"}"#,
    r#""not json""#,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("plan.json");
    let plan = match OfferedPlan::from_json(text, file) {
        Ok(plan) => plan,
        Err(err) => return assert_names(&err, file),
    };
    let mut calls = Vec::new();
    for (i, tool) in plan.roster().iter().take(4).enumerate() {
        for (j, args) in ARGUMENTS.iter().enumerate() {
            let name = serde_json::to_string(&tool.name).unwrap();
            calls.push(format!(
                r#"{{"id": "c{i}-{j}", "name": {name}, "arguments": {args}}}"#
            ));
        }
    }
    let turn = format!(r#"{{"calls": [{}]}}"#, calls.join(","));
    let turn = Turn::from_json(&turn, Path::new("turn.json")).expect("a turn built to be read");
    for positional in [false, true] {
        let report = check_turn(&plan, &turn, &CheckOptions { positional });
        let _ = serde_json::to_string(&report).unwrap();
        let _ = report.render_text();
    }
});
