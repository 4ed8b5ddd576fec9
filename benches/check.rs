//! A production-shaped 3-call turn checked by the gateway (its MCP tool strictly, as the planner
//! offers it by default; every tool strictly; every tool leniently; and every tool strictly with
//! the arguments as a model often sends them, wrapped and needing casts), and the same checks
//! done by the `jsonschema` crate's `iter_errors` alone, in one run. All parse their inputs and
//! compile their validators outside the timed loop.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use muster::check::{CheckOptions, OfferedPlan, Turn, check_turn};
use serde_json::Value;

const PLAN: &str = r##"{"format_version": 3, "roster": [
  {"name": "mcp.bland_call.start_call", "source": "mcp", "coerce": true,
   "input_schema": {"type": "object", "required": ["phone_number", "task"],
     "properties": {
       "phone_number": {"type": "string", "description": "E.164 number to call"},
       "task": {"type": "string", "description": "What the agent should do on the call"},
       "max_duration": {"type": "integer", "description": "Minutes before hanging up"},
       "voice": {"type": ["string", "null"], "description": "Voice id"},
       "record": {"type": "boolean"}}}},
  {"name": "email.send", "source": "configured",
   "input_schema": {"type": "object", "required": ["to", "subject", "body"],
     "additionalProperties": false,
     "properties": {
       "to": {"type": "array", "items": {"type": "string"}},
       "cc": {"type": "array", "items": {"type": "string"}},
       "subject": {"type": "string"}, "body": {"type": "string"}}}},
  {"name": "memory.search", "source": "configured",
   "input_schema": {"type": "object", "required": ["query"],
     "properties": {
       "query": {"type": "string"},
       "limit": {"type": "integer"},
       "scope": {"type": "string", "enum": ["notes", "mail", "calendar"]}}}}
]}"##;

const TURN: &str = r#"{"calls": [
  {"id": "call_1", "name": "mcp.bland_call.start_call",
   "arguments": {"phone_number": "+15550100", "task": "Book a table for two at 8pm", "max_duration": 5}},
  {"id": "call_2", "name": "email.send",
   "arguments": {"to": ["ana@example.com", "ben@example.com"], "subject": "Dinner", "body": "Booked."}},
  {"id": "call_3", "name": "memory.search",
   "arguments": {"query": "restaurant preferences", "limit": 5, "scope": "notes"}}
]}"#;

const SLOPPY: &str = r#"{"calls": [
  {"id": "call_1", "name": "mcp.bland_call.start_call",
   "arguments": "{\"phone_number\": \"+15550100\", \"task\": \"Book a table for two at 8pm\", \"max_duration\": \"5\"}"},
  {"id": "call_2", "name": "email.send",
   "arguments": {"to": "[\"ana@example.com\", \"ben@example.com\"]", "subject": "Dinner", "body": "Booked."}},
  {"id": "call_3", "name": "memory.search",
   "arguments": {"query": "restaurant preferences", "limit": "5", "scope": "NOTES"}}
]}"#;

fn bench(c: &mut Criterion) {
    let plan = OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap();
    let lenient_text = PLAN.replace(
        "\"coerce\": true,",
        "\"coerce\": true, \"check\": \"lenient\",",
    );
    assert_ne!(lenient_text, PLAN);
    let lenient = OfferedPlan::from_json(&lenient_text, Path::new("plan.json")).unwrap();
    let strict_text = PLAN
        .replace(
            "\"coerce\": true,",
            "\"coerce\": true, \"check\": \"strict\",",
        )
        .replace(
            "\"source\": \"configured\",",
            "\"source\": \"configured\", \"coerce\": true, \"check\": \"strict\",",
        );
    assert_eq!(strict_text.matches("\"strict\"").count(), 3);
    let strict = OfferedPlan::from_json(&strict_text, Path::new("plan.json")).unwrap();
    let turn = Turn::from_json(TURN, Path::new("turn.json")).unwrap();
    // The same calls as models often send them: whole arguments and a list wrapped in JSON
    // text, numbers as text, an enum member in capitals. Each takes the full steps.
    let sloppy = Turn::from_json(SLOPPY, Path::new("turn.json")).unwrap();
    let options = CheckOptions::default();
    for (plan, turn) in [(&plan, &turn), (&strict, &turn), (&strict, &sloppy)] {
        let report = check_turn(plan, turn, &options);
        assert_eq!(report.verdict, muster::check::Verdict::Run);
        assert_eq!(
            serde_json::to_value(&report).unwrap()["calls"][2]["arguments"]["scope"],
            "notes"
        );
    }

    let validators: Vec<(jsonschema::Validator, Value)> = turn
        .calls
        .iter()
        .map(|call| {
            let schema = &plan.tool(&call.name).unwrap().input_schema;
            (
                jsonschema::validator_for(schema).unwrap(),
                call.arguments.clone(),
            )
        })
        .collect();
    assert!(
        validators
            .iter()
            .all(|(v, a)| v.iter_errors(a).next().is_none())
    );

    let mut group = c.benchmark_group("3-call turn");
    group.bench_function("muster check_turn", |b| {
        b.iter(|| check_turn(black_box(&plan), black_box(&turn), &options))
    });
    group.bench_function("muster check_turn all strict", |b| {
        b.iter(|| check_turn(black_box(&strict), black_box(&turn), &options))
    });
    group.bench_function("muster check_turn all strict, repaired and cast", |b| {
        b.iter(|| check_turn(black_box(&strict), black_box(&sloppy), &options))
    });
    group.bench_function("muster check_turn lenient", |b| {
        b.iter(|| check_turn(black_box(&lenient), black_box(&turn), &options))
    });
    group.bench_function("jsonschema iter_errors", |b| {
        b.iter(|| {
            let mut errors = 0;
            for (validator, arguments) in black_box(&validators) {
                errors += validator.iter_errors(arguments).count();
            }
            errors
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
