//! The encoder's cost at 10,000 tools (docs/search.md, "The encoder's
//! cost"): scoring 10,000 cached vectors against one query vector (what
//! `Index::search` does per entry after encoding the query), a mixed search
//! end to end, and a warm mixed build (every vector cached, in memory and
//! read from `vectors.bin`).
//!
//! The corpus is `benches/search.rs`'s: the six recorded servers' 55 tools
//! under 182 made-up servers, 275 distinct texts for the encoder, so the
//! cache is warmed in seconds.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::search::encoder::{Encoder, Vector, dot};
use muster::search::vectors::{self, VectorCache};
use muster::search::{Entry, Index};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;

struct Tool {
    name: String,
    description: String,
    input_schema: Option<muster::schema::Schema>,
}

const ENTRIES: usize = 10_000;

fn corpus() -> Vec<Tool> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "tests/fixtures/mcp/everything.json",
        "tests/fixtures/mcp/filesystem.json",
        "tests/fixtures/mcp/memory.json",
        "policies/mcp/bland_call.json",
        "policies/mcp/bland_read.json",
        "policies/mcp/gmail_read.json",
    ];
    let templates: Vec<Value> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(root.join(file)).expect(file);
            let listing: Value = serde_json::from_str(&text).expect(file);
            listing["tools"].as_array().expect("tools").clone()
        })
        .collect();
    let teams = [
        "billing", "support", "research", "ops", "legal", "sales", "infra",
    ];
    let regions = ["eu", "us", "apac", "staging", "archive", "sandbox"];
    let purposes = [
        "Kept for the quarterly audit.",
        "Mirrors the production tenant.",
        "Read-only replica used by reporting.",
        "Scoped to the customer success workspace.",
        "Rate limited to 10 calls a minute.",
    ];
    (0..ENTRIES)
        .map(|i| {
            let t = &templates[i % templates.len()];
            let s = i / templates.len();
            let server = format!(
                "{}_{}{s}",
                teams[s % teams.len()],
                regions[s % regions.len()]
            );
            Tool {
                name: format!("mcp.{server}.{}", t["name"].as_str().expect("name")),
                description: format!(
                    "{} {}",
                    t["description"].as_str().unwrap_or(""),
                    purposes[s % purposes.len()]
                ),
                input_schema: t.get("inputSchema").map(muster::schema::Schema::new),
            }
        })
        .collect()
}

fn entries(tools: &[Tool]) -> impl Iterator<Item = Entry<'_>> {
    tools.iter().map(|t| Entry {
        name: &t.name,
        description: &t.description,
        input_schema: t.input_schema.as_ref(),
    })
}

fn bench_vectors(c: &mut Criterion) {
    let tools = corpus();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(vectors::FILE_NAME);
    let mut cache = VectorCache::open(&path);
    let index = Index::build_mixed(entries(&tools), &mut cache);
    cache.save().expect("save");
    assert_eq!(index.len(), ENTRIES);

    // 10,000 vectors, each its own allocation as an index holds them.
    let texts: Vec<String> = tools
        .iter()
        .map(|t| format!("{}: {}", t.name, t.description))
        .collect();
    let distinct: Vec<Vector> = texts[..64]
        .iter()
        .map(|t| Vector::from(Encoder::get().embed(t)))
        .collect();
    let stored: Vec<Vector> = (0..ENTRIES)
        .map(|i| Vector::from(&distinct[i % distinct.len()][..]))
        .collect();
    let query = Encoder::get().embed("find the emails about last week's invoice");

    let mut group = c.benchmark_group("vectors_10000");
    group.bench_function("score", |b| {
        b.iter(|| {
            let q = black_box(&query);
            stored
                .iter()
                .map(|v| (f64::from(dot(q, v)) * 10_000.0).round() as i64)
                .filter(|&s| s >= 2_000)
                .count()
        })
    });
    group.bench_function("encode_query", |b| {
        b.iter(|| Encoder::get().embed(black_box("find the emails about last week's invoice")))
    });
    group.bench_function("search_mixed", |b| {
        b.iter(|| index.search(black_box("find the emails about last week's invoice"), 5))
    });
    group.sample_size(10);
    group.bench_function("build_warm_in_memory", |b| {
        b.iter(|| Index::build_mixed(entries(black_box(&tools)), &mut cache))
    });
    group.bench_function("build_warm_from_file", |b| {
        b.iter(|| {
            let mut cache = VectorCache::open(&path);
            let index = Index::build_mixed(entries(black_box(&tools)), &mut cache);
            assert_eq!(cache.encoded(), 0);
            index
        })
    });
    group.finish();
}

criterion_group!(benches, bench_vectors);
criterion_main!(benches);
