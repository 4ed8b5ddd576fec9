//! Wording the check's problems share: the kind of a value, and a value outside an `enum`.

use serde_json::Value;

use crate::contract::{CallProblem, Got};

/// "an object", "a list", … for the kind of `value`.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The problem for `value` matching no member of `members`.
pub(crate) fn not_in_enum(
    tool: String,
    argument: String,
    members: &[Value],
    value: &Value,
) -> CallProblem {
    CallProblem::NotInEnum {
        tool,
        argument,
        allowed: members
            .iter()
            .take(10)
            .map(super::deep::clone_value)
            .collect(),
        more: members.len().saturating_sub(10),
        got: Got::of(value),
    }
}
