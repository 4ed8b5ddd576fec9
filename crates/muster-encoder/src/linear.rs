//! The linear layers with 16-bit inputs (feature `sixteen-bit-inputs`; the
//! default is `linear8.rs`'s 8-bit inputs), in exact integers (issue 35: a
//! query's encoding was two thirds linear layers in f32). The model stores each layer's weights
//! as int8 with one f32 scale per output; a token's inputs are coded as
//! 16-bit integers with one scale per token (`round(x · codes / max |x|)`,
//! [`codes`] chosen so no sum can overflow), and each output is the exact
//! i32 dot product of the codes, times the two scales, plus the bias:
//!
//! ```text
//! out[t][o] = (Σₖ x̂[t][k] · ŵ[o][k]) as f32 · (sₜ · s_o) + b[o]
//! ```
//!
//! Integer sums have no order to keep, so the portable build, the AVX2
//! build (`vpmaddwd`) and the AVX-512 builds (`vpmaddwd`, or `vpdpwssd`
//! with VNNI) give the same bits, and every step after the sum is the same
//! IEEE operations in the same order. The coding of the inputs costs at
//! most half a code in 2¹⁵ (2¹³·⁴ for the 1,536-input layer) of the
//! token's largest input; `tests/encoder.rs` checks the vectors against a
//! float reference.
//!
//! It decides nothing about search; it only multiplies.

use super::kernel::Kernel;

/// Outputs computed side by side: one panel of packed weights (one
/// AVX-512 register of i32 sums).
const PANEL: usize = 16;
/// Tokens computed together: a panel's weights loaded once serve eight,
/// and eight independent sums hide an integer multiply-add's latency.
const ROWS: usize = 8;
/// Blocks of [`ROWS`] rows in a tile: a tile's codes (64 rows: 48 KB for
/// 384 inputs, 192 KB for 1,536) stay in cache while every panel passes.
const TILE: usize = 8;

/// A linear layer packed for [`Linear::apply`].
pub(super) struct Linear {
    /// For each panel of [`PANEL`] outputs, for each pair of inputs
    /// `(2p, 2p + 1)`, the panel's weights as `[ŵ[o][2p], ŵ[o][2p + 1]]`
    /// for each output `o` in order.
    weights: Vec<i16>,
    /// Each output's weight scale.
    scales: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

/// The largest input code for a layer of `inputs` inputs: the most
/// `inputs · 128 · codes` can be without passing `i32::MAX`, and at most
/// `i16::MAX` (32,767 for 384 inputs, 10,922 for 1,536).
fn codes(inputs: usize) -> i32 {
    let most = i32::MAX as usize / (inputs.max(1) * 128);
    most.min(i16::MAX as usize) as i32
}

impl Linear {
    /// Packs a layer of `outputs` outputs over `inputs` inputs, output
    /// `o`'s int8 weights and scale given by `row(o)`.
    pub(super) fn pack<'a>(
        row: impl Fn(usize) -> (f32, &'a [u8]),
        inputs: usize,
        outputs: usize,
        bias: Vec<f32>,
    ) -> Linear {
        assert_eq!(outputs % PANEL, 0, "outputs come in whole panels");
        assert_eq!(inputs % 2, 0, "inputs come in pairs");
        assert_eq!(bias.len(), outputs);
        let mut weights = vec![0i16; inputs * outputs];
        let mut scales = Vec::with_capacity(outputs);
        for o in 0..outputs {
            let (scale, codes) = row(o);
            assert_eq!(codes.len(), inputs);
            scales.push(scale);
            let panel = &mut weights[(o / PANEL) * inputs * PANEL..][..inputs * PANEL];
            for (k, &w) in codes.iter().enumerate() {
                panel[(k / 2) * 2 * PANEL + (o % PANEL) * 2 + k % 2] = i16::from(w as i8);
            }
        }
        Linear {
            weights,
            scales,
            bias,
            inputs,
        }
    }

    /// Its number of outputs.
    pub(super) fn outputs(&self) -> usize {
        self.bias.len()
    }

    /// out[n × outputs] = x[n × inputs] · W + bias, by the fastest build
    /// `kernel` allows on this CPU (all give the same bits). `coded` is
    /// scratch space, kept by the caller so a batch allocates once.
    /// Inlined, as [`Coded::code`] is.
    #[inline(always)]
    pub(super) fn apply(
        &self,
        kernel: Kernel,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        coded: &mut Coded,
    ) {
        coded.code(x, n, self.inputs);
        self.apply_coded(kernel, coded, out);
    }

    /// [`Linear::apply`] to inputs already coded for a layer of as many
    /// inputs ([`Coded::code`]): layers that read the same inputs (a
    /// layer's query, key and value) code them once.
    pub(super) fn apply_coded(&self, kernel: Kernel, coded: &Coded, out: &mut [f32]) {
        assert_eq!(coded.inputs, self.inputs, "inputs coded for this layer");
        #[cfg(target_arch = "x86_64")]
        {
            let f = Features::get();
            // SAFETY (each call): the CPU has the build's features, checked
            // by `Features::get`.
            if kernel == Kernel::Avx512 && f.avx512vnni {
                return unsafe { self.apply_vnni(coded, out) };
            }
            if kernel == Kernel::Avx512 && f.avx512bw {
                return unsafe { self.apply_avx512(coded, out) };
            }
            if kernel != Kernel::Portable && f.avx2 {
                return unsafe { self.apply_avx2(coded, out) };
            }
        }
        let _ = kernel;
        self.body::<PORTABLE>(coded, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn apply_vnni(&self, coded: &Coded, out: &mut [f32]) {
        self.body::<VNNI>(coded, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn apply_avx512(&self, coded: &Coded, out: &mut [f32]) {
        self.body::<AVX512>(coded, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn apply_avx2(&self, coded: &Coded, out: &mut [f32]) {
        self.body::<AVX2>(coded, out);
    }

    /// [`Linear::apply_coded`], its integer sums by build `BUILD`, which
    /// the caller checked the CPU runs. Rows go in tiles of [`TILE`]
    /// blocks, so a tile's codes stay in cache while every panel of
    /// weights passes over them.
    #[inline(always)]
    fn body<const BUILD: u8>(&self, coded: &Coded, out: &mut [f32]) {
        let (inputs, n) = (self.inputs, coded.rows);
        let outputs = self.bias.len();
        assert_eq!(out.len(), n * outputs);
        let block_len = inputs / 2 * ROWS;
        let blocks = &coded.codes[..n.div_ceil(ROWS) * block_len];
        let mut sums = [[0i32; PANEL]; ROWS];
        for (tile, tile_blocks) in blocks.chunks(TILE * block_len).enumerate() {
            for (p, panel) in self.weights.chunks_exact(inputs * PANEL).enumerate() {
                let scales = &self.scales[p * PANEL..][..PANEL];
                let bias = &self.bias[p * PANEL..][..PANEL];
                for (b, block) in tile_blocks.chunks_exact(block_len).enumerate() {
                    match BUILD {
                        #[cfg(target_arch = "x86_64")]
                        // SAFETY (each): `apply_coded` checked the CPU has the build.
                        VNNI => unsafe { dot_vnni(block, panel, &mut sums) },
                        #[cfg(target_arch = "x86_64")]
                        AVX512 => unsafe { dot_avx512(block, panel, &mut sums) },
                        #[cfg(target_arch = "x86_64")]
                        AVX2 => unsafe { dot_avx2(block, panel, &mut sums) },
                        _ => dot_portable(block, panel, &mut sums),
                    }
                    let first = (tile * TILE + b) * ROWS;
                    for (t, sum) in (first..n.min(first + ROWS)).zip(&sums) {
                        let o = &mut out[t * outputs + p * PANEL..][..PANEL];
                        let token_scale = coded.scales[t];
                        for (((o, &s), &w), &c) in o.iter_mut().zip(sum).zip(scales).zip(bias) {
                            *o = s as f32 * (token_scale * w) + c;
                        }
                    }
                }
            }
        }
    }
}

/// Rows of inputs coded as 16-bit integers for a layer of some number of
/// inputs, with each row's scale: what [`Linear::apply_coded`] reads.
#[derive(Default)]
pub(super) struct Coded {
    /// In blocks of [`ROWS`] rows, pair-major: for each pair of inputs,
    /// [`ROWS`] i32 each holding the pair's two i16 codes (the last block
    /// padded with zeros).
    codes: Vec<i32>,
    /// Each row's scale: `max |x| / codes` (0 for a zero or non-finite row).
    scales: Vec<f32>,
    rows: usize,
    inputs: usize,
    /// One row's codes, pair by pair, before they go to their block.
    row: Vec<i32>,
}

impl Coded {
    /// Codes the `n` rows of `x` (`n × inputs`) for a layer of `inputs`
    /// inputs, replacing what it held. Inlined into its caller, so it runs
    /// with the caller's instructions (`forward.rs`): every step is exact
    /// or one IEEE operation per element, the same bits from any build.
    #[inline(always)]
    pub(super) fn code(&mut self, x: &[f32], n: usize, inputs: usize) {
        assert_eq!(x.len(), n * inputs);
        assert_eq!(inputs % 2, 0, "inputs come in pairs");
        let pairs = inputs / 2;
        let most = codes(inputs) as f32;
        self.rows = n;
        self.inputs = inputs;
        self.codes.clear();
        self.codes.resize(n.div_ceil(ROWS) * pairs * ROWS, 0);
        self.scales.clear();
        self.scales.resize(n, 0.0);
        self.row.clear();
        self.row.resize(pairs, 0);
        for (t, row) in x.chunks_exact(inputs).enumerate() {
            // The largest magnitude, by the bits (for numbers that are not
            // NaN, a larger magnitude has larger bits once the sign is
            // cleared), so the loop vectorizes.
            let bits = row
                .iter()
                .fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff));
            let max = f32::from_bits(bits);
            if max == 0.0 || !max.is_finite() {
                continue;
            }
            let to_code = most / max;
            self.scales[t] = max / most;
            // To the nearest code (ties to even): adding 1.5 · 2²³ rounds
            // to a whole number and leaves it, two's complement, in the
            // low bits (integer arithmetic only, so the loop vectorizes).
            let code = |v: f32| {
                let y = (v * to_code).clamp(-most, most);
                (y + 12_582_912.0).to_bits() & 0xffff
            };
            // The row's pairs side by side (the loop vectorizes), then
            // into their places in the block.
            for (c, two) in self.row.iter_mut().zip(row.chunks_exact(2)) {
                *c = (code(two[0]) | (code(two[1]) << 16)) as i32;
            }
            let block = &mut self.codes[(t / ROWS) * pairs * ROWS..][..pairs * ROWS];
            for (slot, &c) in block.iter_mut().skip(t % ROWS).step_by(ROWS).zip(&self.row) {
                *slot = c;
            }
        }
    }
}

/// The builds of the integer sums (all give the same integers).
const PORTABLE: u8 = 0;
#[cfg(target_arch = "x86_64")]
const AVX2: u8 = 1;
#[cfg(target_arch = "x86_64")]
const AVX512: u8 = 2;
#[cfg(target_arch = "x86_64")]
const VNNI: u8 = 3;

/// `sums[r][o] = Σₚ lo(x[p][r]) · w[p][o][0] + hi(x[p][r]) · w[p][o][1]`:
/// one block of [`ROWS`] tokens against one panel.
#[inline(always)]
fn dot_portable(x: &[i32], w: &[i16], sums: &mut [[i32; PANEL]; ROWS]) {
    *sums = [[0; PANEL]; ROWS];
    for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(2 * PANEL)) {
        for (sum, &two) in sums.iter_mut().zip(xs) {
            let (lo, hi) = (i32::from(two as i16), two >> 16);
            for (s, w) in sum.iter_mut().zip(w.chunks_exact(2)) {
                *s += lo * i32::from(w[0]) + hi * i32::from(w[1]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Features {
    avx2: bool,
    avx512bw: bool,
    avx512vnni: bool,
}

#[cfg(target_arch = "x86_64")]
impl Features {
    fn get() -> Features {
        static FEATURES: std::sync::OnceLock<Features> = std::sync::OnceLock::new();
        *FEATURES.get_or_init(|| {
            let avx512bw = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw");
            Features {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                avx512bw,
                avx512vnni: avx512bw && std::arch::is_x86_feature_detected!("avx512vnni"),
            }
        })
    }
}

/// Half a block's tokens at a time: AVX2 has 16 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn dot_avx2(x: &[i32], w: &[i16], sums: &mut [[i32; PANEL]; ROWS]) {
    use std::arch::x86_64::*;
    const HALF: usize = ROWS / 2;
    for (half, sums) in sums.chunks_exact_mut(HALF).enumerate() {
        let mut acc = [[_mm256_setzero_si256(); 2]; HALF];
        for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(2 * PANEL)) {
            // SAFETY: `w` holds 32 i16, two unaligned 256-bit loads.
            let (w0, w1) = unsafe {
                (
                    _mm256_loadu_si256(w.as_ptr().cast()),
                    _mm256_loadu_si256(w.as_ptr().add(PANEL).cast()),
                )
            };
            for (a, &two) in acc.iter_mut().zip(&xs[half * HALF..]) {
                let xb = _mm256_set1_epi32(two);
                a[0] = _mm256_add_epi32(a[0], _mm256_madd_epi16(xb, w0));
                a[1] = _mm256_add_epi32(a[1], _mm256_madd_epi16(xb, w1));
            }
        }
        for (sum, a) in sums.iter_mut().zip(&acc) {
            // SAFETY: `sum` holds 16 i32, two unaligned 256-bit stores.
            unsafe {
                _mm256_storeu_si256(sum.as_mut_ptr().cast(), a[0]);
                _mm256_storeu_si256(sum.as_mut_ptr().add(8).cast(), a[1]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn dot_avx512(x: &[i32], w: &[i16], sums: &mut [[i32; PANEL]; ROWS]) {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_si512(); ROWS];
    for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(2 * PANEL)) {
        // SAFETY: `w` holds 32 i16, one unaligned 512-bit load.
        let wv = unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
        for (a, &two) in acc.iter_mut().zip(xs) {
            *a = _mm512_add_epi32(*a, _mm512_madd_epi16(_mm512_set1_epi32(two), wv));
        }
    }
    for (sum, a) in sums.iter_mut().zip(&acc) {
        // SAFETY: `sum` holds 16 i32, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(sum.as_mut_ptr().cast(), *a) };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
fn dot_vnni(x: &[i32], w: &[i16], sums: &mut [[i32; PANEL]; ROWS]) {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_si512(); ROWS];
    for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(2 * PANEL)) {
        // SAFETY: `w` holds 32 i16, one unaligned 512-bit load.
        let wv = unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
        for (a, &two) in acc.iter_mut().zip(xs) {
            *a = _mm512_dpwssd_epi32(*a, _mm512_set1_epi32(two), wv);
        }
    }
    for (sum, a) in sums.iter_mut().zip(&acc) {
        // SAFETY: `sum` holds 16 i32, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(sum.as_mut_ptr().cast(), *a) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer of made-up int8 rows, and inputs with a wide range.
    fn layer(inputs: usize, outputs: usize) -> (Linear, Vec<Vec<u8>>, Vec<f32>) {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let rows: Vec<Vec<u8>> = (0..outputs)
            .map(|o| {
                (0..inputs)
                    .map(|k| if (o + k) % 97 == 0 { 128 } else { next() as u8 })
                    .collect()
            })
            .collect();
        let scales: Vec<f32> = (0..outputs).map(|o| 0.001 + o as f32 * 1e-5).collect();
        let bias: Vec<f32> = (0..outputs).map(|o| o as f32 * 0.01 - 0.3).collect();
        let lin = Linear::pack(|o| (scales[o], &rows[o][..]), inputs, outputs, bias);
        (lin, rows, scales)
    }

    #[test]
    fn every_build_gives_the_same_bits_and_no_sum_overflows() {
        for (inputs, n) in [(384, 9), (1536, 5), (64, 4), (2, 1)] {
            let (lin, _, _) = layer(inputs, 32);
            // The worst case: every input at the token's largest magnitude,
            // against rows holding -128.
            let mut x: Vec<f32> = (0..n * inputs)
                .map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0)
                .collect();
            x[..inputs].fill(-5.0);
            let mut want = vec![0f32; n * 32];
            lin.apply(Kernel::Portable, &x, n, &mut want, &mut Coded::default());
            for kernel in [Kernel::Avx, Kernel::Avx512] {
                let mut got = vec![0f32; n * 32];
                lin.apply(kernel, &x, n, &mut got, &mut Coded::default());
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{kernel:?} {inputs}");
            }
        }
    }

    #[test]
    fn outputs_are_close_to_the_float_product() {
        let (inputs, outputs, n) = (1536, 48, 6);
        let (lin, rows, scales) = layer(inputs, outputs);
        let x: Vec<f32> = (0..n * inputs)
            .map(|i| (((i * 7919) % 2003) as f32 / 100.0 - 10.0).powi(3) / 100.0)
            .collect();
        let mut got = vec![0f32; n * outputs];
        lin.apply(Kernel::best(), &x, n, &mut got, &mut Coded::default());
        for t in 0..n {
            let row = &x[t * inputs..][..inputs];
            let max = row.iter().fold(0f64, |m, v| m.max(f64::from(*v).abs()));
            for o in 0..outputs {
                let exact: f64 = row
                    .iter()
                    .zip(&rows[o])
                    .map(|(&v, &w)| f64::from(v) * f64::from(w as i8) * f64::from(scales[o]))
                    .sum::<f64>()
                    + f64::from(lin.bias[o]);
                // Half a code of the largest input per input, at most.
                let bound = inputs as f64 * 128.0 * f64::from(scales[o]) * max
                    / (2.0 * f64::from(codes(inputs)))
                    + 1e-4;
                let err = (f64::from(got[t * outputs + o]) - exact).abs();
                assert!(err <= bound, "{t} {o}: {err} > {bound}");
            }
        }
        // A zero token gives the bias.
        let mut out = vec![1f32; outputs];
        lin.apply(
            Kernel::best(),
            &vec![0f32; inputs],
            1,
            &mut out,
            &mut Coded::default(),
        );
        assert_eq!(out, lin.bias);
    }

    #[test]
    fn codes_keep_every_sum_in_an_i32() {
        assert_eq!(codes(384), 32_767);
        assert_eq!(codes(1536), 10_922);
        for inputs in [2, 384, 1536, 4096] {
            assert!(inputs as i64 * 128 * i64::from(codes(inputs)) <= i64::from(i32::MAX));
        }
    }
}
