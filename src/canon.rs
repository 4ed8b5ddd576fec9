//! Canonical JSON and hashes over it: object keys sorted, no whitespace,
//! so a definition hashes the same whatever order its keys were written in.

use crate::contract::SchemaProblem;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where canonical text goes: a string, or straight into a hash.
pub(crate) trait Sink {
    fn put(&mut self, text: &str);
}

impl Sink for String {
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }
}

/// Hashes canonical text as it is written, without holding it.
pub(crate) struct HashSink(Sha256);

impl HashSink {
    pub(crate) fn new() -> Self {
        Self(Sha256::new())
    }

    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

impl Sink for HashSink {
    fn put(&mut self, text: &str) {
        self.0.update(text.as_bytes());
    }
}

/// Appends the canonical text of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut String) {
    write_value(value, out);
}

/// Writes the canonical text of `value` into `out`: keys sorted, no
/// whitespace, strings and numbers exactly as serde_json writes them.
pub(crate) fn write_value(value: &Value, out: &mut impl Sink) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.put("{");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_str(key, out);
                out.put(":");
                write_value(&map[key], out);
            }
            out.put("}");
        }
        Value::Array(items) => {
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_value(item, out);
            }
            out.put("]");
        }
        Value::String(text) => write_str(text, out),
        Value::Null => out.put("null"),
        Value::Bool(true) => out.put("true"),
        Value::Bool(false) => out.put("false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.put(itoa::Buffer::new().format(i));
            } else if let Some(u) = n.as_u64() {
                out.put(itoa::Buffer::new().format(u));
            } else {
                out.put(&n.to_string());
            }
        }
    }
}

/// Writes `text` as a JSON string, escaped exactly as serde_json escapes it.
pub(crate) fn write_str(text: &str, out: &mut impl Sink) {
    // serde_json escapes only quotes, backslashes and control characters.
    if text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.put(&Value::String(text.to_string()).to_string());
    } else {
        out.put("\"");
        out.put(text);
        out.put("\"");
    }
}

/// The canonical text of `value`.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// SHA-256 of the canonical text of `value`.
pub fn digest(value: &Value) -> [u8; 32] {
    let mut sink = HashSink::new();
    write_value(value, &mut sink);
    sink.finish()
}

/// `sha256:<hex>` of raw bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    labelled_hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The 32 bytes in 64 lowercase hex digits, if `text` is that.
pub fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// `sha256:<hex>` of a digest already computed.
pub fn labelled_hex(digest: &[u8]) -> String {
    format!("sha256:{}", hex(digest))
}

/// The digest in a `sha256:<64 lowercase hex>` string, if it is one.
pub fn parse_labelled_hex(text: &str) -> Option<[u8; 32]> {
    parse_hex(text.strip_prefix("sha256:")?)
}

/// Schemas nested deeper than this are refused: the plan JSON that carries
/// them must stay readable by JSON parsers with a recursion limit (serde_json
/// stops at 128, and the plan adds a few levels around each schema).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// How deeply `value` nests (a scalar is 0, `[]` and `{}` are 1), without
/// recursion.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// A word for the JSON kind of `value`, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What keeps `schema` from being a tool's input schema, if anything: the
/// one rule for configured tools, the catalog (which cuts a discovered tool
/// as `invalid-schema`) and the check. The shape of
/// [`schema_shape_problem`], and at most [`MAX_SCHEMA_DEPTH`] levels.
pub fn input_schema_problem(schema: &Value) -> Option<SchemaProblem> {
    schema_shape_problem(schema).or_else(|| {
        let depth = depth(schema);
        (depth > MAX_SCHEMA_DEPTH).then_some(SchemaProblem::TooDeep {
            depth,
            max: MAX_SCHEMA_DEPTH,
        })
    })
}

/// What keeps `schema` from describing tool arguments, if anything: it must
/// be a JSON object whose `type`, when given, is `"object"` and whose
/// `properties`, when given, is an object.
pub fn schema_shape_problem(schema: &Value) -> Option<SchemaProblem> {
    let Value::Object(map) = schema else {
        return Some(SchemaProblem::NotAnObject {
            found: kind_of(schema).to_string(),
        });
    };
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Some(SchemaProblem::NotObjectType {
                found: other.to_string(),
            });
        }
    }
    map.get("properties")
        .is_some_and(|p| !p.is_object())
        .then_some(SchemaProblem::PropertiesNotObject)
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_text() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,"x"],"c":null}}"#).unwrap();
        let b = json!({"a": {"c": null, "d": [1, "x"]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&a), r#"{"a":{"c":null,"d":[1,"x"]},"b":1}"#);
    }

    /// The canonical text as it was first written (serde_json writes every
    /// key and scalar): the streaming writer must match it byte for byte.
    fn reference(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    reference(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }

    #[test]
    fn streaming_writer_matches_serde_json_text() {
        let value = json!({
            "q\"uote": "back\\slash \u{7f} \u{1} tab\t é ✓ \u{202e}",
            "nums": [0, -1, 1.5, 1e30, -0.0, u64::MAX, i64::MIN, 2.5e-8, 123456789.0],
            "nested": {"z": [], "a": {}, "m": [null, true, false, ""]},
            "": "empty key"
        });
        let mut expected = String::new();
        reference(&value, &mut expected);
        assert_eq!(canonical(&value), expected);
        let hashed: [u8; 32] = Sha256::digest(expected.as_bytes()).into();
        assert_eq!(digest(&value), hashed);
    }
}
