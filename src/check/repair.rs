//! Tidies arguments a model wrapped in a JSON string: the whole argument object sent as a string
//! holding an object, and a list or object argument sent as a string holding a list or object.
//! Each is replaced by what the string holds and noted. It must not guess: a string that is not
//! exactly such JSON is left as it is for the check to judge, and a string where the schema
//! admits text is never touched. Repairing twice changes nothing more than repairing once.

use serde_json::Value;

use crate::contract::{CallNote, CheckNote, Held};

use super::arguments::Unreadable;
use super::compiled::Compiled;
use super::deep;

/// Unwraps JSON-in-a-string in `arguments` (the call's whole arguments) as declared by the
/// tool's `schema`. Returns the repaired arguments when anything changed (`None` when the call
/// is fine as sent, so nothing is copied) and one note per repair, naming the call `call_id`.
pub(crate) fn repair(
    arguments: &Value,
    schema: &Compiled,
    call_id: &str,
) -> (Option<Value>, Vec<CheckNote>) {
    let mut notes = Vec::new();
    let mut owned = None;
    if let Value::String(text) = arguments
        && let Some(held @ Value::Object(_)) = parse(text)
    {
        owned = Some(held);
        notes.push(
            CallNote::ArgumentsUnwrapped {
                call: call_id.to_string(),
            }
            .into(),
        );
    }
    let current = owned.as_ref().unwrap_or(arguments);
    let Some(map) = current.as_object() else {
        return (owned, notes);
    };
    let mut fixes: Vec<(String, Value)> = Vec::new();
    // Text the schema admits is an answer in its own right, not a wrapper: only members
    // declared as a list or object and not as text are looked at.
    for name in schema.wrappable() {
        if let Some(Value::String(text)) = map.get(name)
            && let Some(held @ (Value::Array(_) | Value::Object(_))) = parse(text)
        {
            fixes.push((name.clone(), held));
        }
    }
    if fixes.is_empty() {
        return (owned, notes);
    }
    let mut value = owned.unwrap_or_else(|| deep::clone_value(arguments));
    if let Value::Object(map) = &mut value {
        for (name, held) in fixes {
            notes.push(
                CallNote::ArgumentUnwrapped {
                    call: call_id.to_string(),
                    argument: super::path::render_name(&name).into_owned(),
                    held: if held.is_array() {
                        Held::List
                    } else {
                        Held::Object
                    },
                }
                .into(),
            );
            map.insert(name, held);
        }
    }
    (Some(value), notes)
}

/// The JSON `text` holds, when it is exactly one JSON value (surrounding blanks allowed).
fn parse(text: &str) -> Option<Value> {
    // Only text that opens a list or object can be a wrapper; skip the parser for the rest.
    if !may_wrap(text) {
        return None;
    }
    super::arguments::parse_arguments(text).ok()
}

/// What the whole arguments sent as the string `text` are, when the repair did not read them
/// as an object: for text that opens a list or object but cannot be read, why (serde_json's
/// reason and where it stopped, or the number a double would round), so the model is not told
/// that valid-looking JSON text is "not a JSON object" without saying why.
pub(crate) fn unread(text: &str) -> Option<Unreadable> {
    if !may_wrap(text) {
        return None;
    }
    super::arguments::parse_arguments(text).err()
}

/// Whether `text` opens a list or object, so the repair would try to read it as JSON.
pub(crate) fn may_wrap(text: &str) -> bool {
    let trimmed = text.trim_start();
    trimmed.starts_with('{') || trimmed.starts_with('[')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Repairs `arguments` in place, as the gateway's copy of them would be.
    fn repair(arguments: &mut Value, schema: &Value, call_id: &str) -> Vec<String> {
        let (owned, notes) = super::repair(arguments, &Compiled::new(schema), call_id);
        if let Some(owned) = owned {
            *arguments = owned;
        }
        // Each note's sentence is its Display.
        notes
            .into_iter()
            .inspect(|n| assert_eq!(n.message, n.note.to_string()))
            .map(|n| n.message)
            .collect()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "to": {"type": "array", "items": {"type": "string"}},
            "filter": {"type": "object"},
            "body": {"type": "string"},
            "either": {"type": ["string", "array"]}
        }})
    }

    #[test]
    fn arguments_sent_as_a_string_holding_an_object_are_read_as_the_object() {
        let mut args = json!("{\"body\": \"hi\", \"to\": \"[\\\"a@x\\\"]\"}");
        let notes = repair(&mut args, &schema(), "c1");
        assert_eq!(args, json!({"body": "hi", "to": ["a@x"]}));
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("call \"c1\""));
        assert!(notes[1].contains("argument \"to\""));
    }

    #[test]
    fn a_string_holding_a_list_is_left_as_the_arguments() {
        let mut args = json!("[1, 2]");
        assert!(repair(&mut args, &schema(), "c1").is_empty());
        assert_eq!(args, json!("[1, 2]"));
    }

    #[test]
    fn a_list_parameter_sent_as_json_text_is_unwrapped_and_plain_text_is_not() {
        let mut args = json!({"to": "[\"a@x\", \"b@x\"]", "filter": "{\"since\": 3}"});
        assert_eq!(repair(&mut args, &schema(), "c1").len(), 2);
        assert_eq!(args, json!({"to": ["a@x", "b@x"], "filter": {"since": 3}}));

        let mut args = json!({"to": "a@x", "filter": "{since: 3}"});
        assert!(repair(&mut args, &schema(), "c1").is_empty());
        assert_eq!(args, json!({"to": "a@x", "filter": "{since: 3}"}));
    }

    #[test]
    fn text_parameters_and_parameters_that_admit_text_keep_their_json_text() {
        let mut args = json!({"body": "[1]", "either": "[1]"});
        assert!(repair(&mut args, &schema(), "c1").is_empty());
        assert_eq!(args, json!({"body": "[1]", "either": "[1]"}));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z\\[\\]{}\":, 0-9]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}|to|filter|body", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn wrapped(value: Value) -> Value {
        Value::String(value.to_string())
    }

    proptest! {
        #[test]
        fn repair_is_idempotent(args in arb_json(), wrap in any::<bool>(), wrap_to in any::<bool>()) {
            let mut args = args;
            if wrap_to
                && let Value::Object(map) = &mut args
                && let Some(to) = map.get_mut("to")
            {
                *to = wrapped(to.take());
            }
            if wrap {
                args = wrapped(args);
            }
            let schema = schema();
            repair(&mut args, &schema, "c");
            let once = args.clone();
            let notes = repair(&mut args, &schema, "c");
            prop_assert!(notes.is_empty());
            prop_assert_eq!(once, args);
        }
    }
}
