//! Properties of a cut result (issue 33): whatever the server sent, a cut result is a JSON
//! object (so a valid JSON-RPC result), its texts are valid UTF-8, a JSON text stays JSON,
//! what arrives never costs more than the budget, and the same input gives the same bytes.

use muster::results::{Shaping, shape};
use muster::tokens::{Encoding, Provider};
use proptest::prelude::*;
use serde_json::{Value, json};

/// JSON values of some depth and breadth, with long strings and non-ASCII text.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::from),
        "[a-zé日 ]{200,3000}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 400, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..60).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..30)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// How a text must come out of a cut.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Still JSON (a JSON text muster reads).
    Json,
    /// Its beginning (prose, or a text that is not JSON to muster).
    Text,
    /// Either: JSON nested deeper than muster reads, past the beginning a cut keeps, is read
    /// without a stack and counted; where it lies depends on the budget.
    Either,
}

/// A content item's text: prose of any characters, or a JSON document.
fn text() -> impl Strategy<Value = (String, Expect)> {
    prop_oneof![
        "\\PC{0,6000}".prop_map(|t| (t, Expect::Text)),
        "(word |日本語 |é|\n|  |12345 ){0,3000}".prop_map(|t| (t, Expect::Text)),
        // A list or object stays JSON; a lone scalar (a long string) is cut as text, as
        // docs/results.md says.
        json_value().prop_map(|v| {
            let expect = if v.is_array() || v.is_object() {
                Expect::Json
            } else {
                Expect::Either
            };
            (v.to_string(), expect)
        }),
    ]
}

/// `[[…]]` `depth` levels deep.
fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

/// Odd JSON texts: nesting about muster's depth limit ahead of a long list or deep in its
/// tail, escapes, surrogate pairs, repeated names, extreme numbers, and JSON cut short.
fn odd_text() -> impl Strategy<Value = (String, Expect)> {
    let limit = muster::input::JSON_DEPTH_LIMIT;
    prop_oneof![
        (limit - 20..limit + 20, 0usize..4000).prop_map(move |(depth, tail)| {
            let t = format!("[{}{}]", nested(depth - 1), ",1".repeat(tail));
            (t, if depth < limit { Expect::Json } else { Expect::Text })
        }),
        (500usize..6000, limit - 2..limit * 3).prop_map(|(items, depth)| {
            let t = format!("[{}{}]", "1,".repeat(items), nested(depth));
            (t, Expect::Either)
        }),
        (0usize..400, "[a-z\"\\\\\n\t\u{1}é日😀]{0,80}").prop_map(|(n, s)| {
            let s = serde_json::to_string(&s).unwrap();
            let member = format!(
                r#"{{"a": {s}, "b": "\ud83d\ude00\u00e9\n\t\"", "a": [1e300, -0.0, 12345678901234567890, -9223372036854775808, 0.1e-5], "c": {s}}}"#
            );
            let t = format!("[{}]", vec![member; n.max(1)].join(", "));
            (t, Expect::Json)
        }),
        (json_value(), any::<prop::sample::Index>()).prop_map(|(v, at)| {
            let whole = v.to_string();
            let mut end = at.index(whole.len().max(1));
            while !whole.is_char_boundary(end) {
                end -= 1;
            }
            let t = whole[..end].to_string();
            let expect = if serde_json::from_str::<Value>(&t).is_ok() {
                Expect::Json
            } else {
                Expect::Text
            };
            (t, expect)
        }),
    ]
}

fn shaped(result: &str, budget: u64) -> muster::results::Shaped {
    let paging = vec!["limit".to_string()];
    shape(
        result,
        &Shaping {
            tool: "t",
            encoding: Encoding::O200kBase,
            provider: Provider::Openai,
            budget: Some(budget),
            paging: &paging,
        },
    )
}

/// A result of `items` as content, shaped to `budget`: the properties every cut keeps.
fn holds(items: &[(String, Expect)], budget: u64) -> Result<(), TestCaseError> {
    let content: Vec<Value> = items
        .iter()
        .map(|(t, _)| json!({"type": "text", "text": t}))
        .collect();
    let result = json!({"content": content, "isError": false}).to_string();
    let first = shaped(&result, budget);
    let again = shaped(&result, budget);
    prop_assert_eq!(&first, &again);
    let sent = first.text.clone().unwrap_or(result.clone());
    // A JSON object is a valid JSON-RPC `result`; serde_json reads only valid UTF-8.
    let back: Value = serde_json::from_str(&sent).expect("a JSON object");
    prop_assert!(back.is_object());
    let texts: Vec<&str> = back["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    let tokens: u64 = texts
        .iter()
        .map(|t| u64::from(Encoding::O200kBase.count_text(t)))
        .sum();
    prop_assert_eq!(tokens, first.count.tokens_after);
    if first.count.cut {
        prop_assert!(
            tokens <= budget,
            "{} tokens for a budget of {}",
            tokens,
            budget
        );
        // Every kept item but the note is the sent one or its cut: a JSON text still JSON.
        for (i, kept) in texts[..texts.len() - 1].iter().enumerate() {
            let (original, expect) = &items[i];
            let json = kept.is_empty() || serde_json::from_str::<Value>(kept).is_ok();
            let prefix = original.starts_with(kept);
            match expect {
                Expect::Json => prop_assert!(json, "not JSON: {}", kept),
                Expect::Text => prop_assert!(prefix, "not its beginning: {}", kept),
                Expect::Either => prop_assert!(json || prefix, "neither: {}", kept),
            }
        }
    } else {
        prop_assert!(first.text.is_none());
        prop_assert_eq!(first.count.tokens_before, first.count.tokens_after);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_cut_result_is_json_utf8_within_budget_and_the_same_each_time(
        items in prop::collection::vec(text(), 1..4),
        budget in 200u64..2500,
    ) {
        holds(&items, budget)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn odd_and_deep_json_is_cut_as_json_or_as_text_never_broken(
        items in prop::collection::vec(odd_text(), 1..3),
        budget in 200u64..2500,
    ) {
        holds(&items, budget)?;
    }
}
