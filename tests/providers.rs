//! Provider request shapes: golden files of every format on the bundled
//! policies (byte for byte; refresh with `MUSTER_TEST_BLESS=1 cargo test --test
//! providers`), each shape read back through this file's own types, the
//! author's property order kept from policy to provider format, and
//! `check` answering in the spelling a call used.

#![allow(dead_code)]

mod common;

use common::{CHECK_JSON, Fixture, muster};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Chat Completions: `{"type": "function", "function": {...}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatTool {
    r#type: String,
    function: ChatFunction,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatFunction {
    name: String,
    description: String,
    parameters: Value,
}

/// Responses API tools, tagged by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ResponsesTool {
    Function(ResponsesFunction),
    ToolSearch {},
    Namespace {
        name: String,
        description: String,
        tools: Vec<ResponsesFunction>,
    },
}

#[derive(Debug, Deserialize)]
struct ResponsesFunction {
    name: String,
    description: String,
    parameters: Value,
    strict: bool,
    #[serde(default)]
    defer_loading: bool,
    /// Inside a namespace the tag is still present.
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// Anthropic tools: a custom tool or the tool search server tool.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AnthropicTool {
    Custom(AnthropicCustom),
    Search { r#type: String, name: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnthropicCustom {
    name: String,
    description: String,
    input_schema: Value,
    #[serde(default)]
    defer_loading: bool,
}

/// Gemini: one tool holding every function declaration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiTool {
    #[serde(rename = "functionDeclarations")]
    function_declarations: Vec<GeminiFunction>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiFunction {
    name: String,
    description: String,
    parameters: Value,
}

const FORMATS: [&str; 4] = ["openai", "openai-responses", "anthropic", "gemini"];

fn run(dir: &Path, args: &[&str]) -> String {
    let out = muster(dir)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).expect("utf-8")
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The plan JSON's offered and deferred provider names, for comparison.
fn plan_names(dir: &Path, args: &[&str]) -> (Vec<String>, Vec<String>, Option<String>) {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    let plan: Value = serde_json::from_str(&run(dir, &all)).unwrap();
    let list = |key: &str| -> Vec<String> {
        plan[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["provider_name"].as_str().unwrap().to_string())
            .collect()
    };
    let control = plan["control_tool"].as_str().map(|c| {
        plan["roster"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == c)
            .map(|e| e["provider_name"].as_str().unwrap().to_string())
            .unwrap_or_default()
    });
    (list("roster"), list("deferred"), control)
}

/// Reads `text` as `format`'s shape and returns (offered names, deferred
/// names, whether the provider's search tool is present).
fn read_back(format: &str, text: &str) -> (Vec<String>, Vec<String>, bool) {
    let (mut offered, mut deferred, mut search) = (Vec::new(), Vec::new(), false);
    match format {
        "openai" => {
            let tools: Vec<ChatTool> = serde_json::from_str(text).expect("chat shape");
            for t in tools {
                assert_eq!(t.r#type, "function");
                assert_eq!(t.function.parameters["type"], "object");
                offered.push(t.function.name);
            }
        }
        "openai-responses" => {
            let tools: Vec<ResponsesTool> = serde_json::from_str(text).expect("responses shape");
            for t in tools {
                match t {
                    ResponsesTool::Function(f) => {
                        assert!(!f.strict && !f.defer_loading);
                        offered.push(f.name);
                    }
                    ResponsesTool::ToolSearch {} => search = true,
                    ResponsesTool::Namespace {
                        name,
                        description,
                        tools,
                    } => {
                        assert!(valid_name(&name) && !description.is_empty() && !tools.is_empty());
                        for f in tools {
                            assert!(f.defer_loading && !f.strict);
                            assert_eq!(f.kind.as_deref(), Some("function"));
                            deferred.push(f.name);
                        }
                    }
                }
            }
        }
        "anthropic" => {
            let tools: Vec<AnthropicTool> = serde_json::from_str(text).expect("anthropic shape");
            for t in tools {
                match t {
                    AnthropicTool::Custom(c) if c.defer_loading => deferred.push(c.name),
                    AnthropicTool::Custom(c) => offered.push(c.name),
                    AnthropicTool::Search { r#type, name } => {
                        assert_eq!(
                            (r#type.as_str(), name.as_str()),
                            ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25")
                        );
                        search = true;
                    }
                }
            }
        }
        "gemini" => {
            let tools: Vec<GeminiTool> = serde_json::from_str(text).expect("gemini shape");
            assert!(tools.len() <= 1, "one tool holds every declaration");
            for t in tools {
                assert!(!t.function_declarations.is_empty());
                for f in t.function_declarations {
                    assert_eq!(f.parameters["type"], "object");
                    offered.push(f.name);
                }
            }
        }
        other => panic!("{other}"),
    }
    (offered, deferred, search)
}

/// Each selection the golden files cover: (file stem, deferral on, plan args).
const CASES: [(&str, bool, &[&str]); 3] = [
    ("plan-default", false, &[]),
    ("plan-production", false, &["--flags", "production"]),
    ("plan-production-deferral", true, &["--flags", "production"]),
];

#[test]
fn every_format_matches_its_golden_file_and_reads_back() {
    let fx = Fixture::bundled();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("MUSTER_TEST_BLESS").is_some();
    let mut differ = Vec::new();
    for (stem, deferral, args) in CASES {
        if deferral {
            fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
        }
        let (roster, plan_deferred, control) = plan_names(fx.path(), args);
        for format in FORMATS {
            let mut all = vec!["plan", "--format", format];
            all.extend_from_slice(args);
            let text = run(fx.path(), &all);
            // Same inputs, same bytes.
            assert_eq!(text, run(fx.path(), &all), "{stem} {format}");
            let file = golden_dir.join(format!("{stem}.{format}.json"));
            if bless {
                std::fs::write(&file, &text).unwrap();
            } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                differ.push(file.display().to_string());
            }
            let (offered, deferred, search) = read_back(format, &text);
            assert!(offered.iter().chain(&deferred).all(|n| valid_name(n)));
            let native = !matches!(format, "openai" | "gemini") && !plan_deferred.is_empty();
            assert_eq!(search, native, "{stem} {format}");
            let expected: Vec<String> = roster
                .iter()
                .filter(|n| !(native && Some(*n) == control.as_ref()))
                .cloned()
                .collect();
            assert_eq!(offered, expected, "{stem} {format}");
            if native {
                // Every deferred tool, in kinds of rank order: the same set.
                let (mut a, mut b) = (deferred.clone(), plan_deferred.clone());
                a.sort();
                b.sort();
                assert_eq!(a, b, "{stem} {format}");
            } else {
                assert!(deferred.is_empty(), "{stem} {format}");
            }
        }
        if deferral {
            fx.edit("policies/muster.toml", "enabled = true", "enabled = false");
        }
    }
    assert!(
        differ.is_empty(),
        "output differs from the golden files {differ:?}; if the change is deliberate, run `MUSTER_TEST_BLESS=1 cargo test --test providers` and review the diff"
    );
}

#[test]
fn property_order_survives_from_the_policy_to_every_format() {
    // Neither file writes its properties in sorted order.
    let tools = r#"
[[tool]]
name = "notes.add"
description = "Add a note."
input_schema = { type = "object", properties = { zeta = { type = "string" }, alpha = { type = "string" }, mid = { type = "integer" } }, required = ["zeta"] }
"#;
    let snapshot = r#"{"tools": [{"name": "find", "description": "Find.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "cursor": {"type": "string"}}}}]}"#;
    let fx = Fixture::new(&[
        ("policies/tools/t.toml", tools),
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
        ),
        ("policies/mcp/kb.json", snapshot),
    ]);
    let in_order = |text: &str, keys: &[&str]| {
        let at: Vec<usize> = keys
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?} in {text}");
    };
    let mut outputs = vec![run(fx.path(), &["plan", "--format", "json"])];
    for format in FORMATS {
        outputs.push(run(fx.path(), &["plan", "--format", format]));
    }
    for text in &outputs {
        in_order(text, &["zeta", "alpha", "mid"]);
        in_order(text, &["query", "limit", "cursor"]);
    }
}

#[test]
fn check_accepts_either_spelling_and_answers_with_the_one_the_call_used() {
    let fx = Fixture::bundled();
    fx.write(
        "plan.json",
        &run(
            fx.path(),
            &["plan", "--flags", "production", "--format", "json"],
        ),
    );
    fx.write(
        "turn.json",
        r#"{"calls": [
          {"id": "a", "name": "mcp__bland_read__get_call", "arguments": {"call_id": "c1"}},
          {"id": "b", "name": "mcp.bland_read.get_call", "arguments": {"call_id": "c2"}},
          {"id": "c", "name": "mcp__bland_read__get_cal", "arguments": {}}
        ]}"#,
    );
    let out = muster(fx.path())
        .args(CHECK_JSON)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).unwrap();
    let calls = report["calls"].as_array().unwrap();
    // The first two are judged and would run but for the third; each
    // problem names the tool as its call did.
    assert_eq!(calls[0]["refusal"], "turn");
    assert_eq!(calls[0]["problems"][0]["tool"], "mcp__bland_read__get_call");
    assert_eq!(calls[1]["refusal"], "turn");
    assert_eq!(calls[1]["problems"][0]["tool"], "mcp.bland_read.get_call");
    assert_eq!(calls[2]["problems"][0]["code"], "unknown-tool");
    assert_eq!(calls[2]["problems"][0]["tool"], "mcp__bland_read__get_cal");
}

#[test]
fn a_session_roster_in_provider_formats_keeps_the_control_tool_and_loaded_tools() {
    let fx = Fixture::bundled();
    fx.edit("policies/muster.toml", "enabled = false", "enabled = true");
    run(
        fx.path(),
        &["session", "new", "--flags", "production", "--out", "s.json"],
    );
    muster(fx.path())
        .args([
            "session",
            "load",
            "s.json",
            "--name",
            "mcp__gmail_read__get_thread",
        ])
        .assert()
        .success();
    for format in FORMATS {
        let text = run(
            fx.path(),
            &["session", "roster", "s.json", "--format", format],
        );
        let (offered, deferred, search) = read_back(format, &text);
        assert!(!search && deferred.is_empty(), "{format}");
        assert_eq!(offered.first().map(String::as_str), Some("tools__load"));
        assert_eq!(
            offered.last().map(String::as_str),
            Some("mcp__gmail_read__get_thread"),
            "{format}"
        );
    }
    // A provider name is searched as the tool it was made from.
    let found: Value = serde_json::from_str(&run(
        fx.path(),
        &[
            "session",
            "search",
            "s.json",
            "mcp__gmail_read__get_message",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(found["results"][0]["score"], 1.0, "{found}");
    assert!(
        found["results"][0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp.gmail_read.get_message"),
        "{found}"
    );
    // The loaded tool is called by its provider name; the check knows it.
    fx.write(
        "turn.json",
        r#"{"calls": [{"id": "a", "name": "mcp__gmail_read__get_thread", "arguments": {"nope": 1}}]}"#,
    );
    let out = muster(fx.path())
        .args([
            "check",
            "--session",
            "s.json",
            "--turn",
            "turn.json",
            "--format",
            "json",
        ])
        .assert()
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).unwrap();
    let problem = &report["calls"][0]["problems"][0];
    assert_ne!(problem["code"], "unknown-tool", "{report}");
    assert_ne!(problem["code"], "deferred-tool", "{report}");
    assert_eq!(problem["tool"], "mcp__gmail_read__get_thread", "{report}");
}

/// `validate --accept` entries read back through their own types
/// (docs/providers.md, "Provider acceptance").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AcceptedDoc {
    format_version: u32,
    policies: String,
    configured_tools: usize,
    servers: usize,
    listed_tools: usize,
    agents: usize,
    profiles: usize,
    warnings: Vec<Value>,
    #[serde(default)]
    acceptance: Vec<RefusedDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RefusedDoc {
    code: String,
    format: String,
    strict: bool,
    tool: Option<String>,
    path: Option<String>,
    keyword: Option<String>,
    found: Option<u64>,
    limit: Option<u64>,
    fix: Option<String>,
    agent: String,
    profile: Option<String>,
}

/// Issue 21 item 5: a roster OpenAI refuses for a long description, or
/// Gemini for `$schema` and `additionalProperties` (as the memory server
/// lists its tools), passed `validate` and a gate unseen.
#[test]
fn validate_and_gates_assert_each_provider_accepts_the_request_as_sent() {
    let memory = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/memory.json"),
    )
    .unwrap();
    let long = "Searches the knowledge base. ".repeat(40);
    let kb = serde_json::json!({"tools": [
        {"name": "search", "description": long.trim_end(),
         "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false}}
    ]});
    let fx = Fixture::new(&[
        (
            "policies/mcp/s.toml",
            "[[mcp]]\nname = \"memory\"\nsnapshot = \"memory.json\"\n\n[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
        ),
        ("policies/mcp/memory.json", &memory),
        ("policies/mcp/kb.json", &kb.to_string()),
    ]);
    let validate = |args: &[&str], code: i32| -> AcceptedDoc {
        let mut all = vec!["validate", "--format", "json"];
        all.extend_from_slice(args);
        let out = muster(fx.path())
            .args(&all)
            .assert()
            .code(code)
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).expect("validate JSON matches the contract")
    };
    // Without --accept nothing is judged.
    assert!(validate(&[], 0).acceptance.is_empty());
    // Anthropic takes it as sent.
    assert!(
        validate(&["--accept", "anthropic"], 0)
            .acceptance
            .is_empty()
    );
    // OpenAI refuses the long description, in both shapes.
    let openai = validate(&["--accept", "openai", "--accept", "openai-responses"], 1);
    let refused: Vec<(&str, &str, Option<&str>, Option<u64>)> = openai
        .acceptance
        .iter()
        .map(|r| {
            (
                r.format.as_str(),
                r.code.as_str(),
                r.tool.as_deref(),
                r.found,
            )
        })
        .collect();
    let length = long.trim_end().chars().count() as u64;
    assert_eq!(
        refused,
        [
            (
                "openai",
                "description-too-long",
                Some("mcp__kb__search"),
                Some(length)
            ),
            (
                "openai-responses",
                "description-too-long",
                Some("mcp__kb__search"),
                Some(length)
            ),
        ]
    );
    assert!(
        openai
            .acceptance
            .iter()
            .all(|r| r.limit == Some(1024) && r.agent == "default")
    );
    // Gemini refuses the memory server's `$schema` (safe to drop) on every
    // tool, and its `additionalProperties` (no safe fix).
    let gemini = validate(&["--accept", "gemini"], 1);
    let schema_drops = gemini
        .acceptance
        .iter()
        .filter(|r| r.keyword.as_deref() == Some("$schema"))
        .inspect(|r| {
            assert_eq!(
                (r.code.as_str(), r.path.as_deref()),
                ("keyword-unsupported", Some(""))
            );
            assert_eq!(r.fix.as_deref(), Some("drop-keyword"));
        })
        .count();
    let listed = serde_json::from_str::<Value>(&memory).unwrap()["tools"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(schema_drops, listed);
    assert!(
        gemini
            .acceptance
            .iter()
            .any(|r| { r.keyword.as_deref() == Some("additionalProperties") && r.fix.is_none() })
    );
    // OpenAI strict mode: optional properties and open objects.
    let strict = validate(&["--accept", "openai", "--strict"], 1);
    assert!(strict.acceptance.iter().all(|r| r.strict));
    assert!(
        strict
            .acceptance
            .iter()
            .any(|r| r.code == "strict-optional-property"
                && r.tool.as_deref() == Some("mcp__kb__search")
                && r.keyword.as_deref() == Some("q"))
    );

    // A gate asserts the same.
    fx.write(
        "gates/g.toml",
        "accepted_by = [\"anthropic\", \"gemini\"]\n",
    );
    let out = muster(fx.path())
        .args(["gate", "gates/g.toml", "--format", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let result: Value = serde_json::from_slice(&out).unwrap();
    let failure = &result[0]["failures"][0];
    assert_eq!(failure["code"], "not-accepted", "{result}");
    let violations = failure["violations"].as_array().unwrap();
    assert!(violations.iter().all(|v| v["format"] == "gemini"));
    assert_eq!(violations.len(), gemini.acceptance.len());
    fx.write("gates/g.toml", "accepted_by = [\"anthropic\"]\n");
    muster(fx.path())
        .args(["gate", "gates/g.toml"])
        .assert()
        .success();
    // An unknown format is bad input naming the file and line.
    fx.write(
        "gates/g.toml",
        "name = \"g\"\naccepted_by = [\"anthropic\", \"vertex\"]\n",
    );
    let err = muster(fx.path())
        .args(["gate", "gates/g.toml"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains("g.toml:2") && err.contains("vertex"), "{err}");
}

/// Every golden file read into the provider SDKs' own request types
/// (Python: openai, anthropic, google-genai), an unknown key refused, by
/// `tests/sdk/read_shapes.py`. Runs where `MUSTER_SDK_PYTHON` names a
/// Python that has the SDKs: `.ci/run` installs them and sets it, so CI
/// never skips it.
#[test]
fn golden_files_read_into_the_provider_sdks_request_types() {
    let Some(python) = std::env::var_os("MUSTER_SDK_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set MUSTER_SDK_PYTHON (see .ci/run)"
        );
        eprintln!(
            "skipped: set MUSTER_SDK_PYTHON to a Python with openai, anthropic and google-genai"
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("tests/golden"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for format in FORMATS {
        let suffix = format!(".{format}.json");
        assert!(
            files.iter().any(|f| f.to_string_lossy().ends_with(&suffix)),
            "a golden file of {format}"
        );
    }
    let out = std::process::Command::new(python)
        .arg(root.join("tests/sdk/read_shapes.py"))
        .args(&files)
        .output()
        .expect("MUSTER_SDK_PYTHON runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        files.len()
    );
}
