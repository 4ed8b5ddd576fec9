//! Issue 13's scale target: load and plan N tools (1k, 10k, 100k) from one
//! tools file and from one MCP snapshot, each with every schema written
//! alike or with a schema per tool (`_distinct`), the whole path
//! `muster plan` takes without a count cache (read, parse, validate, build
//! the catalog, count every definition, plan). Time should grow linearly
//! with N; the 100k runs should stay under 2 s.
//!
//! Before timing each size it runs it once more under a counting allocator
//! and prints the peak heap that one run held, so memory can be read per
//! size (linear growth); after the runs it prints the peak resident memory
//! of the bench process (the largest single run bounds it from above).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use muster::catalog::{Catalog, Selection};
use muster::plan::plan;
use muster::policy::Inputs;
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The system allocator, counting the bytes held now and the most held
/// since the last [`Counting::reset_peak`].
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the
// counters only add and subtract sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, size) };
        if !q.is_null() {
            if size >= layout.size() {
                let now =
                    HELD.fetch_add(size - layout.size(), Ordering::Relaxed) + size - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                HELD.fetch_sub(layout.size() - size, Ordering::Relaxed);
            }
        }
        q
    }
}

impl Counting {
    /// Starts a new peak from what is held now.
    fn reset_peak() {
        PEAK.store(HELD.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The most bytes held since the last reset, above what was held then.
    fn peak_above(base: usize) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(base)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

const MUSTER: &str = "[caps]\nitems = 30\ntokens = 9000\n\n\
                      [[agent]]\nname = \"chat\"\nversion = 1\n";

/// The `id` argument's description: one for every tool, or one per tool
/// (so every schema is distinct and none is shared).
fn id_description(i: usize, distinct: bool) -> String {
    if distinct {
        format!("Record {i} id.")
    } else {
        "Record id.".into()
    }
}

/// A policy directory with `n` configured tools in `tools/all.toml`.
fn one_tools_file(dir: &Path, n: usize, distinct: bool) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("muster.toml"), MUSTER).unwrap();
    let mut text = String::with_capacity(n * 260);
    for i in 0..n {
        let _ = write!(
            text,
            "[[tool]]\nname = \"bench.tool_{i}\"\n\
             description = \"Look up record {i} by its id and return its fields.\"\n\
             input_schema = {{ type = \"object\", properties = {{ id = {{ type = \"string\", \
             description = \"{}\" }}, limit = {{ type = \"integer\" }} }}, \
             required = [\"id\"] }}\n\n",
            id_description(i, distinct)
        );
    }
    std::fs::write(dir.join("tools/all.toml"), text).unwrap();
}

/// A policy directory with one server whose snapshot lists `n` tools.
fn one_snapshot(dir: &Path, n: usize, distinct: bool) {
    std::fs::create_dir_all(dir.join("mcp")).unwrap();
    std::fs::write(dir.join("muster.toml"), MUSTER).unwrap();
    std::fs::write(
        dir.join("mcp/kb.toml"),
        "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
    )
    .unwrap();
    let tools: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("tool_{i}"),
                "description": format!("Look up record {i} by its id and return its fields."),
                "inputSchema": {"type": "object", "properties": {
                    "id": {"type": "string", "description": id_description(i, distinct)},
                    "limit": {"type": "integer"}}, "required": ["id"]},
            })
        })
        .collect();
    let text = serde_json::to_vec(&serde_json::json!({ "tools": tools })).unwrap();
    std::fs::write(dir.join("mcp/kb.json"), text).unwrap();
}

/// Everything `muster plan` does: load, build, count, plan.
fn load_and_plan(dir: &Path) -> u32 {
    let inputs = Inputs::load(dir).expect("the bench policy loads");
    let catalog = Catalog::build(&inputs, &Selection::default()).expect("catalog");
    plan(&catalog, catalog.caps).totals.candidates
}

fn bench_scale(c: &mut Criterion) {
    for (label, make, distinct) in [
        (
            "one_tools_file",
            one_tools_file as fn(&Path, usize, bool),
            false,
        ),
        ("one_tools_file_distinct", one_tools_file, true),
        ("one_snapshot", one_snapshot, false),
        ("one_snapshot_distinct", one_snapshot, true),
    ] {
        let mut group = c.benchmark_group(format!("load_and_plan/{label}"));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(20));
        for n in SIZES {
            let dir = tempfile::tempdir().unwrap();
            make(dir.path(), n, distinct);
            // Once untimed: the tokenizer is built and the peak heap of one
            // run above what was held before it is read.
            assert_eq!(load_and_plan(dir.path()) as usize, n);
            let base = HELD.load(Ordering::Relaxed);
            Counting::reset_peak();
            assert_eq!(load_and_plan(dir.path()) as usize, n);
            eprintln!(
                "load_and_plan/{label}/{n}: peak heap {:.1} MiB ({} bytes per tool)",
                Counting::peak_above(base) as f64 / f64::from(1 << 20),
                Counting::peak_above(base) / n
            );
            group.bench_with_input(BenchmarkId::from_parameter(n), dir.path(), |b, dir| {
                b.iter(|| black_box(load_and_plan(black_box(dir))))
            });
        }
        group.finish();
    }
    eprintln!(
        "peak RSS of the bench process: {} MiB",
        peak_rss_kib() / 1024
    );
}

/// The peak resident set of this process, in KiB.
fn peak_rss_kib() -> i64 {
    // SAFETY: getrusage fills the struct we pass it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss
}

criterion_group!(benches, bench_scale);
criterion_main!(benches);
