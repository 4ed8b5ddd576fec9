//! Recall of muster's search on extracted public sets
//! (`scripts/search-eval/extract.py`), and the tuning of the mix of BM25F
//! and the encoder's cosine, in one process: each distinct text (tool or
//! query) is encoded once, and every ranking below is computed from the
//! same lexical scores and cosines.
//!
//!     cargo run --release --example search_eval -- \
//!         [--tune SET]... [--report SET]... [--pick SET]... [--pick-dir DIR] [--check N] \
//!         [--alphas A,A,...] [--floors F,F,...] [--norms best,abs]
//!
//! A SET is `LABEL=TOOLS_DIR:QUERIES_JSONL[:N]`: the tools of
//! TOOLS_DIR/tools.jsonl, the queries (`{"query", "expect": [names]}`) of
//! QUERIES_JSONL, only its first N when given (extract.py writes MetaTool's
//! splits in hash order, so that is a deterministic sample).
//!
//! Prints JSON lines:
//! - per `--tune` and `--report` set, `"ranker": "bm25f"`: `Index::search`
//!   on `Index::build` (BM25F alone, as before the encoder);
//! - per `--tune` set, `"ranker": "mix"` for each point of the grid
//!   (`ALPHAS` × `FLOORS` × both normalizations, below, or the values
//!   given with `--alphas`, `--floors` and `--norms`);
//! - `"chosen"`: per normalization, the (alpha, floor) with the best mean of
//!   recall@1 and recall@5 over the tune sets (ties: the earlier grid point),
//!   and the better of the two (`"winner"`); with no `--tune`, every grid
//!   point is reported and the winner is the first;
//! - per `--report` set, `"ranker": "mix"` at each normalization's chosen
//!   point and at the shipped constants (`search::ALPHA`, `COSINE_FLOOR`).
//!
//! The mix is `alpha · share + (1 − alpha) · cosine`, each part in
//! 1/10,000ths as `src/search.rs` rounds them; an entry is a candidate when
//! a query word matches it or its cosine reaches the floor. Normalization
//! `best` is what `src/search.rs` ships: `share` = the entry's lexical score
//! over the best lexical score among the query's hits. `abs` uses the
//! lexical score itself (`Hit::score`: the share of the best score the
//! query could reach, 0..1), not divided by the best hit. `--check N`
//! compares `best` at the shipped constants with `Index::build_mixed`'s
//! `search` on the first N queries of each tune set (the example's mix must
//! equal the library's).
//!
//! `--model minilm|static` ranks with that model's cosine, encoding each
//! text directly (`static` needs `--features static-model`); without it,
//! the library's model through its shared cache.
//!
//! `--pick SET` writes PICK_DIR/LABEL.jsonl (`/` in LABEL made `-`): per
//! query `{"set", "query", "expect", "top": [{"name", "lex", "cos", "mix"}]}`,
//! the top 10 by the chosen mix, `lex` the absolute lexical score (0..1,
//! `Index::search` on the lexical index), `cos` the cosine, `mix` the mixed
//! score, each rounded to 4 decimals.

use muster::schema::Schema;
use muster::search::{self, Entry, Index, encoder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Instant;

const ALPHAS: [f64; 6] = [0.1, 0.2, 0.25, 0.3, 0.4, 0.5];
const FLOORS: [f64; 3] = [0.1, 0.2, 0.3];
const NORMS: [Norm; 2] = [Norm::Best, Norm::Abs];
/// The largest score a hit that is not an exact name gets (`src/search.rs`).
const BELOW_EXACT: u64 = 9_999;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tool {
    name: String,
    #[serde(default)]
    description: String,
    input_schema: Option<Schema>,
}

#[derive(Deserialize)]
struct Labelled {
    query: String,
    expect: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Norm {
    Best,
    Abs,
}

impl Norm {
    fn name(self) -> &'static str {
        match self {
            Norm::Best => "best",
            Norm::Abs => "abs",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    norm: Norm,
    alpha: f64,
    floor: f64,
}

/// One set of tools: the lexical index, each tool's vector and its place in
/// (name, index) order, the tie-break `src/search.rs` uses.
struct Tools {
    tools: Vec<Tool>,
    lexical: Index,
    vectors: Vec<encoder::Vector>,
    rank: Vec<u32>,
}

/// One labelled set of queries over one set of tools.
struct Set {
    label: String,
    tools: String,
    queries: Vec<Labelled>,
}

/// One query's lexical scores and cosines, both in 1/10,000ths.
struct Scored {
    exact: Option<usize>,
    lexical: Vec<(usize, u64)>,
    best: u64,
    cosine: Vec<i64>,
}

fn lines<T: for<'de> Deserialize<'de>>(path: &str) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// The text the encoder reads for an entry, as `src/search.rs` builds it:
/// the words of the name's last segment, then the description.
fn dense_text(name: &str, description: &str) -> String {
    search::dense_text(&Entry {
        name,
        description,
        input_schema: None,
    })
}

fn entries(tools: &[Tool]) -> impl Iterator<Item = Entry<'_>> {
    tools.iter().map(|t| Entry {
        name: &t.name,
        description: &t.description,
        input_schema: t.input_schema.as_ref(),
    })
}

fn load_tools(dir: &str) -> Tools {
    let started = Instant::now();
    let tools: Vec<Tool> = lines(&format!("{dir}/tools.jsonl"));
    let lexical = Index::build(entries(&tools));
    let vectors = tools
        .iter()
        .map(|t| embed_cached(&dense_text(&t.name, &t.description)))
        .collect();
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by(|&a, &b| tools[a].name.cmp(&tools[b].name).then(a.cmp(&b)));
    let mut rank = vec![0u32; tools.len()];
    for (place, &entry) in order.iter().enumerate() {
        rank[entry] = place as u32;
    }
    eprintln!(
        "{dir}: {} tools encoded in {:.1} s",
        tools.len(),
        started.elapsed().as_secs_f64()
    );
    Tools {
        tools,
        lexical,
        vectors,
        rank,
    }
}

fn score(tools: &Tools, query: &str) -> Scored {
    let exact = tools.lexical.exact(query.trim());
    let lexical: Vec<(usize, u64)> = tools
        .lexical
        .search(query, tools.tools.len() + 1)
        .into_iter()
        .filter(|h| Some(h.entry) != exact)
        .map(|h| (h.entry, (h.score * 10_000.0).round() as u64))
        .collect();
    let best = lexical.iter().map(|&(_, s)| s).max().unwrap_or(0);
    let q = embed_query(query);
    let cosine = tools
        .vectors
        .iter()
        .map(|v| (f64::from(encoder::dot(&q, v)) * 10_000.0).round() as i64)
        .collect();
    Scored {
        exact,
        lexical,
        best,
        cosine,
    }
}

/// The top `limit` entries by the mix at `point`, with their scores in
/// 1/10,000ths: `src/search.rs`'s `mix` for `Norm::Abs`.
fn mix(tools: &Tools, s: &Scored, point: Point, limit: usize) -> Vec<(usize, u64)> {
    let mut lex = vec![0u64; tools.tools.len()];
    for &(e, l) in &s.lexical {
        lex[e] = l;
    }
    let floor = (point.floor * 10_000.0).round() as i64;
    let mut out: Vec<(usize, u64)> = Vec::new();
    for (e, &cosine) in s.cosine.iter().enumerate() {
        if Some(e) == s.exact {
            continue;
        }
        let l = lex[e];
        if l == 0 && cosine < floor {
            continue;
        }
        let share = match point.norm {
            Norm::Best if s.best > 0 => (l as f64 / s.best as f64 * 10_000.0).round(),
            Norm::Best => 0.0,
            Norm::Abs => l as f64,
        };
        let score = point.alpha * share + (1.0 - point.alpha) * cosine.max(0) as f64;
        let score = (score.round() as u64).min(BELOW_EXACT);
        if score > 0 {
            out.push((e, score));
        }
    }
    out.sort_unstable_by_key(|&(e, score)| (std::cmp::Reverse(score), tools.rank[e]));
    let mut top: Vec<(usize, u64)> = s.exact.map(|e| (e, 10_000)).into_iter().collect();
    top.extend(out.into_iter().take(limit.saturating_sub(top.len())));
    top
}

/// Hits at 1 and at 5 of rankings, and the share of each query's expected
/// tools in its top 5 (of at most 5 expected), summed over queries.
#[derive(Clone, Copy, Default)]
struct Counts {
    at1: usize,
    at5: usize,
    share5: f64,
}

impl Counts {
    fn add(&mut self, tools: &Tools, expect: &[String], ranked: &[usize]) {
        let hit = |e: &usize| expect.contains(&tools.tools[*e].name);
        self.at1 += usize::from(ranked.first().is_some_and(hit));
        self.at5 += usize::from(ranked.iter().take(5).any(hit));
        let found = ranked.iter().take(5).filter(|e| hit(e)).count();
        self.share5 += found as f64 / expect.len().clamp(1, 5) as f64;
    }
}

fn recall(counts: Counts, n: usize) -> (f64, f64) {
    let n = n.max(1) as f64;
    let r = |c: usize| (c as f64 / n * 1000.0).round() / 1000.0;
    (r(counts.at1), r(counts.at5))
}

fn parse_set(spec: &str) -> (String, String, String, Option<usize>) {
    let (label, rest) = spec
        .split_once('=')
        .expect("SET is LABEL=TOOLS_DIR:QUERIES[:N]");
    let mut parts = rest.split(':');
    let tools = parts.next().expect("TOOLS_DIR").to_owned();
    let queries = parts.next().expect("QUERIES_JSONL").to_owned();
    let limit = parts.next().map(|n| n.parse().expect("N is a number"));
    (label.to_owned(), tools, queries, limit)
}

struct Run {
    tools: BTreeMap<String, Tools>,
}

impl Run {
    fn set(&mut self, spec: &str) -> Set {
        let (label, dir, file, limit) = parse_set(spec);
        let mut queries: Vec<Labelled> = lines(&file);
        if let Some(n) = limit {
            queries.truncate(n);
        }
        if !self.tools.contains_key(&dir) {
            let loaded = load_tools(&dir);
            self.tools.insert(dir.clone(), loaded);
        }
        Set {
            label,
            tools: dir,
            queries,
        }
    }

    /// Every query of `set` scored once, with progress on stderr.
    fn scored(&self, set: &Set) -> Vec<Scored> {
        let started = Instant::now();
        let tools = &self.tools[&set.tools];
        let out = set
            .queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                if i > 0 && i % 500 == 0 {
                    eprintln!(
                        "{}: {i} queries, {:.1} s",
                        set.label,
                        started.elapsed().as_secs_f64()
                    );
                }
                score(tools, &q.query)
            })
            .collect();
        eprintln!(
            "{}: {} queries scored in {:.1} s",
            set.label,
            set.queries.len(),
            started.elapsed().as_secs_f64()
        );
        out
    }
}

fn print_line(set: &Set, role: &str, extra: serde_json::Value, counts: Counts, tools: usize) {
    let (at1, at5) = recall(counts, set.queries.len());
    let share5 = (counts.share5 / set.queries.len().max(1) as f64 * 1000.0).round() / 1000.0;
    let mut line = serde_json::json!({
        "set": set.label, "role": role, "tools": tools, "queries": set.queries.len(),
        "recall_at_1": at1, "recall_at_5": at5, "share_at_5": share5, "model": model_name(),
    });
    if let (Some(line), Some(extra)) = (line.as_object_mut(), extra.as_object()) {
        line.extend(extra.clone());
    }
    println!("{line}");
}

fn point_json(p: Point) -> serde_json::Value {
    serde_json::json!({"ranker": "mix", "norm": p.norm.name(), "alpha": p.alpha, "floor": p.floor})
}

/// BM25F alone: `Index::search` on the lexical index, top 5.
fn bm25f(run: &Run, set: &Set, role: &str) {
    let tools = &run.tools[&set.tools];
    let mut counts = Counts::default();
    for q in &set.queries {
        let ranked: Vec<usize> = tools
            .lexical
            .search(&q.query, 5)
            .iter()
            .map(|h| h.entry)
            .collect();
        counts.add(tools, &q.expect, &ranked);
    }
    print_line(
        set,
        role,
        serde_json::json!({"ranker": "bm25f"}),
        counts,
        tools.tools.len(),
    );
}

fn mix_counts(tools: &Tools, set: &Set, scored: &[Scored], point: Point) -> Counts {
    let mut counts = Counts::default();
    for (q, s) in set.queries.iter().zip(scored) {
        let ranked: Vec<usize> = mix(tools, s, point, 5)
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        counts.add(tools, &q.expect, &ranked);
    }
    counts
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let values = |flag: &str| -> Vec<String> {
        args.iter()
            .zip(args.iter().skip(1))
            .filter(|(a, _)| *a == flag)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let pick_dir = values("--pick-dir").pop();
    let check: usize = values("--check")
        .pop()
        .map_or(0, |n| n.parse().expect("--check N"));
    let mut run = Run {
        tools: BTreeMap::new(),
    };

    // Tuning: the grid on every tune set, from one scoring of each query.
    let numbers = |flag: &str, default: &[f64]| -> Vec<f64> {
        values(flag).pop().map_or(default.to_vec(), |list| {
            list.split(',')
                .map(|n| n.parse().expect("a number"))
                .collect()
        })
    };
    let (alphas, floors) = (numbers("--alphas", &ALPHAS), numbers("--floors", &FLOORS));
    let norms: Vec<Norm> = values("--norms").pop().map_or(NORMS.to_vec(), |list| {
        list.split(',')
            .map(|n| match n {
                "best" => Norm::Best,
                "abs" => Norm::Abs,
                _ => panic!("--norms takes best and abs"),
            })
            .collect()
    });
    let grid: Vec<Point> = norms
        .iter()
        .flat_map(|&norm| {
            let floors = &floors;
            alphas.iter().flat_map(move |&alpha| {
                floors
                    .iter()
                    .map(move |&floor| Point { norm, alpha, floor })
            })
        })
        .collect();
    let mut totals = vec![0.0f64; grid.len()];
    let tune = values("--tune");
    for spec in &tune {
        let set = run.set(spec);
        let scored = run.scored(&set);
        let tools = &run.tools[&set.tools];
        bm25f(&run, &set, "tune");
        for (i, &point) in grid.iter().enumerate() {
            let counts = mix_counts(tools, &set, &scored, point);
            let (at1, at5) = recall(counts, set.queries.len());
            totals[i] += (at1 + at5) / 2.0;
            print_line(&set, "tune", point_json(point), counts, tools.tools.len());
        }
        if check > 0 {
            check_library(tools, &set, &scored, check);
        }
    }
    let shipped = Point {
        norm: Norm::Abs,
        alpha: search::ALPHA,
        floor: search::COSINE_FLOOR,
    };
    let mut chosen: Vec<Point> = Vec::new();
    // No tune set: every grid point is reported.
    if tune.is_empty() {
        chosen.clone_from(&grid);
    }
    for &norm in norms.iter().filter(|_| !tune.is_empty()) {
        // The first best point: strict improvement only, in grid order.
        let mut best: Option<(usize, f64)> = None;
        for (i, _) in grid.iter().enumerate().filter(|(_, p)| p.norm == norm) {
            if best.is_none_or(|(_, b)| totals[i] > b + 1e-12) {
                best = Some((i, totals[i]));
            }
        }
        if let Some((i, total)) = best {
            let mean = total / tune.len().max(1) as f64;
            println!(
                "{}",
                serde_json::json!({"chosen": point_json(grid[i]), "tune_mean": (mean * 10_000.0).round() / 10_000.0})
            );
            chosen.push(grid[i]);
        }
    }
    let winner = chosen
        .iter()
        .copied()
        .filter(|_| !tune.is_empty())
        .max_by(|a, b| {
            let at = |p: &Point| totals[grid.iter().position(|g| g == p).unwrap_or(0)];
            // `max_by` keeps the last of equals: compare so `best` wins ties.
            at(a)
                .total_cmp(&at(b))
                .then(b.norm.name().cmp(a.norm.name()).reverse())
        })
        .or(grid.first().copied())
        .unwrap_or(shipped);
    println!("{}", serde_json::json!({"winner": point_json(winner)}));

    // Reporting: BM25F, the chosen points and the shipped constants.
    let mut report_points = chosen.clone();
    if !report_points.contains(&shipped) {
        report_points.push(shipped);
    }
    for spec in values("--report") {
        let set = run.set(&spec);
        let scored = run.scored(&set);
        let tools = &run.tools[&set.tools];
        bm25f(&run, &set, "report");
        for &point in &report_points {
            let counts = mix_counts(tools, &set, &scored, point);
            let mut extra = point_json(point);
            extra["chosen"] = serde_json::json!(chosen.contains(&point));
            print_line(&set, "report", extra, counts, tools.tools.len());
        }
    }

    // Picks: the top 10 by the winning mix, with both parts.
    for spec in values("--pick") {
        let dir = pick_dir.as_deref().expect("--pick needs --pick-dir");
        let set = run.set(&spec);
        let scored = run.scored(&set);
        let tools = &run.tools[&set.tools];
        std::fs::create_dir_all(dir).expect("pick dir");
        let path = format!("{dir}/{}.jsonl", set.label.replace('/', "-"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("pick file"));
        for (q, s) in set.queries.iter().zip(&scored) {
            let lex: BTreeMap<usize, u64> = s.lexical.iter().copied().collect();
            let top: Vec<serde_json::Value> = mix(tools, s, winner, 10)
                .into_iter()
                .map(|(e, m)| {
                    let l = if Some(e) == s.exact {
                        10_000
                    } else {
                        lex.get(&e).copied().unwrap_or(0)
                    };
                    serde_json::json!({
                        "name": tools.tools[e].name,
                        "lex": l as f64 / 10_000.0,
                        "cos": s.cosine[e] as f64 / 10_000.0,
                        "mix": m as f64 / 10_000.0,
                    })
                })
                .collect();
            let row = serde_json::json!({"set": set.label, "query": q.query, "expect": q.expect, "top": top});
            writeln!(out, "{row}").expect("write pick");
        }
        out.flush().expect("write pick");
        println!(
            "{}",
            serde_json::json!({"pick": path, "set": set.label, "queries": set.queries.len(), "point": point_json(winner)})
        );
    }
}

/// The example's `abs` mix at the shipped constants against the library's
/// (`Index::build_mixed` + `search`, top 10) on the first `n` queries.
fn check_library(tools: &Tools, set: &Set, scored: &[Scored], n: usize) {
    let mixed = Index::build_mixed(
        entries(&tools.tools),
        &mut muster::search::vectors::shared()
            .lock()
            .expect("the vector cache"),
    );
    let point = Point {
        norm: Norm::Abs,
        alpha: search::ALPHA,
        floor: search::COSINE_FLOOR,
    };
    let mut mismatches = 0;
    for (q, s) in set.queries.iter().zip(scored).take(n) {
        let library: Vec<(usize, u64)> = mixed
            .search(&q.query, 10)
            .into_iter()
            .map(|h| (h.entry, (h.score * 10_000.0).round() as u64))
            .collect();
        if library != mix(tools, s, point, 10) {
            mismatches += 1;
        }
    }
    println!(
        "{}",
        serde_json::json!({"check": set.label, "queries": n.min(set.queries.len()), "mismatches": mismatches})
    );
}

/// The model `--model` names: `default` (the library's, through its
/// shared in-memory cache), `minilm` or `static`.
fn model_name() -> &'static str {
    static MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == "--model")
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| "default".into())
    })
}

/// The vector of a query: with `--query-tokens N`, MiniLM over its first N
/// tokens; else as the library encodes a query (MiniLM:
/// `Encoder::embed_query`; the static model: as a tool's text).
fn embed_query(text: &str) -> encoder::Vector {
    static CAP: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let cap = CAP.get_or_init(|| {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == "--query-tokens")
            .and_then(|i| args.get(i + 1))
            .map(|n| n.parse().expect("--query-tokens N"))
    });
    match (model_name(), cap) {
        (_, Some(n)) => encoder::Encoder::get().embed_capped(text, *n).into(),
        ("minilm" | "default", None) => encoder::Encoder::get().embed_query(text).into(),
        _ => embed_cached(text),
    }
}

/// The vector of `text` by the `--model`, encoded once per process.
fn embed_cached(text: &str) -> encoder::Vector {
    static SEEN: std::sync::Mutex<BTreeMap<String, encoder::Vector>> =
        std::sync::Mutex::new(BTreeMap::new());
    let embed = |text: &str| -> encoder::Vector {
        match model_name() {
            "minilm" => encoder::Encoder::get().embed(text).into(),
            #[cfg(feature = "static-model")]
            "static" => encoder::static_model::Static::get().embed(text).into(),
            #[cfg(not(feature = "static-model"))]
            "static" => panic!("--model static needs --features static-model"),
            _ => muster::search::vectors::shared()
                .lock()
                .expect("the vector cache")
                .vectors(&[text])
                .remove(0),
        }
    };
    let mut seen = SEEN.lock().expect("the eval's vectors");
    if let Some(v) = seen.get(text) {
        return v.clone();
    }
    let v = embed(text);
    seen.insert(text.to_owned(), v.clone());
    v
}
