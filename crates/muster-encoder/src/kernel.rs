//! The encoder's float arithmetic, in one fixed order whatever the CPU:
//! attention and GELU (the linear layers are exact integer sums:
//! [`super::linear`]). Every sum adds its terms one at a time in one order,
//! with no fused multiply-add; SIMD only computes neighbouring *outputs*
//! side by side, never splits one output's sum, so the baseline build, the
//! 8-wide AVX build and the 16-wide AVX-512 build produce the same bits;
//! Rust never contracts `a * b + c` into an FMA. The exponentials come
//! from [`exp`], plain IEEE operations in one order, not the platform's
//! (glibc picks an FMA variant by CPU). This is what makes a text's vector,
//! and so every ranking, byte-identical across machines
//! (`tests/encoder.rs` pins the bits).
//!
//! It decides nothing about search; it only multiplies.

/// Which build of the arithmetic runs. All give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The target's baseline instructions (SSE2 on x86_64, NEON on aarch64).
    Portable,
    /// 8-wide AVX (no FMA), when the CPU has it; AVX2's integer sums
    /// when it has that too.
    Avx,
    /// 16-wide AVX-512 (no FMA), when the CPU has it; AVX-512 BW's (and
    /// VNNI's) integer sums when it has those too.
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
    // 2ⁿ from its bits: n + 127 (1 to 254 here) is the low bits of
    // n + 127 + 1.5 · 2²³ (integer arithmetic only, so the loop vectorizes).
    let biased = (n + (127.0 + 12_582_912.0)).to_bits() & 0xff;
    let scale = f32::from_bits(biased << 23);
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

/// Sums computed side by side in attention: one AVX-512 register.
const LANES: usize = 16;
/// Query rows computed together: each sum is a chain of dependent
/// additions, and [`QUERIES`] rows' chains side by side keep the adders
/// busy (issue 35: attention was a fifth of an encoding, waiting on one
/// chain at a time). Each sum keeps its own order.
const QUERIES: usize = 4;

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
    // Tokens padded to whole groups of LANES, so every group of sums is a
    // fixed-size array the compiler keeps in registers.
    let padded = n.div_ceil(LANES) * LANES;
    let mut kt = vec![0f32; head * padded];
    let mut scores = vec![0f32; QUERIES * padded];
    let mut qt = vec![[0f32; QUERIES]; head];
    let mut wt = vec![[0f32; QUERIES]; n];
    let groups = head / LANES;
    for h in 0..heads {
        let off = h * head;
        // k_hᵀ, [head × padded], so a score row is an axpy over tokens.
        for (j, row) in k.chunks_exact(dim).enumerate() {
            for (d, &x) in row[off..off + head].iter().enumerate() {
                kt[d * padded + j] = x;
            }
        }
        for first in (0..n).step_by(QUERIES) {
            let rows = (n - first).min(QUERIES);
            // The rows' queries side by side, [head × QUERIES]; rows past
            // the last repeat it, and are not kept.
            for (d, qd) in qt.iter_mut().enumerate() {
                *qd = std::array::from_fn(|r| q[(first + r).min(n - 1) * dim + off + d]);
            }
            // Each score is its products added in head order.
            for g in 0..padded / LANES {
                let mut acc = [[0f32; LANES]; QUERIES];
                for (qd, kd) in qt.iter().zip(kt.chunks_exact(padded)) {
                    let kd: &[f32; LANES] = kd[g * LANES..][..LANES].try_into().expect("LANES");
                    for r in 0..QUERIES {
                        for l in 0..LANES {
                            acc[r][l] += qd[r] * kd[l];
                        }
                    }
                }
                for (s, acc) in scores.chunks_exact_mut(padded).zip(&acc) {
                    s[g * LANES..][..LANES].copy_from_slice(acc);
                }
            }
            softmax_rows(&mut scores, n, scale);
            // The rows' weights side by side, [n × QUERIES].
            for (j, wj) in wt.iter_mut().enumerate() {
                *wj = std::array::from_fn(|r| scores[r.min(rows - 1) * padded + j]);
            }
            // Each context element is its products added in token order.
            for g in 0..groups {
                let mut acc = [[0f32; LANES]; QUERIES];
                for (wj, vj) in wt.iter().zip(v.chunks_exact(dim)) {
                    let vj: &[f32; LANES] =
                        vj[off + g * LANES..][..LANES].try_into().expect("LANES");
                    for r in 0..QUERIES {
                        for l in 0..LANES {
                            acc[r][l] += wj[r] * vj[l];
                        }
                    }
                }
                for (r, acc) in acc.iter().enumerate().take(rows) {
                    context[(first + r) * dim + off + g * LANES..][..LANES].copy_from_slice(acc);
                }
            }
            // A head's last dimensions, past its whole groups.
            let done = groups * LANES;
            for r in 0..rows {
                let c = &mut context[(first + r) * dim + off + done..][..head - done];
                c.fill(0.0);
                for (wj, vj) in wt.iter().zip(v.chunks_exact(dim)) {
                    for (c, &x) in c.iter_mut().zip(&vj[off + done..off + head]) {
                        *c += wj[r] * x;
                    }
                }
            }
        }
    }
}

/// Each of the [`QUERIES`] rows of `scores` (each padded to whole
/// groups of [`LANES`]) times `scale`, then softmax over its first `n`:
/// `e^(s - max)` element by element (the padding too, not kept, so the
/// loop has no remainder), over the sum of the first `n` added in order
/// from 0. The rows' maxima and sums run side by side.
#[inline(always)]
fn softmax_rows(scores: &mut [f32], n: usize, scale: f32) {
    let padded = scores.len() / QUERIES;
    for s in scores.iter_mut() {
        *s *= scale;
    }
    let mut max = [f32::NEG_INFINITY; QUERIES];
    let mut sum = [0f32; QUERIES];
    for j in 0..n {
        for (r, m) in max.iter_mut().enumerate() {
            *m = m.max(scores[r * padded + j]);
        }
    }
    for (row, m) in scores.chunks_exact_mut(padded).zip(max) {
        for a in row.iter_mut() {
            *a = exp(*a - m);
        }
    }
    for j in 0..n {
        for (r, s) in sum.iter_mut().enumerate() {
            *s += scores[r * padded + j];
        }
    }
    for (row, s) in scores.chunks_exact_mut(padded).zip(sum) {
        for a in &mut row[..n] {
            *a /= s;
        }
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
