//! Input schemas as muster holds them for a run: JSON text, not a tree.
//!
//! A parsed `serde_json::Value` costs about eight times its compact text
//! (every object is a hash table, every key and scalar its own allocation),
//! and a catalog of 100,000 tools with a schema each held 120 MB of trees
//! that, for all but the few tools a plan shows, nothing ever read again.
//! A [`Schema`] keeps two compact texts instead: as written (members in the
//! order the server or policy wrote them; what is shown, counted and
//! checked) and canonical (keys sorted; what definitions hash and schemas
//! compare by). What a reader needs of the tree it parses when it needs it;
//! what every reader asks (is it a usable input schema?) is judged once,
//! when the schema is read.
//!
//! This module decides nothing about tools: it holds schemas and answers
//! for them.

use crate::canon;
use crate::contract::SchemaProblem;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::sync::Arc;

/// One input schema, cheap to clone (clones share the text).
#[derive(Clone)]
pub struct Schema(Arc<Held>);

struct Held {
    /// Compact JSON, members in written order.
    written: Box<str>,
    /// Compact JSON with object keys sorted ([`canon::write_value`]);
    /// `None` when that is `written`.
    canonical: Option<Box<str>>,
    /// What keeps it from being an input schema
    /// ([`canon::input_schema_problem`]).
    problem: Option<SchemaProblem>,
    /// Whether its `required`, when it is a list, lists text only.
    required_text_only: bool,
}

impl Held {
    /// `value`, whose compact text is `written`, and what is judged of it.
    fn new(written: String, value: &Value) -> Self {
        let canonical = canon::canonical(value);
        Self {
            canonical: (canonical != written).then(|| canonical.into_boxed_str()),
            written: written.into_boxed_str(),
            problem: canon::input_schema_problem(value),
            required_text_only: match value.get("required") {
                Some(Value::Array(names)) => names.iter().all(Value::is_string),
                _ => true,
            },
        }
    }
}

impl Schema {
    /// The schema `value` is.
    pub fn new(value: &Value) -> Self {
        Self(Arc::new(Held::new(written_text(value), value)))
    }

    /// `{"type": "object", "properties": {}}`: the schema of a tool that
    /// takes no arguments.
    pub fn no_arguments() -> Self {
        Self::new(&serde_json::json!({"type": "object", "properties": {}}))
    }

    /// Its compact JSON text, members in the order they were written.
    pub fn text(&self) -> &str {
        &self.0.written
    }

    /// Its canonical JSON text: object keys sorted, no whitespace.
    pub fn canonical(&self) -> &str {
        self.0.canonical.as_deref().unwrap_or(&self.0.written)
    }

    /// Its tree, parsed anew: a reader that needs the tree owns it for as
    /// long as it needs it, and no tree outlives its use.
    pub fn value(&self) -> Value {
        // The text was written from a tree, so it parses; its depth is
        // what that tree's reader allowed, which may exceed serde_json's
        // default limit of 128.
        let mut reader = serde_json::Deserializer::from_str(&self.0.written);
        reader.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut reader)
            .expect("a schema's text is JSON serde_json wrote")
    }

    /// SHA-256 of its canonical text ([`canon::digest`] of its tree).
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.canonical().as_bytes()).into()
    }

    /// What keeps it from being a tool's input schema, if anything
    /// ([`canon::input_schema_problem`]), judged when it was read.
    pub fn problem(&self) -> Option<&SchemaProblem> {
        self.0.problem.as_ref()
    }

    /// Whether its `required`, when it is a list, lists text only: a
    /// schema narrowing removes nothing from is offered as listed without
    /// being parsed ([`crate::narrow::narrow_tool`]).
    pub fn required_text_only(&self) -> bool {
        self.0.required_text_only
    }

    /// Whether it is a JSON object.
    pub fn is_object(&self) -> bool {
        self.0.written.starts_with('{')
    }

    /// A word for its JSON kind, for messages ([`canon::kind_of`]).
    pub fn kind(&self) -> &'static str {
        match self.0.written.as_bytes().first() {
            Some(b'{') => "an object",
            Some(b'[') => "a list",
            Some(b'"') => "text",
            Some(b't' | b'f') => "a boolean",
            Some(b'n') => "null",
            _ => "a number",
        }
    }

    /// Whether `self` and `other` share one text (so are equal without
    /// comparing).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Whether the caller may leave out the member `name` of the object schema `object` although
/// its `required` lists it: the member's `properties` entry declares a `default`. zod 4's JSON
/// Schema output lists a member with `.default()` as required (it describes the parsed value,
/// which always has it), and the server fills the default when the call leaves it out
/// (issue 21: 17 tools on four servers, Playwright's `browser_console_messages` among them).
/// The check does not refuse such a call, and narrowing does not keep such a tool away when
/// `only` leaves the member out.
pub fn filled_by_default(object: &serde_json::Map<String, Value>, name: &str) -> bool {
    object
        .get("properties")
        .and_then(|p| p.get(name))
        .and_then(Value::as_object)
        .is_some_and(|member| member.contains_key("default"))
}

/// Two schemas are equal when their trees are: the same members, in any
/// order (as `Value`s compare).
impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.canonical() == other.canonical()
    }
}

impl Eq for Schema {}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Schema").field(&self.text()).finish()
    }
}

impl From<Value> for Schema {
    fn from(value: Value) -> Self {
        Self::new(&value)
    }
}

impl From<&Value> for Schema {
    fn from(value: &Value) -> Self {
        Self::new(value)
    }
}

/// Written as its tree, members in written order, in whatever layout the
/// serializer gives the rest of the document.
impl Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

/// Read as any JSON value.
impl<'de> serde::Deserialize<'de> for Schema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Self::new(&value))
    }
}

/// The compact text of `value`, members in written order.
fn written_text(value: &Value) -> String {
    // A `Value` has text keys only, so writing it cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// A schema read and written but not yet held: all that holding it
/// takes, worked out wherever it was read (a thread parsing part of a
/// large tools file, say), so the one thread that holds schemas only looks
/// it up.
pub(crate) struct Prepared {
    /// SHA-256 of the written text: what tells schemas apart.
    key: [u8; 32],
    held: Held,
}

impl Prepared {
    pub(crate) fn new(value: &Value) -> Self {
        let written = written_text(value);
        let key = Sha256::digest(written.as_bytes()).into();
        Self {
            key,
            held: Held::new(written, value),
        }
    }

    /// What keeps it from being a tool's input schema, if anything.
    pub(crate) fn problem(&self) -> Option<&SchemaProblem> {
        self.held.problem.as_ref()
    }
}

/// Schemas written alike, held once. A large policy or listing often
/// repeats a schema (every tool without arguments has
/// `{"type": "object", "properties": {}}`; generated servers repeat whole
/// shapes). Two schemas are alike when their written text is the same:
/// they are told apart by its SHA-256, so sharing never changes what is
/// shown.
#[derive(Debug, Default)]
pub(crate) struct Shared(rustc_hash::FxHashMap<[u8; 32], Schema>);

impl Shared {
    /// The schema `value` is, held once for every value written alike.
    pub(crate) fn share(&mut self, value: Value) -> Schema {
        let written = written_text(&value);
        let key: [u8; 32] = Sha256::digest(written.as_bytes()).into();
        self.0
            .entry(key)
            .or_insert_with(|| Schema(Arc::new(Held::new(written, &value))))
            .clone()
    }

    /// The schema `prepared` is, held once for every one written alike.
    pub(crate) fn hold(&mut self, prepared: Prepared) -> Schema {
        let Prepared { key, held } = prepared;
        self.0
            .entry(key)
            .or_insert_with(|| Schema(Arc::new(held)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_written_alike_are_shared_and_order_tells_them_apart() {
        let mut shared = Shared::default();
        let a = shared.share(json!({"type": "object", "properties": {"a": {}, "b": {}}}));
        let again = shared.share(json!({"type": "object", "properties": {"a": {}, "b": {}}}));
        let reordered = shared.share(json!({"type": "object", "properties": {"b": {}, "a": {}}}));
        assert!(a.ptr_eq(&again));
        assert!(
            !a.ptr_eq(&reordered),
            "members in another order are shown otherwise"
        );
        assert_eq!(
            reordered.text(),
            r#"{"type":"object","properties":{"b":{},"a":{}}}"#
        );
        assert_eq!(a, reordered, "the trees are equal");
        assert_eq!(a.canonical(), reordered.canonical());
        let held = shared.hold(Prepared::new(
            &json!({"type": "object", "properties": {"a": {}, "b": {}}}),
        ));
        assert!(
            held.ptr_eq(&a),
            "prepared elsewhere, held as the one written alike"
        );
        let fresh = shared.hold(Prepared::new(&json!({"properties": {}})));
        assert_eq!(fresh.text(), r#"{"properties":{}}"#);
        assert_eq!(fresh.canonical(), r#"{"properties":{}}"#);
    }

    #[test]
    fn the_tree_comes_back_member_for_member() {
        let text = r#"{"z":{"b":[1,[],{}],"a":{"y":null,"x":"s\n"}},"a":[{"q":1.5,"p":-2}],"m":{},"big":18446744073709551615}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let schema = Schema::new(&value);
        assert_eq!(schema.text(), text);
        assert_eq!(schema.value(), value);
        assert_eq!(serde_json::to_string(&schema.value()).unwrap(), text);
        assert_eq!(schema.canonical(), canon::canonical(&value));
        assert_eq!(serde_json::to_string(&schema).unwrap(), text);
    }

    #[test]
    fn a_required_list_naming_anything_but_text_is_told() {
        for (value, text_only) in [
            (json!({"required": ["a", "b"]}), true),
            (json!({"required": []}), true),
            (json!({"required": "a"}), true),
            (json!({"required": ["a", 1]}), false),
            (json!({"required": [null]}), false),
        ] {
            assert_eq!(
                Schema::new(&value).required_text_only(),
                text_only,
                "{value}"
            );
        }
    }

    #[test]
    fn a_tree_deeper_than_the_parsers_default_limit_comes_back() {
        let mut value = json!({});
        for _ in 0..300 {
            value = json!({ "a": value });
        }
        let schema = Schema::new(&value);
        assert_eq!(schema.value(), value);
        assert!(matches!(
            schema.problem(),
            Some(SchemaProblem::TooDeep { depth: 301, .. })
        ));
    }

    #[test]
    fn kind_and_problem_are_judged_once_as_the_canon_judges_them() {
        for value in [
            json!({"type": "object"}),
            json!({"type": "string"}),
            json!({"properties": 1}),
            json!([1]),
            json!("x"),
            json!(true),
            json!(false),
            json!(null),
            json!(-1.5),
            json!(7),
        ] {
            let schema = Schema::new(&value);
            assert_eq!(schema.kind(), canon::kind_of(&value), "{value}");
            assert_eq!(schema.is_object(), value.is_object(), "{value}");
            assert_eq!(
                schema.problem(),
                canon::input_schema_problem(&value).as_ref(),
                "{value}"
            );
            assert!(schema.required_text_only(), "{value}");
        }
    }
}
