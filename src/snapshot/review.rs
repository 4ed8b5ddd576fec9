//! What a reviewer is shown of one changed tool ([`ChangeDetails`]): the
//! description word by word ([`words`]), the input schema's and the other
//! members' differing paths with the values there, the safety hints that
//! moved. It decides nothing about whether a change is accepted (the lock)
//! or what kind it is (`lock::change`); it only makes the change visible,
//! with bounded work and output: the word diff stops at its bounds, the
//! path walk keeps its own stack (no recursion on a server's nesting) and
//! lists at most [`MAX_SCHEMA_PATHS`] paths, each value cut to
//! [`MAX_VALUE_CHARS`] characters. [`show`] renders it as lines of text.

use serde_json::{Map, Value};

use super::ListedTool;
use crate::contract::{
    ChangeDetails, HintChange, JsonKind, MAX_SCHEMA_PATHS, MAX_VALUE_CHARS, PathChange, PathOp,
    ShownValue,
};

pub mod show;
mod words;

pub use words::{MAX_DIFF_EDITS, MAX_DIFF_STEPS, WordDiff, word_diff};

/// The four MCP tool annotations that say how safe a call is, each with the
/// value MCP gives a tool that does not declare it, and the value that is
/// the less safe of the two.
pub const HINTS: [(&str, bool, bool); 4] = [
    ("readOnlyHint", false, false),
    ("destructiveHint", true, true),
    ("idempotentHint", false, false),
    ("openWorldHint", true, true),
];

/// What changed between `old` and `new`, two listings of one tool.
pub fn details(old: &ListedTool, new: &ListedTool) -> ChangeDetails {
    let mut details = ChangeDetails::default();
    if old.description != new.description {
        describe(
            &mut details,
            old.description.as_deref().unwrap_or_default(),
            new.description.as_deref().unwrap_or_default(),
        );
    }
    if old.input_schema.canonical() != new.input_schema.canonical() {
        let (paths, more) = differing_paths(&old.input_schema.value(), &new.input_schema.value());
        details.schema_paths = paths;
        details.schema_paths_more = more;
    }
    for (hint, default, _) in HINTS {
        let (before, after) = (hint_of(old, hint, default), hint_of(new, hint, default));
        if before != after {
            details.hints.push(HintChange {
                hint: hint.to_string(),
                before,
                after,
            });
        }
    }
    let (o, n) = (others(old), others(new));
    if o != n {
        let hinted: Vec<String> = details
            .hints
            .iter()
            .map(|h| format!("/annotations/{}", h.hint))
            .collect();
        let (paths, more) = differing_paths_where(&Value::Object(o), &Value::Object(n), |p| {
            !hinted.iter().any(|h| h == p)
        });
        details.members = paths;
        details.members_more = more;
    }
    details
}

/// What a reviewer is shown of a tool new to them: its description, as
/// one added run (shown by its ends when long).
pub fn introduced(new: &ListedTool) -> ChangeDetails {
    let mut details = ChangeDetails::default();
    if let Some(text) = new.description.as_deref().filter(|d| !d.is_empty()) {
        describe(&mut details, "", text);
    }
    details
}

fn describe(details: &mut ChangeDetails, old: &str, new: &str) {
    let diff = word_diff(old, new);
    details.description = diff.spans;
    details.description_more = diff.more;
    details.description_coarse = diff.coarse;
}

/// The members of the tool object besides its name, description and input
/// schema.
fn others(tool: &ListedTool) -> Map<String, Value> {
    let mut members = tool.raw.as_object().cloned().unwrap_or_default();
    for key in ["name", "description", "inputSchema"] {
        members.shift_remove(key);
    }
    members
}

fn hint_of(tool: &ListedTool, hint: &str, default: bool) -> bool {
    tool.raw
        .get("annotations")
        .and_then(|a| a.get(hint))
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// Where `old` and `new` differ, as JSON pointers (RFC 6901): a member or
/// item on one side only, or a value of another kind or content, with the
/// values there. Object members are visited in sorted order, so the list
/// is the same for the same pair. At most [`MAX_SCHEMA_PATHS`] are listed;
/// the second member counts the rest.
pub fn differing_paths(old: &Value, new: &Value) -> (Vec<PathChange>, usize) {
    differing_paths_where(old, new, |_| true)
}

/// [`differing_paths`], leaving out the paths `keep` refuses.
fn differing_paths_where(
    old: &Value,
    new: &Value,
    keep: impl Fn(&str) -> bool,
) -> (Vec<PathChange>, usize) {
    let mut paths = Vec::new();
    let mut more = 0usize;
    let mut stack: Vec<(String, Option<&Value>, Option<&Value>)> =
        vec![(String::new(), Some(old), Some(new))];
    while let Some((path, a, b)) = stack.pop() {
        let mut children: Vec<(String, Option<&Value>, Option<&Value>)> = Vec::new();
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let child = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                    children.push((child, x.get(k), y.get(k)));
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                for i in 0..x.len().max(y.len()) {
                    children.push((format!("{path}/{i}"), x.get(i), y.get(i)));
                }
            }
            (Some(x), Some(y)) if !x.is_object() && !x.is_array() && x == y => {}
            (a, b) => {
                let path = if path.is_empty() { "/".into() } else { path };
                if !keep(&path) {
                } else if paths.len() < MAX_SCHEMA_PATHS {
                    paths.push(PathChange {
                        path,
                        change: match (a, b) {
                            (None, _) => PathOp::Added,
                            (_, None) => PathOp::Removed,
                            _ => PathOp::Changed,
                        },
                        before: a.map(shown_value),
                        after: b.map(shown_value),
                    });
                } else {
                    more += 1;
                }
            }
        }
        // Depth first, in order: push the children reversed. Children are
        // not compared whole here (that would recurse on the server's
        // nesting): equal ones end at their leaves.
        stack.extend(children.into_iter().rev());
    }
    (paths, more)
}

/// `value`'s kind and the beginning of its canonical JSON: written only as
/// far as [`MAX_VALUE_CHARS`], so a large value costs no more than that
/// and a deep one recurses no deeper.
pub fn shown_value(value: &Value) -> ShownValue {
    let mut out = String::new();
    let whole = bounded(value, &mut out);
    let truncated = !whole || out.chars().count() > MAX_VALUE_CHARS;
    if truncated {
        out = out.chars().take(MAX_VALUE_CHARS).collect();
    }
    ShownValue {
        kind: match value {
            Value::Object(_) => JsonKind::Object,
            Value::Array(_) => JsonKind::Array,
            Value::String(_) => JsonKind::String,
            Value::Number(_) => JsonKind::Number,
            Value::Bool(_) => JsonKind::Boolean,
            Value::Null => JsonKind::Null,
        },
        json: out,
        truncated,
    }
}

/// Writes `value`'s canonical JSON into `out` until it holds more than
/// [`MAX_VALUE_CHARS`] bytes; whether it was written whole.
fn bounded(value: &Value, out: &mut String) -> bool {
    if out.len() > MAX_VALUE_CHARS {
        return false;
    }
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !string(key, out) {
                    return false;
                }
                out.push(':');
                if !bounded(&map[key], out) {
                    return false;
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !bounded(item, out) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::String(text) => return string(text, out),
        other => out.push_str(&crate::canon::canonical(other)),
    }
    out.len() <= MAX_VALUE_CHARS
}

/// Writes `text` as a JSON string, at most about [`MAX_VALUE_CHARS`]
/// characters of it; whether whole.
fn string(text: &str, out: &mut String) -> bool {
    let room = (MAX_VALUE_CHARS + 1).saturating_sub(out.len());
    let start: String = text.chars().take(room).collect();
    let whole = start.len() == text.len();
    let written = Value::String(start).to_string();
    if whole {
        out.push_str(&written);
    } else {
        // Without the closing quote: the string goes on.
        out.push_str(&written[..written.len() - 1]);
    }
    whole && out.len() <= MAX_VALUE_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(raw: Value) -> ListedTool {
        super::super::tool_from(raw).expect("a tool")
    }

    #[test]
    fn schema_paths_name_each_difference_in_order_and_are_bounded() {
        let old = json!({"type": "object", "properties": {"path": {"type": "string"}, "a/b": {"type": "string"}}});
        let new = json!({"type": "object", "properties": {"path": {"type": "number", "pattern": ".*"}, "mode": {"type": "string"}}, "additionalProperties": true});
        let (paths, more) = differing_paths(&old, &new);
        let shown: Vec<(&str, PathOp, Option<&str>, Option<&str>)> = paths
            .iter()
            .map(|p| {
                (
                    p.path.as_str(),
                    p.change,
                    p.before.as_ref().map(|v| v.json.as_str()),
                    p.after.as_ref().map(|v| v.json.as_str()),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("/additionalProperties", PathOp::Added, None, Some("true")),
                (
                    "/properties/a~1b",
                    PathOp::Removed,
                    Some(r#"{"type":"string"}"#),
                    None
                ),
                (
                    "/properties/mode",
                    PathOp::Added,
                    None,
                    Some(r#"{"type":"string"}"#)
                ),
                (
                    "/properties/path/pattern",
                    PathOp::Added,
                    None,
                    Some(r#"".*""#)
                ),
                (
                    "/properties/path/type",
                    PathOp::Changed,
                    Some(r#""string""#),
                    Some(r#""number""#)
                ),
            ]
        );
        assert_eq!(paths[0].after.as_ref().unwrap().kind, JsonKind::Boolean);
        assert_eq!(more, 0);
        let wide: serde_json::Map<String, Value> =
            (0..80).map(|i| (format!("p{i:02}"), json!(i))).collect();
        let (paths, more) = differing_paths(&json!({}), &Value::Object(wide));
        assert_eq!((paths.len(), more), (MAX_SCHEMA_PATHS, 30));
    }

    #[test]
    fn a_value_is_shown_by_its_beginning_however_large_or_deep() {
        let long = json!("x".repeat(1 << 20));
        let shown = shown_value(&long);
        assert!(shown.truncated);
        assert_eq!(shown.json.chars().count(), MAX_VALUE_CHARS);
        assert!(shown.json.starts_with("\"xxx"));
        let mut deep = json!(1);
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        let shown = shown_value(&deep);
        assert!(shown.truncated);
        assert_eq!(shown.kind, JsonKind::Array);
        assert!(shown.json.chars().all(|c| c == '['));
        std::mem::forget(deep);
        let small = shown_value(&json!({"b": [1, "two"], "a": null}));
        assert_eq!(small.json, r#"{"a":null,"b":[1,"two"]}"#);
        assert!(!small.truncated);
    }

    #[test]
    fn a_deep_schema_is_walked_without_recursion() {
        let mut old = json!(1);
        let mut new = json!(2);
        for _ in 0..10_000 {
            old = Value::Object([("x".to_string(), old)].into_iter().collect());
            new = Value::Object([("x".to_string(), new)].into_iter().collect());
        }
        let (paths, _) = differing_paths(&old, &new);
        assert_eq!(paths.len(), 1);
        assert!(paths[0].path.ends_with("/x"));
        // Dropping 10,000 nested objects recurses in serde_json; leak them
        // rather than test serde_json's drop.
        std::mem::forget((old, new));
    }

    #[test]
    fn hints_and_other_members_are_told_apart() {
        let old = tool(json!({
            "name": "t", "description": "Reads.", "inputSchema": {"type": "object"},
            "title": "Read", "annotations": {"readOnlyHint": true, "title": "Read"},
        }));
        let new = tool(json!({
            "name": "t", "description": "Reads.", "inputSchema": {"type": "object"},
            "title": "Read it", "annotations": {"readOnlyHint": false, "title": "Read"},
            "execution": {"taskSupport": "optional"},
        }));
        let d = details(&old, &new);
        assert!(d.description.is_empty() && d.schema_paths.is_empty());
        assert_eq!(
            d.hints,
            [HintChange {
                hint: "readOnlyHint".into(),
                before: true,
                after: false
            }]
        );
        // The hint is not listed again among the members.
        let members: Vec<(&str, PathOp)> = d
            .members
            .iter()
            .map(|p| (p.path.as_str(), p.change))
            .collect();
        assert_eq!(
            members,
            [("/execution", PathOp::Added), ("/title", PathOp::Changed)]
        );
        // A new tool is shown by its description.
        let d = introduced(&new);
        assert_eq!(d.description.len(), 1);
        assert_eq!(d.description[0].text, "Reads.");
    }
}
