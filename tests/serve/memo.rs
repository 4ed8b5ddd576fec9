//! The per-generation memos stay inside their bound however many distinct
//! bodies arrive, and a kept answer is the bytes a fresh one would be.

use super::{Server, fixture};

/// The value of one sample line of `/metrics`, e.g.
/// `muster_memo_entries{memo="plans"}`.
fn sample(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in\n{metrics}"))
}

#[test]
fn distinct_bodies_never_grow_a_memo_past_its_bound() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &["--memo-entries", "8"]);
    let plan = server.post("/v1/plan", r#"{"flags": "production"}"#);
    assert_eq!(plan.status, 200, "{}", plan.body);
    let turn = r#"{"calls": [{"id": "c1", "name": "system.current_time", "arguments": {}}]}"#;
    // 60 bodies that differ only in trailing spaces: 60 memo keys, one answer.
    for n in 0..60 {
        let pad = " ".repeat(n);
        let again = server.post("/v1/plan", format!(r#"{{"flags": "production"}}{pad}"#));
        assert_eq!((again.status, &again.body), (200, &plan.body));
        // The plan's own bytes differ (spaces inside it), as the memo keys them.
        let offered = format!("{{{pad}{}", &plan.body[1..]);
        let check = server.post(
            "/v1/check",
            format!(r#"{{"turn": {turn}, "plan": {offered}}}"#),
        );
        assert_eq!(check.status, 200, "{}", check.body);
        assert!(check.body.contains(r#""verdict": "run""#), "{}", check.body);
    }
    let metrics = server.get("/metrics").body;
    for memo in ["plans", "offered"] {
        let entries = sample(&metrics, &format!("muster_memo_entries{{memo=\"{memo}\"}}"));
        let evicted = sample(&metrics, &format!("muster_memo_evicted{{memo=\"{memo}\"}}"));
        let bytes = sample(&metrics, &format!("muster_memo_bytes{{memo=\"{memo}\"}}"));
        assert_eq!(entries, 8, "{memo}: {metrics}");
        assert!(evicted >= 50, "{memo}: {evicted} evicted");
        assert!(
            bytes > 0 && bytes <= 16 * 1024 * 1024,
            "{memo}: {bytes} bytes"
        );
    }
}

#[test]
fn a_byte_bound_holds_as_well_as_the_entry_bound() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &["--memo-bytes", "4096"]);
    for n in 0..20 {
        let body = format!(r#"{{"flags": "production", "flag": ["X{n}"]}}"#);
        assert_eq!(server.post("/v1/plan", body).status, 200);
    }
    let metrics = server.get("/metrics").body;
    let bytes = sample(&metrics, "muster_memo_bytes{memo=\"plans\"}");
    assert!(bytes <= 4096, "{bytes} bytes held past a 4096-byte bound");
}

#[test]
fn memo_off_answers_the_same_bytes() {
    let fixture = fixture();
    let kept = Server::start(fixture.path(), &[]);
    let fresh = Server::start(fixture.path(), &["--memo-entries", "0"]);
    let body = r#"{"flags": "production", "item_cap": 12}"#;
    let first = kept.post("/v1/plan", body);
    let hit = kept.post("/v1/plan", body);
    let miss = fresh.post("/v1/plan", body);
    assert_eq!(first.status, 200);
    assert_eq!(first.body, hit.body);
    assert_eq!(first.body, miss.body);
    let metrics = fresh.get("/metrics").body;
    assert_eq!(sample(&metrics, "muster_memo_entries{memo=\"plans\"}"), 0);
}

/// Issue 22 item 3: each session request built the catalog, the plan and
/// the search index again. Sessions of one selection now open on one basis
/// per generation: many searches and a load keep one `sessions` memo entry,
/// and answer what a fresh service answers.
#[test]
fn session_requests_of_one_selection_share_one_basis() {
    let fixture = fixture();
    let server = Server::start(fixture.path(), &[]);
    let fresh = Server::start(fixture.path(), &["--memo-entries", "0"]);
    let doc = server.post("/v1/sessions", r#"{"flags": "production"}"#);
    assert_eq!(doc.status, 200, "{}", doc.body);
    for query in ["email", "list my labels", "get a thread"] {
        let body = format!(r#"{{"session": {}, "query": "{query}"}}"#, doc.body);
        let kept = server.post("/v1/sessions/search", body.clone());
        assert_eq!(kept.status, 200, "{}", kept.body);
        assert_eq!(kept.body, fresh.post("/v1/sessions/search", body).body);
    }
    let body = format!(r#"{{"session": {}, "query": "email labels"}}"#, doc.body);
    let load = server.post("/v1/sessions/load", body.clone());
    assert_eq!(load.status, 200, "{}", load.body);
    assert_eq!(load.body, fresh.post("/v1/sessions/load", body).body);
    let metrics = server.get("/metrics").body;
    assert_eq!(
        sample(&metrics, "muster_memo_entries{memo=\"sessions\"}"),
        1
    );
    assert_eq!(
        sample(&metrics, "muster_memo_evicted{memo=\"sessions\"}"),
        0
    );
}
