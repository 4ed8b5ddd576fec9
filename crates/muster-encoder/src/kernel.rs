//! The encoder's arithmetic, in one fixed order whatever the CPU: every
//! output element is its bias plus its products added one input at a time,
//! in input order, with no fused multiply-add. SIMD only computes several
//! *outputs* side by side (an axpy over contiguous outputs), never splits
//! one output's sum, so the 4-wide baseline build and the 8-wide AVX build
//! produce the same bits; Rust never contracts `a * b + c` into an FMA. The
//! exponential comes from the pure-Rust `libm`, not the platform's (glibc
//! picks an FMA variant by CPU). This is what makes a text's vector, and so
//! every ranking, byte-identical across machines (`tests/encoder.rs` pins
//! the bits).
//!
//! It decides nothing about search; it only multiplies.

/// Outputs computed side by side: one panel of packed weights.
pub(super) const PANEL: usize = 16;
/// Tokens computed together, so a panel read from memory serves four.
const ROWS: usize = 4;

/// A linear layer's weights packed for [`linear`]: for each panel of
/// [`PANEL`] outputs, `inputs` rows of [`PANEL`] weights, contiguous.
pub(super) fn pack(weights: impl Fn(usize, &mut [f32]), inputs: usize, outputs: usize) -> Vec<f32> {
    assert_eq!(outputs % PANEL, 0, "outputs come in whole panels");
    let mut row = vec![0f32; inputs];
    let mut packed = vec![0f32; inputs * outputs];
    for o in 0..outputs {
        weights(o, &mut row);
        let panel = &mut packed[(o / PANEL) * inputs * PANEL..][..inputs * PANEL];
        for (k, &w) in row.iter().enumerate() {
            panel[k * PANEL + o % PANEL] = w;
        }
    }
    packed
}

/// Which build of the arithmetic runs. Both give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The target's baseline instructions (SSE2 on x86_64, NEON on aarch64).
    Portable,
    /// 8-wide AVX (no FMA), when the CPU has it.
    Avx,
}

impl Kernel {
    /// The fastest build this CPU runs.
    pub fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            return Kernel::Avx;
        }
        Kernel::Portable
    }
}

/// out[n × outputs] = x[n × inputs] · W + bias, W packed by [`pack`].
pub(super) fn linear(
    kernel: Kernel,
    x: &[f32],
    n: usize,
    packed: &[f32],
    bias: &[f32],
    out: &mut [f32],
) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx if Kernel::best() == Kernel::Avx => {
            // SAFETY: the CPU has AVX (checked just above).
            unsafe { linear_avx(x, n, packed, bias, out) }
        }
        _ => linear_body(x, n, packed, bias, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn linear_avx(x: &[f32], n: usize, packed: &[f32], bias: &[f32], out: &mut [f32]) {
    linear_body(x, n, packed, bias, out);
}

#[inline(always)]
fn linear_body(x: &[f32], n: usize, packed: &[f32], bias: &[f32], out: &mut [f32]) {
    let outputs = bias.len();
    let inputs = x.len() / n.max(1);
    debug_assert_eq!(x.len(), n * inputs);
    debug_assert_eq!(packed.len(), inputs * outputs);
    debug_assert_eq!(out.len(), n * outputs);
    // Tokens in blocks of ROWS, each block input-major ([inputs × ROWS]),
    // the last padded with zeros.
    let blocks = n.div_ceil(ROWS);
    let mut xt = vec![0f32; blocks * inputs * ROWS];
    for (t, row) in x.chunks_exact(inputs).enumerate() {
        let block = &mut xt[(t / ROWS) * inputs * ROWS..][..inputs * ROWS];
        for (k, &v) in row.iter().enumerate() {
            block[k * ROWS + t % ROWS] = v;
        }
    }
    for (p, (panel, b)) in packed
        .chunks_exact(inputs * PANEL)
        .zip(bias.chunks_exact(PANEL))
        .enumerate()
    {
        let b: &[f32; PANEL] = b.try_into().expect("a whole panel");
        for (blk, block) in xt.chunks_exact(inputs * ROWS).enumerate() {
            let mut acc = [*b; ROWS];
            for (w, xs) in panel.chunks_exact(PANEL).zip(block.chunks_exact(ROWS)) {
                let w: &[f32; PANEL] = w.try_into().expect("a whole panel");
                for (a, &xv) in acc.iter_mut().zip(xs) {
                    for (a, &w) in a.iter_mut().zip(w) {
                        *a += xv * w;
                    }
                }
            }
            for (r, a) in acc.iter().enumerate() {
                let t = blk * ROWS + r;
                if t < n {
                    out[t * outputs + p * PANEL..][..PANEL].copy_from_slice(a);
                }
            }
        }
    }
}

/// Multi-head self-attention: for each head, scores = q·kᵀ · `scale`,
/// softmax by row, context = scores · v. `q`, `k`, `v` and `context` are
/// [n × heads·head], row-major.
pub(super) fn attention(
    kernel: Kernel,
    (q, k, v): (&[f32], &[f32], &[f32]),
    n: usize,
    heads: usize,
    scale: f32,
    context: &mut [f32],
) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx if Kernel::best() == Kernel::Avx => {
            // SAFETY: the CPU has AVX (checked just above).
            unsafe { attention_avx((q, k, v), n, heads, scale, context) }
        }
        _ => attention_body((q, k, v), n, heads, scale, context),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn attention_avx(
    qkv: (&[f32], &[f32], &[f32]),
    n: usize,
    heads: usize,
    scale: f32,
    context: &mut [f32],
) {
    attention_body(qkv, n, heads, scale, context);
}

#[inline(always)]
fn attention_body(
    (q, k, v): (&[f32], &[f32], &[f32]),
    n: usize,
    heads: usize,
    scale: f32,
    context: &mut [f32],
) {
    let dim = q.len() / n.max(1);
    let head = dim / heads;
    let mut kt = vec![0f32; head * n];
    let mut scores = vec![0f32; n];
    for h in 0..heads {
        let off = h * head;
        // k_hᵀ, [head × n], so a score row is an axpy over tokens.
        for (j, row) in k.chunks_exact(dim).enumerate() {
            for (d, &x) in row[off..off + head].iter().enumerate() {
                kt[d * n + j] = x;
            }
        }
        for (qi, ci) in q.chunks_exact(dim).zip(context.chunks_exact_mut(dim)) {
            scores.fill(0.0);
            for (&qd, kd) in qi[off..off + head].iter().zip(kt.chunks_exact(n)) {
                for (s, &x) in scores.iter_mut().zip(kd) {
                    *s += qd * x;
                }
            }
            for s in &mut scores {
                *s *= scale;
            }
            softmax(&mut scores);
            let c = &mut ci[off..off + head];
            c.fill(0.0);
            for (&s, vj) in scores.iter().zip(v.chunks_exact(dim)) {
                for (c, &x) in c.iter_mut().zip(&vj[off..off + head]) {
                    *c += s * x;
                }
            }
        }
    }
}

#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for a in row.iter_mut() {
        *a = libm::expf(*a - max);
        sum += *a;
    }
    for a in row.iter_mut() {
        *a /= sum;
    }
}
