//! Searching 10,000 deferred tools: the six recorded servers' 55 tools copied
//! under 182 made-up servers (distinct names, descriptions varied per
//! server). Criterion times the build and single queries; a plain loop of
//! 2,000 queries from the labelled set prints the median and p99 latency.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::search::{Entry, Index};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

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
