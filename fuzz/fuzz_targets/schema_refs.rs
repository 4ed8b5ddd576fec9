//! Reference-heavy strict schemas (issue 24): the bytes build a schema of up to eight `$defs`
//! that refer to one another (by pointer, by anchor, percent-escaped, in cycles, twice from one
//! place) under `allOf`, `anyOf`, `items`, `contains`, `properties`, … and a call's arguments
//! nested up to 24 levels. The tool is checked strictly: a schema is either refused
//! `uncheckable-schema` or validated, and either way the answer comes within libFuzzer's
//! `-timeout` (a "billion laughs" or a self-reference that doubles per level must be caught by
//! the expansion measure, not run), and the same answer comes twice. Leaves include `pattern`s
//! that need the backtracking regex engine and texts of up to 60 `a`s, exponential work for
//! them: the check's budget of steps (`check::MAX_CHECK_STEPS`) must end it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::check::{CheckOptions, OfferedPlan, Turn, check_turn};
use serde_json::{Map, Value, json};
use std::path::Path;

/// The fuzz bytes, read one at a time; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

const DEFS: usize = 8;

fn reference(b: &mut Bytes<'_>) -> Value {
    let to = usize::from(b.next()) % DEFS;
    let text = match b.next() % 4 {
        0 => format!("#d{to}"),
        1 => format!("#/%24defs/d{to}"),
        2 => "#".to_string(),
        _ => format!("#/$defs/d{to}"),
    };
    json!({ "$ref": text })
}

fn leaf(b: &mut Bytes<'_>) -> Value {
    match b.next() % 8 {
        0 => json!({"type": "string"}),
        1 => json!({"type": "integer", "minimum": 0}),
        2 => json!({"type": "array"}),
        3 => json!({"type": "object"}),
        4 => json!(true),
        5 => json!({"type": "string", "pattern": "^(a|a)*\\1b$"}),
        6 => json!({"pattern": "^(?!a)(?=(a+)+$)|^(a+)+\\2c$"}),
        _ => json!({}),
    }
}

fn node(b: &mut Bytes<'_>, depth: u32) -> Value {
    if depth == 0 {
        return leaf(b);
    }
    let n = |b: &mut Bytes<'_>| node(b, depth - 1);
    match b.next() % 14 {
        0 | 1 | 2 => reference(b),
        3 => json!({"allOf": [n(b), n(b)]}),
        4 => json!({"anyOf": [n(b), n(b)]}),
        5 => json!({"oneOf": [n(b), n(b)]}),
        6 => json!({"items": n(b)}),
        7 => json!({"items": n(b), "contains": n(b)}),
        8 => json!({"properties": {"a": n(b), "b": n(b)}, "additionalProperties": n(b)}),
        9 => json!({"not": n(b)}),
        10 => json!({"if": n(b), "then": n(b), "else": n(b)}),
        11 => json!({"prefixItems": [n(b), n(b)], "patternProperties": {"^a": n(b)}}),
        12 => json!({"dependentSchemas": {"a": n(b)}, "propertyNames": n(b)}),
        _ => leaf(b),
    }
}

fn schema(b: &mut Bytes<'_>) -> Value {
    let mut defs = Map::new();
    for i in 0..DEFS {
        let mut def = node(b, 3);
        if let Value::Object(map) = &mut def {
            map.insert("$anchor".into(), json!(format!("d{i}")));
        }
        defs.insert(format!("d{i}"), def);
    }
    let x = node(b, 2);
    let mut root = json!({"type": "object", "$defs": defs, "properties": {"x": x}});
    if b.next() % 4 == 0 {
        // A resource of its own inside the tool's schema.
        root = json!({"type": "object", "properties": {"v": {
            "$id": "urn:fuzz:inner", "$defs": root["$defs"].take(), "properties": root["properties"].take()}}});
    }
    root
}

fn arguments(b: &mut Bytes<'_>, depth: u32) -> Value {
    if depth == 0 {
        return json!("s");
    }
    match b.next() % 7 {
        0 => json!([]),
        1 => Value::Array((0..1 + b.next() % 3).map(|_| arguments(b, depth - 1)).collect()),
        2 => json!({"a": arguments(b, depth - 1), "b": arguments(b, depth - 1)}),
        3 => json!({"c": arguments(b, depth - 1)}),
        4 => json!(u64::from(b.next())),
        5 => json!(format!("{}c", "a".repeat(usize::from(b.next() % 61)))),
        _ => json!("s"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let schema = schema(&mut b);
    let depth = u32::from(b.next() % 25);
    let arguments = json!({"x": arguments(&mut b, depth), "v": {"x": arguments(&mut b, depth)}});
    let plan = json!({"format_version": 3, "roster": [{"name": "t", "check": "strict",
        "input_schema": schema}]})
    .to_string();
    let Ok(plan) = OfferedPlan::from_json(&plan, Path::new("plan.json")) else {
        return;
    };
    let turn = json!({"calls": [{"id": "c", "name": "t", "arguments": arguments}]}).to_string();
    let turn = Turn::from_json(&turn, Path::new("turn.json")).expect("a turn built as JSON reads");
    let first = serde_json::to_string(&check_turn(&plan, &turn, &CheckOptions::default())).unwrap();
    let again = serde_json::to_string(&check_turn(&plan, &turn, &CheckOptions::default())).unwrap();
    assert_eq!(first, again, "the same turn answered twice differs");
});
