//! Schemas and arguments nested ten thousand levels deep.

use super::*;

/// `levels` levels of `{"type": "object", "properties": {"a": ...}}` and the matching value
/// `{"a": {"a": ...}}`, ending in a string schema and the leaf `leaf`.
fn deep_pair(levels: usize, leaf: Value) -> (Value, Value) {
    let mut schema = json!({"type": "string"});
    let mut value = leaf;
    for i in 0..levels {
        if i % 3 == 2 {
            // Built by hand: `json!` would copy the nested value through serde, recursively.
            let mut node = Map::new();
            node.insert("type".into(), json!("array"));
            node.insert("items".into(), schema);
            schema = Value::Object(node);
            value = Value::Array(vec![value]);
        } else {
            let mut props = Map::new();
            props.insert("a".into(), schema);
            let mut node = Map::new();
            node.insert("type".into(), json!("object"));
            node.insert("required".into(), json!(["a"]));
            node.insert("properties".into(), Value::Object(props));
            schema = Value::Object(node);
            let mut map = Map::new();
            map.insert("a".into(), value);
            value = Value::Object(map);
        }
    }
    let mut args = Map::new();
    args.insert("a".into(), value);
    let mut props = Map::new();
    props.insert("a".into(), schema);
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), Value::Object(props));
    (Value::Object(root), Value::Object(args))
}

#[test]
fn schemas_and_arguments_nested_ten_thousand_deep_are_checked_without_overflow() {
    for (leaf, verdict) in [
        (json!("x"), Verdict::Run),
        (json!({"no": 1}), Verdict::Refused),
    ] {
        let (schema, arguments) = deep_pair(10_000, leaf);
        let plan = OfferedPlan::new(vec![tool_with(schema)], Vec::new(), None);
        let turn = Turn {
            calls: vec![Call {
                id: "c1".into(),
                name: "t".into(),
                arguments,
                unreadable: None,
                written: Box::default(),
            }],
        };
        let report = check_turn(&plan, &turn, &CheckOptions::default());
        assert_eq!(report.verdict, verdict);
        if verdict == Verdict::Refused {
            match &report.calls[0].problems[0].problem {
                CallProblem::WrongType {
                    argument,
                    expected,
                    got,
                    ..
                } => {
                    assert!(argument.starts_with("a.a[0].a.a[0]"), "{argument}");
                    assert_eq!(expected, &["string"]);
                    assert_eq!(got.kind, "object");
                }
                other => panic!("{other:?}"),
            }
        } else {
            assert_eq!(
                deep::depth(report.calls[0].arguments.as_deref().unwrap()),
                10_001
            );
        }
    }
}
