//! Unit tests of counting and rendering.

use super::*;
use serde_json::json;

thread_local! {
    /// How often this thread asked for a tokenizer.
    pub(super) static TOKENIZER_ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The warm path of every run: with every count cached, no tokenizer is
/// asked for (building o200k_base costs more than the rest of a plan).
#[test]
fn counts_all_cached_never_ask_for_the_tokenizer() {
    let schema = Schema::new(&json!({"type": "object", "properties": {"q": {"type": "string"}}}));
    let definitions: Vec<Definition<'_>> = ["a", "b", "c"]
        .iter()
        .map(|name| Definition {
            name,
            description: "Finds things.",
            input_schema: &schema,
        })
        .collect();
    let mut cache = TokenCache::in_memory();
    let cold = Encoding::O200kBase.count_definitions(&definitions, &mut cache);
    let asked = TOKENIZER_ASKED.with(std::cell::Cell::get);
    assert!(asked > 0, "a cold count asks for the tokenizer");
    let warm = Encoding::O200kBase.count_definitions(&definitions, &mut cache);
    assert_eq!(warm, cold);
    assert_eq!(
        TOKENIZER_ASKED.with(std::cell::Cell::get),
        asked,
        "a warm count asked for the tokenizer"
    );
}

/// Prompt tokens of chat messages as the cookbook counts them: three per
/// message for its envelope, the role and content, and three to prime
/// the reply.
fn message_tokens(encoding: Encoding, messages: &[(&str, &str)]) -> u32 {
    messages
        .iter()
        .map(|(role, content)| 3 + encoding.count_text(role) + encoding.count_text(content))
        .sum::<u32>()
        + 3
}

fn weather() -> (String, String, Value) {
    (
        "get_current_weather".into(),
        "Get the current weather in a given location".into(),
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        }),
    )
}

#[test]
fn cookbook_weather_example_matches_the_api() {
    let messages = [
        (
            "system",
            "You are a helpful assistant that can answer to questions about the weather.",
        ),
        ("user", "What's the weather like in San Francisco?"),
    ];
    let (name, description, schema) = weather();
    for (encoding, measured) in [(Encoding::Cl100kBase, 105), (Encoding::O200kBase, 101)] {
        let total = message_tokens(encoding, &messages)
            + encoding.wrapper_tokens()
            + encoding.count_definition(&name, &description, &schema);
        assert_eq!(total, measured, "{}", encoding.name());
    }
}

#[test]
fn wrapper_tokens_are_the_counted_wrapper() {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        assert_eq!(
            encoding.wrapper_tokens(),
            encoding.counted_wrapper_tokens(),
            "{}",
            encoding.name()
        );
    }
}

#[test]
fn renders_optional_marks_enums_and_nesting() {
    let schema = json!({
        "type": "object",
        "properties": {
            "filters": {"type": "array", "items": {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}},
            "limit": {"type": "integer", "default": 10}
        },
        "required": ["filters"]
    });
    let text = render_function_as(Shape::Functions, "search", "Find things.", &schema);
    assert_eq!(
        text,
        "// Find things.\ntype search = (_: {\nfilters: {\n  date: string,\n}[],\nlimit?: number, // default: 10\n}) => any;\n\n"
    );
    // `tools` (what the planner counts): nested properties flat.
    assert_eq!(
        render_function("search", "Find things.", &schema),
        "// Find things.\ntype search = (_: {\nfilters: {\ndate: string,\n}[],\nlimit?: number, // default: 10\n}) => any;\n\n"
    );
}

#[test]
fn nested_objects_indent_and_drop_their_descriptions() {
    // hmarr/openai-chat-tokens case-36's shape: the API bills the nested
    // properties' descriptions as absent and their lines indented.
    let schema = json!({
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "description": "Kept: a top-level property.",
                "properties": {
                    "inner": {"type": "object", "properties": {"x": {"type": "string", "description": "dropped"}}},
                    "y": {"type": "number", "description": "dropped"}
                },
                "required": ["y"]
            }
        }
    });
    assert_eq!(
        render_function_as(Shape::Functions, "f", "", &schema),
        "type f = (_: {\n// Kept: a top-level property.\nouter?: {\n  inner?: {\n    x?: string,\n},\n  y: number,\n},\n}) => any;\n\n"
    );
    // Issue 21 item 9: pamelafox/openai-messages-token-helper's `tools` cases (2024) bill the
    // same shape flat, with the nested descriptions.
    assert_eq!(
        render_function_as(Shape::Tools, "f", "", &schema),
        "type f = (_: {\n// Kept: a top-level property.\nouter?: {\ninner?: {\n// dropped\nx?: string,\n},\n// dropped\ny: number,\n},\n}) => any;\n\n"
    );
}

/// Issue 21 item 3: `$defs` are rendered once each as named types and a reference as the
/// definition's name, so a schema's definitions are billed (they were left out, and a
/// reference rendered as `any`).
#[test]
fn definitions_render_as_named_types_and_references_as_their_names() {
    let schema = json!({
        "$defs": {"range": {"type": "object", "properties": {"from": {"type": "integer"}}, "required": ["from"]},
                  "unused": {"type": "string", "enum": ["a", "b"]}},
        "type": "object",
        "properties": {"r": {"$ref": "#/$defs/range"}, "rs": {"type": "array", "items": {"$ref": "#/$defs/range"}},
                       "other": {"$ref": "https://example.com/s.json"}}
    });
    assert_eq!(
        render_function("f", "", &schema),
        "type range = {\nfrom: number,\n};\ntype unused = \"a\" | \"b\";\ntype f = (_: {\nr?: range,\nrs?: range[],\nother?: any,\n}) => any;\n\n"
    );
}

#[test]
fn a_const_beside_a_type_renders_as_the_type() {
    let schema = json!({
        "type": "object",
        "properties": {
            "typed": {"anyOf": [{"type": "string", "const": "a"}, {"type": "number"}]},
            "untyped": {"const": "b"},
            "flag": {"type": "boolean", "enum": [true]},
            "level": {"type": "integer", "enum": [-1, 1]}
        }
    });
    assert_eq!(
        render_function("f", "", &schema),
        "type f = (_: {\ntyped?: string | number,\nuntyped?: \"b\",\nflag?: boolean,\nlevel?: -1 | 1,\n}) => any;\n\n"
    );
}

#[test]
fn a_tool_without_arguments_renders_an_empty_call() {
    let text = render_function("now", "", &json!({"type": "object"}));
    assert_eq!(text, "type now = () => any;\n\n");
}

#[test]
fn a_type_named_twice_renders_once() {
    // Rendering ["object", "object"] twice at each of 30 levels would
    // cost 2^30 object renderings.
    let mut schema = json!({"type": "string"});
    for _ in 0..30 {
        schema = json!({"type": ["object", "object"], "properties": {"a": schema}});
    }
    let text = render_function("twice", "d", &schema);
    assert_eq!(text.matches("a?:").count(), 30);
}

#[test]
fn a_schema_built_to_multiply_stays_within_the_node_budget() {
    // Items and properties both hold the level below: 2^16 nodes.
    let mut schema = json!({"type": "string"});
    for _ in 0..16 {
        schema = json!({"type": ["object", "array"], "items": schema.clone(), "properties": {"a": schema}});
    }
    let text = render_function("bomb", "d", &schema);
    assert!(
        text.matches("any").count() > 1,
        "rendered past the budget as any"
    );
    assert!(text.len() < 1_000_000, "{} bytes", text.len());
}

#[test]
fn deep_schemas_render_as_any_past_the_limit() {
    let mut schema = json!({"type": "string"});
    for _ in 0..200 {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    let text = render_function("deep", "d", &schema);
    assert!(text.contains("any"));
}

/// The Anthropic rendering writes the schema's held text into the tool
/// object: the same bytes as serde_json writing the whole object.
#[test]
fn the_anthropic_rendering_is_the_tool_object_as_serde_json_writes_it() {
    let schema = json!({"type": "object", "properties": {"q\"": {"type": "string", "description": "é\n"}, "a": {}}});
    for (name, description) in [("search", "Finds \"things\".\t"), ("now", "")] {
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), json!(name));
        if !description.is_empty() {
            tool.insert("description".into(), json!(description));
        }
        tool.insert("input_schema".into(), schema.clone());
        let expected = Value::Object(tool).to_string();
        assert_eq!(render_anthropic_tool(name, description, &schema), expected);
        let held = Schema::new(&schema);
        let d = Definition {
            name,
            description,
            input_schema: &held,
        };
        assert_eq!(render_for(Provider::Anthropic, &d), expected);
    }
}
