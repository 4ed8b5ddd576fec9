//! What kind of change a tool's new definition is against the locked one:
//! the parts of a definition the lock keeps ([`Record`]), and the rules
//! that compare two of them ([`changes`]): a description, the input schema
//! widened or narrowed, a safety hint weakened, the output schema, a
//! cosmetic field. It decides kinds only; the lock decides what is
//! accepted and the planner what is cut.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canon::{canonical, labelled_hex, sha256_hex};
pub use crate::contract::LockChange;
use crate::snapshot::ListedTool;

/// The members of a tool object besides `name`, `description` and
/// `inputSchema` that the lock's hash covers: what a model reads or a host
/// acts on. Others (`icons`, unknown members) are not hashed.
pub const HASHED_MEMBERS: [&str; 4] = ["title", "annotations", "outputSchema", "_meta"];

pub use crate::snapshot::HINTS;

/// Keywords that annotate a schema without changing what it accepts.
const ANNOTATION_KEYWORDS: [&str; 7] = [
    "description",
    "title",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// What the lock keeps of one definition: the hash of the whole, and
/// enough of its parts to tell what kind of change a new definition is.
/// Written in the lock as one table per tool (`docs/policy.md`, `mcp.lock`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Record {
    /// [`crate::lock::definition_hash`].
    pub hash: String,
    /// `sha256:` of the description text; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `sha256:` of the canonical input schema.
    pub input_schema: String,
    /// The canonical input schema without the keywords that only annotate
    /// it (`description`, `title`, `examples`, ...): what it accepts, kept
    /// whole so a later listing can be told wider or narrower.
    pub accepts: String,
    /// `sha256:` of the canonical output schema; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// The safety hints the tool declares (`readOnlyHint`, ...), as
    /// declared; absent ones are not written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hints: BTreeMap<String, bool>,
    /// `sha256:` of the rest the model or a host reads: `title`,
    /// `annotations` other than the four hints, `_meta`; absent when the
    /// tool has none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosmetic: Option<String>,
    /// The definition reviewed, as hashed: the canonical JSON whose
    /// SHA-256 is `hash` ([`crate::lock::definition_text`]), kept so a later
    /// change can be shown against it (lock version 3; absent in entries an
    /// older muster wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed: Option<String>,
}

impl Record {
    /// The record of `tool` as listed now.
    pub fn of(tool: &ListedTool) -> Record {
        let member = |key: &str| tool.raw.as_object().and_then(|o| o.get(key));
        let annotations = member("annotations").and_then(Value::as_object);
        let hints: BTreeMap<String, bool> = HINTS
            .iter()
            .filter_map(|(hint, _, _)| {
                let value = annotations?.get(*hint)?.as_bool()?;
                Some((hint.to_string(), value))
            })
            .collect();
        let mut rest = Map::new();
        if let Some(title) = member("title") {
            rest.insert("title".into(), title.clone());
        }
        if let Some(annotations) = member("annotations") {
            let mut others = annotations.clone();
            if let Value::Object(o) = &mut others {
                // Only hints read as booleans are kept apart; anything else
                // under their names counts as cosmetic, so it is hashed.
                o.retain(|k, v| !(hints.contains_key(k) && v.is_boolean()));
            }
            if others != Value::Object(Map::new()) {
                rest.insert("annotations".into(), others);
            }
        }
        if let Some(meta) = member("_meta") {
            rest.insert("_meta".into(), meta.clone());
        }
        let schema = &tool.input_schema;
        let accepts = if schema.problem().is_some() {
            // Not an object, or too deep to walk: kept as it is.
            schema.canonical().to_string()
        } else {
            canonical(&acceptance(&schema.value(), 0))
        };
        Record {
            hash: super::definition_hash(tool),
            description: tool.description.as_ref().map(|d| sha256_hex(d.as_bytes())),
            input_schema: labelled_hex(&schema.digest()),
            accepts,
            output_schema: member("outputSchema").map(|s| sha256_hex(canonical(s).as_bytes())),
            hints,
            cosmetic: (!rest.is_empty())
                .then(|| sha256_hex(canonical(&Value::Object(rest)).as_bytes())),
            reviewed: None,
        }
    }

    /// [`Record::of`] with the definition kept, as the lock writes it.
    pub fn reviewed(tool: &ListedTool) -> Record {
        Record {
            reviewed: Some(super::definition_text(tool)),
            ..Record::of(tool)
        }
    }

    /// The definition the lock kept, read back as a listed tool; `None`
    /// when the entry keeps none.
    pub fn reviewed_tool(&self) -> Option<ListedTool> {
        kept_tool(self.reviewed.as_deref()?)
    }

    /// Whether `other` is the same definition under whatever name: every
    /// part but the hash and the text kept (which cover the name) alike.
    pub fn same_but_name(&self, other: &Record) -> bool {
        self.description == other.description
            && self.input_schema == other.input_schema
            && self.accepts == other.accepts
            && self.output_schema == other.output_schema
            && self.hints == other.hints
            && self.cosmetic == other.cosmetic
    }
}

/// A definition's text as the lock keeps it ([`crate::lock::definition_text`]),
/// read back as a listed tool.
pub fn kept_tool(text: &str) -> Option<ListedTool> {
    crate::snapshot::tool_from(serde_json::from_str(text).ok()?)
}

/// The kinds of change from `old` to `new` (both of the same tool name),
/// in [`LockChange`]'s order; empty when the hashes are equal.
pub fn changes(old: &Record, new: &Record) -> Vec<LockChange> {
    if old.hash == new.hash {
        return Vec::new();
    }
    let mut kinds = Vec::new();
    if old.description != new.description
        || (old.input_schema != new.input_schema && old.accepts == new.accepts)
    {
        kinds.push(LockChange::Description);
    }
    if old.accepts != new.accepts {
        let (old_schema, new_schema) = (
            serde_json::from_str::<Value>(&old.accepts).ok(),
            serde_json::from_str::<Value>(&new.accepts).ok(),
        );
        let way = match (old_schema, new_schema) {
            (Some(o), Some(n)) => direction(&o, &n, 0),
            _ => Way::BOTH,
        };
        kinds.push(match (way.wider, way.narrower) {
            (true, false) => LockChange::SchemaWidened,
            (false, true) => LockChange::SchemaNarrowed,
            _ => LockChange::SchemaChanged,
        });
    }
    if old.output_schema != new.output_schema {
        kinds.push(LockChange::OutputSchema);
    }
    let (weaker, stronger) = hint_moves(&old.hints, &new.hints);
    if weaker {
        kinds.push(LockChange::SafetyHintWeakened);
    }
    if stronger {
        kinds.push(LockChange::SafetyHintStrengthened);
    }
    if old.cosmetic != new.cosmetic {
        kinds.push(LockChange::Cosmetic);
    }
    if kinds.is_empty() {
        // A hint declared at its default value, or left out where it was
        // declared at its default: nothing a host reads differs, but the
        // definition does.
        kinds.push(LockChange::Cosmetic);
    }
    kinds
}

/// Whether some hint moved to its less safe value, and whether some moved
/// to its safer one, each hint read at MCP's default when not declared.
fn hint_moves(old: &BTreeMap<String, bool>, new: &BTreeMap<String, bool>) -> (bool, bool) {
    let mut weaker = false;
    let mut stronger = false;
    for (hint, default, unsafe_value) in HINTS {
        let o = old.get(hint).copied().unwrap_or(default);
        let n = new.get(hint).copied().unwrap_or(default);
        if o != n {
            if n == unsafe_value {
                weaker = true;
            } else {
                stronger = true;
            }
        }
    }
    (weaker, stronger)
}

/// How deep [`acceptance`] and [`direction`] walk; schemas deeper than
/// [`crate::canon::MAX_SCHEMA_DEPTH`] are never walked.
const MAX_WALK: usize = crate::canon::MAX_SCHEMA_DEPTH;

/// Keywords whose value is a map of name → schema.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a schema.
const SCHEMA_ONE: [&str; 10] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "additionalItems",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// `schema` without the keywords that only annotate it, at every level a
/// schema sits (not inside `properties`' names, `enum` or `const` values).
fn acceptance(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_WALK {
        return schema.clone();
    }
    let mut out = Map::new();
    for (key, value) in map {
        if ANNOTATION_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        let kept = match value {
            Value::Object(members) if SCHEMA_MAPS.contains(&key.as_str()) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), acceptance(v, depth + 1)))
                    .collect(),
            ),
            Value::Array(items) if SCHEMA_LISTS.contains(&key.as_str()) || key == "items" => {
                Value::Array(items.iter().map(|v| acceptance(v, depth + 1)).collect())
            }
            v if SCHEMA_ONE.contains(&key.as_str()) => acceptance(v, depth + 1),
            v => v.clone(),
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

/// Which way a schema moved: `wider` when the new one accepts something the
/// old refused, `narrower` when it refuses something the old accepted.
/// Both when the change goes both ways or cannot be told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Way {
    wider: bool,
    narrower: bool,
}

impl Way {
    const SAME: Way = Way {
        wider: false,
        narrower: false,
    };
    const WIDER: Way = Way {
        wider: true,
        narrower: false,
    };
    const NARROWER: Way = Way {
        wider: false,
        narrower: true,
    };
    const BOTH: Way = Way {
        wider: true,
        narrower: true,
    };

    fn and(self, other: Way) -> Way {
        Way {
            wider: self.wider || other.wider,
            narrower: self.narrower || other.narrower,
        }
    }

    fn reversed(self) -> Way {
        Way {
            wider: self.narrower,
            narrower: self.wider,
        }
    }
}

/// Keywords that set a lower bound: a larger value is narrower.
const LOWER: [&str; 6] = [
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
];
/// Keywords that set an upper bound: a smaller value is narrower.
const UPPER: [&str; 6] = [
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];
/// Keywords that do not constrain what is accepted.
const NEUTRAL: [&str; 3] = ["default", "$schema", "$id"];

/// How `new` stands to `old` (both acceptance-only schemas): a keyword by
/// keyword comparison that is sure of the common moves (a property or a
/// `required` entry added or dropped, a type, an enum value, a bound, a
/// keyword added or removed) and answers both ways for what it cannot tell.
fn direction(old: &Value, new: &Value, depth: usize) -> Way {
    if old == new {
        return Way::SAME;
    }
    if depth > MAX_WALK {
        return Way::BOTH;
    }
    // `true` / `{}` accept everything, `false` nothing.
    let accepts_all = |v: &Value| v == &Value::Bool(true) || v == &Value::Object(Map::new());
    match (old, new) {
        (o, _) if accepts_all(o) => return Way::NARROWER,
        (_, n) if accepts_all(n) => return Way::WIDER,
        (Value::Bool(false), _) => return Way::WIDER,
        (_, Value::Bool(false)) => return Way::NARROWER,
        _ => {}
    }
    let (Value::Object(o), Value::Object(n)) = (old, new) else {
        return Way::BOTH;
    };
    let mut way = Way::SAME;
    let keys: std::collections::BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    for key in keys {
        let k = key.as_str();
        let (a, b) = (o.get(k), n.get(k));
        if a == b || NEUTRAL.contains(&k) {
            continue;
        }
        let step = match k {
            "type" => types(a, b),
            // Absent is none: each entry added narrows.
            "required" | "allOf" => {
                let none = Value::Array(Vec::new());
                sets(a.or(Some(&none)), b.or(Some(&none))).reversed()
            }
            "enum" => sets(a, b),
            "const" => match (a, b) {
                (Some(_), None) => Way::WIDER,
                (None, Some(_)) => Way::NARROWER,
                _ => Way::BOTH,
            },
            "properties" => properties(o, n, depth),
            "additionalProperties" | "items" | "propertyNames" | "contains" => match (a, b) {
                (Some(x), Some(y)) => direction(x, y, depth + 1),
                (None, Some(y)) => direction(&Value::Bool(true), y, depth + 1),
                (Some(x), None) => direction(x, &Value::Bool(true), depth + 1),
                (None, None) => Way::SAME,
            },
            "anyOf" | "oneOf" => sets(a, b),
            k if LOWER.contains(&k) => bound(a, b, true),
            k if UPPER.contains(&k) => bound(a, b, false),
            // Any other keyword constrains: added narrows, removed widens,
            // changed cannot be told.
            _ => match (a, b) {
                (None, Some(_)) => Way::NARROWER,
                (Some(_), None) => Way::WIDER,
                _ => Way::BOTH,
            },
        };
        way = way.and(step);
        if way == Way::BOTH {
            break;
        }
    }
    way
}

/// `properties` compared: a property in both by its schema; one added is
/// narrower where the old schema took any value under that name and wider
/// where it refused the name (`additionalProperties: false`); one removed
/// the other way round.
fn properties(o: &Map<String, Value>, n: &Map<String, Value>, depth: usize) -> Way {
    let empty = Map::new();
    let props = |m: &Map<String, Value>| -> Map<String, Value> {
        m.get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let closed =
        |m: &Map<String, Value>| m.get("additionalProperties") == Some(&Value::Bool(false));
    let (op, np) = (props(o), props(n));
    let mut way = Way::SAME;
    for (name, schema) in &np {
        way = way.and(match op.get(name) {
            Some(old) => direction(old, schema, depth + 1),
            None if closed(o) => Way::WIDER,
            None => direction(&Value::Bool(true), schema, depth + 1),
        });
    }
    for (name, schema) in &op {
        if !np.contains_key(name) {
            way = way.and(if closed(n) {
                Way::NARROWER
            } else {
                direction(schema, &Value::Bool(true), depth + 1)
            });
        }
    }
    way
}

/// `type` compared as sets of JSON types (absent: every type; `integer`
/// within `number`).
fn types(a: Option<&Value>, b: Option<&Value>) -> Way {
    fn set(v: Option<&Value>) -> Option<Vec<&str>> {
        let mut out: Vec<&str> = match v? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        if out.contains(&"number") {
            out.push("integer");
        }
        Some(out)
    }
    match (set(a), set(b)) {
        (None, None) => Way::SAME,
        (None, Some(_)) => Way::NARROWER,
        (Some(_), None) => Way::WIDER,
        (Some(x), Some(y)) => {
            let wider = y.iter().any(|t| !x.contains(t));
            let narrower = x.iter().any(|t| !y.contains(t));
            Way { wider, narrower }
        }
    }
}

/// Two lists compared as sets: the new one holding more is wider (for
/// `enum`, `anyOf`), fewer narrower; absent is the widest.
fn sets(a: Option<&Value>, b: Option<&Value>) -> Way {
    match (a, b) {
        (Some(Value::Array(x)), Some(Value::Array(y))) => Way {
            wider: y.iter().any(|v| !x.contains(v)),
            narrower: x.iter().any(|v| !y.contains(v)),
        },
        (Some(_), None) => Way::WIDER,
        (None, Some(_)) => Way::NARROWER,
        _ => Way::BOTH,
    }
}

/// A bound compared: a lower bound raised (an upper one lowered) is
/// narrower, the other way wider; a bound added is narrower, one removed
/// wider.
fn bound(a: Option<&Value>, b: Option<&Value>, lower: bool) -> Way {
    match (a, b) {
        (None, Some(_)) => Way::NARROWER,
        (Some(_), None) => Way::WIDER,
        _ => match (a.and_then(Value::as_f64), b.and_then(Value::as_f64)) {
            (Some(x), Some(y)) if x == y => Way::SAME,
            (Some(x), Some(y)) if (y > x) == lower => Way::NARROWER,
            (Some(_), Some(_)) => Way::WIDER,
            _ => Way::BOTH,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn way(old: Value, new: Value) -> (bool, bool) {
        let w = direction(&acceptance(&old, 0), &acceptance(&new, 0), 0);
        (w.wider, w.narrower)
    }

    const WIDER: (bool, bool) = (true, false);
    const NARROWER: (bool, bool) = (false, true);
    const BOTH: (bool, bool) = (true, true);

    #[test]
    fn schema_moves_are_told_wider_or_narrower() {
        let base =
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        let cases = [
            // A required argument added narrows; dropped widens.
            (
                json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q", "n"]}),
                NARROWER,
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                WIDER,
            ),
            // A type widened to a union, then narrowed by an enum.
            (
                json!({"type": "object", "properties": {"q": {"type": ["string", "null"]}}, "required": ["q"]}),
                WIDER,
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "string", "enum": ["a"]}}, "required": ["q"]}),
                NARROWER,
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "string", "maxLength": 10}}, "required": ["q"]}),
                NARROWER,
            ),
            // A type swapped: both ways.
            (
                json!({"type": "object", "properties": {"q": {"type": "number"}}, "required": ["q"]}),
                BOTH,
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false}),
                NARROWER,
            ),
        ];
        for (new, expected) in cases {
            assert_eq!(way(base.clone(), new.clone()), expected, "{new}");
        }
        // Only texts changed: nothing accepted differs.
        let reworded = json!({"type": "object", "description": "x", "properties": {"q": {"type": "string", "description": "the query"}}, "required": ["q"]});
        assert_eq!(acceptance(&reworded, 0), base);
        // A property called `description` is a property, not a keyword.
        let named = json!({"type": "object", "properties": {"description": {"type": "string"}}});
        assert_eq!(acceptance(&named, 0), named);
    }

    #[test]
    fn hints_weaken_toward_the_unsafe_value_read_at_mcp_defaults() {
        let map = |pairs: &[(&str, bool)]| -> BTreeMap<String, bool> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        // Read-only to not: weakened.
        assert_eq!(
            hint_moves(&map(&[("readOnlyHint", true)]), &map(&[])),
            (true, false)
        );
        // destructiveHint false then left out: MCP's default is true.
        assert_eq!(
            hint_moves(&map(&[("destructiveHint", false)]), &map(&[])),
            (true, false)
        );
        assert_eq!(
            hint_moves(&map(&[]), &map(&[("readOnlyHint", true)])),
            (false, true)
        );
        // Declaring a default changes nothing a host reads.
        assert_eq!(
            hint_moves(&map(&[]), &map(&[("openWorldHint", true)])),
            (false, false)
        );
    }
}
