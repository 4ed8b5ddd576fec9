//! The changes a check makes to what the tool receives (casts and drops), and applying them.

use rustc_hash::{FxHashMap, FxHashSet};
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
///
/// Values are set first, in order; then the removals, gathered per object so that each object
/// loses its members in one pass that keeps the others in the call's order (a removal one at a
/// time either reorders, as `Map::remove` does, or costs a shift per member). Setting first
/// gives what applying the edits in order gives: a set only replaces a value that exists, and a
/// removal only removes an object's member.
pub(crate) fn apply(arguments: &mut Map<String, Value>, edits: Vec<Edit>) {
    let mut removals: FxHashMap<Vec<Step>, FxHashSet<String>> = FxHashMap::default();
    for edit in edits {
        match edit {
            Edit::Set(steps, value) => {
                if let Some(target) = resolve(arguments, &steps) {
                    *target = value;
                }
            }
            Edit::Remove(mut steps) => {
                if let Some(Step::Key(key)) = steps.pop() {
                    removals.entry(steps).or_default().insert(key);
                }
            }
        }
    }
    for (parent, keys) in removals {
        let map = if parent.is_empty() {
            Some(&mut *arguments)
        } else {
            match resolve(arguments, &parent) {
                Some(Value::Object(map)) => Some(map),
                _ => None,
            }
        };
        if let Some(map) = map {
            map.retain(|key, value| {
                if !keys.contains(key) {
                    return true;
                }
                super::deep::drop_value(std::mem::take(value));
                false
            });
        }
    }
}

/// The value at `steps`, if the path resolves.
fn resolve<'a>(arguments: &'a mut Map<String, Value>, steps: &[Step]) -> Option<&'a mut Value> {
    let (Step::Key(first), rest) = steps.split_first()? else {
        return None;
    };
    let mut at = arguments.get_mut(first);
    for step in rest {
        at = match (at, step) {
            (Some(Value::Object(map)), Step::Key(key)) => map.get_mut(key),
            (Some(Value::Array(items)), Step::Index(i)) => items.get_mut(*i),
            _ => None,
        };
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Step {
        Step::Key(k.to_string())
    }

    #[test]
    fn removing_members_keeps_the_others_in_the_call_order() {
        let mut args = json!({"a": 1, "b": 2, "c": 3, "d": {"x": 1, "y": 2, "z": 3}, "e": 5})
            .as_object()
            .cloned()
            .unwrap();
        apply(
            &mut args,
            vec![
                Edit::Remove(vec![key("b")]),
                Edit::Remove(vec![key("d"), key("x")]),
                Edit::Set(vec![key("e")], json!("five")),
                Edit::Remove(vec![key("a")]),
            ],
        );
        let text = serde_json::to_string(&args).unwrap();
        assert_eq!(text, r#"{"c":3,"d":{"y":2,"z":3},"e":"five"}"#);
    }

    #[test]
    fn a_path_that_does_not_resolve_is_ignored() {
        let mut args = json!({"a": [1, {"k": 1}]}).as_object().cloned().unwrap();
        apply(
            &mut args,
            vec![
                Edit::Remove(vec![key("missing"), key("k")]),
                Edit::Set(vec![key("a"), Step::Index(9)], json!(0)),
                Edit::Remove(vec![key("a"), Step::Index(1), key("k")]),
                Edit::Set(vec![key("a"), Step::Index(0)], json!(2)),
            ],
        );
        assert_eq!(Value::Object(args), json!({"a": [2, {}]}));
    }
}
