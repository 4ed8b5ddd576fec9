//! Searching 10,000 deferred tools: the six recorded servers' 55 tools copied
//! under 182 made-up servers (distinct names, descriptions varied per
//! server). Criterion times the build and single queries; a plain loop of
//! 2,000 queries from the labelled set prints the median and p99 latency.

mod corpus;
use corpus::{ENTRIES, corpus, entries};

use criterion::{Criterion, criterion_group, criterion_main};
use muster::search::Index;
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

fn labelled_queries() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search/queries.jsonl");
    std::fs::read_to_string(path)
        .expect("queries.jsonl")
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect(line);
            v["query"].as_str().expect("query").to_owned()
        })
        .collect()
}

fn bench_search(c: &mut Criterion) {
    let tools = corpus();
    let index = Index::build(entries(&tools));
    assert_eq!(index.len(), ENTRIES);

    let mut group = c.benchmark_group("search_10000_entries");
    group.sample_size(10);
    group.bench_function("build", |b| {
        b.iter(|| Index::build(entries(black_box(&tools))))
    });
    group.finish();

    let mut group = c.benchmark_group("search_10000_entries");
    for (label, query) in [
        ("short", "calls"),
        ("typo", "serch emails"),
        (
            "long",
            "I need to go through every message in the mailbox that mentions the quarterly invoice and came in last week so I can reconcile them",
        ),
        ("exact", "mcp.ops_eu0.read_text_file"),
        ("synonym", "make a new folder"),
    ] {
        group.bench_function(label, |b| b.iter(|| index.search(black_box(query), 5)));
    }
    group.finish();

    // Tail latency over the labelled queries, round robin: wall-clock, and
    // this thread's CPU time (which leaves out being descheduled, the main
    // tail on a busy shared machine).
    let queries = labelled_queries();
    for q in &queries {
        black_box(index.search(q, 5));
    }
    let (mut wall, mut cpu): (Vec<Duration>, Vec<Duration>) = (0..2_000)
        .map(|i| {
            let query = &queries[i % queries.len()];
            let (start, start_cpu) = (Instant::now(), thread_cpu_time());
            black_box(index.search(black_box(query), 5));
            (start.elapsed(), thread_cpu_time() - start_cpu)
        })
        .unzip();
    for (label, times) in [("wall-clock", &mut wall), ("thread CPU", &mut cpu)] {
        times.sort_unstable();
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        eprintln!(
            "search over {ENTRIES} entries, {} queries, {label}: median {:?}, p99 {:?}, max {:?}",
            times.len(),
            at(0.5),
            at(0.99),
            times[times.len() - 1]
        );
    }
}

fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    assert!(ok, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
