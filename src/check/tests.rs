//! One test per rule of the gateway, each beside its passing twin: what is refused and the
//! nearest thing that passes; then property tests. This file holds the fixtures the test
//! files below share.

mod big_integers;
mod forwarding;
mod names;
mod nesting;
mod properties;
mod strict;
mod values;

use super::*;
use crate::contract::{CallNote, CallProblem, CheckNote, CheckProblem};
use serde_json::json;
use std::path::Path;

const PLAN: &str = r##"{
  "format_version": 3,
  "roster": [
    {"name": "mcp.bland_call.start_call", "source": "mcp", "coerce": true,
     "unknown_arguments": "refuse",
     "input_schema": {"type": "object", "required": ["phone_number"],
       "properties": {"phone_number": {"type": "string"}, "task": {"type": "string"},
                      "max_duration": {"type": "integer"},
                      "record": {"type": "boolean"},
                      "voice": {"type": ["string", "null"]}}}},
    {"name": "email.send", "source": "configured",
     "input_schema": {"type": "object", "required": ["to", "subject"], "additionalProperties": false,
       "properties": {"to": {"type": "array", "items": {"type": "string"}},
                      "subject": {"type": "string"}, "body": {"type": "string"},
                      "headers": {"type": "object"}}}},
    {"name": "memory.search", "source": "configured", "unknown_arguments": "drop",
     "input_schema": {"type": "object", "required": ["query", "note"],
       "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                      "scope": {"enum": ["notes", "mail", "2"]},
                      "note": {"type": ["string", "null"]},
                      "filters": {"type": "array", "items": {"type": "object",
                         "properties": {"date": {"type": "string"}, "kind": {"enum": ["a", "b"]}}}},
                      "ref": {"$ref": "#/defs/x"}, "either": {"anyOf": [{"type": "string"}]},
                      "odd": {"type": "decimal"}}}},
    {"name": "mcp.files.search", "source": "mcp", "coerce": true, "unknown_arguments": "pass",
     "fixed": {"scope": "team-handbook"}, "only": ["query", "limit"],
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"},
       "limit": {"type": "number"}}}},
    {"name": "fs.read", "source": "configured",
     "parameters": [{"name": "path", "required": true}, {"name": "start", "required": false},
                    {"name": "count", "required": false}],
     "input_schema": {"type": "object", "required": ["path"],
       "properties": {"path": {"type": "string"}, "start": {"type": "integer"},
                      "count": {"type": "integer"}}}},
    {"name": "tools.load", "source": "control",
     "input_schema": {"type": "object", "required": ["names"],
       "properties": {"names": {"type": "array", "items": {"type": "string"}}}}}
  ],
  "deferred": [{"name": "mcp.gmail_read.get_thread", "tokens": 120, "code": "item-cap"}],
  "control_tool": "tools.load"
}"##;

fn plan() -> OfferedPlan {
    OfferedPlan::from_json(PLAN, Path::new("plan.json")).unwrap()
}

fn turn(calls: &[(&str, Value)]) -> Turn {
    Turn {
        calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| Call {
                id: format!("c{}", i + 1),
                name: (*name).to_string(),
                arguments: arguments.clone(),
                unreadable: None,
                written: Box::default(),
            })
            .collect(),
    }
}

/// The report for one call of `tool` with `arguments`.
/// Checks `calls` as one turn and returns a report that owns its arguments.
fn check_calls(
    plan: &OfferedPlan,
    calls: &[(&str, Value)],
    options: &CheckOptions,
) -> Report<'static> {
    check_turn(plan, &turn(calls), options).into_owned()
}

fn one(tool: &str, arguments: Value) -> CallReport<'static> {
    let mut report = check_calls(&plan(), &[(tool, arguments)], &CheckOptions::default());
    report.calls.remove(0)
}

fn ok(tool: &str, arguments: Value) -> Value {
    let call = one(tool, arguments);
    assert_eq!(call.status, Status::Ok, "{:?}", call.problems);
    call.arguments.clone().unwrap().into_owned()
}

fn problems(tool: &str, arguments: Value) -> Vec<String> {
    let call = one(tool, arguments);
    assert_eq!(call.status, Status::Refused, "{:?}", call.arguments);
    assert_eq!(call.refusal, Some(Refusal::Arguments));
    assert!(call.arguments.is_none());
    messages(&call.problems)
}

/// The sentences of `problems`.
fn messages(problems: &[CheckProblem]) -> Vec<String> {
    problems.iter().map(|p| p.message.clone()).collect()
}

const CALL: &str = "mcp.bland_call.start_call";

fn tool_with(schema: Value) -> OfferedTool {
    OfferedTool {
        name: "t".into(),
        provider_name: None,
        source: Source::Mcp,
        mcp: None,
        input_schema: schema,
        fixed: Map::new(),
        only: None,
        unknown_arguments: UnknownArguments::Refuse,
        coerce: true,
        check: crate::contract::CheckMode::Lenient,
        parameters: None,
        variadic: false,
    }
}

fn run(
    schema: Value,
    arguments: Value,
    coerce: bool,
    unknown: UnknownArguments,
) -> Report<'static> {
    let mut tool = tool_with(schema);
    tool.coerce = coerce;
    tool.unknown_arguments = unknown;
    let plan = OfferedPlan::new(vec![tool], Vec::new(), None);
    check_calls(&plan, &[("t", arguments)], &CheckOptions::default())
}

fn root_object(schema: Value) -> Value {
    json!({"type": "object", "properties": {"arg": schema}, "required": ["arg"]})
}
