//! A `resources/read` or `prompts/get` result held to its server's result
//! budget, by the same cut as a tool result ([`crate::results::shape`]):
//! a read's `contents` and a prompt's messages' `content` are counted and
//! cut as a tool result's `content` items are (text cut where a token
//! ends, or as JSON; an image, audio or blob over what is left left out),
//! then put back where they were, with the closing note as one more item
//! (a text resource under the URI read, or a user message) and the counts
//! in muster's own `_meta` key. It decides only how the two result shapes
//! map onto a tool result's; what is cut is the results module's.

use serde_json::{Value, json};

use super::super::own_meta::with_own;
use crate::results::Shaping;

/// Where a message came from, kept on its content while it is shaped (a
/// left-out image leaves a gap, so the kept items' places are not theirs).
const PLACE: &str = "dev.muster/place";

/// Which result is shaped.
pub(super) enum Body {
    /// A `resources/read` result of `uri`: its `contents`.
    Read {
        /// The URI read, which the note is put under.
        uri: String,
    },
    /// A `prompts/get` result: its `messages`.
    Prompt,
}

impl Body {
    fn key(&self) -> &'static str {
        match self {
            Body::Read { .. } => "contents",
            Body::Prompt => "messages",
        }
    }
}

/// `result` (the server's result object's text) counted against
/// `how.budget` and cut to it when over, its counts under muster's
/// `_meta` key. A result with no list where `body` keeps its content, or
/// a prompt message whose `content` is not an object, is sent as it came.
pub(super) fn shaped(result: &str, body: &Body, how: &Shaping<'_>) -> String {
    let Ok(Value::Object(mut top)) = serde_json::from_str::<Value>(result) else {
        return result.to_string();
    };
    let Some(Value::Array(list)) = top.get(body.key()) else {
        return result.to_string();
    };
    let mut items = Vec::with_capacity(list.len());
    for (place, entry) in list.iter().enumerate() {
        items.push(match body {
            Body::Read { .. } => json!({"type": "resource", "resource": entry}),
            Body::Prompt => match entry.get("content") {
                Some(Value::Object(content)) => {
                    let mut content = content.clone();
                    content.insert(PLACE.into(), place.into());
                    Value::Object(content)
                }
                _ => return result.to_string(),
            },
        });
    }
    let wrapped = json!({"content": items}).to_string();
    let shaped = crate::results::shape(&wrapped, how);
    let details = json!({"result": shaped.count});
    let cut = shaped
        .text
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|mut v| match v.get_mut("content").map(Value::take) {
            Some(Value::Array(kept)) => Some(kept),
            _ => None,
        });
    let (Some(mut kept), Some(Value::Array(mut list))) = (cut, top.remove(body.key())) else {
        return with_own(result, &details);
    };
    let note = kept
        .pop()
        .and_then(|n| n.get("text").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    let rebuilt: Vec<Value> = match body {
        Body::Read { uri } => kept
            .into_iter()
            .filter_map(|mut item| item.get_mut("resource").map(Value::take))
            .chain(std::iter::once(
                json!({"uri": uri, "mimeType": "text/plain", "text": note}),
            ))
            .collect(),
        Body::Prompt => kept
            .into_iter()
            .filter_map(|mut content| {
                let place = content.as_object_mut()?.remove(PLACE)?.as_u64()?;
                let mut message = list.get_mut(usize::try_from(place).ok()?)?.take();
                message.as_object_mut()?.insert("content".into(), content);
                Some(message)
            })
            .chain(std::iter::once(
                json!({"role": "user", "content": {"type": "text", "text": note}}),
            ))
            .collect(),
    };
    top.insert(body.key().into(), Value::Array(rebuilt));
    with_own(&Value::Object(top).to_string(), &details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, Provider};

    fn how(budget: u64) -> Shaping<'static> {
        Shaping {
            tool: "mcp__docs__guide",
            encoding: Encoding::O200kBase,
            provider: Provider::Openai,
            budget: Some(budget),
            paging: &[],
        }
    }

    fn own(v: &Value) -> &Value {
        &v["_meta"][super::super::super::META_KEY]["result"]
    }

    #[test]
    fn a_long_resource_is_cut_to_its_budget_under_its_own_uri_with_the_note_last() {
        let long = "word ".repeat(5_000);
        let result = json!({"contents": [
            {"uri": "docs://a", "mimeType": "text/plain", "text": long},
            {"uri": "docs://b", "mimeType": "text/plain", "text": "after"},
        ]})
        .to_string();
        let body = Body::Read {
            uri: "docs://a".into(),
        };
        let back: Value = serde_json::from_str(&shaped(&result, &body, &how(300))).unwrap();
        let contents = back["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 2, "{back}");
        assert_eq!(contents[0]["uri"], "docs://a");
        assert!(contents[0]["text"].as_str().unwrap().len() < long.len());
        assert!(
            contents[1]["text"]
                .as_str()
                .unwrap()
                .starts_with("[muster result-cut]")
        );
        assert_eq!(contents[1]["uri"], "docs://a");
        assert_eq!(own(&back)["cut"], true);
        assert!(own(&back)["tokens_after"].as_u64().unwrap() <= 300);
    }

    #[test]
    fn a_prompt_keeps_each_kept_message_s_role_and_a_short_one_is_passed_whole() {
        let long = "word ".repeat(5_000);
        let result = json!({"description": "d", "messages": [
            {"role": "assistant", "content": {"type": "text", "text": "short"}},
            {"role": "user", "content": {"type": "text", "text": long}},
        ]})
        .to_string();
        let back: Value = serde_json::from_str(&shaped(&result, &Body::Prompt, &how(300))).unwrap();
        let messages = back["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{back}");
        assert_eq!(
            messages[0],
            json!({"role": "assistant", "content": {"type": "text", "text": "short"}})
        );
        assert_eq!(messages[1]["role"], "user");
        assert!(messages[1]["content"].get(PLACE).is_none(), "{back}");
        assert!(
            messages[2]["content"]["text"]
                .as_str()
                .unwrap()
                .starts_with("[muster result-cut]")
        );
        assert_eq!(back["description"], "d");

        let short =
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]})
                .to_string();
        let back: Value = serde_json::from_str(&shaped(&short, &Body::Prompt, &how(300))).unwrap();
        assert_eq!(
            back["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "hi"}}])
        );
        assert_eq!(own(&back)["cut"], false);
    }

    #[test]
    fn what_is_not_a_result_of_its_kind_is_sent_as_it_came() {
        for odd in [
            "[1]",
            "{}",
            r#"{"messages": [{"role": "user", "content": "x"}]}"#,
        ] {
            assert_eq!(shaped(odd, &Body::Prompt, &how(300)), odd);
        }
    }
}
