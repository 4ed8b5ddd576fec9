//! Per-query cost of a session's search, in process: what
//! `muster session search S.json --queries FILE` does per line once the
//! session is open (`Live::search`, then the line's JSON), timed one query
//! at a time so the batch gives percentiles, not only a mean.
//!
//!     cargo run --release --example search_cost -- POLICIES S.json QUERIES [--rounds N]
//!
//! QUERIES has one `{"query": ...}` per line. The first search of a process
//! builds the deferred index; it is reported apart (`first_ms`), then every
//! query is timed `--rounds` times (default 3, round robin). Prints one JSON
//! line: the open, the first query and the per-query p50/p90/p99/max in ms.
//! Token counts come from `$MUSTER_CACHE_DIR` as the CLI's do.
//! `scripts/search-cost` runs it beside the CLI and the service.

use muster::answer;
use muster::policy::Inputs;
use muster::session::{self, SessionKeys};
use muster::tokens::{TokenCache, cache::FILE_NAME};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policies, file, queries] =
        [0, 1, 2].map(|i| {
            PathBuf::from(args.get(i).unwrap_or_else(|| {
                panic!("usage: search_cost POLICIES S.json QUERIES [--rounds N]")
            }))
        });
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .map_or(3, |i| args[i + 1].parse().expect("--rounds N"));
    let queries: Vec<String> = std::fs::read_to_string(&queries)
        .expect("the queries file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["query"].as_str().expect("a query").to_owned()
        })
        .collect();

    let start = Instant::now();
    let inputs = Inputs::load(&policies).expect("the policies load");
    let text = std::fs::read_to_string(&file).expect("the session file");
    let doc = session::read(&text, &file).expect("the session reads");
    let mut cache = match std::env::var_os("MUSTER_CACHE_DIR") {
        Some(dir) => TokenCache::open(&Path::new(&dir).join(FILE_NAME)),
        None => TokenCache::in_memory(),
    };
    let live = answer::open(&inputs, doc, &SessionKeys::none(), &file, &mut cache)
        .expect("it opens")
        .expect("the pin holds");
    let open_ms = ms(start.elapsed().as_nanos());

    let line = |q: &str| serde_json::to_string(&live.search(q, 5)).expect("JSON");
    let start = Instant::now();
    black_box(line(&queries[0]));
    let first_ms = ms(start.elapsed().as_nanos());

    // Wall clock, and this thread's CPU time, which leaves out the thread
    // being descheduled (on a busy machine, the whole of the wall-clock tail).
    let (mut wall, mut cpu): (Vec<u128>, Vec<u128>) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for q in &queries {
            let (start, start_cpu) = (Instant::now(), thread_cpu_nanos());
            black_box(line(black_box(q)));
            wall.push(start.elapsed().as_nanos());
            cpu.push(thread_cpu_nanos() - start_cpu);
        }
    }
    let mut out = serde_json::json!({
        "queries": queries.len(),
        "rounds": rounds,
        "open_ms": open_ms,
        "first_ms": first_ms,
    });
    for (label, times) in [("", &mut wall), ("cpu_", &mut cpu)] {
        times.sort_unstable();
        let at = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
        for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)] {
            out[format!("{label}{name}_ms")] = at(q).into();
        }
    }
    println!("{out}");
}

fn thread_cpu_nanos() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    assert!(ok, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

fn ms(nanos: u128) -> f64 {
    (nanos as f64 / 1_000.0).round() / 1_000.0
}
