//! Integers past 2^53 under coercion (issue 30, item 10): a double holds them only
//! approximately, so comparing them as doubles took a neighbouring enum member for the model's
//! number. What is forwarded is the number the model wrote, or the call is refused.

use super::*;
use proptest::prelude::*;

/// The verdict and, when it runs, the forwarded `arg` for a coercing tool whose one argument
/// `arg` has `schema`, called with the JSON text `value`.
fn forwarded(schema: Value, value: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(value).unwrap();
    let report = run(
        root_object(schema),
        json!({ "arg": value }),
        true,
        UnknownArguments::Refuse,
    );
    (report.verdict == Verdict::Run)
        .then(|| report.calls[0].arguments.as_deref().unwrap()["arg"].clone())
}

/// `v` as JSON text: numbers as their decimal digits.
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

/// Whether two JSON numbers are the same integer, compared as decimal text.
fn same_text(a: &Value, b: &Value) -> bool {
    json_text(a) == json_text(b)
}

#[test]
fn an_integer_past_2_53_is_not_taken_for_its_neighbouring_enum_member() {
    // Before: forwarded as 9007199254740993.
    let got = forwarded(
        json!({"enum": [9_007_199_254_740_993u64]}),
        "9007199254740992",
    );
    assert_eq!(got, None, "{got:?}");
    // Its twin: the member itself is kept.
    assert_eq!(
        forwarded(
            json!({"enum": [9_007_199_254_740_993u64]}),
            "9007199254740993"
        ),
        Some(json!(9_007_199_254_740_993u64))
    );
    // As text, the same.
    assert_eq!(
        forwarded(
            json!({"enum": [9_007_199_254_740_993u64]}),
            "\"9007199254740992\""
        ),
        None
    );
    assert_eq!(
        forwarded(
            json!({"enum": [9_007_199_254_740_993u64]}),
            "\"9007199254740993\""
        ),
        Some(json!(9_007_199_254_740_993u64))
    );
}

#[test]
fn two_to_the_64_is_not_taken_for_a_const_of_two_to_the_64_minus_one() {
    // Before: 2^64 (read as a double) was forwarded as the const 2^64 - 1.
    let got = forwarded(json!({"const": u64::MAX}), "18446744073709551616");
    assert_eq!(got, None, "{got:?}");
    assert_eq!(
        forwarded(json!({"const": u64::MAX}), "18446744073709551615"),
        Some(json!(u64::MAX))
    );
    // Small numbers still match across forms: 2.0 is the member 2.
    assert_eq!(forwarded(json!({"enum": [2]}), "2.0"), Some(json!(2)));
    assert_eq!(forwarded(json!({"enum": [2]}), "\"2\""), Some(json!(2)));
}

fn big() -> impl Strategy<Value = i128> {
    prop_oneof![
        (1i128 << 53)..(1i128 << 64) + 4,
        -(1i128 << 63)..-(1i128 << 53),
        ((1i128 << 53) - 4)..((1i128 << 53) + 4),
    ]
}

proptest! {
    #[test]
    fn an_integer_past_2_53_is_never_replaced_by_another_member(
        model in big(),
        deltas in prop::collection::vec(-3i128..=3, 1..4),
        quoted in any::<bool>(),
    ) {
        let members: Vec<Value> = deltas
            .iter()
            .map(|d| model + d)
            .filter(|m| i64::try_from(*m).is_ok() || u64::try_from(*m).is_ok())
            .map(|m| serde_json::from_str::<Value>(&m.to_string()).unwrap())
            .collect();
        prop_assume!(!members.is_empty());
        let text = if quoted { format!("\"{model}\"") } else { model.to_string() };
        let model_value: Value = serde_json::from_str(&model.to_string()).unwrap();
        for schema in [json!({"enum": members}), json!({"const": members[0]})] {
            if let Some(got) = forwarded(schema.clone(), &text) {
                // Forwarded: the number the model wrote, never a different member.
                prop_assert!(
                    json_text(&got) == model.to_string()
                        || (!quoted && same_text(&got, &model_value)),
                    "{schema} {text} -> {got}"
                );
            }
        }
    }
}
