//! Policy generations: a reload swaps the policy whole or not at all, a request
//! answers from one generation, and a pin or plan the serving generation no
//! longer makes is a 409.

use super::{
    Reply, Server,
    common::{self, stdout},
    fixture, problem, write,
};
use serde_json::{Value, json};

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
