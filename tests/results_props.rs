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

/// A content item's text: prose of any characters, or a JSON document.
fn text() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        "\\PC{0,6000}".prop_map(|t| (t, false)),
        "(word |日本語 |é|\n|  |12345 ){0,3000}".prop_map(|t| (t, false)),
        json_value().prop_map(|v| (v.to_string(), true)),
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_cut_result_is_json_utf8_within_budget_and_the_same_each_time(
        items in prop::collection::vec(text(), 1..4),
        budget in 200u64..2500,
    ) {
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
            prop_assert!(tokens <= budget, "{} tokens for a budget of {}", tokens, budget);
            // Every kept item but the note is the sent one or its cut: a JSON text still JSON.
            for (i, kept) in texts[..texts.len() - 1].iter().enumerate() {
                let (original, was_json) = &items[i];
                if *was_json && !kept.is_empty() {
                    prop_assert!(
                        serde_json::from_str::<Value>(kept).is_ok(),
                        "not JSON: {}", kept
                    );
                } else if !was_json {
                    prop_assert!(original.starts_with(kept));
                }
            }
        } else {
            prop_assert!(first.text.is_none());
            prop_assert_eq!(first.count.tokens_before, first.count.tokens_after);
        }
    }
}
