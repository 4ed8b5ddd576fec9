//! Clones and drops JSON values without recursion. serde_json's own `Clone` and `Drop` recurse
//! once per level, so a value built in code 10,000 levels deep would overflow the stack; the
//! gateway must not, whatever it is given. These helpers decide nothing.

use serde_json::{Map, Value};

/// Drops `value` level by level on the heap instead of the stack.
pub(crate) fn drop_value(value: Value) {
    let mut stack: Vec<Value> = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| stack.pop()) {
        match value {
            Value::Array(items) => stack.extend(items.into_iter().filter(is_container)),
            Value::Object(map) => {
                stack.extend(map.into_iter().map(|(_, v)| v).filter(is_container))
            }
            _ => {}
        }
    }
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(a) if !a.is_empty())
        || matches!(value, Value::Object(m) if !m.is_empty())
}

enum Frame<'a> {
    Array(std::slice::Iter<'a, Value>, Vec<Value>),
    Object(
        serde_json::map::Iter<'a>,
        Map<String, Value>,
        Option<&'a String>,
    ),
}

/// A copy of `value`, built level by level on the heap instead of the stack.
pub(crate) fn clone_value(value: &Value) -> Value {
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut done = open(value, &mut stack);
    loop {
        if let Some(value) = done.take() {
            match stack.last_mut() {
                None => return value,
                Some(Frame::Array(_, out)) => out.push(value),
                Some(Frame::Object(_, out, key)) => {
                    if let Some(key) = key.take() {
                        out.insert(key.clone(), value);
                    }
                }
            }
        }
        let child = match stack.last_mut() {
            Some(Frame::Array(items, _)) => items.next(),
            Some(Frame::Object(entries, _, key)) => entries.next().map(|(k, v)| {
                *key = Some(k);
                v
            }),
            None => unreachable!("a finished value returns above"),
        };
        done = match child {
            Some(child) => open(child, &mut stack),
            None => match stack.pop() {
                Some(Frame::Array(_, out)) => Some(Value::Array(out)),
                Some(Frame::Object(_, out, _)) => Some(Value::Object(out)),
                None => unreachable!("the stack was not empty"),
            },
        };
    }
}

/// Starts copying `value`: scalars and empty containers are copied at once, other containers
/// open a frame whose children are copied next.
fn open<'a>(value: &'a Value, stack: &mut Vec<Frame<'a>>) -> Option<Value> {
    match value {
        Value::Array(items) if !items.is_empty() => {
            stack.push(Frame::Array(items.iter(), Vec::with_capacity(items.len())));
            None
        }
        Value::Object(map) if !map.is_empty() => {
            stack.push(Frame::Object(map.iter(), Map::new(), None));
            None
        }
        other => Some(other.clone()),
    }
}

/// How many levels of lists and objects `value` nests (a scalar is 0).
#[cfg(test)]
pub(crate) fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut value = json!("leaf");
        for i in 0..levels {
            value = if i % 2 == 0 {
                Value::Array(vec![json!(1), value])
            } else {
                let mut map = Map::new();
                map.insert("k".into(), value);
                Value::Object(map)
            };
        }
        value
    }

    #[test]
    fn clones_and_drops_values_nested_deeper_than_the_stack_allows() {
        let deep = nested(100_000);
        let copy = clone_value(&deep);
        assert_eq!(depth(&copy), 100_000);
        drop_value(copy);
        drop_value(deep);
    }

    #[test]
    fn a_clone_equals_the_original() {
        let value = json!({"a": [1, {"b": null, "c": [[], {}]}], "d": "x", "e": 2.5});
        assert_eq!(clone_value(&value), value);
        assert_eq!(clone_value(&json!(3)), json!(3));
    }
}
