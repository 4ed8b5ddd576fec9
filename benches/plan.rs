//! Planning a large catalog: the bundled production-shaped tools plus
//! discovered tools up to 30 configured + 970 discovered.
//!
//! - `plan_1000_candidates/cached_token_counts`: the plan alone, counts known
//!   (the "warm plan" figure; target 20 µs).
//! - `plan_1000_candidates/cold_token_counts`: every definition rendered and
//!   counted with no cache, then planned.
//! - `count_1000_definitions/tokenizer`: counting every definition with no
//!   cache, tokenizer already built (target 10 ms).
//! - `count_1000_definitions/cache_hits`: the same through a warm cache
//!   (rendering and hashing only): what a run whose definitions did not
//!   change spends on counts.
//! - `count_1000_texts/{bpe_openai,bpe_openai_pieces,tiktoken_rs}`: the same
//!   rendered texts counted on one thread by the tokenizer muster uses (each
//!   text on its own, then as muster counts a batch, remembering the count
//!   of each piece met) and by the reference, side by side. The first two
//!   keep bpe-openai's name, muster's tokenizer before issue 34, so saved
//!   baselines still compare.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::catalog::{Catalog, Selection};
use muster::plan::plan;
use muster::policy::{Inputs, ListedTool, Listings};
use muster::tokens::{TokenCache, render_function};
use std::hint::black_box;
use std::path::Path;

/// The bundled policy grown to 30 configured and 970 discovered tools. The
/// discovered tools reuse the bundled servers' real definitions under new
/// names, spread over 10 servers.
fn large_policy() -> Inputs {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let mut inputs = Inputs::load(&root).expect("bundled policies load");
    // The renamed copies are not in the bundled lock; this bench measures
    // planning, not review.
    inputs.lock = None;
    let policy = &mut inputs.policy;
    let mut extra = policy.tools[0].clone();
    extra.name = "bench.extra".into();
    policy.tools.push(extra);
    assert_eq!(policy.tools.len(), 30);
    let templates: Vec<ListedTool> = policy
        .servers
        .iter()
        .flat_map(|s| inputs.listings.of(&s.name).iter().cloned())
        .collect();
    let base = policy.servers[0].clone();
    let mut listings = Listings::default();
    policy.servers = (0..10)
        .map(|s| {
            let mut server = base.clone();
            server.name = format!("server{s}");
            listings.set(
                server.name.clone(),
                (0..97)
                    .map(|t| {
                        let mut tool = templates[(s * 97 + t) % templates.len()].clone();
                        tool.name = format!("{}_{t}", tool.name);
                        tool
                    })
                    .collect(),
            );
            server
        })
        .collect();
    inputs.listings = listings;
    inputs
}

fn bench_plan(c: &mut Criterion) {
    let inputs = large_policy();
    let selection = Selection {
        profile: Some("production".into()),
        ..Selection::default()
    };
    let mut catalog = Catalog::build(&inputs, &selection).expect("catalog");
    assert_eq!(catalog.candidates.len(), 1000);
    let caps = catalog.caps;

    let mut group = c.benchmark_group("plan_1000_candidates");
    group.bench_function("cached_token_counts", |b| {
        b.iter(|| {
            let p = plan(black_box(&catalog), caps);
            black_box(p.totals);
        })
    });
    group.sample_size(20);
    group.bench_function("cold_token_counts", |b| {
        b.iter(|| {
            catalog.count_tokens(&mut TokenCache::in_memory());
            let p = plan(black_box(&catalog), caps);
            black_box(p.totals);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("count_1000_definitions");
    group.sample_size(20);
    group.bench_function("tokenizer", |b| {
        b.iter(|| catalog.count_tokens(&mut TokenCache::in_memory()))
    });
    let mut warm = TokenCache::in_memory();
    catalog.count_tokens(&mut warm);
    group.bench_function("cache_hits", |b| {
        b.iter(|| catalog.count_tokens(black_box(&mut warm)))
    });
    group.finish();

    let texts: Vec<String> = catalog
        .candidates
        .iter()
        .map(|c| render_function(&c.name, &c.description, &c.input_schema.value()))
        .collect();
    let encoding = catalog.encoding;
    let reference = tiktoken_rs::o200k_base_singleton();
    let mut group = c.benchmark_group("count_1000_texts");
    group.sample_size(20);
    group.bench_function("bpe_openai", |b| {
        b.iter(|| texts.iter().map(|t| encoding.count_text(t)).sum::<u32>())
    });
    let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
    group.bench_function("bpe_openai_pieces", |b| {
        b.iter(|| encoding.count_texts_on(black_box(&borrowed), 1))
    });
    group.bench_function("tiktoken_rs", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| reference.count_ordinary(t))
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
