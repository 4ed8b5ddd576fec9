//! Reading a listing's text one tool at a time. `{"tools": [...]}` is
//! parsed with serde visitors that turn each tool into a [`ListedTool`] as
//! soon as it is parsed, so the listing is never held as one JSON tree: a
//! 100,000-tool snapshot used to hold every tool, schema and all, before the
//! first schema could be shared with its alikes.
//!
//! What is read must be exactly what parsing the text into a
//! `serde_json::Value` and taking out its `tools` array reads, errors
//! included: the same parser sees every byte (so a syntax error, a
//! recursion limit or trailing text is reported at the same line and
//! column), a repeated member keeps its last value, and every member other
//! than `tools` is still parsed as a `Value`, then dropped.
//!
//! [`ListedTool`]: super::ListedTool

use std::fmt;

use serde::Deserialize as _;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Read, read_tool};
use crate::schema::Shared;

/// The listing's tools, each read as it was parsed, in listed order; `None`
/// when the text is JSON but not an object with a `tools` array.
///
/// # Errors
/// serde_json's error, with its line and column, when the text is not JSON.
pub(super) fn read_listing(
    text: &str,
    schemas: &mut Shared,
) -> Result<Option<Vec<Read>>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Listing(schemas).deserialize(&mut de)?;
    de.end()?;
    Ok(read)
}

/// The key serde_json's `Value` treats as a raw value when it comes first in
/// an object: the member's string is then parsed as the object's JSON.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// The visitor methods for JSON scalars, none of which is a listing or a
/// list of tools: `Value` accepts each, so they are read and dropped.
macro_rules! scalars_hold_no_tools {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// The whole listing: an object whose last `tools` member is read tool by
/// tool.
struct Listing<'s>(&'s mut Shared);

impl<'de> DeserializeSeed<'de> for Listing<'_> {
    type Value = Option<Vec<Read>>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Listing<'_> {
    type Value = Option<Vec<Read>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key: Option<String> = map.next_key()?;
        if key.as_deref() == Some(RAW_VALUE_KEY) {
            // As `Value` reads it: the member's text is the listing, and
            // the rest of the object is left to the parser to refuse.
            let text = map.next_value_seed(RawText)?;
            let listing: Value = serde_json::from_str(&text).map_err(A::Error::custom)?;
            return Ok(whole(listing, self.0));
        }
        let mut tools = None;
        while let Some(k) = key {
            if k == "tools" {
                tools = map.next_value_seed(Tools(&mut *self.0))?;
            } else {
                map.next_value::<Value>()?;
            }
            key = map.next_key()?;
        }
        Ok(tools)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(None)
    }

    scalars_hold_no_tools!();
}

/// The tools of a listing already parsed whole.
fn whole(mut listing: Value, schemas: &mut Shared) -> Option<Vec<Read>> {
    let Some(Value::Array(tools)) = listing.get_mut("tools") else {
        return None;
    };
    Some(
        std::mem::take(tools)
            .into_iter()
            .enumerate()
            .map(|(i, raw)| read_tool(i, raw, schemas))
            .collect(),
    )
}

/// A `tools` member: a list read one tool at a time, or (anything else)
/// parsed as a `Value` and dropped.
struct Tools<'s>(&'s mut Shared);

impl<'de> DeserializeSeed<'de> for Tools<'_> {
    type Value = Option<Vec<Read>>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tools<'_> {
    type Value = Option<Vec<Read>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut read = Vec::new();
        while let Some(raw) = seq.next_element::<Value>()? {
            read.push(read_tool(read.len(), raw, self.0));
        }
        Ok(Some(read))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map))?;
        Ok(None)
    }

    scalars_hold_no_tools!();
}

/// A string member's text, read as `Value` reads a raw value's.
struct RawText;

impl<'de> DeserializeSeed<'de> for RawText {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<String, D::Error> {
        de.deserialize_str(self)
    }
}

impl Visitor<'_> for RawText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw value")
    }

    fn visit_str<E>(self, text: &str) -> Result<String, E> {
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How a listing was read before streaming: parsed whole into a
    /// `Value`, then its `tools` array taken out.
    fn whole_tree(text: &str) -> Result<Option<Vec<Read>>, serde_json::Error> {
        let listing: Value = serde_json::from_str(text)?;
        Ok(whole(listing, &mut Shared::default()))
    }

    /// Streaming reads every text exactly as parsing it whole did: the same
    /// tools, the same problems, the same errors at the same line and column.
    #[test]
    fn reads_every_listing_as_the_whole_tree_did() {
        let deep = format!("{{\"tools\": [{}1{}]}}", "[".repeat(200), "]".repeat(200));
        let cases = [
            r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}"#,
            r#"{"tools": [{"name": "a", "inputSchema": {}}, {"name": "a", "inputSchema": {}}]}"#,
            r#"{"other": {"x": [1, 2]}, "tools": [{"name": "b"}, 3, {"inputSchema": {}}], "z": null}"#,
            r#"{"tools": [{"name": "a", "inputSchema": {}}], "tools": "no"}"#,
            r#"{"tools": "no", "tools": [{"name": "c", "inputSchema": {}, "description": 1}]}"#,
            r#"{"tools": {"name": "a"}}"#,
            r#"{"tools": [{"name": "a", "inputSchema": {}}, oops]}"#,
            r#"{"tools": [{"name": 1}], "x": [}"#,
            r#"{"tools": []} trailing"#,
            r#"{"tools": [], }"#,
            r#"{"tools": [{"name": "a", "name": "b", "inputSchema": {}}]}"#,
            r#"{"tools": [{"name": "\ud800", "inputSchema": {}}]}"#,
            r#"{"$serde_json::private::RawValue": "{\"tools\": [{\"name\": \"r\"}]}"}"#,
            r#"{"$serde_json::private::RawValue": "{\"tools\": [}"}"#,
            r#"{"$serde_json::private::RawValue": 3}"#,
            r#"{"$serde_json::private::RawValue": "{\"tools\": []}", "more": 1}"#,
            r#"{"tools": {"$serde_json::private::RawValue": "[1"}}"#,
            r#"{"x": {"$serde_json::private::RawValue": "{}"}, "tools": []}"#,
            "[]",
            "[{\"tools\": []}]",
            "\"tools\"",
            "3.5",
            "-1",
            "true",
            "null",
            "{}",
            "",
            "{\"tools\": [1e400]}",
            &deep,
        ];
        for text in cases {
            let streamed = read_listing(text, &mut Shared::default());
            let whole = whole_tree(text);
            assert_eq!(
                format!("{streamed:?}"),
                format!("{whole:?}"),
                "listing {text:?}"
            );
        }
    }

    #[test]
    fn each_tool_is_read_in_order_with_its_problem() {
        let read = read_listing(
            r#"{"tools": [{"name": "a", "inputSchema": {}}, 7, {"name": "b"}]}"#,
            &mut Shared::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(read.len(), 3);
        assert!(matches!(&read[0], Ok((t, None)) if t.name == "a"));
        assert_eq!(
            read[1].as_ref().unwrap_err(),
            "tool #2 is a number, not an object"
        );
        assert!(matches!(&read[2], Ok((t, Some(p))) if p == "tool `b` has no inputSchema"));
    }
}
