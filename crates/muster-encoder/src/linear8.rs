//! The linear layers with 8-bit inputs, the default (issue 35: the 16-bit
//! inputs of `linear.rs`, feature `sixteen-bit-inputs`, keep a cold
//! catalog's first search at the CPU's `vpdpwssd` limit). The model stores each
//! layer's weights as int8 with one f32 scale per output; a token's inputs
//! are coded as unsigned 8-bit integers with one scale and one zero point
//! per token (asymmetric, the range widened to hold 0:
//! `x ≈ sₜ · (x̂ − zₜ)`, `x̂ ∈ [0, 255]`), and each output is the exact
//! i32 dot product of the codes less the zero point times the row's weight
//! sum, times the two scales, plus the bias:
//!
//! ```text
//! out[t][o] = (Σₖ x̂[t][k] · ŵ[o][k] − zₜ · Σₖ ŵ[o][k]) as f32 · (sₜ · s_o) + b[o]
//! ```
//!
//! `vpdpbusd` (AVX-512 VNNI) multiplies four u8 × i8 pairs per lane per
//! instruction, twice the work of `vpdpwssd`. Integer sums have no order
//! to keep (no sum can pass `i32`: 1,536 · 255 · 128 < 2³¹ / 2), so the
//! portable build, the AVX2 build and the VNNI build give the same bits,
//! and every step after the sum is the same IEEE operations in the same
//! order. The coding costs at most half a code in 255 of the token's
//! range; `tests/encoder.rs` checks the vectors against a float reference.
//!
//! It decides nothing about search; it only multiplies.

use super::kernel::Kernel;

/// Outputs computed side by side: one panel of packed weights (one
/// AVX-512 register of i32 sums).
const PANEL: usize = 16;
/// Tokens computed together: a panel's weights loaded once serve eight,
/// and eight independent sums hide an integer multiply-add's latency.
const ROWS: usize = 8;
/// Blocks of [`ROWS`] rows in a tile: a tile's codes (64 rows: 24 KB for
/// 384 inputs, 96 KB for 1,536) stay in cache while every panel passes.
const TILE: usize = 8;
/// The largest input code.
const TOP: f32 = 255.0;

/// A linear layer packed for [`Linear::apply`].
pub(super) struct Linear {
    /// For each panel of [`PANEL`] outputs, for each quad of inputs
    /// `(4q … 4q + 3)`, the panel's four weights of each output in order.
    weights: Vec<i8>,
    /// Each output's sum of weights (for the zero points).
    sums: Vec<i32>,
    /// Each output's weight scale.
    scales: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
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
        assert_eq!(inputs % 4, 0, "inputs come in quads");
        assert_eq!(bias.len(), outputs);
        let mut weights = vec![0i8; inputs * outputs];
        let mut sums = Vec::with_capacity(outputs);
        let mut scales = Vec::with_capacity(outputs);
        for o in 0..outputs {
            let (scale, codes) = row(o);
            assert_eq!(codes.len(), inputs);
            scales.push(scale);
            sums.push(codes.iter().map(|&w| i32::from(w as i8)).sum());
            let panel = &mut weights[(o / PANEL) * inputs * PANEL..][..inputs * PANEL];
            for (k, &w) in codes.iter().enumerate() {
                panel[(k / 4) * 4 * PANEL + (o % PANEL) * 4 + k % 4] = w as i8;
            }
        }
        Linear {
            weights,
            sums,
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

    /// The portable sums, vectorized by the compiler with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn apply_avx2(&self, coded: &Coded, out: &mut [f32]) {
        self.body::<PORTABLE>(coded, out);
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
        let block_len = inputs / 4 * ROWS;
        let blocks = &coded.codes[..n.div_ceil(ROWS) * block_len];
        let mut sums = [[0i32; PANEL]; ROWS];
        for (tile, tile_blocks) in blocks.chunks(TILE * block_len).enumerate() {
            for (p, panel) in self.weights.chunks_exact(inputs * PANEL).enumerate() {
                let scales = &self.scales[p * PANEL..][..PANEL];
                let bias = &self.bias[p * PANEL..][..PANEL];
                let wsums = &self.sums[p * PANEL..][..PANEL];
                for (b, block) in tile_blocks.chunks_exact(block_len).enumerate() {
                    match BUILD {
                        #[cfg(target_arch = "x86_64")]
                        // SAFETY: `apply_coded` checked the CPU has the build.
                        VNNI => unsafe { dot_vnni(block, panel, &mut sums) },
                        _ => dot_portable(block, panel, &mut sums),
                    }
                    let first = (tile * TILE + b) * ROWS;
                    for (t, sum) in (first..n.min(first + ROWS)).zip(&sums) {
                        let o = &mut out[t * outputs + p * PANEL..][..PANEL];
                        let (token_scale, zero) = (coded.scales[t], coded.zeros[t]);
                        for ((((o, &s), &w), &c), &ws) in
                            o.iter_mut().zip(sum).zip(scales).zip(bias).zip(wsums)
                        {
                            *o = (s - zero * ws) as f32 * (token_scale * w) + c;
                        }
                    }
                }
            }
        }
    }
}

/// Rows of inputs coded as unsigned 8-bit integers for a layer of some
/// number of inputs, with each row's scale and zero point: what
/// [`Linear::apply_coded`] reads.
#[derive(Default)]
pub(super) struct Coded {
    /// In blocks of [`ROWS`] rows, quad-major: for each quad of inputs,
    /// [`ROWS`] u32 each holding the quad's four u8 codes (the last block
    /// padded with zeros).
    codes: Vec<u32>,
    /// Each row's scale: its range / 255 (0 for a zero or non-finite row).
    scales: Vec<f32>,
    /// Each row's zero point: the code of 0.
    zeros: Vec<i32>,
    rows: usize,
    inputs: usize,
    /// One row's codes, quad by quad, before they go to their block.
    row: Vec<u32>,
}

impl Coded {
    /// Codes the `n` rows of `x` (`n × inputs`) for a layer of `inputs`
    /// inputs, replacing what it held. Inlined into its caller, so it runs
    /// with the caller's instructions (`forward.rs`): every step is exact
    /// or one IEEE operation per element, the same bits from any build.
    #[inline(always)]
    pub(super) fn code(&mut self, x: &[f32], n: usize, inputs: usize) {
        assert_eq!(x.len(), n * inputs);
        assert_eq!(inputs % 4, 0, "inputs come in quads");
        let quads = inputs / 4;
        self.rows = n;
        self.inputs = inputs;
        self.codes.clear();
        self.codes.resize(n.div_ceil(ROWS) * quads * ROWS, 0);
        self.scales.clear();
        self.scales.resize(n, 0.0);
        self.zeros.clear();
        self.zeros.resize(n, 0);
        self.row.clear();
        self.row.resize(quads, 0);
        for (t, row) in x.chunks_exact(inputs).enumerate() {
            // The range, widened to hold 0.
            let (lo, hi) = row
                .iter()
                .fold((0f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            let finite = row.iter().fold(true, |ok, v| ok & v.is_finite());
            if !finite || !(hi - lo).is_finite() || hi - lo == 0.0 {
                // All codes 0 and zero point 0: the output is the bias.
                continue;
            }
            let to_code = TOP / (hi - lo);
            self.scales[t] = (hi - lo) / TOP;
            // To the nearest whole number (ties to even): adding 1.5 · 2²³
            // leaves it, two's complement, in the low bits (integer
            // arithmetic only, so the loop vectorizes).
            let round =
                |y: f32| ((y.clamp(-TOP, TOP) + 12_582_912.0).to_bits() as i32) - 0x4b40_0000;
            let zero = round(-lo * to_code).clamp(0, 255);
            self.zeros[t] = zero;
            let code = |v: f32| (round(v * to_code) + zero).clamp(0, 255) as u32;
            // The row's quads side by side (the loop vectorizes), then
            // into their places in the block.
            for (c, four) in self.row.iter_mut().zip(row.chunks_exact(4)) {
                *c = code(four[0])
                    | (code(four[1]) << 8)
                    | (code(four[2]) << 16)
                    | (code(four[3]) << 24);
            }
            let block = &mut self.codes[(t / ROWS) * quads * ROWS..][..quads * ROWS];
            for (slot, &c) in block.iter_mut().skip(t % ROWS).step_by(ROWS).zip(&self.row) {
                *slot = c;
            }
        }
    }
}

/// The builds of the integer sums (all give the same integers).
const PORTABLE: u8 = 0;
#[cfg(target_arch = "x86_64")]
const VNNI: u8 = 3;

/// `sums[r][o] = Σ_q Σ_j byte_j(x[q][r]) · w[q][o][j]`: one block of
/// [`ROWS`] tokens against one panel.
#[inline(always)]
fn dot_portable(x: &[u32], w: &[i8], sums: &mut [[i32; PANEL]; ROWS]) {
    *sums = [[0; PANEL]; ROWS];
    for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(4 * PANEL)) {
        for (sum, &four) in sums.iter_mut().zip(xs) {
            let b = four.to_le_bytes().map(i32::from);
            for (s, w) in sum.iter_mut().zip(w.chunks_exact(4)) {
                *s += b[0] * i32::from(w[0])
                    + b[1] * i32::from(w[1])
                    + b[2] * i32::from(w[2])
                    + b[3] * i32::from(w[3]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Features {
    avx2: bool,
    avx512vnni: bool,
}

#[cfg(target_arch = "x86_64")]
impl Features {
    fn get() -> Features {
        static FEATURES: std::sync::OnceLock<Features> = std::sync::OnceLock::new();
        *FEATURES.get_or_init(|| Features {
            avx2: std::arch::is_x86_feature_detected!("avx2"),
            avx512vnni: std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni"),
        })
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
fn dot_vnni(x: &[u32], w: &[i8], sums: &mut [[i32; PANEL]; ROWS]) {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_si512(); ROWS];
    for (xs, w) in x.chunks_exact(ROWS).zip(w.chunks_exact(4 * PANEL)) {
        // SAFETY: `w` holds 64 i8, one unaligned 512-bit load.
        let wv = unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
        for (a, &four) in acc.iter_mut().zip(xs) {
            *a = _mm512_dpbusd_epi32(*a, _mm512_set1_epi32(four as i32), wv);
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
        for (inputs, n) in [(384, 9), (1536, 5), (64, 4), (4, 1)] {
            let (lin, _, _) = layer(inputs, 32);
            // The worst case: inputs at both ends of the range, against
            // rows holding -128.
            let mut x: Vec<f32> = (0..n * inputs)
                .map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0)
                .collect();
            x[..inputs].fill(5.0);
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
            let lo = row.iter().fold(0f64, |m, v| m.min(f64::from(*v)));
            let hi = row.iter().fold(0f64, |m, v| m.max(f64::from(*v)));
            for o in 0..outputs {
                let exact: f64 = row
                    .iter()
                    .zip(&rows[o])
                    .map(|(&v, &w)| f64::from(v) * f64::from(w as i8) * f64::from(scales[o]))
                    .sum::<f64>()
                    + f64::from(lin.bias[o]);
                // A code of the range per input (half for the input, half
                // for the zero point), at most.
                let bound = inputs as f64 * 128.0 * f64::from(scales[o]) * (hi - lo) / 255.0 + 1e-4;
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
}
