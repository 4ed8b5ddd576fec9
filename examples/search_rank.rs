//! Recall of muster's search on extracted public sets
//! (`scripts/search-eval/extract.py`), ranked by the library itself
//! (`Index::search_with`, the knobs of `search::Knobs`), with the baselines
//! `scripts/search-eval/compare.py` needs, in one process:
//!
//!     cargo run --release --example search_rank -- --cache DIR \
//!         [--tune SET]... [--report SET]... [--grid KNOB=V,V,...]... \
//!         [--knobs KNOB=V,...] [--build KNOB=V,...] [--max-tokens N] [--dump FILE] [--cost N] \
//!         [--dump-texts FILE | --vectors FILE]
//!
//! A SET is `LABEL=TOOLS_DIR:QUERIES_JSONL[:N]` (the first N queries).
//! `--cache DIR` keeps the tools' vectors (DIR/vectors.bin, muster's
//! vector cache) and the queries' and needs' (DIR/queries-ARITHMETIC.bin,
//! by `encoder::ARITHMETIC`, which `vectors.bin` keys by too), so a text is
//! encoded once across runs.
//!
//! Prints JSON lines: per tune set and grid point (`--grid`, the product of
//! the values given, from `Knobs::SHIPPED`), recall@1, recall@5 and the
//! share of the expected tools in the top 5 (of at most 5); the chosen
//! point (best mean of the three over the tune sets, ties to the earlier
//! point, among the points whose every search encoded at most
//! `--max-tokens` tokens); per report set the same at the chosen point (or
//! at `--knobs` when given: `muster`), at the shipped knobs (`shipped`) and
//! at the mix before issue 35's ranking work (`single`: the shipped knobs
//! with requests never cut and no server named). Each line also gives the
//! tokens a query's search encoded (p50, p90, max). `--dump FILE` writes
//! per report query the top 10 of each ranker: those three, `bm25f`
//! (BM25F alone) and `minilm` (the cosine of the whole query's vector, 256
//! tokens, to the tools', f32, top 100). `--cost N`: the first N queries
//! of each report set searched as the library does, the thread's CPU time
//! per search (p50, p90) at each of the three points. `--build` builds
//! every index as `search::Build` says (`run_ons=1`, `namespace=W`).
//! `--dump-texts` and `--vectors` put another encoder's vectors in
//! MiniLM's place ([`Outside`]; `scripts/search-eval/external.py`).

use muster::schema::Schema;
use muster::search::encoder::{self, Encoder};
use muster::search::vectors::{self, VectorCache};
use muster::search::{Build, Entry, Index, Knobs};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Write as _;

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

fn lines<T: for<'de> Deserialize<'de>>(path: &str) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// One set of tools, indexed both ways, with its f32 vectors for `minilm`.
struct Tools {
    tools: Vec<Tool>,
    lexical: Index,
    mixed: Index,
    vectors: Vec<encoder::Vector>,
}

/// Vectors made outside muster, to measure another encoder in the same
/// ranking: `--dump-texts FILE` writes every text a run would encode (a
/// JSON line `{"cap", "text"}`; cap 0 for a tool's dense text, else the
/// query's token cap) and ranks with placeholder vectors; `--vectors FILE`
/// takes every vector from FILE (records as in the query cache below,
/// cap 0 for tools) and stops at a text FILE lacks. Neither reads or
/// writes the cache's vectors.
enum Outside {
    Dump(std::io::BufWriter<std::fs::File>),
    Use(HashMap<(usize, String), Vec<f32>>),
}

impl Outside {
    fn vector(&mut self, cap: usize, text: &str) -> Vec<f32> {
        match self {
            Outside::Dump(out) => {
                let line = serde_json::json!({"cap": cap, "text": text});
                writeln!(out, "{line}").expect("write --dump-texts");
                let mut v = vec![0.0; encoder::DIM];
                v[0] = 1.0;
                v
            }
            Outside::Use(known) => known
                .get(&(cap, text.to_owned()))
                .unwrap_or_else(|| panic!("--vectors has no vector for cap {cap}, {text:?}"))
                .clone(),
        }
    }
}

/// Records of cap (u32), text length (u32), text, then the vector (f32);
/// a record cut short ends the reading. `whole`: the file must exist and
/// end at a record's end (`--vectors`), not only may (the query cache).
fn read_records(path: &str, whole: bool) -> HashMap<(usize, String), Vec<f32>> {
    let mut known = HashMap::new();
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if whole => panic!("--vectors {path}: {e}"),
        Err(_) => Vec::new(),
    };
    let mut at = 0;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    while at + 8 <= bytes.len() {
        let (cap, len) = (u32_at(at), u32_at(at + 4));
        let end = at + 8 + len + 4 * encoder::DIM;
        if end > bytes.len() {
            break;
        }
        let text = String::from_utf8_lossy(&bytes[at + 8..at + 8 + len]).into_owned();
        let v = bytes[at + 8 + len..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        known.insert((cap, text), v);
        at = end;
    }
    assert!(
        !whole || at == bytes.len(),
        "--vectors {path}: a record is cut short at byte {at}"
    );
    known
}

/// Query and need vectors by (token cap, text), kept in DIR/queries-ARITHMETIC.bin
/// ([`read_records`]'s records).
struct QueryCache {
    path: String,
    known: HashMap<(usize, String), Vec<f32>>,
    fresh: Vec<(usize, String)>,
    outside: Option<Outside>,
}

impl QueryCache {
    fn open(path: String, outside: Option<Outside>) -> Self {
        QueryCache {
            known: read_records(&path, false),
            path,
            fresh: Vec::new(),
            outside,
        }
    }

    fn get(&mut self, text: &str, cap: usize) -> Vec<f32> {
        if let Some(outside) = self.outside.as_mut() {
            return outside.vector(cap, text);
        }
        let key = (cap, text.to_owned());
        if let Some(v) = self.known.get(&key) {
            return v.clone();
        }
        let v = Encoder::get().embed_capped(text, cap);
        self.known.insert(key.clone(), v.clone());
        self.fresh.push(key);
        v
    }

    fn save(&mut self) {
        if let Some(Outside::Dump(out)) = self.outside.as_mut() {
            out.flush().expect("write --dump-texts");
        }
        let mut out = Vec::new();
        for key in self.fresh.drain(..) {
            out.extend((key.0 as u32).to_le_bytes());
            out.extend((key.1.len() as u32).to_le_bytes());
            out.extend(key.1.as_bytes());
            for x in &self.known[&key] {
                out.extend(x.to_le_bytes());
            }
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("queries.bin");
        f.write_all(&out).expect("write queries.bin");
    }
}

fn entries(tools: &[Tool]) -> impl Iterator<Item = Entry<'_>> {
    tools.iter().map(|t| Entry {
        name: &t.name,
        description: &t.description,
        input_schema: t.input_schema.as_ref(),
    })
}

fn load_tools(dir: &str, cache: &mut VectorCache, qc: &mut QueryCache, build: &Build) -> Tools {
    let tools: Vec<Tool> = lines(&format!("{dir}/tools.jsonl"));
    let mut outside = VectorCache::in_memory();
    let cache = match qc.outside.as_mut() {
        None => cache,
        Some(o) => {
            for e in entries(&tools) {
                let text = muster::search::dense_text(&e);
                outside.insert(&text, o.vector(0, &text).into());
            }
            &mut outside
        }
    };
    let lexical = Index::build_with(entries(&tools), build);
    let mixed = Index::build_mixed_with(entries(&tools), cache, build);
    let texts: Vec<String> = entries(&tools)
        .map(|e| muster::search::dense_text(&e))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = cache.vectors(&texts);
    cache.save().expect("save vectors.bin");
    eprintln!("{dir}: {} tools", tools.len());
    Tools {
        tools,
        lexical,
        mixed,
        vectors,
    }
}

/// Recall@1, recall@5 and share@5 sums, and the tokens each query's
/// search encoded.
#[derive(Clone, Default)]
struct Counts {
    n: usize,
    at1: usize,
    at5: usize,
    share5: f64,
    tokens: Vec<usize>,
}

impl Counts {
    fn add(&mut self, expect: &[String], ranked: &[&str]) {
        let hit = |e: &&str| expect.iter().any(|x| x == e);
        self.n += 1;
        self.at1 += usize::from(ranked.first().is_some_and(hit));
        self.at5 += usize::from(ranked.iter().take(5).any(hit));
        let found = ranked.iter().take(5).filter(|e| hit(e)).count();
        self.share5 += found as f64 / expect.len().clamp(1, 5) as f64;
    }

    fn figures(&self) -> [f64; 3] {
        let n = self.n.max(1) as f64;
        let r = |x: f64| (x / n * 1000.0).round() / 1000.0;
        [r(self.at1 as f64), r(self.at5 as f64), r(self.share5)]
    }
}

/// Sets one knob from `name=value`.
fn set_knob(k: &mut Knobs, name: &str, value: &str) {
    let f = || {
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("{name}={value}"))
    };
    let n = || {
        value
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("{name}={value}"))
    };
    match name {
        "alpha" => k.alpha = f(),
        "floor" => k.floor = f(),
        "needs" => k.needs = n(),
        "clauses" => k.clauses = value == "1" || value == "true",
        "gamma" => k.gamma = f(),
        "whole" => k.whole = value == "1" || value == "true",
        "whole_encoded" => k.whole_encoded = value == "1" || value == "true",
        "need_weight" => k.need_weight = f(),
        "whole_first" => k.whole_first = value == "1" || value == "true",
        "named" => k.named = f(),
        "same_server" => k.same_server = f(),
        "name_cover" => k.name_cover = f(),
        "lex_rank" => k.lex_rank = f(),
        "need_idf" => k.need_idf = f(),
        "need_share" => k.need_share = f(),
        "query_tokens" => k.query_tokens = n(),
        "need_tokens" => k.need_tokens = n(),
        _ => panic!("no knob {name}"),
    }
}

fn knobs_json(k: &Knobs) -> serde_json::Value {
    serde_json::json!({"alpha": k.alpha, "floor": k.floor, "needs": k.needs, "clauses": k.clauses, "gamma": k.gamma,
        "whole": k.whole, "whole_encoded": k.whole_encoded, "need_weight": k.need_weight, "whole_first": k.whole_first, "named": k.named, "same_server": k.same_server, "name_cover": k.name_cover, "lex_rank": k.lex_rank, "need_idf": k.need_idf, "need_share": k.need_share, "query_tokens": k.query_tokens, "need_tokens": k.need_tokens})
}

struct Set {
    label: String,
    dir: String,
    queries: Vec<Labelled>,
}

fn parse_set(spec: &str) -> Set {
    let (label, rest) = spec
        .split_once('=')
        .expect("SET is LABEL=TOOLS_DIR:QUERIES[:N]");
    let mut parts = rest.split(':');
    let dir = parts.next().expect("TOOLS_DIR").to_owned();
    let file = parts.next().expect("QUERIES_JSONL");
    let mut queries: Vec<Labelled> = lines(file);
    if let Some(n) = parts.next() {
        queries.truncate(n.parse().expect("N"));
    }
    Set {
        label: label.to_owned(),
        dir,
        queries,
    }
}

/// The top `limit` names the library ranks for `query` at `knobs`, and
/// the tokens it encoded.
fn muster_top<'t>(
    tools: &'t Tools,
    qc: &mut QueryCache,
    query: &str,
    knobs: &Knobs,
    limit: usize,
) -> (Vec<&'t str>, usize) {
    let mut tokens = 0;
    let mut embed = |text: &str, cap: usize| {
        tokens += Encoder::get()
            .tokenize(text)
            .len()
            .min(cap.clamp(2, encoder::MAX_TOKENS));
        qc.get(text, cap)
    };
    let top = tools
        .mixed
        .search_with(query, limit, knobs, &mut embed)
        .iter()
        .map(|h| tools.tools[h.entry].name.as_str())
        .collect();
    (top, tokens)
}

fn run_set(tools: &Tools, qc: &mut QueryCache, set: &Set, knobs: &Knobs) -> Counts {
    let mut counts = Counts::default();
    for q in &set.queries {
        let (top, tokens) = muster_top(tools, qc, &q.query, knobs, 5);
        counts.add(&q.expect, &top);
        counts.tokens.push(tokens);
    }
    counts
}

fn line(set: &Set, role: &str, ranker: &str, knobs: Option<&Knobs>, c: &Counts) {
    let [at1, at5, share5] = c.figures();
    let mut l = serde_json::json!({"set": set.label, "role": role, "ranker": ranker,
        "queries": c.n, "recall_at_1": at1, "recall_at_5": at5, "share_at_5": share5});
    if !c.tokens.is_empty() {
        let mut t = c.tokens.clone();
        t.sort_unstable();
        l["tokens_p50"] = t[t.len() / 2].into();
        l["tokens_p90"] = t[t.len() * 9 / 10].into();
        l["tokens_max"] = t[t.len() - 1].into();
    }
    if let Some(k) = knobs {
        l["knobs"] = knobs_json(k);
    }
    println!("{l}");
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
    let dir = values("--cache").pop().expect("--cache DIR");
    std::fs::create_dir_all(&dir).expect("cache dir");
    let mut vc = VectorCache::open(&std::path::Path::new(&dir).join(vectors::FILE_NAME));
    let outside = match (values("--dump-texts").pop(), values("--vectors").pop()) {
        (Some(p), None) => Some(Outside::Dump(std::io::BufWriter::new(
            std::fs::File::create(p).expect("--dump-texts FILE"),
        ))),
        (None, Some(p)) => Some(Outside::Use(read_records(&p, true))),
        (None, None) => None,
        _ => panic!("--dump-texts or --vectors, not both"),
    };
    let mut qc = QueryCache::open(
        format!("{dir}/queries-{}.bin", encoder::ARITHMETIC),
        outside,
    );
    let mut grid = vec![Knobs::SHIPPED];
    for spec in values("--grid") {
        let (name, list) = spec.split_once('=').expect("--grid KNOB=V,V");
        grid = grid
            .iter()
            .flat_map(|k| {
                list.split(',').map(move |v| {
                    let mut k = *k;
                    set_knob(&mut k, name, v);
                    k
                })
            })
            .collect();
    }
    // `--build run_ons=1,namespace=W`: how every index is built.
    let mut build = Build::SHIPPED;
    for kv in values("--build").iter().flat_map(|s| s.split(',')) {
        let (n, v) = kv.split_once('=').expect("--build KNOB=V");
        match n {
            "run_ons" => build.run_ons = v == "1" || v == "true",
            "namespace" => build.namespace_weight = v.parse().expect("namespace=W"),
            "named_outside" => build.named_outside = v.parse().expect("named_outside=S"),
            _ => panic!("no build knob {n}"),
        }
    }
    eprintln!("{build:?}");
    let mut tools: HashMap<String, Tools> = HashMap::new();
    let mut load = |dir: &str, vc: &mut VectorCache, qc: &mut QueryCache| {
        if !tools.contains_key(dir) {
            tools.insert(dir.to_owned(), load_tools(dir, vc, qc, &build));
        }
    };
    let tune: Vec<Set> = values("--tune").iter().map(|s| parse_set(s)).collect();
    let report: Vec<Set> = values("--report").iter().map(|s| parse_set(s)).collect();
    for s in tune.iter().chain(&report) {
        load(&s.dir, &mut vc, &mut qc);
    }
    let max_tokens: usize = values("--max-tokens")
        .pop()
        .map_or(usize::MAX, |v| v.parse().expect("--max-tokens N"));
    let mut affordable = vec![true; grid.len()];
    let mut totals = vec![0.0; grid.len()];
    for set in &tune {
        let t = &tools[&set.dir];
        let mut c = Counts::default();
        for q in &set.queries {
            let top: Vec<&str> = t
                .lexical
                .search(&q.query, 5)
                .iter()
                .map(|h| t.tools[h.entry].name.as_str())
                .collect();
            c.add(&q.expect, &top);
        }
        line(set, "tune", "bm25f", None, &c);
        for (i, k) in grid.iter().enumerate() {
            let c = run_set(t, &mut qc, set, k);
            totals[i] += c.figures().iter().sum::<f64>() / 3.0;
            affordable[i] &= c.tokens.iter().all(|&t| t <= max_tokens);
            line(set, "tune", "muster", Some(k), &c);
        }
        qc.save();
        eprintln!("{}: tuned", set.label);
    }
    // The best mean over the tune sets among the points whose searches
    // encoded at most --max-tokens tokens each (ties to the earlier point).
    let mut chosen: Option<usize> = None;
    for i in 0..grid.len() {
        if affordable[i] && chosen.is_none_or(|c| totals[i] > totals[c] + 1e-9) {
            chosen = Some(i);
        }
    }
    let best = chosen.map_or(0.0, |c| totals[c]);
    let chosen = grid[chosen.expect("a grid point within --max-tokens")];
    if !tune.is_empty() {
        let mean = best / tune.len() as f64;
        println!(
            "{}",
            serde_json::json!({"chosen": knobs_json(&chosen), "tune_mean": (mean * 10_000.0).round() / 10_000.0})
        );
    }
    let mut points = vec![("muster", chosen)];
    if let Some(spec) = values("--knobs").pop() {
        let mut k = Knobs::SHIPPED;
        for kv in spec.split(',') {
            let (n, v) = kv.split_once('=').expect("KNOB=V");
            set_knob(&mut k, n, v);
        }
        points[0] = ("muster", k);
    }
    points.push(("shipped", Knobs::SHIPPED));
    points.push((
        "single",
        Knobs {
            needs: 1,
            named: 0.0,
            ..Knobs::SHIPPED
        },
    ));
    let mut dump = values("--dump")
        .pop()
        .map(|p| std::io::BufWriter::new(std::fs::File::create(p).expect("dump")));
    for set in &report {
        let t = &tools[&set.dir];
        let mut counts: Vec<Counts> = vec![Counts::default(); points.len() + 2];
        for (qi, q) in set.queries.iter().enumerate() {
            let mut row = serde_json::json!({"set": set.label, "i": qi, "query": q.query,
                "tools": set.dir, "expect": q.expect});
            for (p, (name, k)) in points.iter().enumerate() {
                let (top, tokens) = muster_top(t, &mut qc, &q.query, k, 10);
                counts[p].add(&q.expect, &top);
                counts[p].tokens.push(tokens);
                row[name] = serde_json::json!(top);
            }
            let lex: Vec<&str> = t
                .lexical
                .search(&q.query, 10)
                .iter()
                .map(|h| t.tools[h.entry].name.as_str())
                .collect();
            counts[points.len()].add(&q.expect, &lex);
            row["bm25f"] = serde_json::json!(lex);
            let qv = qc.get(&q.query, encoder::MAX_TOKENS);
            let mut cos: Vec<(f32, usize)> = t
                .vectors
                .iter()
                .enumerate()
                .map(|(e, v)| (encoder::dot(&qv, v), e))
                .collect();
            cos.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let dense: Vec<&str> = cos
                .iter()
                .take(100)
                .map(|&(_, e)| t.tools[e].name.as_str())
                .collect();
            counts[points.len() + 1].add(&q.expect, &dense);
            row["minilm"] = serde_json::json!(dense);
            if let Some(d) = dump.as_mut() {
                writeln!(d, "{row}").expect("write dump");
            }
        }
        for (p, (name, k)) in points.iter().enumerate() {
            line(set, "report", name, Some(k), &counts[p]);
        }
        line(set, "report", "bm25f", None, &counts[points.len()]);
        line(set, "report", "minilm", None, &counts[points.len() + 1]);
        qc.save();
    }
    if let Some(d) = dump.as_mut() {
        d.flush().expect("write dump");
    }
    // Cost: each report query searched as the library does (its texts
    // encoded, no cache), the thread's CPU time, at each point.
    if let Some(n) = values("--cost").pop() {
        let n: usize = n.parse().expect("--cost N");
        for set in &report {
            let t = &tools[&set.dir];
            for (name, k) in &points {
                let mut ms: Vec<f64> = Vec::new();
                let mut tokens: Vec<usize> = Vec::new();
                for q in set.queries.iter().take(n) {
                    let mut used = 0;
                    let mut embed = |text: &str, cap: usize| {
                        used += Encoder::get().tokenize(text).len().min(cap);
                        Encoder::get().embed_capped(text, cap)
                    };
                    let start = thread_cpu_ms();
                    std::hint::black_box(t.mixed.search_with(&q.query, 5, k, &mut embed));
                    ms.push(thread_cpu_ms() - start);
                    tokens.push(used);
                }
                ms.sort_by(f64::total_cmp);
                tokens.sort_unstable();
                let at = |p: usize| ms[(ms.len() * p / 100).min(ms.len() - 1)];
                println!(
                    "{}",
                    serde_json::json!({"cost": set.label, "ranker": name, "queries": ms.len(),
                    "cpu_p50_ms": (at(50) * 100.0).round() / 100.0, "cpu_p90_ms": (at(90) * 100.0).round() / 100.0,
                    "tokens_p50": tokens[tokens.len() / 2], "tokens_p90": tokens[tokens.len() * 9 / 10]})
                );
            }
        }
    }
}

/// This thread's CPU time, in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    assert!(ok, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}
