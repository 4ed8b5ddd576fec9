//! What tracing costs a call when it is off (docs/gateway.md, "Traces"):
//! everything a forwarded `tools/call` and a `/v1` request run for tracing
//! with no `OTEL_EXPORTER_OTLP_*` set: the `enabled` check, the look-ups of
//! the task's span and of what an upstream request carries, and the future
//! the forwarded call is wrapped in. And what bounding a caller's
//! `tracestate` costs when it is on, at its worst (a header of 64 members,
//! half of them over the bound).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use muster::trace;

fn bench(c: &mut Criterion) {
    assert!(
        !trace::enabled(),
        "unset OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: this measures tracing off"
    );
    let mut group = c.benchmark_group("trace-off");
    group.bench_function("checks-per-call", |b| {
        b.iter(|| {
            black_box((
                trace::enabled(),
                trace::current(),
                trace::outgoing(),
                trace::enabled(),
            ))
        });
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    group.bench_function("a-future-as-it-is", |b| {
        b.iter(|| runtime.block_on(async { black_box(1) }));
    });
    group.bench_function("a-future-carrying-nothing", |b| {
        b.iter(|| runtime.block_on(trace::carrying(None, async { black_box(1) })));
    });
    group.finish();
    let header: Vec<String> = (0..64)
        .map(|i| match i % 2 {
            0 => format!("vendor{i}={}", "v".repeat(20)),
            _ => format!("long{i}={}", "x".repeat(200)),
        })
        .collect();
    let header = header.join(",");
    c.bench_function("tracestate-bounded-64-members", |b| {
        b.iter(|| trace::bounded_tracestate(black_box(&header)));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
