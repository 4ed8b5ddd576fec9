//! Every verb over HTTP answers the bytes the CLI prints for the same input:
//! the plain verbs, the session verbs, the provider formats and count.

use super::{
    Server,
    common::{muster, stdout},
    fixture, problem, write,
};
use muster::contract::{LoadAnswer, SessionDocument};
use serde::Deserialize;
use serde_json::{Value, json};

#[test]
fn every_verb_answers_the_bytes_the_cli_prints() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);

    let plan = server.post(
        "/v1/plan",
        r#"{"flags": "production", "flag": ["X_UNUSED"]}"#,
    );
    let cli_plan = stdout(
        dir,
        &[
            "plan",
            "--flags",
            "production",
            "--flag",
            "X_UNUSED",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(plan.status, 200);
    assert_eq!(plan.content_type, "application/json");
    assert_eq!(plan.body, cli_plan);
    // The start-up share (docs/plan-json.md): the provider's default model.
    let share: Value = serde_json::from_str(&plan.body).expect("json");
    assert_eq!(share["context"]["model"], "gpt-4o");
    assert_eq!(share["context"]["tokens"], share["totals"]["tokens"]);
    let chosen = server.post(
        "/v1/plan",
        r#"{"flags": "production", "model": "claude-opus-4-1"}"#,
    );
    assert_eq!(
        chosen.body,
        stdout(
            dir,
            &[
                "plan",
                "--flags",
                "production",
                "--model",
                "claude-opus-4-1",
                "--format",
                "json"
            ],
            0
        )
    );

    let capped = server.post("/v1/plan", r#"{"item_cap": 5, "token_cap": 3000}"#);
    assert_eq!(
        capped.body,
        stdout(
            dir,
            &[
                "plan",
                "--item-cap",
                "5",
                "--token-cap",
                "3000",
                "--format",
                "json"
            ],
            0
        )
    );

    for tool in ["math.calculate", "schedule.delete", "no.such_tool"] {
        let why = server.post(
            "/v1/why",
            json!({"tool": tool, "flags": "production"}).to_string(),
        );
        assert_eq!(why.status, 200);
        assert_eq!(
            why.body,
            stdout(
                dir,
                &["why", tool, "--flags", "production", "--format", "json"],
                0
            ),
            "{tool}"
        );
    }

    let gate = server.post("/v1/gate", r#"{"gates": ["production"]}"#);
    let gate_code = muster(dir)
        .args(["gate", "gates/production.toml", "--format", "json"])
        .output()
        .expect("gate")
        .status
        .code();
    let cli_gate = String::from_utf8(
        muster(dir)
            .args(["gate", "gates/production.toml", "--format", "json"])
            .output()
            .expect("gate")
            .stdout,
    )
    .expect("utf-8");
    assert_eq!(gate.status, 200);
    assert!(matches!(gate_code, Some(0 | 1)));
    assert_eq!(gate.body, cli_gate);
    let every_gate = server.post("/v1/gate", "{}");
    assert_eq!(every_gate.body, cli_gate, "the directory holds one gate");

    // check against a plan: one call that fits and one that does not.
    let plan_file = write(dir, "plan.json", &cli_plan);
    let turn = json!({"calls": [
        {"id": "c1", "name": "system.current_time", "arguments": {}},
        {"id": "c2", "name": "no.such_tool", "arguments": {}}
    ]});
    let turn_file = write(dir, "turn.json", &turn.to_string());
    let check = server.post(
        "/v1/check",
        format!(r#"{{"turn": {turn}, "plan": {cli_plan}}}"#),
    );
    assert_eq!(check.status, 200, "a refused turn is an answer");
    assert_eq!(
        check.body,
        stdout(
            dir,
            &[
                "check", "--plan", &plan_file, "--turn", &turn_file, "--format", "json"
            ],
            1
        )
    );

    // check naming the plan by its fingerprint: the same report, without
    // sending the plan.
    let fingerprint =
        serde_json::from_str::<serde_json::Value>(&cli_plan).expect("plan json")["fingerprint"]
            .as_str()
            .expect("fingerprint")
            .to_string();
    let by_name = server.post(
        "/v1/check",
        json!({"turn": turn, "fingerprint": fingerprint, "flags": "production", "flag": ["X_UNUSED"]})
            .to_string(),
    );
    assert_eq!(by_name.status, 200);
    assert_eq!(by_name.body, check.body);
    assert_eq!(
        by_name.body,
        stdout(
            dir,
            &[
                "check",
                "--fingerprint",
                &fingerprint,
                "--flags",
                "production",
                "--flag",
                "X_UNUSED",
                "--turn",
                &turn_file,
                "--format",
                "json"
            ],
            1
        )
    );

    // Sessions: new, search, load, roster, resume, check.
    let new = server.post("/v1/sessions", r#"{"flags": "production"}"#);
    let cli_new = stdout(
        dir,
        &[
            "session",
            "new",
            "--flags",
            "production",
            "--out",
            "s.json",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(new.status, 200);
    assert_eq!(new.body, cli_new);
    let doc = new.body.clone();

    let search = server.post(
        "/v1/sessions/search",
        format!(r#"{{"session": {doc}, "query": "delete an event", "limit": 3}}"#),
    );
    assert_eq!(search.status, 200);
    assert_eq!(
        search.body,
        stdout(
            dir,
            &[
                "session",
                "search",
                "s.json",
                "delete an event",
                "--limit",
                "3",
                "--format",
                "json"
            ],
            0
        )
    );
    let queries = write(
        dir,
        "queries.jsonl",
        "{\"query\": \"delete an event\"}\n{\"query\": \"read my email\"}\n",
    );
    let many = server.post(
        "/v1/sessions/search",
        format!(r#"{{"session": {doc}, "queries": ["delete an event", "read my email"]}}"#),
    );
    assert_eq!(many.content_type, "application/x-ndjson");
    assert_eq!(
        many.body,
        stdout(
            dir,
            &["session", "search", "s.json", "--queries", &queries],
            0
        )
    );

    let load = server.post(
        "/v1/sessions/load",
        format!(r#"{{"session": {doc}, "query": "delete an event"}}"#),
    );
    let cli_load = stdout(
        dir,
        &[
            "session",
            "load",
            "s.json",
            "--query",
            "delete an event",
            "--format",
            "json",
        ],
        0,
    );
    assert_eq!(load.status, 200);
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Loaded {
        answer: LoadAnswer,
        session: SessionDocument,
    }
    let loaded: Loaded = serde_json::from_str(&load.body).expect("load envelope");
    assert_eq!(muster::answer::json_text(&loaded.answer), cli_load);
    assert_eq!(
        muster::session::to_json_string(&loaded.session),
        fixture.read("s.json"),
        "the document returned is the one the CLI wrote"
    );
    assert_eq!(loaded.session.loaded.len(), 1, "{}", load.body);
    let doc = fixture.read("s.json");

    for (path, args) in [
        (
            "/v1/sessions/roster",
            vec!["session", "roster", "s.json", "--format", "json"],
        ),
        (
            "/v1/sessions/resume",
            vec!["session", "resume", "s.json", "--format", "json"],
        ),
    ] {
        let reply = server.post(path, format!(r#"{{"session": {doc}}}"#));
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body, stdout(dir, &args, 0), "{path}");
    }

    let session_turn = json!({"calls": [
        {"id": "c1", "name": "schedule.delete", "arguments": {}}
    ]});
    let session_turn_file = write(dir, "turn2.json", &session_turn.to_string());
    let checked = server.post(
        "/v1/check",
        format!(r#"{{"turn": {session_turn}, "session": {doc}}}"#),
    );
    let cli_checked = muster(dir)
        .args([
            "check",
            "--session",
            "s.json",
            "--turn",
            &session_turn_file,
            "--format",
            "json",
        ])
        .output()
        .expect("check");
    assert_eq!(checked.status, 200);
    assert_eq!(checked.body.as_bytes(), cli_checked.stdout.as_slice());
}

#[test]
fn provider_formats_answer_the_bytes_the_cli_prints() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    for format in ["openai", "openai-responses", "anthropic", "gemini"] {
        let reply = server.post(
            "/v1/plan",
            format!(r#"{{"flags": "production", "format": "{format}"}}"#),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(
            reply.body,
            stdout(
                dir,
                &["plan", "--flags", "production", "--format", format],
                0
            ),
            "{format}"
        );
    }
    let json = server.post("/v1/plan", r#"{"format": "json"}"#);
    assert_eq!(json.body, stdout(dir, &["plan", "--format", "json"], 0));
    let bad = server.post("/v1/plan", r#"{"format": "vertex"}"#);
    let body = problem(&bad, 422, "usage");
    assert_eq!(body.problems[0].field.as_deref(), Some("format"));

    let doc = server.post("/v1/sessions", r#"{"flags": "production"}"#);
    assert_eq!(doc.status, 200, "{}", doc.body);
    let session = write(dir, "s.json", &doc.body);
    for format in ["openai", "openai-responses", "anthropic", "gemini"] {
        let reply = server.post(
            "/v1/sessions/roster",
            format!(r#"{{"session": {}, "format": "{format}"}}"#, doc.body),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(
            reply.body,
            stdout(dir, &["session", "roster", &session, "--format", format], 0),
            "{format}"
        );
    }
    // A session has one document format: `format` is not a field of it.
    let refused = server.post(
        "/v1/sessions",
        r#"{"flags": "production", "format": "openai"}"#,
    );
    let body = problem(&refused, 422, "input");
    assert!(body.detail.contains("format"), "{}", body.detail);
}

#[test]
fn count_answers_the_bytes_the_cli_prints() {
    let fixture = fixture();
    let dir = fixture.path();
    let request = json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
            {"role": "user", "content": "What's the weather like in San Francisco?"}
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {"type": "object", "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
            }, "required": ["location"]}
        }}]
    });
    let file = write(dir, "request.json", &request.to_string());
    let cli = stdout(dir, &["count", &file, "--format", "json"], 0);
    let server = Server::start(dir, &[]);
    let reply = server.post("/v1/count", json!({"request": request}).to_string());
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(reply.body, cli);
    let report: Value = serde_json::from_str(&reply.body).expect("json");
    // The cookbook's measured 101 prompt tokens on gpt-4o.
    assert_eq!(report["input_tokens"], 101);

    // --provider and --model as fields.
    let cli = stdout(
        dir,
        &["count", &file, "--format", "json", "--model", "gpt-4"],
        0,
    );
    let reply = server.post(
        "/v1/count",
        json!({"request": request, "model": "gpt-4", "provider": "openai"}).to_string(),
    );
    assert_eq!((reply.status, reply.body.as_str()), (200, cli.as_str()));

    // Bad input: problem+json naming the field.
    for (body, field) in [
        (json!({"request": {"model": "gpt-4o"}}), "messages"),
        (
            json!({"request": {"model": "nobody", "messages": []}}),
            "provider",
        ),
        (json!({"request": request, "provider": "gemini"}), "gemini"),
        (json!({"request": request, "extra": 1}), "extra"),
    ] {
        let reply = server.post("/v1/count", body.to_string());
        assert!(
            (400..500).contains(&reply.status),
            "{body}: {}",
            reply.status
        );
        assert_eq!(reply.content_type, "application/problem+json", "{body}");
        assert!(reply.body.contains(field), "{body}: {}", reply.body);
    }
}
