//! Issue 21: the check, narrowing and token counts against tool schemas recorded from real MCP
//! servers (`tests/fixtures/mcp-real/`, with their source and licence in its README). Each
//! test is a case a server answered differently from muster before the fix.

use std::path::Path;

use muster::check::{CheckOptions, OfferedPlan, Status, Turn, check_turn};
use muster::narrow::{KeepAwayCode, NarrowOutcome, Narrowing, narrow_tool};
use muster::schema::Schema;
use serde::Deserialize;
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp-real");

#[derive(Deserialize)]
struct Snapshot {
    tools: Vec<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
}

/// The tool `name` of the recorded snapshot `file`.
fn tool(file: &str, name: &str) -> Tool {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join(file)).unwrap();
    let snapshot: Snapshot = serde_json::from_str(&text).unwrap();
    snapshot
        .tools
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not in {file}"))
}

/// How a test checks a tool: strictly (the default for MCP tools) or leniently, with or
/// without coercion.
const MODES: [(&str, bool); 4] = [
    ("strict", true),
    ("strict", false),
    ("lenient", true),
    ("lenient", false),
];

/// A plan offering `schema` as the tool `t` checked `check`, with `coerce`.
fn plan(schema: &Value, check: &str, coerce: bool) -> OfferedPlan {
    let text = json!({"format_version": 4, "roster": [{"name": "t", "source": "mcp",
        "check": check, "coerce": coerce, "input_schema": schema}]})
    .to_string();
    OfferedPlan::from_json(&text, Path::new("plan.json")).unwrap()
}

/// What the check makes of `arguments` for `schema`: the forwarded arguments, or the
/// problems' codes and sentences.
fn verdict(
    schema: &Value,
    check: &str,
    coerce: bool,
    arguments: &Value,
) -> Result<Value, Vec<(String, String)>> {
    let plan = plan(schema, check, coerce);
    let turn = json!({"calls": [{"id": "c", "name": "t", "arguments": arguments}]});
    let turn = Turn::from_json(&turn.to_string(), Path::new("turn.json")).unwrap();
    let report = check_turn(&plan, &turn, &CheckOptions::default());
    let call = &report.calls[0];
    match call.status {
        Status::Ok => Ok(call.arguments.as_deref().unwrap().clone()),
        _ => Err(report_problems(&serde_json::to_value(&report).unwrap())),
    }
}

/// The problems of the report's first call, read back from its JSON: `(code, message)`.
fn report_problems(report: &Value) -> Vec<(String, String)> {
    #[derive(Deserialize)]
    struct Problem {
        code: String,
        message: String,
    }
    let problems: Vec<Problem> =
        serde_json::from_value(report["calls"][0]["problems"].clone()).unwrap();
    problems.into_iter().map(|p| (p.code, p.message)).collect()
}

/// Item 1: Playwright's `browser_console_messages` lists `level` as required with a default
/// (zod 4's JSON Schema output); the server fills "info" and answers `{}`. Every mode passes
/// it and forwards it as sent: the default is the server's to fill.
#[test]
fn a_required_argument_with_a_default_may_be_left_out() {
    for (file, name, member) in [
        ("playwright-mcp.json", "browser_console_messages", "level"),
        ("playwright-mcp.json", "browser_network_requests", "static"),
        ("playwright-mcp.json", "browser_take_screenshot", "scale"),
    ] {
        let t = tool(file, name);
        assert!(
            t.input_schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!(member))
        );
        assert!(
            t.input_schema["properties"][member]
                .get("default")
                .is_some()
        );
        for (check, coerce) in MODES {
            let got = verdict(&t.input_schema, check, coerce, &json!({}));
            assert_eq!(got, Ok(json!({})), "{name} {check} coerce={coerce}");
        }
    }
    // A required member without a default is still required.
    let t = tool("playwright-mcp.json", "browser_navigate");
    for (check, coerce) in MODES {
        let got = verdict(&t.input_schema, check, coerce, &json!({})).unwrap_err();
        assert_eq!(got[0].0, "missing-argument", "{check} {coerce}");
    }
}

/// Item 1: `only` that leaves out a required argument with a default offers the tool (the
/// server fills it); one that leaves out a required argument without a default still keeps
/// the tool away.
#[test]
fn only_does_not_cut_a_tool_for_a_required_argument_with_a_default() {
    let t = tool("playwright-mcp.json", "browser_console_messages");
    let schema = Schema::new(&t.input_schema);
    let mut n = Narrowing {
        allow: Some(vec![t.name.clone()]),
        ..Default::default()
    };
    n.only.insert(t.name.clone(), vec!["all".into()]);
    let NarrowOutcome::Offered(offered) = narrow_tool(&t.name, &schema, &n) else {
        panic!("{:?}", narrow_tool(&t.name, &schema, &n));
    };
    assert_eq!(
        offered.shown_schema.value()["properties"],
        json!({"all": t.input_schema["properties"]["all"]})
    );
    assert!(offered.warnings.is_empty(), "{:?}", offered.warnings);

    let t = tool("playwright-mcp.json", "browser_type");
    let schema = Schema::new(&t.input_schema);
    let mut n = Narrowing {
        allow: Some(vec![t.name.clone()]),
        ..Default::default()
    };
    n.only.insert(t.name.clone(), vec!["target".into()]);
    match narrow_tool(&t.name, &schema, &n) {
        NarrowOutcome::KeptAway {
            code, arguments, ..
        } => {
            assert_eq!(code, KeepAwayCode::RequiredUnreachable);
            assert_eq!(arguments, ["text"]);
        }
        other => panic!("{other:?}"),
    }
}

/// Item 8: a lone text where Playwright declares a list of paths or values, and a boolean
/// where it declares text, are refused in every mode (zod refuses them too).
#[test]
fn a_lone_scalar_for_a_list_and_a_boolean_for_text_are_refused() {
    for (name, arguments, message) in [
        (
            "browser_file_upload",
            json!({"paths": "/tmp/report.pdf"}),
            "argument \"paths\" must be a list; got the text \"/tmp/report.pdf\"",
        ),
        (
            "browser_select_option",
            json!({"target": "e12", "values": "blue"}),
            "argument \"values\" must be a list; got the text \"blue\"",
        ),
        (
            "browser_type",
            json!({"target": "e3", "text": true}),
            "argument \"text\" must be a string; got the boolean true",
        ),
    ] {
        let t = tool("playwright-mcp.json", name);
        for (check, coerce) in MODES {
            let problems = verdict(&t.input_schema, check, coerce, &arguments).unwrap_err();
            assert_eq!(problems[0].0, "wrong-type", "{name} {check} {coerce}");
            assert!(problems[0].1.ends_with(message), "{:?}", problems[0]);
        }
    }
}

/// Item 8: Playwright's `browser_emulate_media` declares each choice as `anyOf` of an `enum`
/// and null. Another letter case is repaired there as in a plain `enum` (with coercion), a
/// value outside it is refused naming the members, and null passes.
#[test]
fn letter_case_is_repaired_inside_any_of_as_in_an_enum() {
    let t = tool("playwright-mcp.json", "browser_emulate_media");
    for (check, coerce) in MODES {
        let got = verdict(
            &t.input_schema,
            check,
            coerce,
            &json!({"colorScheme": "DARK"}),
        );
        match (check, coerce) {
            (_, true) => assert_eq!(got, Ok(json!({"colorScheme": "dark"}))),
            // Without coercion the value goes as sent: strict checking refuses it as the
            // server would, lenient checking lets the tool read it.
            ("strict", false) => assert!(got.is_err()),
            _ => assert_eq!(got, Ok(json!({"colorScheme": "DARK"}))),
        }
        let problems = verdict(
            &t.input_schema,
            check,
            coerce,
            &json!({"colorScheme": "purple"}),
        )
        .unwrap_err();
        assert!(
            problems[0].1.contains("\"colorScheme\" must") && problems[0].1.contains("\"dark\""),
            "{check} {coerce}: {problems:?}"
        );
        assert_eq!(
            verdict(
                &t.input_schema,
                check,
                coerce,
                &json!({"colorScheme": null})
            ),
            Ok(json!({"colorScheme": null}))
        );
    }
}

/// Item 8: Notion's parent references are `const`-tagged shapes; another letter case for a
/// `const` is repaired with coercion, as for an enum of one member.
#[test]
fn letter_case_is_repaired_for_a_const() {
    let schema = json!({"type": "object", "properties": {
        "type": {"type": "string", "const": "database_id"}}, "required": ["type"]});
    for check in ["strict", "lenient"] {
        assert_eq!(
            verdict(&schema, check, true, &json!({"type": "Database_ID"})),
            Ok(json!({"type": "database_id"}))
        );
        let problems = verdict(&schema, check, true, &json!({"type": "page_id"})).unwrap_err();
        assert!(
            problems[0]
                .1
                .ends_with("argument \"type\" must be \"database_id\"; got \"page_id\""),
            "{problems:?}"
        );
    }
}

/// Item 8: a tool that declares no arguments refuses one with a sentence that says so, never
/// "expected only no arguments".
#[test]
fn a_tool_without_arguments_says_it_takes_none() {
    let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let open = json!({"type": "object", "properties": {}});
    for (schema, message) in [
        (
            closed,
            "argument \"x\" is not accepted; the schema accepts no members there",
        ),
        (
            open,
            "argument \"x\" is not declared; the tool takes no arguments",
        ),
    ] {
        let problems = verdict(&schema, "lenient", false, &json!({"x": 1})).unwrap_err();
        assert!(problems[0].1.ends_with(message), "{problems:?}");
        assert!(!problems[0].1.contains("only no arguments"));
    }
}

/// Item 2: Firecrawl and Resend enforce `format` (zod's `z.url()`, `z.email()`): text that is
/// not a URL or an email address is refused in every mode with `wrong-format`, and a
/// conforming one passes.
#[test]
fn formats_servers_enforce_are_checked() {
    for (file, name, member, bad, good, extra) in [
        (
            "firecrawl-mcp.json",
            "firecrawl_map",
            "url",
            "example.com",
            "https://example.com",
            json!({}),
        ),
        (
            "resend-mcp.json",
            "create-webhook",
            "endpoint",
            "hooks.example.com/resend",
            "https://hooks.example.com/resend",
            json!({"events": ["email.sent"]}),
        ),
        (
            "resend-mcp.json",
            "add-suppression",
            "email",
            "someone at example.com",
            "someone@example.com",
            json!({}),
        ),
    ] {
        let t = tool(file, name);
        let with = |value: &str| {
            let mut arguments = extra.clone();
            arguments[member] = json!(value);
            arguments
        };
        for (check, coerce) in MODES {
            let problems = verdict(&t.input_schema, check, coerce, &with(bad)).unwrap_err();
            assert_eq!(
                problems[0].0, "wrong-format",
                "{name} {check} {coerce}: {problems:?}"
            );
            assert!(
                problems[0]
                    .1
                    .contains(&format!("argument \"{member}\" must be"))
            );
            assert_eq!(
                verdict(&t.input_schema, check, coerce, &with(good)),
                Ok(with(good)),
                "{name} {check} {coerce}"
            );
        }
    }
}

/// Item 3: Notion's tools each carry about 2.5 KB of `$defs`. The OpenAI count renders them
/// (once each, as named types) and notes `references`; it was about a seventh of the
/// definitions' own JSON tokens, with no note. The figures are printed
/// (`cargo test --test mcp_real definitions -- --nocapture`).
#[test]
fn definitions_are_counted_and_noted() {
    use muster::count::{CountOptions, count};
    use muster::tokens::{Encoding, render_anthropic_tool, render_function};
    let t = tool("notion-mcp-server.json", "API-get-user");
    let defs = &t.input_schema["$defs"];
    assert!(defs.as_object().is_some_and(|d| d.len() > 5));
    let o200k = Encoding::O200kBase;
    let schema_json = t.input_schema.to_string();
    let defs_tokens = o200k.count_text(&defs.to_string());
    let openai = o200k.count_text(&render_function(&t.name, &t.description, &t.input_schema));
    let anthropic = o200k.count_text(&render_anthropic_tool(
        &t.name,
        &t.description,
        &t.input_schema,
    ));
    eprintln!(
        "{}: schema JSON {} bytes, {} tokens; $defs JSON {} tokens; OpenAI count {openai}; Anthropic count {anthropic}",
        t.name,
        schema_json.len(),
        o200k.count_text(&schema_json),
        defs_tokens,
    );
    // The rendering is terser than JSON (no quotes, braces or keyword names), as for any
    // schema, but bills every definition: at least 40 % of the definitions' JSON tokens (it
    // was 35 tokens, 7 %).
    assert!(openai * 5 >= defs_tokens * 2, "{openai} vs {defs_tokens}");
    assert!(anthropic >= defs_tokens);

    let request = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Who am I?"}],
        "tools": [{"type": "function", "function": {"name": t.name, "description": t.description,
        "parameters": t.input_schema}}]});
    let report = serde_json::to_value(count(&request, &CountOptions::default()).unwrap()).unwrap();
    assert_eq!(report["accuracy"], json!("estimate"));
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "references"),
        "{report}"
    );
}
