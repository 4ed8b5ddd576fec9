//! The encoder's cost at 10,000 tools (docs/search-cost.md, "The encoder's
//! cost"): scoring 10,000 cached vectors against one query vector, as f32
//! dot products (`score`, before issue 35) and as int8 codes in one block
//! (`score_int8`, what `Index::search` does per entry after encoding the
//! query), a mixed search
//! end to end, 64 tool texts encoded one at a time and batched (a cold
//! catalog's cost), and a warm mixed build (every vector cached, in memory and
//! read from `vectors.bin`).
//!
//! The corpus is `benches/search.rs`'s: the six recorded servers' 55 tools
//! under 182 made-up servers, 275 distinct texts for the encoder, so the
//! cache is warmed in seconds.

mod corpus;
use corpus::{ENTRIES, corpus, entries};

use criterion::{Criterion, criterion_group, criterion_main};
use muster::search::Index;
use muster::search::encoder::packed::{Packed, Query};
use muster::search::encoder::{Encoder, Vector, dot};
use muster::search::vectors::{self, VectorCache};
use std::hint::black_box;

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
    // What `Index::search` scores since issue 35: the same 10,000 vectors
    // as int8 codes in one block, the query as int16, exact integer sums.
    let packed = Packed::new(&stored);
    let packed_query = Query::new(&query);
    let mut cosines = Vec::with_capacity(ENTRIES);
    group.bench_function("score_int8", |b| {
        b.iter(|| {
            packed.cosines(black_box(&packed_query), &mut cosines);
            cosines
                .iter()
                .map(|&c| (c * 10_000.0).round() as i64)
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
    // A cold catalog's encoding (issue 35): 64 distinct tool texts one at
    // a time, and as one call that batches them (the same bits).
    let cold: Vec<&str> = texts[..64].iter().map(String::as_str).collect();
    group.bench_function("encode_64_one_at_a_time", |b| {
        b.iter(|| {
            black_box(&cold)
                .iter()
                .map(|t| Encoder::get().embed(t))
                .collect::<Vec<_>>()
        })
    });
    group.bench_function("encode_64_batched", |b| {
        b.iter(|| Encoder::get().embed_batch(black_box(&cold)))
    });
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
