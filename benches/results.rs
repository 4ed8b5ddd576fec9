//! The cost of a result's budget (issue 33; docs/results.md): counting and cutting a 1 MiB text
//! result and a 1 MiB JSON result to 2,000 tokens, and counting a result under its budget
//! (a 2 KiB text: about what a small tool answers). The bar: ≤ 5 ms for 1 MiB,
//! ≤ 0.05 ms extra under budget.

use criterion::{Criterion, criterion_group, criterion_main};
use muster::results::{Shaping, shape};
use muster::tokens::{Encoding, Provider};
use serde_json::json;
use std::hint::black_box;

fn lines(bytes: usize) -> String {
    let mut text = String::new();
    let mut i = 0u64;
    while text.len() < bytes {
        text.push_str(&format!(
            "line {i}: the quick brown fox {} jumps over the lazy dog {}\n",
            i * 7919 % 10007,
            i * 104_729 % 65_537
        ));
        i += 1;
    }
    text
}

fn result_of(text: &str) -> String {
    json!({"content": [{"type": "text", "text": text}]}).to_string()
}

fn bench(c: &mut Criterion) {
    let paging = vec!["head".to_string(), "tail".to_string()];
    let how = Shaping {
        tool: "mcp__fs__read_text_file",
        encoding: Encoding::O200kBase,
        provider: Provider::Openai,
        budget: Some(2000),
        paging: &paging,
    };
    // Build the tokenizer outside the measurement.
    black_box(Encoding::O200kBase.count_text("warm up"));
    let text = result_of(&lines(1 << 20));
    let rows: Vec<_> = (0..15_000)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "tags": ["a", "b"], "score": i as f64 / 7.0}))
        .collect();
    let json_text = result_of(&serde_json::to_string(&rows).unwrap());
    let small = result_of(&lines(2 << 10));
    let mut group = c.benchmark_group("results");
    group.sample_size(20);
    group.bench_function("cut_1mib_text_to_2000", |b| {
        b.iter(|| shape(black_box(&text), &how))
    });
    group.bench_function("cut_1mib_json_to_2000", |b| {
        b.iter(|| shape(black_box(&json_text), &how))
    });
    group.bench_function("under_budget_2kib", |b| {
        b.iter(|| shape(black_box(&small), &how))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
