//! `muster count` against every public, API-measured example in
//! `tests/fixtures/count/` (sources and licences in its README): each
//! count is within the error the fixture states, 0 where exact.

use muster::count::{CountOptions, count};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

/// One fixture case, read with its own types.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    input_tokens: u32,
    error: u32,
    /// Why the count differs, where it does.
    #[serde(default)]
    why: Option<String>,
    request: Value,
}

fn cases() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/count");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let list: Vec<Case> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for case in list {
            out.push((stem.clone(), case));
        }
    }
    out
}

#[test]
fn every_fixture_is_within_its_stated_error() {
    let cases = cases();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut report = String::new();
    let mut failed = 0;
    for (file, case) in &cases {
        let got = count(&case.request, &CountOptions::default())
            .unwrap_or_else(|p| panic!("{file} {}: {p}", case.name));
        let off = got.input_tokens.abs_diff(case.input_tokens);
        let line = format!(
            "{file} {}: measured {} counted {} ({:+}) stated {} {:?}\n",
            case.name,
            case.input_tokens,
            got.input_tokens,
            i64::from(got.input_tokens) - i64::from(case.input_tokens),
            case.error,
            got.notes
        );
        report.push_str(&line);
        if off > case.error {
            failed += 1;
        }
        // A stated error comes with its reason, and an exact count is exact.
        assert!(
            case.error == 0 || case.why.is_some(),
            "{file} {}: error without why",
            case.name
        );
        if got.accuracy == muster::contract::Accuracy::Exact {
            assert_eq!(got.notes, vec![], "{file} {}", case.name);
            // A report that says exact is off by at most the one token of
            // the two conflicting measurements docs/count.md names.
            assert!(off <= 1, "{file} {}: exact but {off} off", case.name);
        }
    }
    eprint!("{report}");
    assert_eq!(
        failed, 0,
        "{failed} fixtures past their stated error:\n{report}"
    );
}

/// The JSON `muster count --format json` prints, read with its own types.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    format_version: u32,
    provider: String,
    model: String,
    encoding: String,
    accuracy: String,
    input_tokens: u32,
    breakdown: Parts,
    tools: Vec<Tool>,
    notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Parts {
    messages: u32,
    tools: u32,
    tool_choice: u32,
    overhead: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tool {
    name: String,
    tokens: u32,
}

fn muster() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("muster").unwrap()
}

fn fixture(file: &str, name: &str) -> Value {
    cases()
        .into_iter()
        .find(|(f, c)| f == file && c.name == name)
        .unwrap()
        .1
        .request
}

#[test]
fn the_cli_prints_the_report_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request.json");
    let request = fixture(
        "pamelafox-openai-messages-token-helper",
        "search-sources-toolchoice-name",
    );
    std::fs::write(&path, request.to_string()).unwrap();
    let out = muster()
        .args(["count", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.format_version, 1);
    assert_eq!(report.provider, "openai");
    assert_eq!(report.model, "gpt-3.5-turbo");
    assert_eq!(report.encoding, "cl100k_base");
    assert_eq!(report.accuracy, "exact");
    assert_eq!(report.input_tokens, 75);
    let b = &report.breakdown;
    assert_eq!(
        b.messages + b.tools + b.tool_choice + b.overhead,
        report.input_tokens
    );
    // A named function: 7 + the name's tokens ("search_sources" is 2).
    assert_eq!(b.tool_choice, 9);
    assert_eq!(report.tools.len(), 1);
    assert_eq!(report.tools[0].name, "search_sources");
    assert!(report.tools[0].tokens < b.tools);
    assert!(report.notes.is_empty());

    // The same bytes from standard input, and on every run.
    let again = muster()
        .args(["count", "-", "--format", "json"])
        .write_stdin(request.to_string())
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(again.stdout, out.stdout);

    // Text output names the total and says exact.
    let text = muster()
        .args(["count", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("75 input tokens (exact) for openai gpt-3.5-turbo"),
        "{text}"
    );
}

#[test]
fn anthropic_counts_say_they_are_estimates() {
    let request = fixture("anthropic-docs", "messages-with-tools");
    let out = muster()
        .args(["count", "-", "--format", "json"])
        .write_stdin(request.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.provider, "anthropic");
    assert_eq!(report.accuracy, "estimate");
    assert_eq!(report.notes, ["proxy-tokenizer"]);
    // The documented tool-use system prompt for Claude 4 models, auto.
    assert_eq!(report.breakdown.overhead, 1 + 346);

    // tool_choice any: the documented 313 instead.
    let mut forced = request.clone();
    forced["tool_choice"] = serde_json::json!({"type": "any"});
    let out = muster()
        .args(["count", "-", "--format", "json"])
        .write_stdin(forced.to_string())
        .output()
        .unwrap();
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.breakdown.overhead, 1 + 313);
}

#[test]
fn tool_choice_costs_differ_as_measured() {
    let base = fixture("hmarr-openai-chat-tokens", "case-12");
    let with = |choice: Value| {
        let mut r = base.clone();
        r["function_call"] = choice;
        count(&r, &CountOptions::default()).unwrap()
    };
    let auto = with(Value::from("auto"));
    let none = with(Value::from("none"));
    let named = with(serde_json::json!({"name": "foo"}));
    assert_eq!(none.input_tokens, auto.input_tokens + 1);
    assert_eq!(named.input_tokens, auto.input_tokens + 5);
    // `required` has no public measurement: counted as auto, and said so.
    let mut r = base.clone();
    r["tool_choice"] = Value::from("required");
    let required = count(&r, &CountOptions::default()).unwrap();
    assert_eq!(required.input_tokens, auto.input_tokens);
    assert_eq!(required.accuracy, muster::contract::Accuracy::Estimate);
}

#[test]
fn bad_requests_exit_2_naming_the_field() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("not json", &[], "cannot read the request"),
        // Issue 30, item 16: a second `model` switched the provider.
        (
            r#"{"model": "gpt-4o", "messages": [], "model": "claude-opus-4-1"}"#,
            &[],
            "member name \"model\" is given twice",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "role": "system", "content": "x"}]}"#,
            &[],
            "member name \"role\" is given twice",
        ),
        ("[1]", &[], "not an object"),
        (r#"{"messages": []}"#, &[], "names no `model`"),
        (r#"{"model": "gpt-4o"}"#, &[], "no `messages`"),
        (
            r#"{"model": "gpt-4o", "messages": {}}"#,
            &[],
            "`messages` is an object",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [{"content": "x"}]}"#,
            &[],
            "`messages[0]` has no `role`",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": 3}]}"#,
            &[],
            "`messages[0].content` is a number",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [], "tools": [{"type": "function", "function": {}}]}"#,
            &[],
            "`tools[0].function` has no `name`",
        ),
        (
            r#"{"model": "gpt-4o", "messages": [], "tool_choice": "sometimes"}"#,
            &[],
            "`tool_choice` is \"sometimes\"",
        ),
        (
            r#"{"model": "llama-3", "messages": []}"#,
            &[],
            "cannot tell the provider",
        ),
        (
            r#"{"model": "gpt-2", "messages": []}"#,
            &["--provider", "openai"],
            "unknown OpenAI model",
        ),
        (
            r#"{"model": "claude-2.1", "messages": []}"#,
            &[],
            "unknown Anthropic model",
        ),
        (
            r#"{"model": "claude-opus-4-1", "messages": [{"role": "system", "content": "x"}]}"#,
            &[],
            "`messages[0].role` is \"system\"",
        ),
        (
            r#"{"model": "claude-opus-4-1", "messages": [], "tools": [{"type": "web_search_20250305", "name": "s"}]}"#,
            &[],
            "`tools[0].type`",
        ),
    ];
    for (body, args, expected) in cases {
        let out = muster()
            .arg("count")
            .arg("-")
            .args(*args)
            .write_stdin(*body)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {stderr}");
        assert!(stderr.contains(expected), "{body}: {stderr}");
        assert!(stderr.contains("help:"), "{body}: {stderr}");
        assert!(!stderr.contains("panicked"), "{body}: {stderr}");
    }
    // An unknown provider is refused by the argument parser.
    let out = muster()
        .args(["count", "-", "--provider", "gemini"])
        .write_stdin("{}")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Every tool definition in the fixtures' requests: (name, description,
/// schema), wherever the request shape puts them.
fn fixture_definitions() -> Vec<(String, String, Value)> {
    fn walk(v: &Value, out: &mut Vec<(String, String, Value)>) {
        match v {
            Value::Object(map) => {
                let schema = map.get("parameters").or_else(|| map.get("input_schema"));
                if let (Some(Value::String(name)), Some(schema)) = (map.get("name"), schema) {
                    let description = map.get("description").and_then(Value::as_str);
                    out.push((
                        name.clone(),
                        description.unwrap_or("").into(),
                        schema.clone(),
                    ));
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (_, case) in cases() {
        walk(&case.request, &mut out);
    }
    // Shapes the fixtures do not hold: past the node budget, past the
    // depth limit, line breaks of every kind, unions and lists of objects.
    let mut deep = json!({"type": "string"});
    for _ in 0..40 {
        deep = json!({"type": "object", "properties": {"d": deep}});
    }
    let many: serde_json::Map<String, Value> = (0..20_100)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    for (name, description, schema) in [
        (
            "deep",
            "Nested.",
            json!({"type": "object", "properties": {"d": deep}}),
        ),
        (
            "many",
            "Wide.",
            json!({"type": "object", "properties": many}),
        ),
        (
            "mixed",
            "Line one.\r\nLine two.\rThree.\n\nFour.",
            json!({"type": "object", "properties": {
                "u": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Either."},
                "e": {"enum": [1, 2.5, "x", null], "default": 1},
                "c": {"const": "fixed"},
                "t": {"type": ["string", "integer", "null"]},
                "a": {"type": "array", "items": {"type": "object", "properties": {
                    "k": {"type": "string", "description": "Key."}}, "required": ["k"]}},
                "o": {"type": "object", "additionalProperties": {"type": "number"}}
            }, "required": ["u", "a"]}),
        ),
    ] {
        out.push((name.into(), description.into(), schema));
    }
    out
}

/// Cached counts are keyed by the definition and the rendering's tag, not
/// by the rendered text (so a cached definition is never rendered). A
/// renderer that changes its output without changing its tag would serve
/// stale counts: this digest of every fixture definition's rendering
/// fails first. When it fails, bump the tag in `src/tokens.rs` and then
/// update the digest here.
#[test]
fn renderings_are_pinned_to_their_tags() {
    use muster::tokens::{RENDERING, RENDERING_ANTHROPIC, render_anthropic_tool, render_function};
    use sha2::{Digest, Sha256};
    let definitions = fixture_definitions();
    assert!(definitions.len() >= 46, "{} definitions", definitions.len());
    let digest = |render: &dyn Fn(&str, &str, &Value) -> String| {
        let mut h = Sha256::new();
        for (name, description, schema) in &definitions {
            h.update(render(name, description, schema).as_bytes());
            h.update([0]);
        }
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let openai = digest(&|n, d, s| render_function(n, d, s));
    let anthropic = digest(&|n, d, s| render_anthropic_tool(n, d, s));
    assert_eq!(
        (RENDERING, openai.as_str()),
        (
            "openai-tools-v4",
            "4c38ebf9177c51acd83f2f9031ad93d611d906475f131fe9d7c0fdc9edcc7247"
        ),
        "the OpenAI rendering changed: bump RENDERING, then this digest"
    );
    assert_eq!(
        (RENDERING_ANTHROPIC, anthropic.as_str()),
        (
            "anthropic-tool-json-v2",
            "66325acfa934321f913189874ba4fd332a3148d202cd08ff1a9f2eca909b3e2b"
        ),
        "the Anthropic rendering changed: bump RENDERING_ANTHROPIC, then this digest"
    );
}

mod policy {
    use muster::catalog::{Catalog, Selection};
    use muster::count::{CountOptions, count};
    use muster::policy::Inputs;
    use muster::tokens::{Definition, Encoding, Provider, TokenCache};
    use serde_json::json;

    const TOOLS: &str = r#"
[[tool]]
name = "t.weather"
description = "Get the current weather in a given location"
input_schema = { type = "object", properties = { location = { type = "string", description = "The city and state, e.g. San Francisco, CA" } }, required = ["location"] }
"#;

    fn policy(muster_toml: Option<&str>) -> (tempfile::TempDir, Result<Inputs, muster::Error>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/t.toml"), TOOLS).unwrap();
        if let Some(text) = muster_toml {
            std::fs::write(dir.path().join("muster.toml"), text).unwrap();
        }
        let inputs = Inputs::load(dir.path());
        (dir, inputs)
    }

    #[test]
    fn the_planner_counts_as_the_named_provider_bills() {
        let (_d, openai) = policy(None);
        let openai = Catalog::build(&openai.unwrap(), &Selection::default()).unwrap();
        let (_d, anthropic) = policy(Some("[tokens]\nprovider = \"anthropic\"\n"));
        let anthropic = Catalog::build(&anthropic.unwrap(), &Selection::default()).unwrap();
        assert_eq!(openai.provider, Provider::Openai);
        assert_eq!(anthropic.provider, Provider::Anthropic);
        // Anthropic's wrapper is its documented tool-use system prompt.
        assert_eq!(openai.wrapper_tokens, 11);
        assert_eq!(anthropic.wrapper_tokens, 346);
        let tool = |c: &Catalog| {
            c.candidates
                .iter()
                .find(|c| c.name == "t.weather")
                .unwrap()
                .tokens
        };
        assert_ne!(tool(&openai), tool(&anthropic));

        // One rendering: the planner's count of a tool is what `count`
        // gives the same tool in a request, sent under its provider name.
        let schema = json!({"type": "object", "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}}, "required": ["location"]});
        let request = json!({
            "model": "claude-sonnet-4-5",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "t__weather", "description": "Get the current weather in a given location", "input_schema": schema}],
        });
        let report = count(&request, &CountOptions::default()).unwrap();
        assert_eq!(report.tools[0].tokens, tool(&anthropic));
        let request = json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "t__weather", "description": "Get the current weather in a given location", "parameters": schema}}],
        });
        let report = count(&request, &CountOptions::default()).unwrap();
        assert_eq!(report.tools[0].tokens, tool(&openai));
    }

    /// Issue 8: a plan says whose billing its token counts follow, so a
    /// reader of `tokens` knows what they mean.
    #[test]
    fn the_plan_json_states_the_provider_its_counts_are_for() {
        for (toml, expected) in [
            (None, "openai"),
            (Some("[tokens]\nprovider = \"anthropic\"\n"), "anthropic"),
        ] {
            let (_d, loaded) = policy(toml);
            let catalog = Catalog::build(&loaded.unwrap(), &Selection::default()).unwrap();
            let plan = muster::plan::plan(&catalog, catalog.caps);
            let doc = serde_json::to_value(plan.to_json()).unwrap();
            assert_eq!(doc["format_version"], json!(4));
            assert_eq!(doc["provider"], json!(expected));
            // Beside the encoding, as docs/plan-json.md lists it.
            let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
            let at = keys.iter().position(|k| *k == "encoding").unwrap();
            assert_eq!(keys[at + 1], "provider");
        }
    }

    #[test]
    fn the_cache_keeps_providers_apart() {
        let schema = muster::schema::Schema::new(
            &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        );
        let d = [Definition {
            name: "search",
            description: "Find things.",
            input_schema: &schema,
        }];
        let mut cache = TokenCache::in_memory();
        let e = Encoding::O200kBase;
        let openai = e.count_definitions_for(Provider::Openai, &d, &mut cache);
        let anthropic = e.count_definitions_for(Provider::Anthropic, &d, &mut cache);
        assert_eq!(cache.len(), 2);
        let fresh = e.count_definitions_for(Provider::Anthropic, &d, &mut TokenCache::in_memory());
        assert_eq!(anthropic, fresh);
        assert_ne!(openai, anthropic);
    }

    #[test]
    fn a_bad_provider_is_refused_with_file_and_line() {
        let (dir, loaded) = policy(Some("# caps\n[tokens]\nprovider = \"gemini\"\n"));
        let err = loaded.unwrap_err();
        let p = &err.problems()[0];
        assert_eq!(
            p.file.as_deref(),
            Some(dir.path().join("muster.toml").as_path())
        );
        assert_eq!(p.line, Some(3));
        assert!(p.message.contains("tokens.provider \"gemini\""), "{p}");
        assert!(p.help.is_some());

        let (_dir, loaded) = policy(Some(
            "[tokens]\nencoding = \"cl100k_base\"\nprovider = \"anthropic\"\n",
        ));
        let err = loaded.unwrap_err();
        assert_eq!(err.problems()[0].line, Some(3), "{err}");
        assert!(err.problems()[0].message.contains("o200k_base"), "{err}");
    }
}

#[test]
fn every_note_code_is_its_json_and_is_documented() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/count.md"))
        .unwrap();
    for note in muster::contract::CountNote::ALL {
        assert_eq!(serde_json::to_value(note).unwrap(), note.code());
        assert!(
            doc.contains(&format!("`{}`", note.code())),
            "{} is not in docs/count.md",
            note.code()
        );
    }
}

#[test]
fn every_constant_in_the_docs_is_the_one_counted_with() {
    use muster::count::{anthropic, openai};
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/count.md"))
        .unwrap();
    for (name, value) in [
        ("PER_MESSAGE", openai::PER_MESSAGE),
        ("PER_NAME", openai::PER_NAME),
        (
            "FUNCTION_MESSAGE_DISCOUNT",
            openai::FUNCTION_MESSAGE_DISCOUNT,
        ),
        ("PER_FUNCTION_CALL", openai::PER_FUNCTION_CALL),
        ("REPLY_PRIMING", openai::REPLY_PRIMING),
        ("TOOLS_FRAMING", openai::TOOLS_FRAMING),
        ("SYSTEM_SHARED", openai::SYSTEM_SHARED),
        ("CHOICE_NONE", openai::CHOICE_NONE),
        ("CHOICE_NAMED_TOOL", openai::CHOICE_NAMED_TOOL),
        ("CHOICE_NAMED_FUNCTION", openai::CHOICE_NAMED_FUNCTION),
    ] {
        assert!(
            doc.contains(&format!("| `{name}` | {value} |")),
            "openai {name} = {value}"
        );
    }
    for (name, value) in [
        ("PER_MESSAGE", anthropic::PER_MESSAGE),
        ("SYSTEM_FRAMING", anthropic::SYSTEM_FRAMING),
        ("BASE", anthropic::BASE),
    ] {
        assert!(
            doc.contains(&format!("| anthropic `{name}` | {value} |")),
            "anthropic {name} = {value}"
        );
    }
}

mod arbitrary {
    use muster::count::{CountOptions, count};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("user"),
                Just("system"),
                Just("assistant"),
                Just("tool"),
                Just("function"),
                Just("text"),
                Just("tool_use"),
                Just("tool_result"),
                Just("auto"),
                Just("none"),
                Just("required"),
                Just("any"),
                Just("object"),
                Just("string"),
                Just("x\ny")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("role"),
                        Just("content"),
                        Just("name"),
                        Just("type"),
                        Just("text"),
                        Just("function"),
                        Just("parameters"),
                        Just("properties"),
                        Just("items"),
                        Just("tool_calls"),
                        Just("function_call"),
                        Just("arguments"),
                        Just("input"),
                        Just("input_schema"),
                        Just("enum"),
                        Just("const"),
                        Just("anyOf")
                    ]
                    .prop_map(String::from),
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Any body is counted or refused with a problem; never a panic,
        /// and the breakdown always sums to the total.
        #[test]
        fn any_body_is_counted_or_refused(
            messages in value(),
            tools in value(),
            choice in value(),
            system in value(),
            anthropic in any::<bool>(),
        ) {
            let model = if anthropic { "claude-opus-4-1" } else { "gpt-4o" };
            let body = json!({"model": model, "messages": messages, "tools": tools, "tool_choice": choice, "system": system});
            if let Ok(report) = count(&body, &CountOptions::default()) {
                let b = report.breakdown;
                prop_assert_eq!(b.messages + b.tools + b.tool_choice + b.overhead, report.input_tokens);
            }
        }
    }
}
