//! `muster serve` over real HTTP on 127.0.0.1: the built binary is started
//! on port 0 in a copy of the bundled policies, and every verb's body is
//! compared byte for byte with what the CLI prints for the same input.
//! Nothing here waits on a clock: the server's stderr lines say when it
//! listens, reloads and drains.

#[path = "serve/bounds.rs"]
mod bounds;
mod common;
#[path = "serve/hostile.rs"]
mod hostile;
#[path = "serve/memo.rs"]
mod memo;
#[path = "serve/openapi.rs"]
mod openapi;

use common::{Fixture, muster, stdout};
use muster::contract::{LoadAnswer, SessionDocument};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

/// A running `muster serve`, stopped on drop.
struct Server {
    child: Child,
    addr: String,
    /// The service's start line.
    start: Option<ServiceLog>,
    stderr: Receiver<String>,
    client: reqwest::blocking::Client,
}

impl Server {
    fn start(dir: &Path, args: &[&str]) -> Self {
        Self::start_with_env(dir, args, &[])
    }

    /// [`Server::start`] with more environment variables.
    fn start_with_env(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .current_dir(dir)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env_remove("MUSTER_ADMIN_TOKEN")
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start muster serve");
        let (send, stderr) = channel();
        let pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            addr: String::new(),
            start: None,
            stderr,
            client: common::http_client(),
        };
        let start = server.wait_event("start");
        server.addr = start
            .addr
            .clone()
            .expect("the start line names the address");
        server.start = Some(start);
        server
    }

    /// The next service log line (target `muster::serve`) of `event`,
    /// earlier lines skipped.
    fn wait_event(&self, event: &str) -> ServiceLog {
        loop {
            let line = self
                .stderr
                .recv()
                .unwrap_or_else(|_| panic!("muster serve ended before logging {event:?}"));
            let Ok(log) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if log["target"] == "muster::serve" && log["event"] == event {
                return serde_json::from_value(log).expect("a service log line");
            }
        }
    }

    /// The next stderr line starting with `prefix` (earlier lines skipped).
    fn wait_for(&self, prefix: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv()
                .unwrap_or_else(|_| panic!("muster serve ended before printing {prefix:?}"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn post(&self, path: &str, body: impl Into<String>) -> Reply {
        let response = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.into())
            .send()
            .expect("POST");
        Reply::from(response)
    }

    fn get(&self, path: &str) -> Reply {
        Reply::from(self.client.get(self.url(path)).send().expect("GET"))
    }

    fn delete(&self, path: &str) -> Reply {
        Reply::from(self.client.delete(self.url(path)).send().expect("DELETE"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone)]
struct Reply {
    status: u16,
    content_type: String,
    /// The `muster-policy-generation` header, when there is one.
    generation: Option<u64>,
    body: String,
}

impl From<reqwest::blocking::Response> for Reply {
    fn from(response: reqwest::blocking::Response) -> Self {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let generation = response
            .headers()
            .get("muster-policy-generation")
            .map(|v| v.to_str().expect("ascii").parse().expect("a number"));
        let body = response.text().expect("body");
        Self {
            status,
            content_type,
            generation,
            body,
        }
    }
}

/// One of the service's own log lines (start, reload, shutdown), read back
/// by this test's own type: every member the line may carry, typed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ServiceLog {
    timestamp: String,
    level: String,
    target: String,
    message: String,
    event: String,
    addr: Option<String>,
    policies: Option<String>,
    generation: Option<u64>,
    previous: Option<u64>,
    trigger: Option<String>,
    error_code: Option<String>,
    problems: Option<usize>,
    error: Option<String>,
    connections: Option<u64>,
    sessions: Option<String>,
    signed: Option<bool>,
    limit_ms: Option<u64>,
    admin: Option<String>,
}

/// A problem+json body, read back by this test's own type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ProblemBody {
    #[serde(rename = "type")]
    kind: String,
    title: String,
    status: u16,
    detail: String,
    problems: Vec<ProblemEntry>,
    omitted: Option<usize>,
    generation: Option<u64>,
    resume: Option<Value>,
    plan_changed: Option<Value>,
    stale_revision: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ProblemEntry {
    code: String,
    field: Option<String>,
    line: Option<usize>,
    message: String,
    help: Option<String>,
}

fn problem(reply: &Reply, status: u16, kind: &str) -> ProblemBody {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.content_type, "application/problem+json");
    let body: ProblemBody = serde_json::from_str(&reply.body).expect("problem+json");
    assert_eq!(body.kind, format!("urn:muster:problem:{kind}"));
    assert_eq!(body.status, status);
    coded(&body);
    body
}

/// Every problem of every problem+json these tests read has a code muster
/// documents: a property over all the requests the suite sends.
fn coded(body: &ProblemBody) {
    assert!(!body.problems.is_empty(), "{body:?}");
    for p in &body.problems {
        assert!(muster::is_kebab(&p.code), "{:?} in {body:?}", p.code);
        assert!(
            muster::problem_code::ALL.iter().any(|(c, _)| *c == p.code),
            "{:?} is not in docs/problems.md",
            p.code
        );
    }
}

/// The bundled policies with deferral on, so sessions have tools to load.
fn fixture() -> Fixture {
    let fixture = Fixture::bundled();
    fixture.edit(
        "policies/muster.toml",
        "[deferral]\nenabled = false",
        "[deferral]\nenabled = true",
    );
    fixture
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).expect("write");
    name.to_string()
}

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
fn a_changed_pin_is_a_409_with_the_resume_report() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let doc = server
        .post("/v1/sessions", r#"{"flags": "production"}"#)
        .body;
    write(dir, "s.json", &doc);
    fixture.edit(
        "policies/tools/10-core.toml",
        "Evaluate an arithmetic expression exactly",
        "Evaluate an arithmetic expression",
    );
    assert_eq!(server.post("/v1/admin/reload", "").status, 200);
    let cli: Value = serde_json::from_str(&stdout(
        dir,
        &["session", "resume", "s.json", "--format", "json"],
        1,
    ))
    .unwrap();
    // Every 409 is one shape: a problem whose type names the conflict and
    // one member its facts; here the resume report the CLI prints.
    let turn = json!({"calls": []});
    for (path, body) in [
        ("/v1/sessions/resume", format!(r#"{{"session": {doc}}}"#)),
        ("/v1/sessions/roster", format!(r#"{{"session": {doc}}}"#)),
        (
            "/v1/sessions/search",
            format!(r#"{{"session": {doc}, "query": "mail"}}"#),
        ),
        (
            "/v1/sessions/load",
            format!(r#"{{"session": {doc}, "name": ["schedule.delete"]}}"#),
        ),
        (
            "/v1/check",
            format!(r#"{{"session": {doc}, "turn": {turn}}}"#),
        ),
    ] {
        let reply = server.post(path, body);
        let conflict = problem(&reply, 409, "tool-pin-mismatch");
        assert_eq!(conflict.resume.as_ref(), Some(&cli), "{path}");
        assert!(conflict.plan_changed.is_none() && conflict.stale_revision.is_none());
    }
}

#[test]
fn a_check_naming_a_plan_the_policy_no_longer_makes_is_a_409_unjudged() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let plan: serde_json::Value =
        serde_json::from_str(&server.post("/v1/plan", r#"{"flags": "production"}"#).body)
            .expect("plan json");
    let fingerprint = plan["fingerprint"].as_str().expect("fingerprint");
    let turn = json!({"calls": [{"id": "c1", "name": "math.calculate", "arguments": {"expression": "1"}}]});
    let body = json!({"turn": turn, "fingerprint": fingerprint, "flags": "production"}).to_string();
    let before = server.post("/v1/check", body.clone());
    assert_eq!(before.status, 200, "{}", before.body);
    // Planned and compiled on the blocking pool the first time, answered
    // from the memo on the async worker after: the same bytes.
    let again = server.post("/v1/check", body.clone());
    assert_eq!((again.status, &again.body), (200, &before.body));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&before.body).expect("json")["verdict"],
        "run"
    );

    // Another selection plans another roster: not the plan named.
    let other = server.post(
        "/v1/check",
        json!({"turn": turn, "fingerprint": fingerprint}).to_string(),
    );
    assert_eq!(other.status, 409, "{}", other.body);

    // The policy changes the tool's description: the plan the model was
    // offered is no longer the one made, so the turn is not judged.
    fixture.edit(
        "policies/tools/10-core.toml",
        "Evaluate an arithmetic expression exactly",
        "Evaluate an arithmetic expression",
    );
    assert_eq!(server.post("/v1/admin/reload", "").status, 200);
    let after = server.post("/v1/check", body);
    let conflict = problem(&after, 409, "plan-changed");
    let changed: muster::contract::PlanChanged =
        serde_json::from_value(conflict.plan_changed.clone().expect("plan_changed"))
            .expect("a plan-changed answer");
    assert_eq!(changed.code, muster::contract::PlanChangedCode::PlanChanged);
    assert_eq!(changed.offered, fingerprint);
    assert_ne!(changed.now, fingerprint);
    let turn_file = write(dir, "turn.json", &turn.to_string());
    let cli: Value = serde_json::from_str(&stdout(
        dir,
        &[
            "check",
            "--fingerprint",
            fingerprint,
            "--flags",
            "production",
            "--turn",
            &turn_file,
            "--format",
            "json",
        ],
        1,
    ))
    .unwrap();
    assert_eq!(conflict.plan_changed, Some(cli));

    // A fingerprint that is not one, or a selection without one: 422.
    let bad = server.post(
        "/v1/check",
        json!({"turn": turn, "fingerprint": "sha256:12"}).to_string(),
    );
    let bad = problem(&bad, 422, "usage");
    assert_eq!(bad.problems[0].field.as_deref(), Some("fingerprint"));
    let stray = server.post(
        "/v1/check",
        json!({"turn": turn, "plan": plan, "flags": "production"}).to_string(),
    );
    let stray = problem(&stray, 422, "usage");
    assert_eq!(stray.problems[0].field.as_deref(), Some("fingerprint"));
}

#[test]
fn bad_input_is_problem_json_never_a_500() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &["--body-limit", "65536"]);

    let malformed = problem(&server.post("/v1/plan", "{\"agent\": "), 400, "input");
    assert_eq!(malformed.problems[0].field.as_deref(), Some("body"));

    let unknown = problem(
        &server.post("/v1/plan", r#"{"agnet": "chat"}"#),
        422,
        "input",
    );
    assert!(
        unknown.problems[0].message.contains("`agnet`"),
        "{unknown:?}"
    );

    problem(
        &server.post("/v1/plan", r#"{"agent": "nobody"}"#),
        422,
        "usage",
    );
    problem(
        &server.post("/v1/plan", r#"{"flags": "nightly"}"#),
        422,
        "usage",
    );
    problem(&server.post("/v1/plan", r#"{"item_cap": 0}"#), 422, "usage");
    problem(
        &server.post("/v1/plan", r#"{"item_cap": -1}"#),
        422,
        "input",
    );
    problem(
        &server.post("/v1/gate", r#"{"gates": ["../etc/passwd"]}"#),
        422,
        "usage",
    );
    problem(
        &server.post("/v1/check", r#"{"turn": {"calls": []}}"#),
        422,
        "usage",
    );
    let bad_turn = problem(
        &server.post(
            "/v1/check",
            r#"{"turn": {"cals": []}, "plan": {"roster": []}}"#,
        ),
        422,
        "input",
    );
    assert!(
        bad_turn
            .problems
            .iter()
            .all(|p| p.field.as_deref() == Some("plan") || p.field.as_deref() == Some("turn"))
    );

    let doc = server.post("/v1/sessions", "{}").body;
    let edited = doc.replacen(
        "\"loaded\":[]",
        "\"loaded\":[{\"name\": \"x.y\", \"tokens\": 1}]",
        1,
    );
    assert_ne!(edited, doc);
    let refused = problem(
        &server.post("/v1/sessions/roster", format!(r#"{{"session": {edited}}}"#)),
        422,
        "input",
    );
    assert_eq!(refused.problems[0].field.as_deref(), Some("session"));
    problem(
        &server.post(
            "/v1/sessions/search",
            format!(r#"{{"session": {doc}, "query": "x", "limit": 11}}"#),
        ),
        422,
        "usage",
    );

    let big = format!(r#"{{"agent": "{}"}}"#, "a".repeat(70_000));
    problem(&server.post("/v1/plan", big), 413, "body-too-large");

    problem(&server.get("/v1/nothing"), 404, "not-found");
    problem(&server.get("/v1/plan"), 405, "method-not-allowed");
}

#[test]
fn a_broken_policy_on_reload_keeps_the_old_generation_serving() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let before = server.post("/v1/plan", "{}").body;
    let good = fixture.read("policies/muster.toml");
    fixture.write("policies/muster.toml", &format!("not_a_key = 1\n{good}"));

    let refused = problem(&server.post("/v1/admin/reload", ""), 422, "policy");
    assert_eq!(refused.generation, Some(1));
    let failed = server.wait_event("reload-failed");
    assert_eq!(
        (
            failed.level.as_str(),
            failed.trigger.as_deref(),
            failed.generation,
            failed.error_code.as_deref(),
            failed.problems
        ),
        ("WARN", Some("http"), Some(1), Some("policy"), Some(1))
    );
    assert!(
        failed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("not_a_key")),
        "{failed:?}"
    );
    assert_eq!(
        failed.message,
        "the policies failed validation: generation 1 keeps serving"
    );
    assert_eq!(server.post("/v1/plan", "{}").body, before);
    let metrics = server.get("/metrics").body;
    assert!(
        metrics.contains("muster_policy_reloads_total{result=\"failed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("muster_policy_last_reload_success 0"),
        "{metrics}"
    );
    assert!(metrics.contains("muster_policy_generation 1"), "{metrics}");

    fixture.write(
        "policies/muster.toml",
        &good.replace("items = 30", "items = 29"),
    );
    let reloaded = server.post("/v1/admin/reload", "");
    assert_eq!(reloaded.status, 200);
    let log = server.wait_event("reload");
    assert_eq!(
        (log.trigger.as_deref(), log.generation, log.previous),
        (Some("http"), Some(2), Some(1))
    );
    assert_eq!(log.policies.as_deref(), Some("policies"));
    assert_eq!(
        serde_json::from_str::<Value>(&reloaded.body).expect("json"),
        json!({"status": "reloaded", "generation": 2})
    );
    assert_eq!(
        server.post("/v1/plan", "{}").body,
        stdout(dir, &["plan", "--format", "json"], 0)
    );
    assert_ne!(server.post("/v1/plan", "{}").body, before);

    // SIGHUP reloads too.
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGHUP) };
    let log = server.wait_event("reload");
    assert_eq!(
        (log.level.as_str(), log.trigger.as_deref(), log.generation),
        ("INFO", Some("sighup"), Some(3))
    );
    let ready: Value = serde_json::from_str(&server.get("/readyz").body).expect("json");
    assert_eq!(ready["generation"], 3);
    let metrics = server.get("/metrics").body;
    assert!(
        metrics.contains("muster_policy_reloads_total{result=\"ok\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("muster_http_requests_total{endpoint=\"/v1/plan\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("muster_http_request_duration_seconds_bucket{"),
        "{metrics}"
    );
}

#[test]
fn the_openapi_document_lists_every_route() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let doc: Value = serde_json::from_str(&server.get("/openapi.json").body).expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    let routes = [
        ("post", "/v1/plan"),
        ("post", "/v1/why"),
        ("post", "/v1/count"),
        ("post", "/v1/gate"),
        ("post", "/v1/check"),
        ("post", "/v1/call"),
        ("post", "/v1/sessions"),
        ("get", "/v1/sessions/{id}"),
        ("delete", "/v1/sessions/{id}"),
        ("post", "/v1/sessions/search"),
        ("post", "/v1/sessions/load"),
        ("post", "/v1/sessions/roster"),
        ("post", "/v1/sessions/resume"),
        ("post", "/v1/admin/reload"),
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
        ("get", "/openapi.json"),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    let distinct: std::collections::BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
    assert_eq!(paths.len(), distinct.len(), "{:?}", paths.keys());
    for (method, path) in routes {
        assert!(paths[path][method].is_object(), "{method} {path}");
        // And the route exists on the server: anything but 404.
        let reply = if method == "get" {
            server.get(path)
        } else {
            server.post(path, "{}")
        };
        assert_ne!(reply.status, 404, "{method} {path}");
    }
}

#[test]
fn sigterm_lets_the_request_in_flight_finish() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let body = r#"{"flags": "production"}"#;
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    write!(
        stream,
        "POST /v1/plan HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nexpect: 100-continue\r\n\r\n",
        server.addr,
        body.len()
    )
    .expect("headers");
    // The server asks for the body once the handler reads it: the request
    // is in flight.
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("100 Continue");
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");
    reader.read_line(&mut line).expect("blank line");

    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let shutdown = server.wait_event("shutdown");
    assert_eq!(shutdown.connections, Some(1));
    assert_eq!(shutdown.message, "shutting down: draining 1 connection(s)");
    stream.write_all(body.as_bytes()).expect("body");
    let mut response = String::new();
    reader.read_to_string(&mut response).expect("response");
    let (head, answer) = response.split_once("\r\n\r\n").expect("head and body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        answer,
        stdout(
            dir,
            &["plan", "--flags", "production", "--format", "json"],
            0
        )
    );
    server.wait_event("stopped");
    let mut server = server;
    let status = server.child.wait().expect("exit");
    assert_eq!(status.code(), Some(0));
}

/// One request's log line, read back by this test's own type.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct RequestLog {
    timestamp: String,
    level: String,
    target: String,
    message: String,
    method: String,
    endpoint: String,
    status: u16,
    latency_us: u64,
    generation: u64,
}

impl Server {
    /// The next request log line on stderr.
    fn next_request_log(&self) -> RequestLog {
        loop {
            let line = self.wait_for("{");
            let log: Value = serde_json::from_str(&line).expect("a JSON log line");
            if log["target"] == "muster::request" {
                return serde_json::from_value(log).expect("a request log line");
            }
        }
    }
}

#[test]
fn every_request_is_one_structured_log_line() {
    let fixture = fixture();
    let dir = fixture.path();
    let server = Server::start(dir, &[]);
    let start = server.start.as_ref().expect("start line");
    assert_eq!(
        (
            start.level.as_str(),
            start.policies.as_deref(),
            start.generation
        ),
        ("INFO", Some("policies"), Some(1))
    );
    assert_eq!(
        start.message,
        format!("listening on http://{}", server.addr)
    );
    assert_eq!(server.post("/v1/plan", "{}").status, 200);
    let log = server.next_request_log();
    assert_eq!(
        (
            log.level.as_str(),
            log.method.as_str(),
            log.endpoint.as_str(),
            log.status,
            log.generation
        ),
        ("INFO", "POST", "/v1/plan", 200, 1)
    );
    assert_eq!(log.message, "request");

    problem(&server.post("/v1/why", r#"{"tol": "x"}"#), 422, "input");
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.status), ("/v1/why", 422));

    problem(&server.get("/v1/nothing"), 404, "not-found");
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.status), ("unmatched", 404));

    assert_eq!(server.post("/v1/admin/reload", "").status, 200);
    let log = server.next_request_log();
    assert_eq!(
        (log.endpoint.as_str(), log.generation),
        ("/v1/admin/reload", 2)
    );
    assert_eq!(server.get("/healthz").status, 200);
    let log = server.next_request_log();
    assert_eq!((log.endpoint.as_str(), log.generation), ("/healthz", 2));
}

#[test]
fn a_request_during_reloads_answers_from_one_generation() {
    let fixture = fixture();
    let dir = fixture.path();
    let good = fixture.read("policies/muster.toml");
    let other = good.replace("items = 30", "items = 29");
    assert_ne!(good, other);
    let server = Server::start(dir, &[]);
    let body = r#"{"flags": "production"}"#;
    let plan = |args: &[&str]| stdout(dir, args, 0);
    let args = ["plan", "--flags", "production", "--format", "json"];
    // Odd generations load `good`, even ones `other`.
    let answers = [plan(&args), {
        fixture.write("policies/muster.toml", &other);
        let b = plan(&args);
        fixture.write("policies/muster.toml", &good);
        b
    }];
    assert_ne!(answers[0], answers[1]);

    let reloads = 12;
    let url = server.url("/v1/plan");
    let started = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let seen = std::thread::scope(|scope| {
        let askers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let client = common::http_client();
                    let mut seen = Vec::new();
                    // Ask until the reloads are over, then once more.
                    loop {
                        let last = done.load(std::sync::atomic::Ordering::SeqCst);
                        let reply = Reply::from(
                            client
                                .post(&url)
                                .header("content-type", "application/json")
                                .body(body)
                                .send()
                                .expect("POST"),
                        );
                        assert_eq!(reply.status, 200, "{}", reply.body);
                        seen.push((reply.generation.expect("generation"), reply.body));
                        if seen.len() == 1 {
                            started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        if last {
                            break seen;
                        }
                    }
                })
            })
            .collect();
        // Every asker has an answer of generation 1 before the first reload.
        while started.load(std::sync::atomic::Ordering::SeqCst) < askers.len() {
            std::thread::yield_now();
        }
        for n in 0..reloads {
            let text = if n % 2 == 0 { &other } else { &good };
            fixture.write("policies/muster.toml", text);
            let reloaded = server.post("/v1/admin/reload", "");
            assert_eq!(reloaded.status, 200, "{}", reloaded.body);
            assert_eq!(reloaded.generation, Some(n + 2));
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        askers
            .into_iter()
            .flat_map(|a| a.join().expect("asker"))
            .collect::<Vec<_>>()
    });
    for (generation, answer) in &seen {
        let expected = &answers[usize::from(generation % 2 == 0)];
        assert!(
            answer == expected,
            "generation {generation} answered with the other policy's plan"
        );
    }
    let generations: std::collections::BTreeSet<u64> = seen.iter().map(|(g, _)| *g).collect();
    assert!(
        generations.contains(&1) && generations.contains(&(reloads + 1)),
        "{generations:?}"
    );
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
