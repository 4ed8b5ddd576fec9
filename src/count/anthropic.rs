//! Anthropic Messages: an estimate of the input tokens of `system`,
//! `messages`, `tools` and `tool_choice`.
//!
//! Anthropic publishes no tokenizer, so text is counted with `o200k_base`
//! as a proxy (the largest-vocabulary encoding muster carries; docs/count.md
//! gives the error on Anthropic's printed examples). What is documented is
//! exact: the tool-use system prompt each model adds when tools are sent,
//! which depends on `tool_choice` ([`tool_system_prompt`]).
//!
//! - `system`: its text + [`SYSTEM_FRAMING`];
//! - each message: [`PER_MESSAGE`] + its text, each `tool_use` block's name
//!   and input JSON, each `tool_result`'s text;
//! - each tool: its JSON as sent ([`tokens::render_anthropic_tool`]);
//! - overhead: [`BASE`], + the tool-use system prompt when tools are sent.

use super::{field, string_at};
use crate::contract::{
    Accuracy, Breakdown, COUNT_FORMAT_VERSION, CountNote, CountReport, Provider, ToolTokens,
};
use crate::error::Problem;
use crate::error::code;
use crate::tokens::{self, Encoding};
use serde_json::{Map, Value};

/// The proxy encoding.
pub const PROXY: Encoding = Encoding::O200kBase;
/// Tokens framing each message (calibrated, docs/count.md).
pub const PER_MESSAGE: u32 = 3;
/// Tokens framing the system prompt (calibrated, docs/count.md).
pub const SYSTEM_FRAMING: u32 = 3;
/// Tokens every request carries (calibrated, docs/count.md).
pub const BASE: u32 = 1;

/// The tool-use system prompt's tokens for `model`: (with `tool_choice`
/// `auto` or `none`, with `any` or `tool`), from Anthropic's tool-use
/// pricing table; `None` for a model the table does not list.
pub fn tool_system_prompt(model: &str) -> Option<(u32, u32)> {
    // The planner's wrapper is the `auto` figure of the current models.
    const CURRENT: (u32, u32) = (tokens::ANTHROPIC_TOOL_SYSTEM_PROMPT, 313);
    const TABLE: [(&str, (u32, u32)); 8] = [
        ("claude-opus-4", CURRENT),
        ("claude-sonnet-4", CURRENT),
        ("claude-haiku-4", CURRENT),
        ("claude-3-7-sonnet", CURRENT),
        ("claude-3-5-haiku", (264, 340)),
        ("claude-3-opus", (530, 281)),
        ("claude-3-sonnet", (159, 235)),
        ("claude-3-haiku", (264, 340)),
    ];
    TABLE
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, tokens)| *tokens)
}

/// Counts an Anthropic Messages body.
pub(super) fn count(body: &Map<String, Value>, model: &str) -> Result<CountReport, Problem> {
    let (auto, forced) = tool_system_prompt(model).ok_or_else(|| {
        Problem::coded(
            code::UNKNOWN_NAME,
            format!("unknown Anthropic model {model:?}"),
        )
        .help(
            "name a claude-opus-4*, claude-sonnet-4*, claude-haiku-4*, claude-3-7-sonnet*, \
             claude-3-5-haiku*, claude-3-opus*, claude-3-sonnet* or claude-3-haiku* model",
        )
    })?;
    let mut messages = 0;
    match body.get("system") {
        None | Some(Value::Null) => {}
        Some(system) => {
            messages += SYSTEM_FRAMING + PROXY.count_text(&blocks_text(system, "system")?);
        }
    }
    let list = match body.get("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => return Err(field("messages", "an array of messages", other)),
        None => {
            return Err(
                Problem::coded(code::INVALID_REQUEST, "the request has no `messages`")
                    .help("add \"messages\": [{\"role\": \"user\", \"content\": \"…\"}]"),
            );
        }
    };
    for (i, message) in list.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Some(m) = message.as_object() else {
            return Err(field(&path, "an object", message));
        };
        match string_at(m, "role", &path)? {
            Some("user" | "assistant") => {}
            Some(other) => {
                return Err(Problem::coded(
                    code::INVALID_REQUEST,
                    format!("`{path}.role` is {other:?}, not user or assistant"),
                )
                .help(
                    "put system text in the top-level `system`; messages are user or assistant",
                ));
            }
            None => {
                return Err(Problem::coded(
                    code::INVALID_REQUEST,
                    format!("`{path}` has no `role`"),
                )
                .help("give each message a role: user or assistant"));
            }
        }
        let content = m.get("content").unwrap_or(&Value::Null);
        messages +=
            PER_MESSAGE + PROXY.count_text(&blocks_text(content, &format!("{path}.content"))?);
    }

    let mut each = Vec::new();
    if let Some(tools) = body.get("tools").filter(|t| !t.is_null()) {
        let Some(tools) = tools.as_array() else {
            return Err(field("tools", "an array of tools", tools));
        };
        let empty = Value::Object(Map::new());
        for (i, tool) in tools.iter().enumerate() {
            let path = format!("tools[{i}]");
            let Some(t) = tool.as_object() else {
                return Err(field(&path, "an object", tool));
            };
            if let Some(kind) = string_at(t, "type", &path)?.filter(|k| *k != "custom") {
                return Err(Problem::coded(code::INVALID_REQUEST, format!(
                    "`{path}.type` is {kind:?}; muster counts client tools (name, description, input_schema)"
                ))
                .help("leave server tools out of the request to count the rest"));
            }
            let Some(name) = string_at(t, "name", &path)? else {
                return Err(Problem::coded(
                    code::INVALID_REQUEST,
                    format!("`{path}` has no `name`"),
                )
                .help("give each tool a name"));
            };
            let description = string_at(t, "description", &path)?.unwrap_or_default();
            let schema = match t.get("input_schema") {
                None | Some(Value::Null) => &empty,
                Some(s) if s.is_object() => s,
                Some(other) => {
                    return Err(field(
                        &format!("{path}.input_schema"),
                        "a JSON schema object",
                        other,
                    ));
                }
            };
            let text = tokens::render_anthropic_tool(name, description, schema);
            each.push(ToolTokens {
                name: name.to_string(),
                tokens: PROXY.count_text(&text),
            });
        }
    }
    let tool_tokens: u32 = each.iter().map(|t| t.tokens).sum();

    let forced_choice = match body.get("tool_choice") {
        None | Some(Value::Null) => false,
        Some(Value::Object(choice)) => match choice.get("type").and_then(Value::as_str) {
            Some("auto" | "none") => false,
            Some("any") => true,
            Some("tool") => {
                if !choice.get("name").is_some_and(Value::is_string) {
                    return Err(Problem::coded(
                        code::INVALID_REQUEST,
                        "`tool_choice` of type tool names no tool",
                    )
                    .help("write {\"type\": \"tool\", \"name\": \"…\"}"));
                }
                true
            }
            other => {
                return Err(Problem::coded(code::INVALID_REQUEST, format!(
                    "`tool_choice.type` is {}, not auto, any, tool or none",
                    other.map_or("missing".to_string(), |t| format!("{t:?}"))
                ))
                .help("write {\"type\": \"auto\"}, {\"type\": \"any\"}, {\"type\": \"tool\", \"name\": \"…\"} or {\"type\": \"none\"}"));
            }
        },
        Some(other) => return Err(field("tool_choice", "an object with `type`", other)),
    };
    let mut overhead = BASE;
    if !each.is_empty() {
        overhead += if forced_choice { forced } else { auto };
    }
    Ok(CountReport {
        format_version: COUNT_FORMAT_VERSION,
        provider: Provider::Anthropic,
        model: model.to_string(),
        encoding: PROXY.name().to_string(),
        accuracy: Accuracy::Estimate,
        input_tokens: messages + tool_tokens + overhead,
        breakdown: Breakdown {
            messages,
            tools: tool_tokens,
            tool_choice: 0,
            overhead,
        },
        tools: each,
        notes: vec![CountNote::ProxyTokenizer],
    })
}

/// The text of a `system` or `content` value: a string, or an array of
/// blocks (text; a `tool_use`'s name and input JSON; a `tool_result`'s
/// content), joined as written.
fn blocks_text(value: &Value, path: &str) -> Result<String, Problem> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut text = String::new();
            for (i, block) in blocks.iter().enumerate() {
                let at = format!("{path}[{i}]");
                let Some(b) = block.as_object() else {
                    return Err(field(&at, "a content block object", block));
                };
                match string_at(b, "type", &at)? {
                    Some("text") => {
                        text.push_str(string_at(b, "text", &at)?.unwrap_or_default());
                    }
                    Some("tool_use") => {
                        text.push_str(string_at(b, "name", &at)?.unwrap_or_default());
                        if let Some(input) = b.get("input") {
                            text.push_str(&input.to_string());
                        }
                    }
                    Some("tool_result") => {
                        if let Some(content) = b.get("content").filter(|c| !c.is_null()) {
                            text.push_str(&blocks_text(content, &format!("{at}.content"))?);
                        }
                    }
                    Some(other) => {
                        return Err(Problem::coded(code::INVALID_REQUEST, format!(
                            "`{at}` is a {other:?} block; muster counts text, tool_use and tool_result blocks"
                        ))
                        .help("leave images and documents out of the request to count the rest"));
                    }
                    None => {
                        return Err(Problem::coded(
                            code::INVALID_REQUEST,
                            format!("`{at}` has no `type`"),
                        )
                        .help("write text blocks as {\"type\": \"text\", \"text\": \"…\"}"));
                    }
                }
            }
            Ok(text)
        }
        other => Err(field(path, "a string or an array of content blocks", other)),
    }
}
