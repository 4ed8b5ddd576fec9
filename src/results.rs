//! Results are context too: a forwarded tool result counted with the counters definitions
//! are counted with, cut to its budget when it is over, and its `structuredContent` checked
//! against the tool's `outputSchema` (docs/results.md).
//!
//! A cut keeps the result's beginning: `content` items in order while they fit; the first text
//! that does not is cut where a token ends (valid UTF-8), or, when it is JSON, written again
//! within the room left and still JSON ([`json`]); items after it are left out, and so is an
//! image or binary item over what is left. A closing text item says what was cut and names
//! the tool's own arguments for asking for less ([`ResultCut`]). `structuredContent` is counted
//! but never cut: a cut would break its schema. Every step is linear in the result's size
//! and the written text is bounded by the budget.
//!
//! It decides what a result becomes; it must not decide budgets (the policy does) or speak
//! MCP (the gateway wraps what it returns).

mod json;
mod media;
mod output;

use serde_json::Value;

use crate::contract::{ResultCode, ResultCount, ResultCut};
use crate::tokens::{Encoding, Provider};
pub use json::{HEAD_BYTES_PER_TOKEN, MORE_MEMBERS};
pub use media::UNKNOWN_MEDIA_TOKENS;
pub use output::{
    Compiled, MAX_OUTPUT_PROBLEMS, MAX_OUTPUT_VALIDATORS, OutputValidators, check_output,
    check_output_with,
};

/// The smallest budget a policy may give: room for the closing note and some text.
pub const MIN_RESULT_TOKENS: u32 = 200;

/// Argument names a tool takes for asking for less at a time, as servers name them; matched
/// with case and `_` / `-` ignored.
pub const PAGING_ARGUMENTS: [&str; 18] = [
    "limit",
    "offset",
    "page",
    "pagesize",
    "perpage",
    "cursor",
    "maxresults",
    "maxtokens",
    "maxlength",
    "maxchars",
    "head",
    "tail",
    "start",
    "startindex",
    "count",
    "pagetoken",
    "lines",
    "length",
];

/// The most paging arguments a note names.
pub const MAX_PAGING_NAMES: usize = 8;

/// How one result is shaped.
#[derive(Debug, Clone, Copy)]
pub struct Shaping<'a> {
    /// The tool as the client called it, for the note.
    pub tool: &'a str,
    /// The encoding text is counted with.
    pub encoding: Encoding,
    /// Whose rules images are counted by.
    pub provider: Provider,
    /// The most tokens the content may cost, the note included; `None` counts only.
    pub budget: Option<u64>,
    /// The tool's paging arguments ([`paging_arguments`]).
    pub paging: &'a [String],
}

/// A result shaped: its counts, and its new text when it was cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    /// The result object's text to send instead, when it was cut.
    pub text: Option<String>,
    /// What it cost and what became of it.
    pub count: ResultCount,
}

/// The top-level arguments of `input_schema` that ask a tool for less
/// ([`PAGING_ARGUMENTS`]), in the schema's order.
pub fn paging_arguments(input_schema: &Value) -> Vec<String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .keys()
        .filter(|name| {
            let plain: String = name
                .chars()
                .filter(|c| *c != '_' && *c != '-')
                .flat_map(char::to_lowercase)
                .collect();
            PAGING_ARGUMENTS.contains(&plain.as_str())
        })
        .take(MAX_PAGING_NAMES)
        .cloned()
        .collect()
}

/// One content item's text to count and maybe cut: a text item's `text`, or an embedded
/// text resource's `resource.text`.
fn text_of(item: &Value) -> Option<&str> {
    match item.get("type")?.as_str()? {
        "text" => item.get("text")?.as_str(),
        "resource" => item.get("resource")?.get("text")?.as_str(),
        _ => None,
    }
}

/// An image's, audio's or binary resource's base64 data and type.
fn media_of(item: &Value) -> Option<(&str, &str)> {
    let (data, mime) = match item.get("type")?.as_str()? {
        "image" | "audio" => (item.get("data")?, item.get("mimeType")),
        "resource" => {
            let resource = item.get("resource")?;
            (resource.get("blob")?, resource.get("mimeType"))
        }
        _ => return None,
    };
    Some((data.as_str()?, mime.and_then(Value::as_str).unwrap_or("")))
}

/// `item` with its text replaced by `text` (the text it had is not copied: it may be large).
fn with_text(item: &Value, text: String) -> Value {
    /// `map` with `key` set to `value`, its other members copied, in their order.
    fn with(map: &serde_json::Map<String, Value>, key: &str, value: Value) -> Value {
        let mut value = Some(value);
        let mut out: serde_json::Map<String, Value> = map
            .iter()
            .map(|(k, v)| match k == key {
                true => (k.clone(), value.take().unwrap_or_default()),
                false => (k.clone(), v.clone()),
            })
            .collect();
        if let Some(value) = value {
            out.insert(key.into(), value);
        }
        Value::Object(out)
    }
    let Some(map) = item.as_object() else {
        return item.clone();
    };
    match (map.get("type").and_then(Value::as_str), map.get("resource")) {
        (Some("resource"), Some(Value::Object(resource))) => {
            with(map, "resource", with(resource, "text", Value::String(text)))
        }
        _ => with(map, "text", Value::String(text)),
    }
}

/// `text` cut to at most `room` tokens: when it is JSON, written again within the room and
/// still JSON (empty when not even its brackets fit); else its beginning up to where a token
/// ends.
fn cut_text(text: &str, room: u64, encoding: Encoding) -> String {
    let room = u32::try_from(room).unwrap_or(u32::MAX);
    if let Some(cut) = json::cut(text, room, encoding) {
        return cut.unwrap_or_default();
    }
    let prefix = encoding.prefix_within_estimating(text, room);
    text[..prefix.end].to_string()
}

/// The note's tokens at its longest for this call: the room it takes from the budget.
fn note_room(how: &Shaping<'_>, budget: u64) -> u64 {
    let widest = ResultCut {
        code: ResultCode::ResultCut,
        tool: how.tool.to_string(),
        tokens_before: u64::from(u32::MAX) * 16,
        tokens_before_estimated: true,
        bytes_before: u64::from(u32::MAX) * 16,
        budget,
        items_left_out: u64::from(u32::MAX),
        paging: how.paging.to_vec(),
    };
    u64::from(how.encoding.count_text(&widest.to_string()))
}

/// Bytes of a result's text counted exactly when no budget applies (for the call log); past
/// them its tokens are estimated, so an unbudgeted 16 MiB result costs no more to count than
/// this.
pub const MAX_COUNTED_BYTES: usize = 256 << 10;

/// The content items that fit `room` tokens (all, counted, when `None`).
struct Fit {
    kept: Vec<Value>,
    spent: u64,
    left_out: u64,
    /// Something was cut or left out.
    cut: bool,
    tokens_before: u64,
    estimated: bool,
}

/// `items` kept in order while they fit `room`: the first text that does not is cut to the
/// room left, every item after it is left out, and so is an image or binary item over what
/// is left. Text past the cut is estimated, not counted.
/// With `probe`, it stops at the first item that does not fit (`cut` set, counts partial).
fn fitted(items: &[Value], room: Option<u64>, how: &Shaping<'_>, probe: bool) -> Fit {
    let mut fit = Fit {
        kept: Vec::with_capacity(items.len()),
        spent: 0,
        left_out: 0,
        cut: false,
        tokens_before: 0,
        estimated: false,
    };
    let mut cutting = false;
    for item in items {
        let left = room.map(|r| r.saturating_sub(fit.spent));
        if let Some(text) = text_of(item) {
            let (total, estimated) = match left {
                _ if cutting => how.encoding.count_estimating(text, 0),
                None => how.encoding.count_estimating(text, MAX_COUNTED_BYTES),
                Some(l) => {
                    let within = u32::try_from(l).unwrap_or(u32::MAX);
                    let p = how.encoding.prefix_within_estimating(text, within);
                    (u64::from(p.total), p.estimated)
                }
            };
            fit.tokens_before += total;
            fit.estimated |= estimated;
            if cutting {
                fit.left_out += 1;
            } else if left.is_none_or(|l| total <= l && !estimated) {
                fit.spent += total;
                fit.kept.push(item.clone());
            } else {
                cutting = true;
                fit.cut = true;
                if probe {
                    return fit;
                }
                let cut = cut_text(text, left.unwrap_or(0), how.encoding);
                fit.spent += u64::from(how.encoding.count_text(&cut));
                fit.kept.push(with_text(item, cut));
            }
            continue;
        }
        let tokens = match media_of(item) {
            Some((data, mime)) => media::tokens(data, mime, how.provider),
            None => u64::from(how.encoding.count_text(&item.to_string())),
        };
        fit.tokens_before += tokens;
        if cutting || left.is_some_and(|l| tokens > l) {
            fit.left_out += 1;
            fit.cut = true;
            if probe {
                return fit;
            }
        } else {
            fit.spent += tokens;
            fit.kept.push(item.clone());
        }
    }
    fit
}

/// `result` (a `tools/call` result object's text, as the server sent it) counted and, past
/// `how.budget`, cut. A result that is not a JSON object, or has no `content` list, is
/// counted as nothing and sent as it came.
pub fn shape(result: &str, how: &Shaping<'_>) -> Shaped {
    let bytes_before = result.len() as u64;
    let mut count = ResultCount {
        tokens_before: 0,
        tokens_before_estimated: false,
        tokens_after: 0,
        bytes_before,
        budget: how.budget,
        cut: false,
        structured_tokens: None,
        note: None,
    };
    let Ok(Value::Object(mut top)) = serde_json::from_str::<Value>(result) else {
        return Shaped { text: None, count };
    };
    if let Some(structured) = top.get("structuredContent") {
        count.structured_tokens = Some(u64::from(how.encoding.count_text(&structured.to_string())));
    }
    let Some(Value::Array(items)) = top.get("content") else {
        return Shaped { text: None, count };
    };
    // Whatever the budget, a text result no longer in bytes than its budget fits: a token
    // spans at least one byte (an image may cost more than its bytes, so not with one).
    let budget = how
        .budget
        .filter(|&b| bytes_before > b || items.iter().any(|i| media_of(i).is_some()));
    // First as if no note were needed; only a result that does not fit makes room for one.
    let mut fit = fitted(items, budget, how, true);
    if let Some(b) = budget
        && fit.cut
    {
        fit = fitted(items, Some(b.saturating_sub(note_room(how, b))), how, false);
    }
    count.tokens_before = fit.tokens_before;
    count.tokens_before_estimated = fit.estimated;
    let (Some(budget), true) = (how.budget, fit.cut) else {
        count.tokens_after = count.tokens_before;
        return Shaped { text: None, count };
    };
    let (mut kept, left_out) = (fit.kept, fit.left_out);
    count.tokens_after = fit.spent;
    let note = ResultCut {
        code: ResultCode::ResultCut,
        tool: how.tool.to_string(),
        tokens_before: count.tokens_before,
        tokens_before_estimated: count.tokens_before_estimated,
        bytes_before,
        budget,
        items_left_out: left_out,
        paging: how.paging.to_vec(),
    };
    let sentence = note.to_string();
    count.tokens_after += u64::from(how.encoding.count_text(&sentence));
    kept.push(serde_json::json!({"type": "text", "text": sentence}));
    count.cut = true;
    count.note = Some(note);
    top.insert("content".into(), Value::Array(kept));
    Shaped {
        text: Some(Value::Object(top).to_string()),
        count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn how(budget: u64) -> Shaping<'static> {
        Shaping {
            tool: "t",
            encoding: Encoding::O200kBase,
            provider: Provider::Openai,
            budget: Some(budget),
            paging: &[],
        }
    }

    #[test]
    fn an_image_over_what_is_left_is_left_out_and_later_text_kept() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAEAAAABAACAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        let result = json!({"content": [
            {"type": "text", "text": "before"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "text", "text": "after"},
        ]})
        .to_string();
        let shaped = shape(&result, &how(400));
        let back: Value = serde_json::from_str(shaped.text.as_deref().unwrap()).unwrap();
        let types: Vec<&str> = back["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["text", "text", "text"], "{back}");
        assert_eq!(back["content"][1]["text"], "after");
        let note = shaped.count.note.unwrap();
        assert_eq!(note.items_left_out, 1);
        // A 4096×4096 PNG: 765 tokens as OpenAI bills it, counted though left out.
        assert!(shaped.count.tokens_before > 765);
        assert!(shaped.count.tokens_after <= 400);
    }

    #[test]
    fn what_is_not_a_result_object_is_sent_as_it_came() {
        for odd in ["[1]", "{\"content\": 3}", "not json", "{}"] {
            let shaped = shape(odd, &how(200));
            assert_eq!(shaped.text, None);
            assert!(!shaped.count.cut);
        }
    }

    #[test]
    fn paging_arguments_are_found_in_the_schemas_order() {
        let schema =
            json!({"properties": {"path": {}, "Max-Results": {}, "page_token": {}, "q": {}}});
        assert_eq!(paging_arguments(&schema), ["Max-Results", "page_token"]);
        assert!(paging_arguments(&json!({"type": "object"})).is_empty());
    }
}
