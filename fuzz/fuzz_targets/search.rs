//! The search index over tool text and a query, both from fuzz bytes, with
//! long words made easy to reach (issue 30: one 2,000-letter word took
//! gigabytes).
//!
//! Byte 0 stretches: its low bit on, the query is its text repeated
//! (byte 0 >> 1) + 1 times with nothing between, so a short input becomes
//! one long word; byte 0 >> 4 times, the first description is made of its
//! own text run together likewise. The rest is split at the first NUL into
//! the descriptions (one per line, each a tool `mcp.s.t<n>`) and the query.
//! What must hold: no panic, no timeout or out-of-memory; the same query
//! gives the same hits twice; at most `limit` hits, best first, scores in
//! 0..=1.
#![no_main]

use libfuzzer_sys::fuzz_target;
use muster::search::{Entry, Index};

fuzz_target!(|data: &[u8]| {
    let Some((&stretch, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |&b| b == 0);
    let (Some(text), Some(query)) = (parts.next(), parts.next()) else {
        return;
    };
    let (Ok(text), Ok(query)) = (std::str::from_utf8(text), std::str::from_utf8(query)) else {
        return;
    };
    let query = if stretch & 1 == 1 {
        query.repeat(usize::from(stretch >> 1) + 1)
    } else {
        query.to_string()
    };
    let mut descriptions: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some(first) = descriptions.first_mut() {
        *first = first.repeat(usize::from(stretch >> 4) + 1);
    }
    let names: Vec<String> = (0..descriptions.len()).map(|i| format!("mcp.s.t{i}")).collect();
    let entries = names.iter().zip(&descriptions).map(|(name, description)| Entry {
        name,
        description,
        input_schema: None,
    });
    let index = Index::build(entries);
    let limit = 5;
    let hits = index.search(&query, limit);
    assert_eq!(hits, index.search(&query, limit), "the same query, other hits");
    assert!(hits.len() <= limit);
    for pair in hits.windows(2) {
        assert!(pair[0].score >= pair[1].score, "{hits:?}");
    }
    for hit in &hits {
        assert!((0.0..=1.0).contains(&hit.score), "{hit:?}");
    }
});
