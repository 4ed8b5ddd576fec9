use super::*;
use proptest::prelude::*;
use serde_json::json;

fn search_schema() -> Schema {
    Schema::new(&json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "scope": {"type": "string"},
            "limit": {"type": "integer"}
        },
        "required": ["query", "scope"]
    }))
}

fn allow(tools: &[&str]) -> Narrowing {
    Narrowing {
        allow: Some(tools.iter().map(|t| t.to_string()).collect()),
        ..Default::default()
    }
}

fn offered(o: NarrowOutcome) -> Offered {
    match o {
        NarrowOutcome::Offered(o) => o,
        other => panic!("expected offered, got {other:?}"),
    }
}

/// Without narrowing, a `required` entry that is not text names no
/// argument the model could write and is still dropped, as with narrowing:
/// the path that skips parsing is taken only when there is none.
#[test]
fn a_required_entry_that_is_not_text_is_dropped_without_narrowing_too() {
    let schema =
        Schema::new(&json!({"type": "object", "properties": {"a": {}}, "required": ["a", 1]}));
    assert!(!schema.required_text_only());
    let o = offered(narrow_tool("t", &schema, &Narrowing::default()));
    assert_eq!(o.shown_schema.value()["required"], json!(["a"]));
    let only_number = Schema::new(&json!({"type": "object", "required": [null]}));
    let o = offered(narrow_tool("t", &only_number, &Narrowing::default()));
    assert!(o.shown_schema.value().get("required").is_none());
}

#[test]
fn no_narrowing_offers_the_schema_unchanged() {
    let schema = search_schema();
    let o = offered(narrow_tool("search", &schema, &Narrowing::default()));
    assert_eq!(o.shown_schema, search_schema());
    assert!(o.shown_schema.ptr_eq(&schema), "shared, not copied");
    assert!(o.fixed.is_empty() && o.only.is_none() && o.warnings.is_empty());
}

#[test]
fn deny_excludes_and_wins_over_allow() {
    let mut n = allow(&["search"]);
    n.deny.push("search".into());
    assert_eq!(
        narrow_tool("search", &search_schema(), &n),
        NarrowOutcome::Excluded {
            code: ExcludeCode::Denied
        }
    );
}

#[test]
fn allow_excludes_unlisted_tools() {
    let n = allow(&["other"]);
    assert_eq!(
        narrow_tool("search", &search_schema(), &n),
        NarrowOutcome::Excluded {
            code: ExcludeCode::NotAllowed
        }
    );
}

#[test]
fn only_removes_every_other_argument_from_properties_and_required() {
    let mut n = allow(&["search"]);
    n.only
        .insert("search".into(), vec!["query".into(), "scope".into()]);
    let o = offered(narrow_tool("search", &search_schema(), &n));
    assert_eq!(
        o.shown_schema.value()["properties"],
        json!({"query": {"type": "string"}, "scope": {"type": "string"}})
    );
    assert_eq!(
        o.shown_schema.value()["required"],
        json!(["query", "scope"])
    );
    assert_eq!(o.only, Some(vec!["query".to_string(), "scope".to_string()]));
}

#[test]
fn a_fixed_argument_is_hidden_and_rides() {
    let mut n = allow(&["search"]);
    n.params
        .entry("search".into())
        .or_default()
        .insert("scope".into(), json!("team-handbook"));
    let o = offered(narrow_tool("search", &search_schema(), &n));
    assert_eq!(
        o.shown_schema.value()["properties"],
        json!({"query": {"type": "string"}, "limit": {"type": "integer"}})
    );
    assert_eq!(o.shown_schema.value()["required"], json!(["query"]));
    assert_eq!(o.fixed["scope"], json!("team-handbook"));
}

#[test]
fn required_list_emptied_by_narrowing_is_removed() {
    let schema = Schema::new(
        &json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}),
    );
    let mut n = allow(&["t"]);
    n.params
        .entry("t".into())
        .or_default()
        .insert("a".into(), json!(1));
    let o = offered(narrow_tool("t", &schema, &n));
    assert!(o.shown_schema.value().get("required").is_none());
    assert_eq!(o.shown_schema.value()["properties"], json!({"b": {}}));
}

#[test]
fn other_schema_keys_are_kept() {
    let schema = Schema::new(
        &json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false,
                        "$schema": "http://json-schema.org/draft-07/schema#"}),
    );
    let o = offered(narrow_tool("t", &schema, &Narrowing::default()));
    assert_eq!(o.shown_schema.value()["additionalProperties"], json!(false));
    assert!(o.shown_schema.value().get("$schema").is_some());
}

#[test]
fn only_undeclared_argument_warns_and_still_offers() {
    let mut n = allow(&["search"]);
    n.only.insert(
        "search".into(),
        vec!["query".into(), "scope".into(), "ghost".into()],
    );
    let o = offered(narrow_tool("search", &search_schema(), &n));
    assert_eq!(
        o.warnings,
        vec![DriftWarning {
            code: DriftCode::OnlyUndeclared,
            tool: "search".into(),
            argument: "ghost".into()
        }]
    );
    assert!(o.shown_schema.value()["properties"].get("ghost").is_none());
}

#[test]
fn fixed_undeclared_argument_keeps_the_tool_away() {
    let mut n = allow(&["search"]);
    n.params
        .entry("search".into())
        .or_default()
        .insert("tenant".into(), json!("a"));
    match narrow_tool("search", &search_schema(), &n) {
        NarrowOutcome::KeptAway {
            code, arguments, ..
        } => {
            assert_eq!(code, KeepAwayCode::FixedUndeclared);
            assert_eq!(arguments, ["tenant"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn required_argument_neither_listed_nor_fixed_keeps_the_tool_away_with_a_warning() {
    let mut n = allow(&["search"]);
    n.only.insert("search".into(), vec!["query".into()]);
    match narrow_tool("search", &search_schema(), &n) {
        NarrowOutcome::KeptAway {
            code,
            arguments,
            warnings,
        } => {
            assert_eq!(code, KeepAwayCode::RequiredUnreachable);
            assert_eq!(arguments, ["scope"]);
            assert_eq!(
                warnings,
                vec![DriftWarning {
                    code: DriftCode::RequiredUnreachable,
                    tool: "search".into(),
                    argument: "scope".into()
                }]
            );
            assert!(warnings[0].to_string().contains("search"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn required_argument_that_is_fixed_is_reachable() {
    let mut n = allow(&["search"]);
    n.only.insert("search".into(), vec!["query".into()]);
    n.params
        .entry("search".into())
        .or_default()
        .insert("scope".into(), json!("team-handbook"));
    let o = offered(narrow_tool("search", &search_schema(), &n));
    assert_eq!(
        o.shown_schema.value()["properties"],
        json!({"query": {"type": "string"}})
    );
    assert_eq!(o.shown_schema.value()["required"], json!(["query"]));
}

#[test]
fn non_object_schema_is_kept_away() {
    match narrow_tool("t", &Schema::new(&json!("string")), &Narrowing::default()) {
        NarrowOutcome::KeptAway { code, .. } => assert_eq!(code, KeepAwayCode::SchemaNotObject),
        other => panic!("{other:?}"),
    }
}

#[test]
fn codes_are_kebab_case_in_json_and_as_str() {
    assert_eq!(
        serde_json::to_value(KeepAwayCode::RequiredUnreachable).unwrap(),
        json!("required-unreachable")
    );
    assert_eq!(KeepAwayCode::FixedUndeclared.as_str(), "fixed-undeclared");
    assert_eq!(DriftCode::OnlyUndeclared.as_str(), "only-undeclared");
    assert_eq!(ExcludeCode::NotAllowed.as_str(), "not-allowed");
    assert_eq!(ExcludeCode::Denied.to_string(), "denied");
}

// --- validation ---

fn input() -> NarrowingInput {
    NarrowingInput {
        server: "docs".into(),
        file: Some("policies/mcp/docs.toml".into()),
        line: Some(1),
        allow: Some(vec![Entry::at("search", 3)]),
        ..Default::default()
    }
}

fn only(tool: &str, line: usize, args: &[&str]) -> OnlyEntry {
    OnlyEntry {
        tool: Entry::at(tool, line),
        args: args.iter().map(|a| Entry::at(*a, line)).collect(),
    }
}

fn params(tool: &str, line: usize, args: &[&str]) -> ParamsEntry {
    ParamsEntry {
        tool: Entry::at(tool, line),
        args: args
            .iter()
            .enumerate()
            .map(|(i, a)| (Entry::at(*a, line + 1 + i), json!("v")))
            .collect(),
    }
}

fn problems(i: &NarrowingInput) -> Vec<Problem> {
    let err = validate_narrowing(i).expect_err("should be refused");
    assert_eq!(err.kind(), ErrorKind::Policy);
    err.problems().to_vec()
}

#[test]
fn a_valid_block_becomes_a_narrowing() {
    let mut i = input();
    i.only.push(only("search", 8, &["query"]));
    i.params.push(params("search", 5, &["scope"]));
    i.deny.push(Entry::new("delete"));
    let n = validate_narrowing(&i).unwrap();
    assert_eq!(n.allow, Some(vec!["search".to_string()]));
    assert_eq!(n.deny, vec!["delete".to_string()]);
    assert_eq!(n.only["search"], vec!["query".to_string()]);
    assert_eq!(n.params["search"]["scope"], json!("v"));
}

#[test]
fn only_tool_outside_allow_is_refused_with_its_line() {
    let mut i = input();
    i.only.push(only("fetch", 9, &["url"]));
    let p = problems(&i);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].line, Some(9));
    assert_eq!(
        p[0].file.as_deref(),
        Some(std::path::Path::new("policies/mcp/docs.toml"))
    );
    assert!(p[0].message.contains("fetch") && p[0].message.contains("allow"));
}

#[test]
fn params_tool_outside_allow_is_refused() {
    let mut i = input();
    i.params.push(params("fetch", 6, &["url"]));
    let p = problems(&i);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].line, Some(6));
    assert!(p[0].message.contains("`params` names tool `fetch`"));
}

#[test]
fn only_and_params_without_allow_are_refused() {
    let mut i = input();
    i.allow = None;
    i.only.push(only("search", 9, &["query"]));
    i.params.push(params("search", 5, &["scope"]));
    let p = problems(&i);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].message.contains("`only` is given without `allow`"));
    assert!(p[1].message.contains("`params` is given without `allow`"));
}

#[test]
fn argument_both_listed_and_fixed_is_refused() {
    let mut i = input();
    i.only.push(only("search", 9, &["query", "scope"]));
    i.params.push(params("search", 5, &["scope"]));
    let p = problems(&i);
    assert_eq!(p.len(), 1);
    assert!(p[0].message.contains("`scope`") && p[0].message.contains("both"));
    assert_eq!(p[0].line, Some(9));
}

#[test]
fn empty_only_list_is_refused() {
    let mut i = input();
    i.only.push(only("search", 9, &[]));
    let p = problems(&i);
    assert_eq!(p.len(), 1);
    assert!(p[0].message.contains("empty list"));
}

#[test]
fn repeated_and_empty_names_are_refused() {
    let mut i = input();
    i.only.push(only("search", 9, &["query", "query", ""]));
    i.allow.as_mut().unwrap().push(Entry::at("", 4));
    let p = problems(&i);
    let msgs: Vec<&str> = p.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(p.len(), 3, "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("empty name in `allow`")));
    assert!(msgs.iter().any(|m| m.contains("`query` is repeated")));
    assert!(
        msgs.iter()
            .any(|m| m.contains("empty name in `only` for `search`"))
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut i = input();
    i.only.push(only("fetch", 9, &[]));
    i.params.push(params("other", 12, &["x"]));
    i.deny = vec![Entry::at("d", 2), Entry::at("d", 2)];
    let p = problems(&i);
    assert_eq!(p.len(), 4, "{p:?}");
}

// --- property ---

fn arb_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "d", "e", "f"]).prop_map(str::to_string)
}

proptest! {
    #[test]
    fn shown_schema_holds_nothing_outside_only_and_nothing_fixed(
        props in prop::collection::btree_set(arb_name(), 0..6),
        required in prop::collection::vec(arb_name(), 0..6),
        only_list in prop::option::of(prop::collection::vec(arb_name(), 1..4)),
        fixed in prop::collection::btree_set(arb_name(), 0..3),
    ) {
        let properties: serde_json::Map<String, Value> =
            props.iter().map(|p| (p.clone(), json!({"type": "string"}))).collect();
        let schema = Schema::new(&json!({"type": "object", "properties": properties, "required": required}));
        let mut n = allow(&["t"]);
        if let Some(o) = &only_list {
            n.only.insert("t".into(), o.clone());
        }
        n.params.insert("t".into(), fixed.iter().map(|f| (f.clone(), json!(1))).collect());

        if let NarrowOutcome::Offered(o) = narrow_tool("t", &schema, &n) {
            let shown_props: Vec<String> = o.shown_schema.value()["properties"]
                .as_object().unwrap().keys().cloned().collect();
            let shown_req: Vec<String> = o.shown_schema.value().get("required")
                .map(|r| r.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            for name in shown_props.iter().chain(&shown_req) {
                prop_assert!(!fixed.contains(name), "fixed `{name}` shown");
                if let Some(o) = &only_list {
                    prop_assert!(o.contains(name), "`{name}` shown outside only");
                }
            }
        }
    }
}
