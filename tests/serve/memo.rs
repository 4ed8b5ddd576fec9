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
