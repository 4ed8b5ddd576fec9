//! Provider acceptance: whether OpenAI (Chat Completions, Responses),
//! Anthropic or Gemini would take a request's functions as muster sends
//! them, and in strict mode if asked. Each limit is one constant here with
//! its source in `docs/providers.md`; the check judges the functions
//! [`super::shape::sent`] lists and never changes them.

use serde_json::{Map, Value};

use super::shape::{Format, Offer, Tool, sent};
pub use crate::contract::{AcceptCode, Fix, Violation};

/// The longest function description OpenAI takes, in characters (Chat
/// Completions and Responses alike).
pub const OPENAI_MAX_DESCRIPTION: usize = 1024;
/// Strict tools Anthropic takes in one request.
pub const ANTHROPIC_MAX_STRICT_TOOLS: usize = 20;
/// Optional parameters across one request's strict tools, for Anthropic.
pub const ANTHROPIC_MAX_OPTIONAL: usize = 24;
/// Parameters with a union type across one request's strict tools, for
/// Anthropic.
pub const ANTHROPIC_MAX_UNIONS: usize = 16;
/// The longest function name Gemini takes.
pub const GEMINI_MAX_NAME: usize = 64;

/// The keywords Gemini's `parameters` (an OpenAPI 3.0 schema subset)
/// takes; any other is refused as an unknown field.
const GEMINI_KEYWORDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Keywords that only annotate a schema: dropping them is safe.
const ANNOTATIONS: [&str; 4] = ["$schema", "$id", "$comment", "examples"];

/// Keywords OpenAI's strict mode refuses.
const OPENAI_STRICT_REFUSED: [&str; 12] = [
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
];

/// Every violation of `format`'s rules in the functions a request sends
/// for `offer`, in sent order, then the request-wide limits. `strict`
/// judges the functions as if sent with strict mode on (OpenAI's
/// `strict: true`, Anthropic's `strict: true`); Gemini has no strict mode.
pub fn check(format: Format, offer: &Offer<'_>, strict: bool) -> Vec<Violation> {
    let tools = sent(format, offer);
    let mut out = Vec::new();
    let violation = |code: AcceptCode, tool: Option<&str>| Violation {
        code,
        format: format.name().to_string(),
        strict,
        tool: tool.map(str::to_string),
        path: None,
        keyword: None,
        found: None,
        limit: None,
        fix: None,
    };
    let (mut optional, mut unions) = (0usize, 0usize);
    for tool in &tools {
        let schema = tool.input_schema.value();
        match format {
            Format::Openai | Format::OpenaiResponses => {
                let length = tool.description.chars().count();
                if length > OPENAI_MAX_DESCRIPTION {
                    out.push(Violation {
                        found: Some(length as u64),
                        limit: Some(OPENAI_MAX_DESCRIPTION as u64),
                        ..violation(AcceptCode::DescriptionTooLong, Some(tool.name))
                    });
                }
                if strict && tool.input_schema.problem().is_none() {
                    openai_strict(&schema, String::new(), 0, &mut |code, path, keyword| {
                        out.push(Violation {
                            path: Some(path),
                            keyword: Some(keyword),
                            ..violation(code, Some(tool.name))
                        })
                    });
                }
            }
            Format::Anthropic => {
                if strict && tool.input_schema.problem().is_none() {
                    let (o, u) = anthropic_counts(&schema, 0);
                    optional += o;
                    unions += u;
                }
            }
            Format::Gemini => {
                if !gemini_name(tool.name) {
                    out.push(Violation {
                        limit: Some(GEMINI_MAX_NAME as u64),
                        ..violation(AcceptCode::NameInvalid, Some(tool.name))
                    });
                }
                if tool.input_schema.problem().is_none() {
                    gemini_schema(
                        &schema,
                        String::new(),
                        0,
                        &mut |code, path, keyword, fix| {
                            out.push(Violation {
                                path: Some(path),
                                keyword,
                                fix,
                                ..violation(code, Some(tool.name))
                            })
                        },
                    );
                }
            }
        }
    }
    if format == Format::Anthropic && strict {
        for (code, found, limit) in [
            (
                AcceptCode::StrictTooManyTools,
                tools.len(),
                ANTHROPIC_MAX_STRICT_TOOLS,
            ),
            (
                AcceptCode::StrictTooManyOptional,
                optional,
                ANTHROPIC_MAX_OPTIONAL,
            ),
            (
                AcceptCode::StrictTooManyUnions,
                unions,
                ANTHROPIC_MAX_UNIONS,
            ),
        ] {
            if found > limit {
                out.push(Violation {
                    found: Some(found as u64),
                    limit: Some(limit as u64),
                    ..violation(code, None)
                });
            }
        }
    }
    out
}

/// Gemini's name rule: 1 to 64 characters from `a-z A-Z 0-9 _ . : -`,
/// starting with a letter or `_`.
pub fn gemini_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= GEMINI_MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// The JSON pointer of `key` under `path`.
fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Schemas nested under `schema`'s keywords, with their pointers: the
/// places a subschema sits (`properties/*`, `items`, `anyOf/*`, ...).
fn subschemas<'v>(map: &'v Map<String, Value>, path: &str) -> Vec<(String, &'v Value)> {
    let mut out = Vec::new();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(m)) => {
                let base = child(path, key);
                out.extend(m.iter().map(|(k, v)| (child(&base, k), v)));
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                let base = child(path, key);
                out.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{base}/{i}"), v)),
                );
            }
            ("items" | "additionalProperties" | "not" | "if" | "then" | "else", v)
                if v.is_object() =>
            {
                out.push((child(path, key), v));
            }
            _ => {}
        }
    }
    out
}

type Report<'r> = dyn FnMut(AcceptCode, String, Option<String>, Option<Fix>) + 'r;

/// Every keyword of `schema` outside Gemini's subset, and every type list.
fn gemini_schema(schema: &Value, path: String, depth: usize, report: &mut Report<'_>) {
    let Value::Object(map) = schema else {
        return;
    };
    if depth > crate::canon::MAX_SCHEMA_DEPTH {
        return;
    }
    for (key, value) in map {
        if key == "type" {
            if let Value::Array(types) = value {
                let nulls = types.iter().filter(|t| *t == "null").count();
                let fix = (types.len() == 2 && nulls == 1).then_some(Fix::Nullable);
                report(AcceptCode::TypeList, path.clone(), Some(key.clone()), fix);
            }
            continue;
        }
        if GEMINI_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        let fix = if ANNOTATIONS.contains(&key.as_str()) {
            Some(Fix::DropKeyword)
        } else if key == "const" {
            Some(Fix::ConstAsEnum)
        } else {
            None
        };
        report(
            AcceptCode::KeywordUnsupported,
            path.clone(),
            Some(key.clone()),
            fix,
        );
    }
    for (p, sub) in subschemas(map, &path) {
        // Gemini reads only `properties`, `items` and `anyOf`; a keyword
        // under one it refuses is not looked at.
        let kept = ["/properties/", "/items", "/anyOf/"]
            .iter()
            .any(|k| p[path.len()..].starts_with(k));
        if kept {
            gemini_schema(sub, p, depth + 1, report);
        }
    }
}

/// Every object of `schema` that OpenAI strict mode refuses: a property not
/// in `required`, `additionalProperties` not `false`, a refused keyword.
fn openai_strict(
    schema: &Value,
    path: String,
    depth: usize,
    report: &mut dyn FnMut(AcceptCode, String, String),
) {
    let Value::Object(map) = schema else {
        return;
    };
    if depth > crate::canon::MAX_SCHEMA_DEPTH {
        return;
    }
    for key in map.keys() {
        if OPENAI_STRICT_REFUSED.contains(&key.as_str()) {
            report(AcceptCode::KeywordUnsupported, path.clone(), key.clone());
        }
    }
    let is_object =
        map.get("type") == Some(&Value::String("object".into())) || map.contains_key("properties");
    if is_object {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            report(
                AcceptCode::StrictOpenObject,
                path.clone(),
                "additionalProperties".into(),
            );
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(Value::Object(props)) = map.get("properties") {
            for name in props.keys() {
                if !required.contains(&name.as_str()) {
                    report(
                        AcceptCode::StrictOptionalProperty,
                        child(&path, "properties"),
                        name.clone(),
                    );
                }
            }
        }
    }
    for (p, sub) in subschemas(map, &path) {
        openai_strict(sub, p, depth + 1, report);
    }
}

/// Optional parameters and union-typed parameters in `schema`, counted
/// through nested objects and array items, as Anthropic's strict grammar
/// counts them.
fn anthropic_counts(schema: &Value, depth: usize) -> (usize, usize) {
    let Value::Object(map) = schema else {
        return (0, 0);
    };
    if depth > crate::canon::MAX_SCHEMA_DEPTH {
        return (0, 0);
    }
    let (mut optional, mut unions) = (0, 0);
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, prop) in props {
            if !required.contains(&name.as_str()) {
                optional += 1;
            }
            let union = prop.get("anyOf").is_some()
                || prop.get("oneOf").is_some()
                || prop.get("type").is_some_and(Value::is_array);
            if union {
                unions += 1;
            }
            let (o, u) = anthropic_counts(prop, depth + 1);
            optional += o;
            unions += u;
        }
    }
    if let Some(items) = map.get("items") {
        let (o, u) = anthropic_counts(items, depth + 1);
        optional += o;
        unions += u;
    }
    (optional, unions)
}

/// [`check`] for one function alone: what `format` refuses in `tool`.
pub fn check_tool(format: Format, tool: Tool<'_>, strict: bool) -> Vec<Violation> {
    let offer = Offer {
        offered: vec![tool],
        ..Offer::default()
    };
    check(format, &offer, strict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use serde_json::json;

    /// (code, path, keyword, fix) of each violation.
    type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);

    fn codes(v: &[Violation]) -> Vec<Row<'_>> {
        v.iter()
            .map(|v| {
                (
                    v.code.as_str(),
                    v.path.as_deref(),
                    v.keyword.as_deref(),
                    v.fix.map(Fix::as_str),
                )
            })
            .collect()
    }

    /// Issue 21 item 5: 36 of 509 real descriptions were over OpenAI's
    /// 1,024 characters, and nothing said so before the provider refused.
    #[test]
    fn openai_refuses_a_description_over_1024_characters() {
        let schema = Schema::new(&json!({"type": "object"}));
        let long = "é".repeat(1025);
        for format in [Format::Openai, Format::OpenaiResponses] {
            let tool = |description| Tool {
                name: "t",
                description,
                input_schema: &schema,
            };
            let v = check_tool(format, tool(&long), false);
            assert_eq!(codes(&v), [("description-too-long", None, None, None)]);
            assert_eq!((v[0].found, v[0].limit), (Some(1025), Some(1024)));
            assert!(
                v[0].to_string().ends_with("[description-too-long]"),
                "{}",
                v[0]
            );
            assert!(check_tool(format, tool(&long[..2048]), false).is_empty());
        }
        // Anthropic and Gemini take it.
        let tool = Tool {
            name: "t",
            description: &long,
            input_schema: &schema,
        };
        assert!(check_tool(Format::Anthropic, tool, false).is_empty());
        assert!(check_tool(Format::Gemini, tool, false).is_empty());
    }

    #[test]
    fn gemini_refuses_keywords_outside_its_subset_with_safe_fixes_where_there_are() {
        let schema = Schema::new(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "mode": {"const": "fast"},
                "note": {"type": ["string", "null"]},
                "n": {"type": "integer", "exclusiveMinimum": 0},
                "tags": {"type": "array", "items": {"type": "object", "additionalProperties": {}}}
            }
        }));
        let tool = Tool {
            name: "mcp__kb__search",
            description: "d",
            input_schema: &schema,
        };
        assert_eq!(
            codes(&check_tool(Format::Gemini, tool, false)),
            [
                (
                    "keyword-unsupported",
                    Some(""),
                    Some("$schema"),
                    Some("drop-keyword")
                ),
                (
                    "keyword-unsupported",
                    Some(""),
                    Some("additionalProperties"),
                    None
                ),
                (
                    "keyword-unsupported",
                    Some("/properties/mode"),
                    Some("const"),
                    Some("const-as-enum")
                ),
                (
                    "type-list",
                    Some("/properties/note"),
                    Some("type"),
                    Some("nullable")
                ),
                (
                    "keyword-unsupported",
                    Some("/properties/n"),
                    Some("exclusiveMinimum"),
                    None
                ),
                (
                    "keyword-unsupported",
                    Some("/properties/tags/items"),
                    Some("additionalProperties"),
                    None
                ),
            ]
        );
        // OpenAI and Anthropic take it as sent (not strict).
        assert!(check_tool(Format::Openai, tool, false).is_empty());
        assert!(check_tool(Format::Anthropic, tool, false).is_empty());
    }

    #[test]
    fn gemini_names_start_with_a_letter_or_underscore() {
        assert!(gemini_name("mcp__kb__search"));
        assert!(gemini_name("_x.y:z-1"));
        assert!(!gemini_name("2fa_login"));
        assert!(!gemini_name("-x"));
        assert!(!gemini_name(""));
        assert!(!gemini_name(&"a".repeat(65)));
        let schema = Schema::new(&json!({"type": "object"}));
        let tool = Tool {
            name: "2fa_login",
            description: "d",
            input_schema: &schema,
        };
        assert_eq!(
            codes(&check_tool(Format::Gemini, tool, false)),
            [("name-invalid", None, None, None)]
        );
    }

    #[test]
    fn openai_strict_needs_every_property_required_and_closed_objects() {
        let schema = Schema::new(&json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["q"],
            "allOf": [{"required": ["n"]}]
        }));
        let tool = Tool {
            name: "t",
            description: "d",
            input_schema: &schema,
        };
        assert!(check_tool(Format::Openai, tool, false).is_empty());
        assert_eq!(
            codes(&check_tool(Format::Openai, tool, true)),
            [
                ("keyword-unsupported", Some(""), Some("allOf"), None),
                (
                    "strict-open-object",
                    Some(""),
                    Some("additionalProperties"),
                    None
                ),
                (
                    "strict-optional-property",
                    Some("/properties"),
                    Some("n"),
                    None
                ),
            ]
        );
        let closed = Schema::new(&json!({
            "type": "object",
            "properties": {"q": {"type": ["string", "null"]}},
            "required": ["q"],
            "additionalProperties": false
        }));
        let tool = Tool {
            input_schema: &closed,
            ..tool
        };
        assert!(check_tool(Format::OpenaiResponses, tool, true).is_empty());
    }

    #[test]
    fn anthropic_strict_counts_tools_optional_and_union_parameters_per_request() {
        let schema = Schema::new(&json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            }
        }));
        let names: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        let offer = Offer {
            offered: names
                .iter()
                .map(|n| Tool {
                    name: n,
                    description: "d",
                    input_schema: &schema,
                })
                .collect(),
            ..Offer::default()
        };
        assert!(check(Format::Anthropic, &offer, false).is_empty());
        let v = check(Format::Anthropic, &offer, true);
        let found: Vec<(&str, Option<u64>, Option<u64>)> = v
            .iter()
            .map(|v| (v.code.as_str(), v.found, v.limit))
            .collect();
        assert_eq!(
            found,
            [
                ("strict-too-many-tools", Some(21), Some(20)),
                ("strict-too-many-optional", Some(42), Some(24)),
                ("strict-too-many-unions", Some(42), Some(16)),
            ]
        );
        assert!(v.iter().all(|v| v.tool.is_none()));
    }
}
