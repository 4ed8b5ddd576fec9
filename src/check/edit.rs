//! The changes a check makes to what the tool receives (casts and drops), and applying them.

use serde_json::{Map, Value};

use super::path::Step;

#[derive(Debug, PartialEq)]
pub(crate) enum Edit {
    /// Replace the value at the path (a cast, or the declared enum member).
    Set(Vec<Step>, Value),
    /// Remove the member at the path.
    Remove(Vec<Step>),
}

/// Applies `edits` to `arguments`. Paths come from the same arguments, so each resolves;
/// one that does not is ignored rather than trusted.
pub(crate) fn apply(arguments: &mut Map<String, Value>, edits: Vec<Edit>) {
    for edit in edits {
        let (steps, value) = match edit {
            Edit::Set(steps, value) => (steps, Some(value)),
            Edit::Remove(steps) => (steps, None),
        };
        let Some((Step::Key(first), rest)) = steps.split_first() else {
            continue;
        };
        let Some((last, middle)) = rest.split_last() else {
            match value {
                Some(value) => {
                    if let Some(target) = arguments.get_mut(first) {
                        *target = value;
                    }
                }
                None => {
                    if let Some(old) = arguments.remove(first) {
                        super::deep::drop_value(old);
                    }
                }
            }
            continue;
        };
        let mut at = arguments.get_mut(first);
        for step in middle {
            at = match (at, step) {
                (Some(Value::Object(map)), Step::Key(key)) => map.get_mut(key),
                (Some(Value::Array(items)), Step::Index(i)) => items.get_mut(*i),
                _ => None,
            };
        }
        match (at, last, value) {
            (Some(Value::Object(map)), Step::Key(key), None) => {
                if let Some(old) = map.remove(key) {
                    super::deep::drop_value(old);
                }
            }
            (Some(Value::Object(map)), Step::Key(key), Some(value)) => {
                if let Some(target) = map.get_mut(key) {
                    *target = value;
                }
            }
            (Some(Value::Array(items)), Step::Index(i), Some(value)) => {
                if let Some(target) = items.get_mut(*i) {
                    *target = value;
                }
            }
            _ => {}
        }
    }
}
