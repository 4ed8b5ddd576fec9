//! Property tests: generated instances that fit are never refused, and the quick pass
//! agrees with the full steps.

use super::*;
use proptest::prelude::*;
use std::borrow::Cow;

/// A schema drawn from the keywords the check reads (and some it skips).
fn arb_schema() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"enum": ["a", "B", 2, true]})),
        Just(json!({"enum": ["a", "A", "2", 2]})),
        Just(json!({"type": "string", "enum": ["x", "y"]})),
        Just(json!({"$ref": "#/x"})),
        Just(json!({"anyOf": [{"type": "string"}]})),
        Just(json!({"type": "decimal"})),
        Just(json!({})),
        Just(json!(true)),
    ];
    scalar.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            (
                prop::collection::btree_map("[a-f]", inner.clone(), 0..5),
                any::<u8>(),
                prop_oneof![
                    Just(None),
                    Just(Some(json!(false))),
                    Just(Some(json!({"type": "string"})))
                ],
            )
                .prop_map(|(props, req_bits, additional)| {
                    let required: Vec<Value> = props
                        .keys()
                        .enumerate()
                        .filter(|(i, _)| req_bits & (1 << i) != 0)
                        .map(|(_, k)| json!(k))
                        .collect();
                    let mut node = json!({"type": "object", "required": required,
                        "properties": Value::Object(props.into_iter().collect())});
                    if let Some(a) = additional {
                        node["additionalProperties"] = a;
                    }
                    node
                }),
        ]
    })
}

/// A value generated to fit `schema`, including values a tool reads after a cast.
fn fitting(schema: &Value) -> BoxedStrategy<Value> {
    let Some(node) = schema.as_object() else {
        return arb_json().boxed();
    };
    if ["$ref", "anyOf"].iter().any(|k| node.contains_key(*k)) {
        return arb_json().boxed();
    }
    if let Some(members) = node.get("enum").and_then(Value::as_array) {
        let members = members.clone();
        return (0..members.len(), any::<bool>())
            .prop_map(move |(i, upper)| match &members[i] {
                Value::String(s) if upper => json!(s.to_uppercase()),
                Value::Number(n) if upper => json!(n.to_string()),
                other => other.clone(),
            })
            .boxed();
    }
    let ty = node.get("type").cloned();
    match ty.as_ref().and_then(Value::as_str) {
        Some("string") => prop_oneof![
            any::<String>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from)
        ]
        .boxed(),
        Some("integer") => prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(|u| json!(u.to_string())),
            any::<i32>().prop_map(|i| json!(i.to_string())),
            any::<i32>().prop_map(|i| json!(f64::from(i)))
        ]
        .boxed(),
        Some("number") => prop_oneof![
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<i32>().prop_map(|i| json!(i.to_string())),
            any::<u64>().prop_map(|u| json!(u.to_string()))
        ]
        .boxed(),
        Some("boolean") => prop_oneof![
            any::<bool>().prop_map(Value::from),
            Just(json!("true")),
            Just(json!(0)),
            Just(json!(1))
        ]
        .boxed(),
        Some("null") => Just(Value::Null).boxed(),
        Some("array") => {
            let items = node.get("items").cloned().unwrap_or(json!({}));
            prop::collection::vec(fitting(&items), 0..4)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("object") => {
            let props: Vec<(String, Value)> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            let required: Vec<String> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let members: Vec<BoxedStrategy<Option<(String, Value)>>> = props
                .into_iter()
                .map(|(name, schema)| {
                    let keep = required.contains(&name);
                    (fitting(&schema), any::<bool>())
                        .prop_map(move |(v, present)| (keep || present).then(|| (name.clone(), v)))
                        .boxed()
                })
                .collect();
            members
                .prop_map(|members| Value::Object(members.into_iter().flatten().collect()))
                .boxed()
        }
        Some(_) => arb_json().boxed(),
        None if ty.is_some() => {
            prop_oneof![any::<String>().prop_map(Value::from), Just(Value::Null)].boxed()
        }
        None => arb_json().boxed(),
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
        Just(json!("type")),
        Just(json!("object")),
        // Integers beyond what an i64 or u64 holds, as text and as numbers.
        Just(json!("18446744073709551616")),
        Just(json!(1e20)),
        Just(json!("1e400")),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("properties".to_string()),
                    Just("items".to_string()),
                    Just("required".to_string()),
                    Just("enum".to_string()),
                    Just("additionalProperties".to_string()),
                    "[a-c]",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn an_instance_generated_to_fit_a_schema_is_never_refused(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
        coerce in any::<bool>(),
    ) {
        let report = run(root_object(schema), json!({"arg": value}), coerce, UnknownArguments::Refuse);
        prop_assert_eq!(report.verdict, Verdict::Run, "{:?}", report.calls[0].problems);
    }

    #[test]
    fn arbitrary_schemas_and_arguments_never_panic(
        schema in prop_oneof![arb_json(), arb_schema()],
        arguments in arb_json(),
        coerce in any::<bool>(),
        wrap in any::<bool>(),
    ) {
        let arguments = if wrap { Value::String(arguments.to_string()) } else { arguments };
        for unknown in [UnknownArguments::Refuse, UnknownArguments::Drop, UnknownArguments::Pass] {
            let report = run(schema.clone(), arguments.clone(), coerce, unknown);
            prop_assert_eq!(report.calls.len(), 1);
            prop_assert!(report.calls[0].problems.len() <= MAX_PROBLEMS + 1);
            prop_assert!(report.calls[0].problems.len() <= MAX_PROBLEMS);
            serde_json::to_string(&report).unwrap();
        }
    }

    #[test]
    fn forwarded_arguments_pass_the_check_again_unchanged(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
    ) {
        let schema = root_object(schema);
        let first = run(schema.clone(), json!({"arg": value}), true, UnknownArguments::Refuse);
        let forwarded = first.calls[0].arguments.clone().unwrap().into_owned();
        let second = run(schema, forwarded.clone(), true, UnknownArguments::Refuse);
        prop_assert_eq!(second.calls[0].arguments.clone().map(Cow::into_owned), Some(forwarded));
    }
}

// ---- the quick pass ----

/// `tool` with `only`, `fixed` and the undeclared-name policy drawn by the property test.
fn narrowed_tool(
    schema: Value,
    coerce: bool,
    unknown: UnknownArguments,
    only: Option<Vec<String>>,
    fixed: Option<&str>,
) -> OfferedTool {
    let mut tool = tool_with(schema);
    tool.coerce = coerce;
    tool.unknown_arguments = unknown;
    tool.only = only;
    if let Some(name) = fixed {
        tool.fixed.insert(name.to_string(), json!("set"));
    }
    tool
}

/// `value` with every other member of each object, at every level, set to null.
fn with_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .enumerate()
                .map(|(i, (k, v))| {
                    (
                        k.clone(),
                        if i % 2 == 0 {
                            Value::Null
                        } else {
                            with_nulls(v)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_nulls).collect()),
        other => other.clone(),
    }
}

fn unknown_policy() -> impl Strategy<Value = UnknownArguments> {
    prop_oneof![
        Just(UnknownArguments::Refuse),
        Just(UnknownArguments::Drop),
        Just(UnknownArguments::Pass),
    ]
}

#[test]
fn the_quick_pass_clears_calls_that_fit_as_sent_and_leaves_the_rest_to_the_full_steps() {
    // Within a turn's budget, as every check runs: an enum's scans are charged to it.
    let _turn = crate::check::budget::Turn::open(crate::check::MAX_CHECK_STEPS);
    let plan = plan();
    let clears = |tool: &str, arguments: Value| {
        let (offered, compiled, _) = plan.entry(tool).unwrap();
        compiled.fits_as_sent(arguments.as_object().unwrap(), offered)
    };
    let call = "mcp.bland_call.start_call";
    assert!(clears(
        call,
        json!({"phone_number": "+1", "max_duration": 5, "voice": null})
    ));
    assert!(clears("email.send", json!({"to": ["a@x"], "subject": "s"})));
    assert!(clears(
        "memory.search",
        json!({"query": "q", "note": null, "scope": "mail"})
    ));
    assert!(clears(
        "mcp.files.search",
        json!({"query": "q", "limit": 2.5})
    ));
    // A cast, a null a coercing tool leaves out, a missing or undeclared name, a wrapped list,
    // an enum member in another case, a name outside `only` or a fixed one: the full steps.
    assert!(!clears(
        call,
        json!({"phone_number": "+1", "max_duration": "5"})
    ));
    assert!(!clears(call, json!({"phone_number": "+1", "task": null})));
    assert!(!clears(call, json!({"task": "t"})));
    assert!(!clears(call, json!({"phone_number": "+1", "speed": 2})));
    assert!(!clears(
        "email.send",
        json!({"to": "[\"a@x\"]", "subject": "s"})
    ));
    assert!(!clears(
        "memory.search",
        json!({"query": "q", "note": "n", "limit": [1]})
    ));
    assert!(!clears(
        "mcp.files.search",
        json!({"query": "q", "scope": "all"})
    ));
    assert!(!clears(
        "mcp.files.search",
        json!({"query": "q", "other": 1})
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_quick_pass_gives_the_same_report_as_the_full_steps(
        (schema, value) in arb_schema().prop_flat_map(|s| { let f = fitting(&s); (Just(s), f) }),
        stray in arb_json(),
        arbitrary in prop_oneof![arb_json(), arb_schema()],
        coerce in any::<bool>(),
        unknown in unknown_policy(),
        only in prop::option::of(prop::collection::vec(prop_oneof![Just("arg".to_string()), "[a-c]"], 0..3)),
        fixed in prop::option::of(prop_oneof![Just("arg"), Just("a"), Just("zz")]),
    ) {
        let fits = json!({"arg": value});
        let cases = [
            (root_object(schema.clone()), fits.clone()),
            // The whole arguments, or the one member, wrapped in a JSON string.
            (root_object(schema.clone()), Value::String(fits.to_string())),
            (root_object(schema.clone()), json!({"arg": fits["arg"].to_string()})),
            // Nulls in place of members, required or optional, at every level.
            (root_object(schema.clone()), json!({"arg": with_nulls(&fits["arg"])})),
            (root_object(schema.clone()), json!({"arg": stray.clone(), "a": 1})),
            // Blank text, read as no arguments.
            (json!({"type": "object", "properties": {"arg": schema}}), json!(" ")),
            (arbitrary, stray),
        ];
        for (schema, arguments) in cases {
            let tool = narrowed_tool(schema, coerce, unknown, only.clone(), fixed);
            let plan = OfferedPlan::new(vec![tool], Vec::new(), None);
            let turn = turn(&[("t", arguments)]);
            for options in [CheckOptions { positional: false }, CheckOptions { positional: true }] {
                let quick = check_turn_with(&plan, &turn, &options, true);
                let full = check_turn_with(&plan, &turn, &options, false);
                prop_assert_eq!(&quick, &full);
                // Borrowed exactly when nothing changed, either way.
                let borrowed = |r: &Report<'_>| {
                    matches!(r.calls[0].arguments, Some(Cow::Borrowed(_)))
                };
                prop_assert_eq!(borrowed(&quick), borrowed(&full));
            }
        }
    }
}
