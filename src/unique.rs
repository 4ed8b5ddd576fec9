//! Reads JSON text as one value, refusing an object that names a member
//! twice: serde_json keeps the last value silently, so `{"model": "a",
//! "model": "b"}` would be read as whichever came last, and a request, a
//! model's arguments or any text muster judges must say one thing. The one
//! rule every reader of such text uses (the check's arguments, `count`'s
//! request). It decides nothing about what the value means.

use serde_json::Value;

/// `text` as one JSON value, every object's member names distinct.
///
/// # Errors
/// serde_json's error for text that is not JSON, and one naming the
/// repeated member (`member name "model" is given twice`) with its place.
pub(crate) fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Unique>(text).map(|u| u.0)
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_member_named_twice_is_refused_at_any_depth() {
        for text in [r#"{"a": 1, "a": 2}"#, r#"[{"x": {"b": 1, "b": 1}}]"#] {
            let err = super::from_str(text).unwrap_err();
            assert!(err.to_string().contains("given twice"), "{err}");
        }
        assert!(super::from_str(r#"{"a": {"a": 1}, "b": [1, 1]}"#).is_ok());
    }
}
