//! The encoder's cost per text, one at a time and in batches, on one
//! thread (docs/search-cost.md, "The encoder's cost"):
//!
//!     cargo run --release -p muster-encoder --example batch_speed -- TEXTS.txt [one|batch] [N]
//!
//! TEXTS.txt holds one text a line; the first N (all by default) are
//! encoded, distinct or not. Prints one JSON line: the thread's CPU time
//! and wall time per text, and a digest of every vector's bits (FNV-1a),
//! so a run one at a time and a run in batches can be compared.

use muster_encoder::Encoder;
use std::time::Instant;

/// The thread's CPU time in seconds (`/proc/thread-self/schedstat`; 0
/// where there is none).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: batch_speed TEXTS.txt [one|batch] [N]");
        std::process::exit(2);
    };
    let mode = args.get(1).map_or("batch", String::as_str);
    let all = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let n = args.get(2).map_or(usize::MAX, |n| n.parse().expect("N"));
    let texts: Vec<&str> = all.lines().take(n).collect();
    let encoder = Encoder::get();
    encoder.embed("warm the caches");
    let (start, start_cpu) = (Instant::now(), cpu_seconds());
    let vectors: Vec<Vec<f32>> = match mode {
        "one" => texts.iter().map(|t| encoder.embed(t)).collect(),
        _ => encoder.embed_batch(&texts),
    };
    let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - start_cpu);
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    for x in vectors.iter().flatten() {
        for b in x.to_bits().to_le_bytes() {
            digest = (digest ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let tokens: usize = texts.iter().map(|t| encoder.tokenize(t).len()).sum();
    let per = |s: f64| s * 1e3 / texts.len() as f64;
    println!(
        "{{\"mode\":\"{mode}\",\"texts\":{},\"tokens_mean\":{:.1},\"cpu_s\":{cpu:.3},\"cpu_ms_per_text\":{:.3},\"wall_ms_per_text\":{:.3},\"digest\":\"{digest:016x}\"}}",
        texts.len(),
        tokens as f64 / texts.len() as f64,
        per(cpu),
        per(wall),
    );
}
