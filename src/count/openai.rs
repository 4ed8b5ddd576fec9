//! OpenAI Chat Completions: the prompt tokens of `messages`, `tools` (or
//! the legacy `functions`) and `tool_choice` (or `function_call`).
//!
//! The formula is the one the open-source counters that publish
//! API-measured cases use (docs/count.md lists them and the error on each):
//!
//! - each message: 3 + role + content + (name + 1) (a `function` message
//!   2 fewer), an assistant's `function_call` name + arguments + 3;
//! - 3 to prime the reply;
//! - with tools: the `namespace functions { … }` text, each tool rendered
//!   by [`tokens::render_function`], + 9; 4 fewer when a system message is
//!   present (the tools join it), and that first system message gains a
//!   trailing newline;
//! - `tool_choice`: `auto` 0, `none` 1, a named function 7 + its name
//!   (`function_call` by name: 4 + the name).

use super::{field, kind_of, string_at};
use crate::contract::{
    Accuracy, Breakdown, COUNT_FORMAT_VERSION, CountNote, CountReport, Provider, ToolTokens,
};
use crate::error::Problem;
use crate::error::code;
use crate::tokens::{self, Encoding};
use serde_json::{Map, Value};

/// Tokens framing every message.
pub const PER_MESSAGE: u32 = 3;
/// Tokens a message's `name` costs beyond its text.
pub const PER_NAME: u32 = 1;
/// Tokens a `function` message costs less than the framing says (its name
/// stands in for the role).
pub const FUNCTION_MESSAGE_DISCOUNT: u32 = 2;
/// Tokens framing an assistant's `function_call` (or each tool call).
pub const PER_FUNCTION_CALL: u32 = 3;
/// Tokens priming the reply.
pub const REPLY_PRIMING: u32 = 3;
/// Tokens the tool section adds beyond its namespace text.
pub const TOOLS_FRAMING: u32 = 9;
/// Tokens saved when a system message is present: the tool section joins it.
pub const SYSTEM_SHARED: u32 = 4;
/// `tool_choice: "none"` / `function_call: "none"`.
pub const CHOICE_NONE: u32 = 1;
/// `tool_choice` naming a function, beyond the name's tokens.
pub const CHOICE_NAMED_TOOL: u32 = 7;
/// Legacy `function_call` naming a function, beyond the name's tokens.
pub const CHOICE_NAMED_FUNCTION: u32 = 4;

const NAMESPACE_HEAD: &str = "namespace functions {\n\n";
const NAMESPACE_TAIL: &str = "} // namespace functions";

/// The encoding of an OpenAI model, by family prefix.
pub fn encoding_of(model: &str) -> Option<Encoding> {
    const O200K: [&str; 9] = [
        "gpt-4o",
        "chatgpt-4o",
        "gpt-4.1",
        "gpt-4.5",
        "gpt-5",
        "gpt-oss",
        "o1",
        "o3",
        "o4",
    ];
    const CL100K: [&str; 3] = ["gpt-4", "gpt-3.5", "gpt-35"];
    if O200K.iter().any(|p| model.starts_with(p)) {
        Some(Encoding::O200kBase)
    } else if CL100K.iter().any(|p| model.starts_with(p)) {
        Some(Encoding::Cl100kBase)
    } else {
        None
    }
}

/// One function definition from the request.
struct Function<'a> {
    /// `tools` or the legacy `functions`: the two are billed differently.
    shape: tokens::Shape,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Counts an OpenAI Chat Completions body.
pub(super) fn count(body: &Map<String, Value>, model: &str) -> Result<CountReport, Problem> {
    let encoding = encoding_of(model).ok_or_else(|| {
        Problem::coded(
            code::UNKNOWN_NAME,
            format!("unknown OpenAI model {model:?}"),
        )
        .help(
            "name a gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1/o3/o4, gpt-4 or gpt-3.5 model, \
             or pass --provider anthropic for a Claude model",
        )
    })?;
    let mut notes = Vec::new();
    let functions = functions(body)?;
    let empty_schema = Value::Object(Map::new());
    let has_tools = !functions.is_empty();
    let messages = match body.get("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => return Err(field("messages", "an array of messages", other)),
        None => {
            return Err(
                Problem::coded(code::INVALID_REQUEST, "the request has no `messages`")
                    .help("add \"messages\": [{\"role\": \"user\", \"content\": \"…\"}]"),
            );
        }
    };
    let mut message_tokens = 0u32;
    let mut padded_system = false;
    let mut any_system = false;
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Some(m) = message.as_object() else {
            return Err(field(&path, "an object", message));
        };
        let Some(role) = string_at(m, "role", &path)? else {
            return Err(Problem::coded(code::INVALID_REQUEST, format!("`{path}` has no `role`")).help(
                "give each message a role: system, developer, user, assistant, tool or function",
            ));
        };
        let mut content = content_text(m.get("content"), &format!("{path}.content"))?;
        if role == "system" || role == "developer" {
            any_system = true;
            if has_tools && !padded_system {
                content.push('\n');
                padded_system = true;
            }
        }
        let mut tokens = PER_MESSAGE + encoding.count_text(role) + encoding.count_text(&content);
        if let Some(name) = string_at(m, "name", &path)? {
            tokens += encoding.count_text(name) + PER_NAME;
        }
        if role == "function" {
            tokens = tokens.saturating_sub(FUNCTION_MESSAGE_DISCOUNT);
        }
        if role == "tool" {
            push_note(&mut notes, CountNote::ToolCallsUnmeasured);
        }
        if let Some(call) = m.get("function_call") {
            tokens += call_tokens(encoding, call, &format!("{path}.function_call"))?;
        }
        match m.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (j, call) in calls.iter().enumerate() {
                    let at = format!("{path}.tool_calls[{j}]");
                    let function = call
                        .get("function")
                        .ok_or_else(|| Problem::coded(code::INVALID_REQUEST, format!("`{at}` has no `function`")).help(
                            "give each tool call {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}",
                        ))?;
                    tokens += call_tokens(encoding, function, &format!("{at}.function"))?;
                }
                if !calls.is_empty() {
                    push_note(&mut notes, CountNote::ToolCallsUnmeasured);
                }
            }
            Some(other) => return Err(field(&format!("{path}.tool_calls"), "an array", other)),
        }
        message_tokens += tokens;
    }

    let mut overhead = REPLY_PRIMING;
    let mut tool_tokens = 0;
    let mut each = Vec::with_capacity(functions.len());
    if has_tools {
        let mut section = String::from(NAMESPACE_HEAD);
        for f in &functions {
            let parameters = if f.parameters.is_null() {
                &empty_schema
            } else {
                f.parameters
            };
            schema_notes(parameters, &mut notes);
            let block = tokens::render_function_as(f.shape, f.name, f.description, parameters);
            each.push(ToolTokens {
                name: f.name.to_string(),
                tokens: encoding.count_text(&block),
            });
            section.push_str(&block);
        }
        section.push_str(NAMESPACE_TAIL);
        tool_tokens = encoding.count_text(&section);
        overhead += TOOLS_FRAMING;
        if any_system {
            overhead -= SYSTEM_SHARED;
        }
    }

    let choice = tool_choice(body, encoding, &mut notes)?;
    notes.sort();
    let breakdown = Breakdown {
        messages: message_tokens,
        tools: tool_tokens,
        tool_choice: choice,
        overhead,
    };
    Ok(CountReport {
        format_version: COUNT_FORMAT_VERSION,
        provider: Provider::Openai,
        model: model.to_string(),
        encoding: encoding.name().to_string(),
        accuracy: if notes.is_empty() {
            Accuracy::Exact
        } else {
            Accuracy::Estimate
        },
        input_tokens: message_tokens + tool_tokens + choice + overhead,
        breakdown,
        tools: each,
        notes,
    })
}

fn push_note(notes: &mut Vec<CountNote>, note: CountNote) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}

/// The text of a message's `content`: a string, null, or an array of text
/// parts (their texts, each counted as written).
fn content_text(content: Option<&Value>, path: &str) -> Result<String, Problem> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                let at = format!("{path}[{i}]");
                let kind = part.get("type").and_then(Value::as_str);
                match (kind, part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    (Some("text"), other) => {
                        return Err(field(
                            &format!("{at}.text"),
                            "a string",
                            other.unwrap_or(&Value::Null),
                        ));
                    }
                    (Some(other), _) => {
                        return Err(Problem::coded(
                            code::INVALID_REQUEST,
                            format!("`{at}` is a {other:?} part; muster counts text parts only"),
                        )
                        .help(
                            "leave images, audio and files out of the request to count the rest",
                        ));
                    }
                    (None, _) => {
                        return Err(Problem::coded(
                            code::INVALID_REQUEST,
                            format!("`{at}` has no `type`"),
                        )
                        .help("write text parts as {\"type\": \"text\", \"text\": \"…\"}"));
                    }
                }
            }
            Ok(text)
        }
        Some(other) => Err(field(path, "a string or an array of text parts", other)),
    }
}

/// Tokens of a `function_call` or a tool call's `function`.
fn call_tokens(encoding: Encoding, call: &Value, path: &str) -> Result<u32, Problem> {
    let Some(call) = call.as_object() else {
        return Err(field(path, "an object with `name` and `arguments`", call));
    };
    let name = string_at(call, "name", path)?.unwrap_or_default();
    let arguments = string_at(call, "arguments", path)?.unwrap_or_default();
    Ok(encoding.count_text(name) + encoding.count_text(arguments) + PER_FUNCTION_CALL)
}

/// The request's function definitions: `tools` (function tools) or the
/// legacy `functions`.
fn functions(body: &Map<String, Value>) -> Result<Vec<Function<'_>>, Problem> {
    let mut out = Vec::new();
    if let Some(tools) = body.get("tools").filter(|t| !t.is_null()) {
        let Some(tools) = tools.as_array() else {
            return Err(field("tools", "an array of tools", tools));
        };
        for (i, tool) in tools.iter().enumerate() {
            let path = format!("tools[{i}]");
            let Some(t) = tool.as_object() else {
                return Err(field(&path, "an object", tool));
            };
            match string_at(t, "type", &path)? {
                Some("function") => {}
                Some(other) => {
                    return Err(Problem::coded(
                        code::INVALID_REQUEST,
                        format!("`{path}.type` is {other:?}; muster counts function tools"),
                    )
                    .help("leave other tool types out of the request to count the rest"));
                }
                None => {
                    return Err(Problem::coded(
                        code::INVALID_REQUEST,
                        format!("`{path}` has no `type`"),
                    )
                    .help("write each tool as {\"type\": \"function\", \"function\": {…}}"));
                }
            }
            let function = t.get("function").unwrap_or(&Value::Null);
            out.push(function_of(
                function,
                &format!("{path}.function"),
                tokens::Shape::Tools,
            )?);
        }
    }
    if let Some(functions) = body.get("functions").filter(|f| !f.is_null()) {
        let Some(functions) = functions.as_array() else {
            return Err(field("functions", "an array of functions", functions));
        };
        for (i, f) in functions.iter().enumerate() {
            out.push(function_of(
                f,
                &format!("functions[{i}]"),
                tokens::Shape::Functions,
            )?);
        }
    }
    Ok(out)
}

fn function_of<'a>(
    value: &'a Value,
    path: &str,
    shape: tokens::Shape,
) -> Result<Function<'a>, Problem> {
    let Some(f) = value.as_object() else {
        return Err(field(path, "an object with `name`", value));
    };
    let Some(name) = string_at(f, "name", path)? else {
        return Err(
            Problem::coded(code::INVALID_REQUEST, format!("`{path}` has no `name`"))
                .help("give each function a name"),
        );
    };
    let description = string_at(f, "description", path)?.unwrap_or_default();
    let parameters = f.get("parameters").unwrap_or(&Value::Null);
    if !parameters.is_null() && !parameters.is_object() {
        return Err(field(
            &format!("{path}.parameters"),
            "a JSON schema object",
            parameters,
        ));
    }
    Ok(Function {
        shape,
        name,
        description,
        parameters,
    })
}

/// Tokens `tool_choice` or `function_call` adds.
fn tool_choice(
    body: &Map<String, Value>,
    encoding: Encoding,
    notes: &mut Vec<CountNote>,
) -> Result<u32, Problem> {
    match body.get("tool_choice") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            return match s.as_str() {
                "auto" => Ok(0),
                "none" => Ok(CHOICE_NONE),
                "required" => {
                    push_note(notes, CountNote::ToolChoiceRequiredUnmeasured);
                    Ok(0)
                }
                other => Err(Problem::coded(code::INVALID_REQUEST, format!(
                    "`tool_choice` is {other:?}, not auto, none, required or a named function"
                ))
                .help("use \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}")),
            };
        }
        Some(Value::Object(choice)) => {
            let name = choice
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    Problem::coded(code::INVALID_REQUEST, "`tool_choice` names no function")
                        .help("write {\"type\": \"function\", \"function\": {\"name\": \"…\"}}")
                })?;
            return Ok(CHOICE_NAMED_TOOL + encoding.count_text(name));
        }
        Some(other) => return Err(field("tool_choice", "a string or an object", other)),
    }
    match body.get("function_call") {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => Ok(0),
            "none" => Ok(CHOICE_NONE),
            other => Err(Problem::coded(
                code::INVALID_REQUEST,
                format!("`function_call` is {other:?}, not auto, none or {{\"name\": …}}"),
            )
            .help("use \"auto\", \"none\" or {\"name\": \"…\"}")),
        },
        Some(Value::Object(call)) => {
            let Some(name) = call.get("name").and_then(Value::as_str) else {
                return Err(Problem::coded(
                    code::INVALID_REQUEST,
                    "`function_call` names no function",
                )
                .help("write {\"name\": \"…\"}"));
            };
            Ok(CHOICE_NAMED_FUNCTION + encoding.count_text(name))
        }
        Some(other) => Err(Problem::coded(
            code::INVALID_REQUEST,
            format!(
                "`function_call` is {}, not a string or an object",
                kind_of(other)
            ),
        )
        .help("use \"auto\", \"none\" or {\"name\": \"…\"}")),
    }
}

/// The notes a function's schema earns: a property below the top level
/// that is itself an object with properties (directly, as array items, or
/// in a union), whose rendering the public measurements disagree on, and a
/// `const` with no `type` or a non-string `enum` anywhere, whose rendering
/// is known to differ from the provider's. (A `const` beside a `type`
/// renders as the type, as the measurements bill it.)
fn schema_notes(parameters: &Value, notes: &mut Vec<CountNote>) {
    if parameters.get("$defs").is_some()
        || parameters.get("definitions").is_some()
        || parameters.to_string().contains("\"$ref\"")
    {
        push_note(notes, CountNote::References);
    }
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    // (schema, below the top level); bounded like the renderer.
    let mut stack: Vec<(&Value, bool)> = properties.values().map(|p| (p, false)).collect();
    let mut seen = 0;
    while let Some((v, nested)) = stack.pop() {
        seen += 1;
        if seen > 20_000 {
            break;
        }
        if (v.get("const").is_some() && v.get("type").is_none())
            || v.get("enum")
                .and_then(Value::as_array)
                .is_some_and(|e| e.iter().any(|x| !x.is_string()))
        {
            push_note(notes, CountNote::Literals);
        }
        if let Some(props) = v.get("properties").and_then(Value::as_object) {
            if nested || !props.is_empty() {
                push_note(notes, CountNote::NestedObjects);
            }
            stack.extend(props.values().map(|p| (p, true)));
        }
        if let Some(items) = v.get("items") {
            stack.push((items, nested));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(variants) = v.get(key).and_then(Value::as_array) {
                stack.extend(variants.iter().map(|x| (x, nested)));
            }
        }
    }
}
