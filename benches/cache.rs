//! The cost of a warm run's cache reads whatever else the cache holds
//! (issue 36, docs/limits.md "Caches"): opening a table and looking up the
//! records one run needs (200 token counts: about what the production plan
//! reads; 200 vectors: a small deferred index), with 0, 100,000 and
//! 1,000,000 records of other catalogs in the same table, and 0 and 32,768
//! (the cap) vectors of others. Flat across sizes is the point.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use muster::cache_file::{Key, Kind, Table};
use sha2::{Digest, Sha256};
use std::hint::black_box;

fn k(i: u64) -> Key {
    Sha256::digest(i.to_le_bytes())[..16]
        .try_into()
        .expect("16 bytes")
}

/// A table at `path` holding `own` records (keys from 0) and `foreign`
/// others, all in the base.
fn table(kind: Kind, path: &std::path::Path, own: u64, foreign: u64) {
    let mut t = Table::open(kind, path);
    for i in (0..own).chain(1_000_000_000..1_000_000_000 + foreign) {
        let mut payload = vec![0; kind.payload];
        let n = kind.payload.min(8);
        payload[..n].copy_from_slice(&i.to_le_bytes()[..n]);
        t.insert(k(i), payload);
    }
    t.save().expect("save");
    t.compact().expect("compact");
}

fn bench(c: &mut Criterion, name: &str, kind: Kind, sizes: &[u64]) {
    let mut group = c.benchmark_group(name);
    for &foreign in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("table.bin");
        table(kind, &path, 200, foreign);
        group.bench_with_input(BenchmarkId::from_parameter(foreign), &foreign, |b, _| {
            b.iter(|| {
                let mut t = Table::open(kind, &path);
                let mut found = 0;
                for i in 0..200 {
                    found += usize::from(t.get(&k(i)).is_some());
                }
                assert_eq!(found, 200);
                black_box(found)
            });
        });
    }
    group.finish();
}

fn bench_cache(c: &mut Criterion) {
    // The shipped layouts, with room for the largest size measured.
    let tokens = Kind {
        max_entries: 1 << 21,
        ..muster::tokens::cache::KIND
    };
    bench(c, "warm-token-lookups", tokens, &[0, 100_000, 1_000_000]);
    #[cfg(feature = "encoder")]
    bench(
        c,
        "warm-vector-lookups",
        muster::search::vectors::KIND,
        &[0, 32_768 - 200],
    );
}

criterion_group!(benches, bench_cache);
criterion_main!(benches);
