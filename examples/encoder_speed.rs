//! The encoder's cost (docs/search-cost.md, "The encoder's cost").
//!
//!     cargo run --release --example encoder_speed -- encode TOOLS.jsonl QUERIES.jsonl
//!     cargo run --release --example encoder_speed -- build N DIR TOOLS.jsonl...
//!
//! `encode`: per-text encoding time on one thread, p50 and p90 (wall clock
//! and the thread's CPU time), over the first 200 tools' `name:
//! description` and the first 200 queries; one JSON line per kind of text.
//! "queries as searched" encodes the queries as `Index::search` does
//! (`Encoder::embed_query`: the first `MAX_QUERY_TOKENS` tokens).
//! `build`: a mixed index of N tools (the files' tools in order, again with
//! ` (copy K)` appended to each description once they run out) built cold
//! (empty cache in DIR/vectors.bin, which it removes first with its
//! journal), saved, then
//! warm (the cache opened from the file); one JSON line. TOOLS.jsonl holds
//! `{"name", "description"}` lines (`scripts/search-eval/extract.py`);
//! QUERIES.jsonl holds `{"query"}` lines.

use muster::search::encoder::Encoder;
use muster::search::vectors::{self, VectorCache};
use muster::search::{Entry, Index};
use serde::Deserialize;
use std::time::{Duration, Instant};

#[derive(Deserialize)]
struct Tool {
    name: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
struct Query {
    query: String,
}

fn lines<T: for<'de> Deserialize<'de>>(path: &str) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
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

/// p50 and p90 in milliseconds.
fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[ms.len() * 9 / 10])
}

fn time(kind: &str, texts: &[String], as_query: bool) {
    let encoder = Encoder::get();
    let embed = |t: &str| {
        if as_query {
            encoder.embed_query(t)
        } else {
            encoder.embed(t)
        }
    };
    // Warm the caches once.
    embed(&texts[0]);
    let (wall, cpu): (Vec<f64>, Vec<f64>) = texts
        .iter()
        .map(|t| {
            let (start, start_cpu) = (Instant::now(), thread_cpu_time());
            std::hint::black_box(embed(t));
            (
                start.elapsed().as_secs_f64() * 1e3,
                (thread_cpu_time() - start_cpu).as_secs_f64() * 1e3,
            )
        })
        .unzip();
    let tokens = texts
        .iter()
        .map(|t| {
            let n = encoder.tokenize(t).len();
            if as_query {
                n.min(muster::search::encoder::MAX_QUERY_TOKENS)
            } else {
                n
            }
        })
        .sum::<usize>() as f64;
    let ((w50, w90), (c50, c90)) = (percentiles(wall), percentiles(cpu));
    println!(
        "{{\"texts\":\"{kind}\",\"n\":{},\"tokens_mean\":{:.1},\"wall_p50_ms\":{w50:.2},\"wall_p90_ms\":{w90:.2},\"cpu_p50_ms\":{c50:.2},\"cpu_p90_ms\":{c90:.2}}}",
        texts.len(),
        tokens / texts.len() as f64
    );
}

fn build(n: usize, dir: &str, files: &[String]) {
    let tools: Vec<Tool> = files.iter().flat_map(|f| lines::<Tool>(f)).collect();
    let tools: Vec<(String, String)> = (0..n)
        .map(|i| {
            let t = &tools[i % tools.len()];
            let copy = i / tools.len();
            let description = if copy == 0 {
                t.description.clone()
            } else {
                format!("{} (copy {copy})", t.description)
            };
            (format!("mcp.s{copy}.{}", t.name), description)
        })
        .collect();
    let entries = || {
        tools.iter().map(|(name, description)| Entry {
            name,
            description,
            input_schema: None,
        })
    };
    let path = std::path::Path::new(dir).join(vectors::FILE_NAME);
    // The table and its journal (a small save goes to the journal alone).
    let journal = path.with_extension("bin.journal");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&journal);
    Encoder::get();
    let start = Instant::now();
    let mut cache = VectorCache::open(&path);
    let cold = Index::build_mixed(entries(), &mut cache);
    let encoded = cache.encoded();
    cache.save().expect("save");
    let cold_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut cache = VectorCache::open(&path);
    let warm = Index::build_mixed(entries(), &mut cache);
    let warm_ms = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(cache.encoded(), 0);
    assert_eq!(cold.len(), warm.len());
    let start = Instant::now();
    let lexical = Index::build(entries());
    let lexical_ms = start.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(lexical);
    let bytes: u64 = [&path, &journal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{{\"tools\":{n},\"encoded\":{encoded},\"cold_s\":{cold_s:.2},\"warm_ms\":{warm_ms:.1},\"lexical_build_ms\":{lexical_ms:.1},\"file_bytes\":{bytes}}}"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("encode") => {
            let tools: Vec<Tool> = lines(&args[1]);
            let queries: Vec<Query> = lines(&args[2]);
            let tools: Vec<String> = tools
                .iter()
                .take(200)
                .map(|t| format!("{}: {}", t.name, t.description))
                .collect();
            let queries: Vec<String> = queries.into_iter().take(200).map(|q| q.query).collect();
            time("tools", &tools, false);
            time("queries", &queries, false);
            time("queries as searched", &queries, true);
        }
        Some("build") => build(args[1].parse().expect("N"), &args[2], &args[3..]),
        _ => eprintln!(
            "usage: encoder_speed encode TOOLS.jsonl QUERIES.jsonl | build N DIR TOOLS.jsonl..."
        ),
    }
}
