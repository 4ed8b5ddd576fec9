//! Applies an MCP tool's narrowing to a call: arguments outside `only` are dropped, and values
//! the policy fixes replace whatever the model wrote. Every drop is noted. It decides nothing
//! about whether the remaining arguments fit the schema; that is the check's job.

use serde_json::{Map, Value};

use super::deep;
use super::offered::OfferedTool;
use crate::contract::{CallNote, CheckNote};

/// Each name in `arguments` the model may not write, with the note its drop makes: a fixed one
/// (the policy sets it) and, when `only` is set, one it does not list.
pub(crate) fn outside(
    arguments: &Map<String, Value>,
    tool: &OfferedTool,
    call_id: &str,
) -> Vec<(String, CallNote)> {
    let mut drops = Vec::new();
    if tool.fixed.is_empty() && tool.only.is_none() {
        return drops;
    }
    for name in arguments.keys().filter(|name| !keeps(tool, name)) {
        if let Some(fixed) = tool.fixed.get(name) {
            drops.push((
                name.clone(),
                CallNote::FixedArgumentDropped {
                    call: call_id.to_string(),
                    argument: super::path::render_name(name).into_owned(),
                    value: deep::clone_value(fixed),
                },
            ));
        } else if let Some(only) = tool.only.as_ref().filter(|o| !o.contains(name)) {
            drops.push((
                name.clone(),
                CallNote::OutsideOnlyDropped {
                    call: call_id.to_string(),
                    argument: super::path::render_name(name).into_owned(),
                    tool: tool.name.clone(),
                    only: only.clone(),
                },
            ));
        }
    }
    drops
}

/// Whether the narrowing keeps the model-written name `name`: not a fixed one, and listed in
/// `only` when `only` is set. The one statement of the rule; [`outside`] and the check's quick
/// pass both use it.
pub(crate) fn keeps(tool: &OfferedTool, name: &str) -> bool {
    !tool.fixed.contains_key(name)
        && tool
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
}

/// Drops from `arguments` each name [`outside`] names, and returns the notes.
pub(crate) fn restrict(
    arguments: &mut Map<String, Value>,
    tool: &OfferedTool,
    call_id: &str,
) -> Vec<CheckNote> {
    outside(arguments, tool, call_id)
        .into_iter()
        .map(|(name, note)| {
            // What the model wrote outside `only` may be deep; drop it without recursion.
            if let Some(value) = arguments.shift_remove(&name) {
                deep::drop_value(value);
            }
            note.into()
        })
        .collect()
}

/// Sets every fixed value on the arguments a tool will receive. Fixed names are forwarded even
/// where `only` does not list them: the policy wrote them, not the model.
pub(crate) fn set_fixed(arguments: &mut Map<String, Value>, tool: &OfferedTool) {
    for (name, value) in &tool.fixed {
        arguments.insert(name.clone(), deep::clone_value(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::offered::Source;
    use crate::contract::UnknownArguments;
    use proptest::prelude::*;
    use serde_json::json;

    fn tool(only: Option<Vec<&str>>, fixed: Value) -> OfferedTool {
        OfferedTool {
            name: "mcp.files.search".into(),
            provider_name: None,
            source: Source::Mcp,
            input_schema: json!({"type": "object"}),
            fixed: fixed.as_object().cloned().unwrap_or_default(),
            only: only.map(|o| o.into_iter().map(String::from).collect()),
            unknown_arguments: UnknownArguments::Refuse,
            coerce: true,
            check: crate::contract::CheckMode::Lenient,
            parameters: None,
            variadic: false,
        }
    }

    #[test]
    fn an_argument_outside_only_is_dropped_and_one_inside_is_kept() {
        let tool = tool(Some(vec!["query"]), json!({}));
        let mut args = json!({"query": "x", "scope": "all"})
            .as_object()
            .cloned()
            .unwrap();
        let notes = restrict(&mut args, &tool, "c1");
        assert_eq!(Value::Object(args), json!({"query": "x"}));
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].note,
            CallNote::OutsideOnlyDropped {
                call: "c1".into(),
                argument: "scope".into(),
                tool: "mcp.files.search".into(),
                only: vec!["query".into()],
            }
        );
        assert!(notes[0].message.contains("takes only \"query\""));
    }

    #[test]
    fn a_model_written_fixed_value_is_replaced_and_the_fixed_value_is_forwarded_outside_only() {
        let tool = tool(Some(vec!["query"]), json!({"scope": "team-handbook"}));
        let mut args = json!({"query": "x", "scope": "all"})
            .as_object()
            .cloned()
            .unwrap();
        let notes = restrict(&mut args, &tool, "c1");
        assert_eq!(
            notes[0].note,
            CallNote::FixedArgumentDropped {
                call: "c1".into(),
                argument: "scope".into(),
                value: json!("team-handbook"),
            }
        );
        assert!(
            notes[0]
                .message
                .contains("policy sets it to \"team-handbook\""),
            "{notes:?}"
        );
        set_fixed(&mut args, &tool);
        assert_eq!(
            Value::Object(args),
            json!({"query": "x", "scope": "team-handbook"})
        );
    }

    #[test]
    fn without_only_every_argument_is_kept() {
        let tool = tool(None, json!({}));
        let mut args = json!({"query": "x", "scope": "all"})
            .as_object()
            .cloned()
            .unwrap();
        assert!(restrict(&mut args, &tool, "c1").is_empty());
        assert_eq!(args.len(), 2);
    }

    proptest! {
        #[test]
        fn nothing_outside_only_gets_through(
            names in prop::collection::btree_set("[a-e]", 0..5),
            only in prop::collection::vec("[a-e]", 0..4),
            fixed in prop::collection::btree_set("[a-e]", 0..2),
        ) {
            let fixed_map: Map<String, Value> = fixed.iter().map(|f| (f.clone(), json!(1))).collect();
            let mut t = tool(Some(only.iter().map(String::as_str).collect()), Value::Object(fixed_map));
            t.coerce = false;
            let mut args: Map<String, Value> = names.iter().map(|n| (n.clone(), json!("v"))).collect();
            restrict(&mut args, &t, "c");
            set_fixed(&mut args, &t);
            for name in args.keys() {
                prop_assert!(only.contains(name) || fixed.contains(name), "{name} got through");
                if fixed.contains(name) {
                    prop_assert_eq!(&args[name], &json!(1));
                }
            }
        }
    }
}
