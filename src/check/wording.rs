//! Wording the check's problems share: a value outside an `enum`, for the walk and strict
//! checking alike.

use serde_json::Value;

use crate::contract::{CallProblem, Got};

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
