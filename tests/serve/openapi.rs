//! `/openapi.json` types every answer: each route's 2xx and 4xx responses
//! name component schemas, and real answers over HTTP validate against the
//! schema the document gives for their route and status.

use super::{Reply, Server, fixture};
use serde_json::{Value, json};

/// The response entry the document gives for `method path` answered
/// `status` (the exact status, else its `4XX` range).
fn response<'d>(doc: &'d Value, method: &str, path: &str, status: u16) -> (String, &'d Value) {
    let responses = &doc["paths"][path][method]["responses"];
    let key = if responses[status.to_string()].is_object() {
        status.to_string()
    } else {
        format!("{}XX", status / 100)
    };
    let entry = &responses[&key];
    assert!(
        entry.is_object(),
        "{method} {path}: no response for {status}"
    );
    (key, entry)
}

/// Validates `body` (as `content_type`) against the document's schema for
/// `method path` answered `status`; the problems, if any. The response's
/// schema gets the document's `components` beside it, so
/// `#/components/schemas/…` references resolve in it.
fn problems(
    doc: &Value,
    method: &str,
    path: &str,
    status: u16,
    content_type: &str,
    body: &Value,
) -> Vec<String> {
    let (_, entry) = response(doc, method, path, status);
    let content = entry["content"].as_object().expect("content");
    let media = content
        .keys()
        .find(|m| content_type.starts_with(m.as_str()))
        .unwrap_or_else(|| panic!("{method} {path} {status}: no {content_type} in {content:?}"));
    let mut root = content[media]["schema"].clone();
    root["components"] = doc["components"].clone();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .expect("the document is a valid schema");
    validator.iter_errors(body).map(|e| e.to_string()).collect()
}

fn body_of(reply: &Reply) -> Value {
    if reply.content_type.starts_with("application/json")
        || reply.content_type.starts_with("application/problem+json")
    {
        serde_json::from_str(&reply.body).expect("a JSON body")
    } else {
        Value::String(reply.body.clone())
    }
}

#[test]
fn every_answer_validates_against_its_routes_schema() {
    let fixture = fixture();
    let dir = fixture.path();
    // Sessions kept, so the routes by id answer too.
    let store = format!("sqlite:{}", dir.join("sessions.db").display());
    let server = Server::start(dir, &["--sessions", &store]);
    let doc: Value = serde_json::from_str(&server.get("/openapi.json").body).expect("json");

    // Every 2xx and 4xx response names a component schema (a plain-text
    // answer is a string), so no answer goes untyped.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("operation") {
            for (status, entry) in op["responses"].as_object().expect("responses") {
                if status == "204" {
                    assert!(
                        entry.get("content").is_none(),
                        "{method} {path}: a 204 has no body"
                    );
                    continue;
                }
                for (media, content) in entry["content"].as_object().expect("content") {
                    let schema = &content["schema"];
                    let named = schema["$ref"].is_string()
                        || schema["items"]["$ref"].is_string()
                        || (media.starts_with("text/") && schema["type"] == "string")
                        || (path == "/openapi.json" && schema["type"] == "object");
                    assert!(named, "{method} {path} {status} {media}: {schema}");
                }
            }
        }
    }

    let plan = server.post("/v1/plan", r#"{"flags": "production"}"#);
    let session = server.post("/v1/sessions", r#"{"flags": "production"}"#);
    let doc_text = session.body.clone();
    let turn = r#"{"calls": [{"id": "c1", "name": "system.current_time", "arguments": {}},
        {"id": "c2", "name": "math.calculate", "arguments": {"expression": 5}}]}"#;
    let count =
        json!({"request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}});
    let mut answers: Vec<(&str, &str, Reply)> = vec![
        ("post", "/v1/plan", plan.clone()),
        ("post", "/v1/sessions", session.clone()),
        (
            "post",
            "/v1/why",
            server.post("/v1/why", r#"{"tool": "math.calculate"}"#),
        ),
        (
            "post",
            "/v1/why",
            server.post("/v1/why", r#"{"tool": "math.calculat"}"#),
        ),
        (
            "post",
            "/v1/count",
            server.post("/v1/count", count.to_string()),
        ),
        (
            "post",
            "/v1/gate",
            server.post("/v1/gate", r#"{"gates": ["production"]}"#),
        ),
        (
            "post",
            "/v1/check",
            server.post(
                "/v1/check",
                format!(r#"{{"turn": {turn}, "plan": {}}}"#, plan.body),
            ),
        ),
        (
            "post",
            "/v1/call",
            server.post(
                "/v1/call",
                format!(r#"{{"turn": {turn}, "plan": {}}}"#, plan.body),
            ),
        ),
        (
            "post",
            "/v1/sessions/search",
            server.post(
                "/v1/sessions/search",
                format!(r#"{{"session": {doc_text}, "query": "delete an event"}}"#),
            ),
        ),
        (
            "post",
            "/v1/sessions/load",
            server.post(
                "/v1/sessions/load",
                format!(r#"{{"session": {doc_text}, "query": "delete an event"}}"#),
            ),
        ),
        (
            "post",
            "/v1/sessions/load",
            server.post(
                "/v1/sessions/load",
                format!(r#"{{"session": {doc_text}, "name": ["no.such_tool"]}}"#),
            ),
        ),
        (
            "post",
            "/v1/sessions/roster",
            server.post(
                "/v1/sessions/roster",
                format!(r#"{{"session": {doc_text}}}"#),
            ),
        ),
        (
            "post",
            "/v1/sessions/resume",
            server.post(
                "/v1/sessions/resume",
                format!(r#"{{"session": {doc_text}}}"#),
            ),
        ),
        ("get", "/readyz", server.get("/readyz")),
        ("get", "/healthz", server.get("/healthz")),
        ("get", "/metrics", server.get("/metrics")),
        ("get", "/openapi.json", server.get("/openapi.json")),
    ];
    let id = serde_json::from_str::<Value>(&doc_text).expect("doc")["id"]
        .as_str()
        .expect("a kept session has an id")
        .to_string();
    let by_id = format!("/v1/sessions/{id}");
    answers.push(("get", "/v1/sessions/{id}", server.get(&by_id)));
    let other = server.post("/v1/sessions", "{}");
    let other_id = serde_json::from_str::<Value>(&other.body).expect("doc")["id"]
        .as_str()
        .expect("id")
        .to_string();
    answers.push((
        "delete",
        "/v1/sessions/{id}",
        server.delete(&format!("/v1/sessions/{other_id}")),
    ));
    let gone = server.get(&format!("/v1/sessions/{other_id}"));
    assert_eq!(gone.status, 404, "{}", gone.body);
    answers.push(("get", "/v1/sessions/{id}", gone));
    // Problems: one per verb.
    for path in [
        "/v1/plan",
        "/v1/why",
        "/v1/count",
        "/v1/gate",
        "/v1/check",
        "/v1/call",
        "/v1/sessions",
        "/v1/sessions/search",
        "/v1/sessions/load",
        "/v1/sessions/roster",
        "/v1/sessions/resume",
    ] {
        answers.push(("post", path, server.post(path, r#"{"no_such_field": 1}"#)));
    }
    // A changed pin: 409 with the resume report; a broken policy: 422.
    fixture.edit(
        "policies/tools/10-core.toml",
        "Evaluate an arithmetic expression exactly",
        "Evaluate an arithmetic expression",
    );
    answers.push((
        "post",
        "/v1/admin/reload",
        server.post("/v1/admin/reload", ""),
    ));
    for path in [
        "/v1/sessions/resume",
        "/v1/sessions/roster",
        "/v1/sessions/search",
    ] {
        let body = if path.ends_with("search") {
            format!(r#"{{"session": {doc_text}, "query": "x"}}"#)
        } else {
            format!(r#"{{"session": {doc_text}}}"#)
        };
        let reply = server.post(path, body);
        assert_eq!(reply.status, 409, "{path}");
        answers.push(("post", path, reply));
    }
    // A check naming the plan from before the edit by its fingerprint.
    let fingerprint =
        serde_json::from_str::<Value>(&plan.body).expect("plan")["fingerprint"].clone();
    let stale = server.post(
        "/v1/check",
        json!({"turn": serde_json::from_str::<Value>(turn).expect("turn"), "fingerprint": fingerprint, "flags": "production"})
            .to_string(),
    );
    assert_eq!(stale.status, 409, "{}", stale.body);
    answers.push(("post", "/v1/check", stale));
    let good = fixture.read("policies/muster.toml");
    fixture.write("policies/muster.toml", &format!("not_a_key = 1\n{good}"));
    answers.push((
        "post",
        "/v1/admin/reload",
        server.post("/v1/admin/reload", ""),
    ));

    let mut seen = std::collections::BTreeSet::new();
    for (method, path, reply) in &answers {
        if reply.status == 204 {
            assert!(reply.body.is_empty(), "{method} {path}: a 204 has no body");
            seen.insert((*method, *path, 2));
            continue;
        }
        let body = body_of(reply);
        let wrong = problems(&doc, method, path, reply.status, &reply.content_type, &body);
        assert!(
            wrong.is_empty(),
            "{method} {path} {}: {wrong:#?}\n{}",
            reply.status,
            reply.body
        );
        seen.insert((*method, *path, reply.status / 100));
    }
    // Every route was answered, and every verb both ways.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("operation").keys() {
            assert!(
                seen.contains(&(method.as_str(), path.as_str(), 2)),
                "{method} {path} never answered 2xx here"
            );
            if method == "post" {
                assert!(
                    seen.contains(&(method.as_str(), path.as_str(), 4)),
                    "{method} {path} never answered 4xx here"
                );
            }
        }
    }
}

/// The check can fail: an answer of the wrong shape, or one answer held
/// against another route's schema, is caught.
#[test]
fn a_wrong_answer_is_caught() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let doc: Value = serde_json::from_str(&server.get("/openapi.json").body).expect("json");
    let plan = server.post("/v1/plan", r#"{"flags": "production"}"#);
    let plan_body: Value = serde_json::from_str(&plan.body).expect("json");
    assert!(
        problems(
            &doc,
            "post",
            "/v1/plan",
            200,
            "application/json",
            &plan_body
        )
        .is_empty()
    );

    let mut no_roster = plan_body.clone();
    no_roster.as_object_mut().expect("object").remove("roster");
    assert!(
        !problems(
            &doc,
            "post",
            "/v1/plan",
            200,
            "application/json",
            &no_roster
        )
        .is_empty()
    );

    let mut wrong_code = plan_body.clone();
    wrong_code["roster"][0]["code"] = json!("no-such-code");
    assert!(
        !problems(
            &doc,
            "post",
            "/v1/plan",
            200,
            "application/json",
            &wrong_code
        )
        .is_empty()
    );

    let check = json!({"format_version": 3, "verdict": "maybe", "calls": []});
    assert!(!problems(&doc, "post", "/v1/check", 200, "application/json", &check).is_empty());

    assert!(
        !problems(
            &doc,
            "post",
            "/v1/check",
            200,
            "application/json",
            &plan_body
        )
        .is_empty(),
        "a plan is not a check report"
    );
    let problem = json!({"type": 1, "title": "t", "status": 422});
    assert!(
        !problems(
            &doc,
            "post",
            "/v1/plan",
            422,
            "application/problem+json",
            &problem
        )
        .is_empty()
    );
}
