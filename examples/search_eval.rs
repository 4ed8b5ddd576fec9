//! Recall of muster's search on an extracted public set
//! (`scripts/search-eval/extract.py`): reads DIR/tools.jsonl and
//! DIR/SPLIT.jsonl, indexes the tools as the control tool does (name,
//! description, input schema) and prints one JSON line: the split, the
//! counts and recall@1 / recall@5. With `--ranks FILE` it also writes each
//! query's top five names, for comparing with another ranker.
//!
//!     cargo run --release --example search_eval -- DIR SPLIT [--ranks FILE] [--lexical] [--grid]
//!
//! `--lexical` ranks by BM25F alone (as before the encoder); `--grid` prints
//! recall for a grid of the mix's weight and cosine floor instead.

use muster::schema::Schema;
use muster::search::{Entry, Index};
use serde::Deserialize;
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, split) = (&args[0], &args[1]);
    let ranks = args
        .iter()
        .position(|a| a == "--ranks")
        .map(|i| args[i + 1].clone());
    let tools: Vec<Tool> = lines(&format!("{dir}/tools.jsonl"));
    let queries: Vec<Labelled> = lines(&format!("{dir}/{split}.jsonl"));
    let entries = tools.iter().map(|t| Entry {
        name: &t.name,
        description: &t.description,
        input_schema: t.input_schema.as_ref(),
    });
    // `--lexical`: BM25F alone, as before the encoder.
    let index = if args.iter().any(|a| a == "--lexical") {
        Index::build(entries)
    } else {
        Index::build_mixed(
            entries,
            &mut muster::search::vectors::VectorCache::in_memory(),
        )
    };
    // `--grid`: recall@1/@5 for each (alpha, floor), one line each.
    if args.iter().any(|a| a == "--grid") {
        for alpha in [0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0] {
            for floor in [0.2, 0.3, 0.35, 0.4, 0.5] {
                let (mut at1, mut at5) = (0usize, 0usize);
                for q in &queries {
                    let hits = index.search_tuned(&q.query, 5, alpha, floor);
                    let hit = |h: &muster::search::Hit| q.expect.contains(&tools[h.entry].name);
                    at1 += usize::from(hits.first().is_some_and(hit));
                    at5 += usize::from(hits.iter().any(hit));
                }
                let n = queries.len().max(1) as f64;
                println!(
                    "{{\"alpha\":{alpha},\"floor\":{floor},\"recall_at_1\":{:.3},\"recall_at_5\":{:.3}}}",
                    at1 as f64 / n,
                    at5 as f64 / n
                );
            }
        }
        return;
    }
    let mut out = ranks.map(|f| std::fs::File::create(f).expect("ranks file"));
    let (mut at1, mut at5) = (0usize, 0usize);
    for q in &queries {
        let names: Vec<&str> = index
            .search(&q.query, 5)
            .iter()
            .map(|h| tools[h.entry].name.as_str())
            .collect();
        let found = |k: usize| {
            names
                .iter()
                .take(k)
                .any(|n| q.expect.iter().any(|e| e == n))
        };
        at1 += usize::from(found(1));
        at5 += usize::from(found(5));
        if let Some(out) = out.as_mut() {
            writeln!(out, "{}", serde_json::json!(names)).expect("write ranks");
        }
    }
    let n = queries.len().max(1) as f64;
    println!(
        "{}",
        serde_json::json!({
            "set": dir, "split": split, "tools": tools.len(), "queries": queries.len(),
            "recall_at_1": (at1 as f64 / n * 1000.0).round() / 1000.0,
            "recall_at_5": (at5 as f64 / n * 1000.0).round() / 1000.0,
        })
    );
}
