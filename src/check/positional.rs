//! The positional form of a call, for hosts that call configured tools with an ordered list of
//! arguments (the policy loader enforces the order rule when the list is declared). A call may
//! stop before any trailing optional parameters; an optional one skipped before a given one gets its type's empty
//! value, because models pass options by name, not position, and refusing such calls cost rounds.
//! It must not reorder or invent arguments beyond those empty values.

use serde_json::{Map, Value};

use super::offered::Parameter;
use super::ty::{Declared, Ty};
use crate::contract::{CallNote, CallProblem, CheckNote};

/// The arguments `named` as a list in the order of `params`. Trailing optional parameters that
/// were not given (or given as null) are left off; a skipped one before a given one gets the
/// empty value of the type `schema` declares for it. A variadic tool's last parameter given as a
/// list is spread into the remaining places. Names with no place are dropped and noted; a
/// required parameter that is missing is returned as a problem.
pub(crate) fn to_positional(
    mut named: Map<String, Value>,
    params: &[Parameter],
    variadic: bool,
    schema: &Value,
    tool: &str,
    call_id: &str,
    notes: &mut Vec<CheckNote>,
) -> Result<Value, Box<CallProblem>> {
    // A null counts as "not given" for an optional parameter only: for a
    // required one the check has already judged whether its schema admits
    // null, and the null is what the tool receives.
    let given = |p: &Parameter| {
        named
            .get(&p.name)
            .is_some_and(|v| p.required || !v.is_null())
    };
    let last_given = params.iter().rposition(given);
    let mut list = Vec::new();
    for (i, param) in params.iter().enumerate() {
        let value = named
            .shift_remove(&param.name)
            .filter(|v| param.required || !v.is_null());
        match value {
            Some(Value::Array(items)) if variadic && i + 1 == params.len() => list.extend(items),
            Some(value) => list.push(value),
            None if param.required => {
                return Err(Box::new(CallProblem::MissingArgument {
                    tool: tool.to_string(),
                    argument: super::path::render_name(&param.name).into_owned(),
                    expected: Vec::new(),
                }));
            }
            None if last_given.is_some_and(|last| i < last) => {
                list.push(empty_value(schema, &param.name));
            }
            None => {}
        }
    }
    for name in named.keys() {
        notes.push(
            CallNote::NotAParameterDropped {
                call: call_id.to_string(),
                argument: super::path::render_name(name).into_owned(),
                tool: tool.to_string(),
            }
            .into(),
        );
    }
    Ok(Value::Array(list))
}

/// The "not given" value of a parameter's declared type.
fn empty_value(schema: &Value, name: &str) -> Value {
    let declared = schema
        .get("properties")
        .and_then(|p| p.get(name))
        .map_or(Declared::Any, Declared::of_schema);
    // The first declared type decides, in the order a handler most likely tests.
    let ty = [
        Ty::String,
        Ty::Integer,
        Ty::Number,
        Ty::Boolean,
        Ty::Array,
        Ty::Object,
    ]
    .into_iter()
    .find(|t| declared.has(*t));
    match ty {
        Some(Ty::String) => Value::from(""),
        Some(Ty::Integer | Ty::Number) => Value::from(0),
        Some(Ty::Boolean) => Value::Bool(false),
        Some(Ty::Array) => Value::Array(Vec::new()),
        Some(Ty::Object) => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(name: &str, required: bool) -> Parameter {
        Parameter {
            name: name.into(),
            required,
        }
    }

    fn fs_read() -> (Vec<Parameter>, Value) {
        (
            vec![
                p("path", true),
                p("start", false),
                p("count", false),
                p("raw", false),
            ],
            json!({"type": "object", "properties": {
                "path": {"type": "string"}, "start": {"type": "integer"},
                "count": {"type": "integer"}, "raw": {"type": "boolean"}}}),
        )
    }

    fn positional(args: Value) -> Result<Value, Box<CallProblem>> {
        let (params, schema) = fs_read();
        let mut notes = Vec::new();
        to_positional(
            args.as_object().cloned().unwrap(),
            &params,
            false,
            &schema,
            "fs.read",
            "c1",
            &mut notes,
        )
    }

    #[test]
    fn trailing_missing_optionals_are_left_off() {
        assert_eq!(
            positional(json!({"path": "a.rs"})).unwrap(),
            json!(["a.rs"])
        );
        assert_eq!(
            positional(json!({"path": "a.rs", "start": 3, "count": null})).unwrap(),
            json!(["a.rs", 3])
        );
    }

    #[test]
    fn a_skipped_optional_before_a_given_one_gets_its_empty_value() {
        assert_eq!(
            positional(json!({"path": "a.rs", "raw": true})).unwrap(),
            json!(["a.rs", 0, 0, true])
        );
        // A given false or 0 is kept as given, never taken for "not given".
        assert_eq!(
            positional(json!({"path": "a.rs", "start": 0, "raw": false})).unwrap(),
            json!(["a.rs", 0, 0, false])
        );
    }

    #[test]
    fn a_missing_required_parameter_is_a_problem() {
        let problem = *positional(json!({"start": 1})).unwrap_err();
        assert!(
            matches!(&problem, CallProblem::MissingArgument { argument, .. } if argument == "path"),
            "{problem:?}"
        );
    }

    #[test]
    fn a_null_for_a_required_parameter_is_passed_on_and_for_an_optional_one_left_off() {
        // Whether the schema admits the null is the check's to judge; the
        // positional form must not turn it into "missing".
        assert_eq!(
            positional(json!({"path": null, "start": null})).unwrap(),
            json!([null])
        );
    }

    #[test]
    fn a_variadic_last_parameter_given_as_a_list_is_spread() {
        let params = [p("cmd", true), p("args", true)];
        let mut notes = Vec::new();
        let out = to_positional(
            json!({"cmd": "ls", "args": ["-l", "/"], "x": 1})
                .as_object()
                .cloned()
                .unwrap(),
            &params,
            true,
            &json!({}),
            "sh",
            "c1",
            &mut notes,
        )
        .unwrap();
        assert_eq!(out, json!(["ls", "-l", "/"]));
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn empty_values_follow_the_declared_type() {
        let schema =
            json!({"properties": {"a": {"type": "array"}, "o": {"type": ["object", "null"]}}});
        assert_eq!(empty_value(&schema, "a"), json!([]));
        assert_eq!(empty_value(&schema, "o"), json!({}));
        assert_eq!(empty_value(&schema, "zz"), Value::Null);
    }
}
