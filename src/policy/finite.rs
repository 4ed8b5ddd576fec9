//! A JSON value written in TOML (a configured tool's inline `input_schema`), read with every
//! place that holds `nan` or `inf` noted. TOML has both; JSON has neither, and serde_json
//! reads them as `null`, which would change a schema silently (a `maximum = inf` becoming
//! `maximum = null`). This module only reads and notes; the tool's validation refuses a value
//! with any such place, naming it.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// A JSON value read from TOML, and the places in it (JSON pointers) that held a number JSON
/// cannot hold, with the number.
#[derive(Debug, Default)]
pub struct TomlJson {
    /// The value; a `nan` or `inf` is `null` in it.
    pub value: Value,
    /// Each place that held `nan` or `inf` (a JSON pointer, `""` for the value itself) and
    /// what it held, in the order written.
    pub non_finite: Vec<(String, f64)>,
}

impl<'de> de::Deserialize<'de> for TomlJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut non_finite = Vec::new();
        let value = Seed {
            path: String::new(),
            non_finite: &mut non_finite,
        }
        .deserialize(deserializer)?;
        Ok(Self { value, non_finite })
    }
}

/// Reads one value at `path`.
struct Seed<'a> {
    path: String,
    non_finite: &'a mut Vec<(String, f64)>,
}

impl Seed<'_> {
    fn below(&mut self, step: &str) -> Seed<'_> {
        let step = step.replace('~', "~0").replace('/', "~1");
        Seed {
            path: format!("{}/{step}", self.path),
            non_finite: self.non_finite,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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
        match serde_json::Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => {
                self.non_finite.push((self.path, v));
                Ok(Value::Null)
            }
        }
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
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let index = items.len().to_string();
            match seq.next_element_seed(self.below(&index))? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.below(&key))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Doc {
        s: TomlJson,
    }

    #[test]
    fn nan_and_inf_are_noted_at_their_place_and_finite_numbers_are_read() {
        let doc: Doc = toml::from_str(
            "[s]\ntype = \"object\"\nmaximum = 1.5\n[s.properties.\"a/b\"]\nmaximum = inf\nenum = [1, -inf, nan]\n",
        )
        .unwrap();
        assert_eq!(doc.s.value["maximum"], 1.5);
        assert_eq!(doc.s.value["properties"]["a/b"]["maximum"], Value::Null);
        let places: Vec<&str> = doc.s.non_finite.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            places,
            [
                "/properties/a~1b/maximum",
                "/properties/a~1b/enum/1",
                "/properties/a~1b/enum/2"
            ]
        );
        let doc: Doc = toml::from_str("s = { type = \"object\" }\n").unwrap();
        assert!(doc.s.non_finite.is_empty());
    }
}
