//! Applies an MCP tool's narrowing to a call: arguments outside `only` are dropped, and values
//! the policy fixes replace whatever the model wrote. Every drop is noted. It decides nothing
//! about whether the remaining arguments fit the schema; that is the check's job.

use serde_json::{Map, Value};

use super::deep;
use super::offered::OfferedTool;
use crate::contract::{CallNote, CheckNote};

/// Each name in `arguments` the model may not write, in the call's order, with the note its
/// drop makes: a fixed one (the policy sets it) and, when `only` is set, one it does not list.
/// The note names the tool as the call did (`called`: its muster or its provider name).
pub(crate) fn outside(
    arguments: &Map<String, Value>,
    tool: &OfferedTool,
    called: &str,
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
                    tool: called.to_string(),
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

/// Drops from `arguments` each name `drops` ([`outside`] of the same arguments) names, keeping
/// the others in the call's order, and returns the notes. One pass: `drops` is in the
/// arguments' order, so each kept name is passed over once.
pub(crate) fn restrict(
    arguments: &mut Map<String, Value>,
    drops: Vec<(String, CallNote)>,
) -> Vec<CheckNote> {
    let mut next = drops.iter().map(|(name, _)| name.as_str()).peekable();
    arguments.retain(|name, value| {
        if next.peek() != Some(&name.as_str()) {
            return true;
        }
        next.next();
        // What the model wrote outside `only` may be deep; drop it without recursion.
        deep::drop_value(std::mem::take(value));
        false
    });
    drops.into_iter().map(|(_, note)| note.into()).collect()
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
            mcp: None,
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
        let drops = outside(&args, &tool, "mcp.files.search", "c1");
        let notes = restrict(&mut args, drops);
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
        let drops = outside(&args, &tool, "mcp.files.search", "c1");
        let notes = restrict(&mut args, drops);
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
        let drops = outside(&args, &tool, "mcp.files.search", "c1");
        assert!(restrict(&mut args, drops).is_empty());
        assert_eq!(args.len(), 2);
    }

    #[test]
    fn the_kept_arguments_keep_the_call_order() {
        let tool = tool(Some(vec!["a", "c", "e"]), json!({}));
        let mut args = json!({"e": 1, "b": 2, "c": 3, "d": 4, "a": 5})
            .as_object()
            .cloned()
            .unwrap();
        let drops = outside(&args, &tool, "mcp.files.search", "c1");
        restrict(&mut args, drops);
        let keys: Vec<&str> = args.keys().map(String::as_str).collect();
        assert_eq!(keys, ["e", "c", "a"]);
    }

    #[test]
    fn the_drop_note_names_the_tool_as_the_call_did() {
        let tool = tool(Some(vec!["query"]), json!({}));
        let args = json!({"scope": "all"}).as_object().cloned().unwrap();
        let drops = outside(&args, &tool, "mcp__files__search", "c1");
        let CallNote::OutsideOnlyDropped { tool: named, .. } = &drops[0].1 else {
            panic!("{drops:?}");
        };
        assert_eq!(named, "mcp__files__search");
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
            let drops = outside(&args, &t, "mcp.files.search", "c");
            restrict(&mut args, drops);
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
