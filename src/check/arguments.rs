//! Reads a call's arguments text as JSON, the one way every part of the check reads it: a
//! member named twice and a number a double would round are refused, never chosen or rounded
//! for the model. Decides nothing about what the arguments mean.

use serde_json::Value;

use super::deep;

/// Why a call's arguments were not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unreadable {
    /// Occurs when the arguments are not JSON muster reads: serde_json's reason and where it
    /// stopped (`number out of range at column 10`).
    Json(String),
    /// Occurs when the arguments hold a number no `i64`, `u64` or double holds exactly
    /// (`123456789012345678901234567890`): serde_json would read the nearest double, and the
    /// tool would receive other digits than the model wrote. The number as written.
    LossyNumber(String),
}

/// Reads `text` as one JSON value, refusing an object that names a member twice (serde_json
/// keeps the last value silently, and a model that wrote `{"path": "a", "path": "b"}` must be
/// told, not have one of them chosen for it) and a number a double would round (every digit
/// the model wrote reaches the tool, or the call is refused).
///
/// # Errors
/// [`Unreadable::Json`] with serde_json's reason for text that is not JSON, or one naming the
/// repeated member, with the column where it stands; [`Unreadable::LossyNumber`] naming the
/// first number that would lose digits.
pub(crate) fn parse_arguments(text: &str) -> Result<Value, Unreadable> {
    let value = serde_json::from_str::<Unique>(text)
        .map_err(|err| Unreadable::Json(reason(&err)))?
        .0;
    // Scanned only once the text is known to be JSON, so the scan sees well-formed numbers.
    match super::digits::lossy_number(text) {
        Some(number) => {
            deep::drop_value(value);
            Err(Unreadable::LossyNumber(number.to_string()))
        }
        None => Ok(value),
    }
}

/// A JSON value read with every object's member names distinct.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = serde_json::Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                return Err(serde::de::Error::custom(format!(
                    "member name {} is given twice",
                    Value::String(name)
                )));
            }
            let Unique(value) = map.next_value()?;
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

/// serde_json's reason for `err`, with the place it stopped given as a column of the text when
/// the text is one line, and "recursion limit exceeded" said plainly.
pub(crate) fn reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if err.line() > 0 => &text[..at],
        _ => text.as_str(),
    };
    let message = match message {
        "recursion limit exceeded" => "JSON text nested too deep (more than 128 levels)",
        other => other,
    };
    match err.line() {
        0 => message.to_string(),
        1 => format!("{message} at column {}", err.column()),
        line => format!("{message} at line {line} column {}", err.column()),
    }
}
