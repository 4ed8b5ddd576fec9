//! Branches charged to the turn's budget. The validator judges a value against every value of
//! an `enum` and every subschema of an `anyOf` or `oneOf` at its place, so one place of many
//! branches under an array of many items is a product no step budget saw. Before a schema is
//! compiled, each place holding such keywords gets muster's keyword [`KEYWORD`] with its branch
//! count; the keyword charges that count ([`super::budget::charge_branches`]) each time a value
//! is judged there, and refuses the value once the turn's branches are spent, which the strict
//! check turns into `check-budget-exceeded`. It decides nothing about whether a value matches.

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

/// The keyword muster adds beside `enum`, `anyOf` and `oneOf`: the branches at that place.
pub(crate) const KEYWORD: &str = "x-muster-branches";

/// The branches of the place `map`: `enum` values plus `anyOf` and `oneOf` subschemas.
fn count(map: &Map<String, Value>) -> u64 {
    ["enum", "anyOf", "oneOf"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_array))
        .map(|a| a.len() as u64)
        .sum()
}

/// Writes [`KEYWORD`] at every place of `schema` with branches (and removes one a server
/// wrote where there are none). Values that are data (`enum`, `const`, `default`, `examples`)
/// are left as they are; member maps are walked by their values. It keeps its own stack.
/// Answers whether any place holds an `anyOf` or `oneOf` ([`super::strict::Checker`]).
pub(crate) fn mark(schema: &mut Value) -> bool {
    let mut alternatives = false;
    let mut todo: Vec<&mut Value> = vec![schema];
    while let Some(value) = todo.pop() {
        match value {
            Value::Array(items) => todo.extend(items.iter_mut()),
            Value::Object(map) => {
                map.remove(KEYWORD);
                alternatives |= map.contains_key("anyOf") || map.contains_key("oneOf");
                let n = count(map);
                if n > 0 {
                    map.insert(KEYWORD.into(), Value::from(n));
                }
                for (key, child) in map.iter_mut() {
                    match key.as_str() {
                        "enum" | "const" | "default" | "examples" | "dependentRequired"
                        | "$vocabulary" | KEYWORD => {}
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" | "dependencies" => {
                            if let Value::Object(members) = child {
                                todo.extend(members.values_mut());
                            }
                        }
                        _ => todo.push(child),
                    }
                }
            }
            _ => {}
        }
    }
    alternatives
}

/// Charges its place's branches for each value judged there.
struct Charge(u64);

impl<'i> Keyword<'i> for Charge {
    fn validate(&self, _: &'i Value) -> Result<(), ValidationError<'i>> {
        if super::budget::charge_branches(self.0) {
            Ok(())
        } else {
            Err(ValidationError::custom(super::pattern::OVER_BUDGET))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.validate(instance).is_ok()
    }
}

/// The keyword for [`KEYWORD`]'s `value` (the factory `jsonschema::options().with_keyword`
/// takes).
pub(crate) fn keyword<'a>(
    _: &'a Map<String, Value>,
    value: &'a Value,
    _: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    Ok(Box::new(Charge(value.as_u64().unwrap_or(0))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn places_with_branches_are_marked_and_data_is_not() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"enum": [1, 2, 3]},
            "b": {"anyOf": [{"type": "string"}, {"enum": [{"enum": [1]}]}], "x-muster-branches": 9},
            "c": {"x-muster-branches": 7}},
            "dependentRequired": {"enum": ["c"]}});
        assert!(mark(&mut schema), "b holds an anyOf");
        assert!(
            !mark(&mut json!({"enum": [{"anyOf": []}]})),
            "data is not a place"
        );
        assert_eq!(schema["properties"]["a"][KEYWORD], 3);
        assert_eq!(schema["properties"]["b"][KEYWORD], 2);
        assert_eq!(schema["properties"]["b"]["anyOf"][1][KEYWORD], 1);
        assert_eq!(
            schema["properties"]["b"]["anyOf"][1]["enum"][0],
            json!({"enum": [1]})
        );
        assert!(schema["properties"]["c"].get(KEYWORD).is_none());
        assert_eq!(schema["dependentRequired"], json!({"enum": ["c"]}));
    }
}
