//! The encoder's arithmetic, in one fixed order whatever the CPU: every
//! output element is its bias plus its products added one input at a time,
//! in input order, with no fused multiply-add. SIMD only computes several
//! *outputs* side by side (an axpy over contiguous outputs), never splits
//! one output's sum, so the 4-wide baseline build, the 8-wide AVX build and
//! the 16-wide AVX-512 build produce the same bits; Rust never contracts
//! `a * b + c` into an FMA. The exponentials come from the pure-Rust `libm`
//! (softmax) and from [`exp`] (GELU), not the platform's (glibc picks an
//! FMA variant by CPU). This is what makes a text's vector, and so every
//! ranking, byte-identical across machines (`tests/encoder.rs` pins the
//! bits).
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

/// Which build of the arithmetic runs. All give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The target's baseline instructions (SSE2 on x86_64, NEON on aarch64).
    Portable,
    /// 8-wide AVX (no FMA), when the CPU has it.
    Avx,
    /// 16-wide AVX-512 (no FMA), when the CPU has it: a panel of
    /// [`PANEL`] outputs is one register.
    Avx512,
}

impl Kernel {
    /// The fastest build this CPU runs.
    pub fn best() -> Kernel {
        if has_avx512() {
            return Kernel::Avx512;
        }
        if has_avx() {
            return Kernel::Avx;
        }
        Kernel::Portable
    }
}

/// Whether the CPU runs the AVX build.
fn has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU runs the AVX-512 build.
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
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
        Kernel::Avx512 if has_avx512() => {
            // SAFETY: the CPU has AVX-512 F (checked just above).
            unsafe { linear_avx512(x, n, packed, bias, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx | Kernel::Avx512 if has_avx() => {
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn linear_avx512(x: &[f32], n: usize, packed: &[f32], bias: &[f32], out: &mut [f32]) {
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

/// GELU with the error function (BERT's `gelu`), in place over `x`:
/// `0.5 · x · (1 + erf(x / √2))`, erf by Numerical Recipes' `erfcc`
/// (fractional error below 1.2e-7) evaluated in f32 with [`exp`], so every
/// element is the same handful of IEEE operations and the loop vectorizes
/// (issue 35: the f64 `libm::exp` it replaces was 40 % of an encoding).
pub(super) fn gelu(kernel: Kernel, x: &mut [f32]) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 if has_avx512() => {
            // SAFETY: the CPU has AVX-512 F (checked just above).
            unsafe { gelu_avx512(x) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx | Kernel::Avx512 if has_avx() => {
            // SAFETY: the CPU has AVX (checked just above).
            unsafe { gelu_avx(x) }
        }
        _ => gelu_body(x),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gelu_avx512(x: &mut [f32]) {
    gelu_body(x);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn gelu_avx(x: &mut [f32]) {
    gelu_body(x);
}

#[inline(always)]
fn gelu_body(x: &mut [f32]) {
    for a in x {
        *a = 0.5 * *a * (1.0 + erf(*a * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// Numerical Recipes' `erfcc`, in f32.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_2 + t * 0.170_872_77))))))));
    let erfc = t * exp(poly);
    let e = 1.0 - erfc;
    if x >= 0.0 { e } else { -e }
}

/// `e^x` in f32 from basic IEEE operations in one fixed order (no table, no
/// fused multiply-add), relative error about 2e-7: `x = n · ln 2 + r`,
/// `|r| ≤ ln 2 / 2`, `e^r` by its Taylor polynomial to `r⁷`, times `2ⁿ`
/// built from its bits. `x` is clamped to [-87, 88], where `2ⁿ` stays a
/// normal number.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
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
        Kernel::Avx512 if has_avx512() => {
            // SAFETY: the CPU has AVX-512 F (checked just above).
            unsafe { attention_avx512((q, k, v), n, heads, scale, context) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx | Kernel::Avx512 if has_avx() => {
            // SAFETY: the CPU has AVX (checked just above).
            unsafe { attention_avx((q, k, v), n, heads, scale, context) }
        }
        _ => attention_body((q, k, v), n, heads, scale, context),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn attention_avx512(
    qkv: (&[f32], &[f32], &[f32]),
    n: usize,
    heads: usize,
    scale: f32,
    context: &mut [f32],
) {
    attention_body(qkv, n, heads, scale, context);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_the_f64_one() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = f64::from(x).exp();
            let got = f64::from(exp(x));
            worst = worst.max(((got - want) / want).abs());
            x += 0.013;
        }
        assert!(worst < 1e-6, "relative error {worst}");
        assert_eq!(exp(-1000.0), exp(-87.0));
        assert!(exp(0.0) == 1.0);
    }

    #[test]
    fn every_build_of_gelu_gives_the_same_bits() {
        let xs: Vec<f32> = (0..4099).map(|i| (i as f32 - 2049.0) / 97.0).collect();
        let mut portable = xs.clone();
        gelu_body(&mut portable);
        for kernel in [Kernel::Avx, Kernel::Avx512] {
            let mut v = xs.clone();
            gelu(kernel, &mut v);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v), bits(&portable), "{kernel:?}");
        }
        for (x, g) in xs.iter().zip(&portable) {
            let x64 = f64::from(*x);
            let want = 0.5 * x64 * (1.0 + libm::erf(x64 / std::f64::consts::SQRT_2));
            assert!(
                (f64::from(*g) - want).abs() < 2e-6 * (1.0 + x64.abs()),
                "{x}: {g} vs {want}"
            );
        }
    }
}
