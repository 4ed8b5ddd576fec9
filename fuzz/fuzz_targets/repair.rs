//! Argument repair, restriction and casting on their own: one tool whose
//! input schema, call settings and arguments all come from fuzz bytes.
//!
//! The first byte picks the tool's settings (bit 0 coerce, bit 1 strict,
//! bits 2-3 unknown arguments); the rest is split at the first NUL into
//! the input schema and the call's arguments, both JSON text. What a call
//! forwards must be final: checked again as sent, it goes through unchanged
//! with nothing more to repair, drop or cast.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::check::{CheckOptions, OfferedPlan, Status, Turn, check_turn};
use muster_fuzz::assert_names;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&settings, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |&b| b == 0);
    let (Some(schema), Some(arguments)) = (parts.next(), parts.next()) else {
        return;
    };
    let (Ok(schema), Ok(arguments)) = (std::str::from_utf8(schema), std::str::from_utf8(arguments))
    else {
        return;
    };
    let Ok(schema) = serde_json::from_str::<serde_json::Value>(schema) else {
        return;
    };
    let unknown = ["refuse", "drop", "pass", "refuse"][usize::from(settings >> 2 & 3)];
    let tool = serde_json::json!({
        "name": "t",
        "input_schema": schema,
        "coerce": settings & 1 == 1,
        "check": if settings & 2 == 2 { "strict" } else { "lenient" },
        "unknown_arguments": unknown,
    });
    let plan_text = serde_json::json!({"format_version": 3, "roster": [tool]}).to_string();
    let file = Path::new("plan.json");
    let plan = match OfferedPlan::from_json(&plan_text, file) {
        Ok(plan) => plan,
        Err(err) => return assert_names(&err, file),
    };
    let turn_file = Path::new("turn.json");
    let turn_text = format!(r#"{{"calls": [{{"id": "c", "name": "t", "arguments": {arguments}}}]}}"#);
    let turn = match Turn::from_json(&turn_text, turn_file) {
        Ok(turn) => turn,
        Err(err) => return assert_names(&err, turn_file),
    };
    let options = CheckOptions { positional: false };
    let report = check_turn(&plan, &turn, &options);
    let _ = serde_json::to_string(&report).unwrap();
    let _ = report.render_text();
    let call = &report.calls[0];
    if call.status != Status::Ok {
        return;
    }
    let forwarded = call.arguments.as_deref().expect("an ok call forwards arguments");
    let again_text = serde_json::json!({"calls": [{"id": "c", "name": "t", "arguments": forwarded}]})
        .to_string();
    let again = Turn::from_json(&again_text, turn_file).expect("forwarded arguments read back");
    let second = check_turn(&plan, &again, &options);
    let call2 = &second.calls[0];
    assert_eq!(call2.status, Status::Ok, "forwarded arguments refused: {forwarded}");
    assert_eq!(call2.arguments.as_deref(), Some(forwarded), "a second pass changed them");
    assert!(call2.notes.is_empty(), "a second pass repaired again: {:?}", call2.notes);
});
