//! Distils the static model (`models/minilm-static/table.bin`) from the
//! vendored MiniLM, model2vec's method (Tulkens & van Dongen, 2024): every
//! vocabulary id is read alone by the transformer (`[CLS] id [SEP]`, the
//! sum of the last layer's outputs), the 30,522 outputs are centred and
//! projected on their first [`DIM`] principal components (the covariance's
//! eigenvectors, cyclic Jacobi in f64, each signed so its largest component
//! is positive), and each row is weighted by SIF over a Zipf estimate of
//! the id's frequency from its rank in the vocabulary
//! (`1e-4 / (1e-4 + p(rank))`, `p ∝ 1 / (rank + 2)`), then stored int8
//! with one f32 scale per row (max-abs / 127).
//!
//!     cargo run --release -p muster-encoder --example distill -- OUT.bin
//!
//! Deterministic: MiniLM's arithmetic gives the same bits everywhere, and
//! everything after it runs in one fixed order, so the output is the same
//! file on any machine (its SHA-256 is pinned in the model's README).

use muster_encoder::{Encoder, Kernel, Tokenizer};

const DIM: usize = 256;
const SIF: f64 = 1e-4;
const THREADS: usize = 2;

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: distill OUT.bin [RAW]");
    // RAW keeps the transformer's outputs between runs (f32 LE), so the
    // steps after it can be rerun without it.
    let raw = std::env::args().nth(2);
    let encoder = Encoder::get();
    let tokenizer = Tokenizer::get();
    let rows = tokenizer.len();
    let [cls, sep] = {
        let ids = tokenizer.tokenize("", 8);
        [ids[0], ids[1]]
    };
    let width = muster_encoder::DIM;

    // 1. Every id through the transformer.
    let started = std::time::Instant::now();
    let share = rows.div_ceil(THREADS);
    let cached = raw.as_ref().and_then(|r| std::fs::read(r).ok()).map(|b| {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect::<Vec<f32>>()
    });
    let outputs: Vec<f32> = cached.unwrap_or_else(|| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    s.spawn(move || {
                        let mut out = Vec::with_capacity(share * width);
                        for id in (t * share)..((t + 1) * share).min(rows) {
                            out.extend(encoder.pool(&[cls, id as u32, sep], Kernel::best()));
                            if id % 2000 == 0 {
                                eprintln!("{id} / {rows}");
                            }
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("thread"))
                .collect()
        })
    });
    if let Some(r) = &raw {
        let bytes: Vec<u8> = outputs.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(r, bytes).unwrap_or_else(|e| panic!("{r}: {e}"));
    }
    eprintln!(
        "encoded {rows} ids in {:.0} s",
        started.elapsed().as_secs_f64()
    );

    // 2. Centre, covariance, principal components.
    let x: Vec<f64> = outputs.iter().map(|&v| f64::from(v)).collect();
    let mut mean = vec![0f64; width];
    for row in x.chunks_exact(width) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    for m in &mut mean {
        *m /= rows as f64;
    }
    let centred: Vec<f64> = x
        .chunks_exact(width)
        .flat_map(|row| row.iter().zip(&mean).map(|(v, m)| v - m))
        .collect();
    let mut cov = vec![0f64; width * width];
    for row in centred.chunks_exact(width) {
        for i in 0..width {
            let ri = row[i];
            let line = &mut cov[i * width..(i + 1) * width];
            for j in i..width {
                line[j] += ri * row[j];
            }
        }
    }
    for i in 0..width {
        for j in 0..i {
            cov[i * width + j] = cov[j * width + i];
        }
    }
    let (values, vectors) = jacobi(cov, width);
    let mut order: Vec<usize> = (0..width).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let total: f64 = values.iter().sum();
    let kept: f64 = order[..DIM].iter().map(|&i| values[i]).sum();
    eprintln!("{DIM} components keep {:.4} of the variance", kept / total);
    // Component k: column order[k] of `vectors`, signed.
    let components: Vec<Vec<f64>> = order[..DIM]
        .iter()
        .map(|&c| {
            let mut v: Vec<f64> = (0..width).map(|r| vectors[r * width + c]).collect();
            let big = v
                .iter()
                .copied()
                .fold(0f64, |a, b| if b.abs() > a.abs() { b } else { a });
            if big < 0.0 {
                for x in &mut v {
                    *x = -*x;
                }
            }
            v
        })
        .collect();

    // 3. Project, weight, quantize.
    let punctuation: Vec<bool> = muster_encoder::vocabulary()
        .map(|t| {
            let t = t.strip_prefix("##").unwrap_or(t);
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_punctuation() || !c.is_alphanumeric())
        })
        .collect();
    let harmonic: f64 = (0..rows).map(|r| 1.0 / (r as f64 + 2.0)).sum();
    let mut bytes = Vec::with_capacity(16 + rows * (4 + DIM));
    bytes.extend_from_slice(b"MUSTSTA1");
    bytes.extend_from_slice(&(rows as u32).to_le_bytes());
    bytes.extend_from_slice(&(DIM as u32).to_le_bytes());
    for (r, row) in centred.chunks_exact(width).enumerate() {
        let p = 1.0 / (r as f64 + 2.0) / harmonic;
        // A token of punctuation alone carries no meaning of its own, but
        // BERT's vocabulary lists them early (a rank says rare): none.
        let weight = if punctuation[r] { 0.0 } else { SIF / (SIF + p) };
        let projected: Vec<f64> = components
            .iter()
            .map(|c| c.iter().zip(row).map(|(a, b)| a * b).sum::<f64>() * weight)
            .collect();
        let max = projected.iter().fold(0f64, |a, b| a.max(b.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        bytes.extend_from_slice(&(scale as f32).to_le_bytes());
        for v in &projected {
            bytes.push((v / scale).round().clamp(-127.0, 127.0) as i8 as u8);
        }
    }
    std::fs::write(&out, &bytes).unwrap_or_else(|e| panic!("{out}: {e}"));
    eprintln!("{out}: {} bytes", bytes.len());
}

/// Eigenvalues and eigenvectors (columns of the row-major result) of the
/// symmetric `n` × `n` matrix `a`: cyclic Jacobi rotations, in a fixed
/// order, until the off-diagonal is negligible.
fn jacobi(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        let diag: f64 = (0..n).map(|i| a[i * n + i] * a[i * n + i]).sum();
        if off <= diag * 1e-24 {
            eprintln!("jacobi: {sweep} sweeps");
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let akp = a[k * n + p];
                    let akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let apk = a[p * n + k];
                    let aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let vkp = v[k * n + p];
                    let vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}
