//! The forward pass over a batch of texts (issue 35: a cold catalog's
//! first search encodes every tool). The rows of several texts are stacked
//! into one matrix, so each linear layer's weights are read once per batch
//! and not once per text, and its tiles of rows ([`super::linear`]) are
//! full; attention alone runs text by text. Every step is per row (the
//! linear layers' exact integer sums with one scale per row, layer norm,
//! GELU) or per text (attention, pooling), so a text's vector does not
//! depend on the texts batched with it: one text alone and the same text
//! in any batch give the same bits (`tests/encoder.rs`).
//!
//! It decides nothing about search; it only multiplies.

use super::kernel::{self, Kernel};
use super::linear::Coded;
use super::{DIM, Encoder, MAX_TOKENS, Norm};

/// Rows (tokens) a batch holds, at most, unless one text alone has more:
/// enough to fill the linear layers' tiles many times over, little
/// enough that a batch's activations (about 15 KB a row) stay near the
/// caches.
pub(super) const BATCH_ROWS: usize = 256;

/// The buffers one batch's pass writes, kept between batches.
#[derive(Default)]
pub(super) struct Scratch {
    x: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
    coded: Coded,
}

impl Scratch {
    /// Sized for `rows` rows. What they held is not cleared: every step
    /// writes all of its output before the next reads it.
    fn size(&mut self, rows: usize, inner: usize) {
        for buf in [
            &mut self.x,
            &mut self.q,
            &mut self.k,
            &mut self.v,
            &mut self.context,
            &mut self.attended,
        ] {
            buf.resize(rows * DIM, 0.0);
        }
        self.inner.resize(rows * inner, 0.0);
    }
}

impl Encoder {
    /// The sum of the last layer's outputs for each text's token ids
    /// (each cut at [`MAX_TOKENS`]), in order, not normalized; all the
    /// texts in one pass.
    pub(super) fn pool_batch(
        &self,
        texts: &[&[u32]],
        kernel: Kernel,
        s: &mut Scratch,
    ) -> Vec<Vec<f32>> {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx512
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            // SAFETY: the CPU has AVX-512 F and BW (checked just above).
            return unsafe { self.pool_avx512(texts, kernel, s) };
        }
        self.pool_body(texts, kernel, s)
    }

    /// [`Encoder::pool_batch`] with AVX-512 for the steps between the
    /// kernels (coding the inputs, layer norm): each is exact or one IEEE
    /// operation per element, in the same order, so the same bits.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn pool_avx512(&self, texts: &[&[u32]], kernel: Kernel, s: &mut Scratch) -> Vec<Vec<f32>> {
        self.pool_body(texts, kernel, s)
    }

    #[inline(always)]
    fn pool_body(&self, texts: &[&[u32]], kernel: Kernel, s: &mut Scratch) -> Vec<Vec<f32>> {
        let texts: Vec<&[u32]> = texts
            .iter()
            .map(|ids| &ids[..ids.len().min(MAX_TOKENS)])
            .collect();
        let n: usize = texts.iter().map(|ids| ids.len()).sum();
        let inner = self.layers.first().map_or(0, |l| l.intermediate.outputs());
        s.size(n, inner);
        let mut rows = s.x.chunks_exact_mut(DIM);
        for ids in &texts {
            for (t, (&id, row)) in ids.iter().zip(rows.by_ref()).enumerate() {
                self.words.row_into(id as usize, row);
                for (v, p) in row.iter_mut().zip(&self.positions[t * DIM..(t + 1) * DIM]) {
                    *v += p;
                }
            }
        }
        layer_norm(&mut s.x, &self.norm);
        let head = DIM / self.heads;
        let scale = 1.0 / (head as f32).sqrt();
        for layer in &self.layers {
            s.coded.code(&s.x, n, DIM);
            layer.query.apply_coded(kernel, &s.coded, &mut s.q);
            layer.key.apply_coded(kernel, &s.coded, &mut s.k);
            layer.value.apply_coded(kernel, &s.coded, &mut s.v);
            let mut first = 0;
            for ids in texts.iter().filter(|ids| !ids.is_empty()) {
                let rows = first * DIM..(first + ids.len()) * DIM;
                kernel::attention(
                    kernel,
                    (&s.q[rows.clone()], &s.k[rows.clone()], &s.v[rows.clone()]),
                    ids.len(),
                    self.heads,
                    scale,
                    &mut s.context[rows],
                );
                first += ids.len();
            }
            layer
                .output
                .apply(kernel, &s.context, n, &mut s.attended, &mut s.coded);
            add_norm(&mut s.x, &s.attended, &layer.attention_norm);
            layer
                .intermediate
                .apply(kernel, &s.x, n, &mut s.inner, &mut s.coded);
            kernel::gelu(kernel, &mut s.inner);
            layer
                .down
                .apply(kernel, &s.inner, n, &mut s.attended, &mut s.coded);
            add_norm(&mut s.x, &s.attended, &layer.output_norm);
        }
        let mut rows = s.x.chunks_exact(DIM);
        texts
            .iter()
            .map(|ids| {
                let mut pooled = vec![0f32; DIM];
                for row in rows.by_ref().take(ids.len()) {
                    for (p, a) in pooled.iter_mut().zip(row) {
                        *p += a;
                    }
                }
                pooled
            })
            .collect()
    }
}

/// `x += residual`, then [`layer_norm`].
#[inline(always)]
fn add_norm(x: &mut [f32], residual: &[f32], norm: &Norm) {
    for (a, b) in x.iter_mut().zip(residual) {
        *a += b;
    }
    layer_norm(x, norm);
}

/// Rows normalized together: each row's sums are chains of dependent
/// f64 additions, and [`NORM_ROWS`] rows' chains side by side keep the
/// adders busy. Each sum keeps its own order.
const NORM_ROWS: usize = 8;

/// Each row of `x` to mean 0 and variance 1 (each sum in f64, its terms
/// in order from -0.0, as `Iterator::sum` adds them), then times the
/// weight plus the bias.
#[inline(always)]
fn layer_norm(x: &mut [f32], norm: &Norm) {
    let len = norm.weight.len();
    for rows in x.chunks_mut(NORM_ROWS * len) {
        let count = rows.len() / len;
        // Rows past the last repeat it, and are not kept.
        let row = |r: usize| r.min(count - 1) * len;
        let mut sums = [-0.0f64; NORM_ROWS];
        for k in 0..len {
            for (r, s) in sums.iter_mut().enumerate() {
                *s += f64::from(rows[row(r) + k]);
            }
        }
        let means = sums.map(|s| s / len as f64);
        let mut squares = [-0.0f64; NORM_ROWS];
        for k in 0..len {
            for (r, s) in squares.iter_mut().enumerate() {
                let d = f64::from(rows[row(r) + k]) - means[r];
                *s += d * d;
            }
        }
        for (r, out) in rows.chunks_exact_mut(len).enumerate() {
            let (mean, var) = (means[r], squares[r] / len as f64);
            let inv = 1.0 / (var + 1e-12).sqrt();
            for ((a, w), b) in out.iter_mut().zip(&norm.weight).zip(&norm.bias) {
                *a = ((f64::from(*a) - mean) * inv) as f32 * w + b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts of every kind of length: empty, a word, a sentence, past
    /// [`MAX_TOKENS`], and enough of them to fill several batches.
    fn texts() -> Vec<String> {
        let mut texts = vec![
            String::new(),
            "read".to_string(),
            "Search the user's email threads by sender and subject".to_string(),
            "read the file and summarise it; ".repeat(60),
        ];
        texts.extend((0..30).map(|i| {
            format!(
                "tool {i}: {}",
                "does one thing and then another ".repeat(i % 9)
            )
        }));
        texts
    }

    #[test]
    fn a_batch_gives_each_text_the_bits_it_has_alone() {
        let encoder = Encoder::get();
        let texts = texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let rows: usize = refs.iter().map(|t| encoder.tokenize(t).len()).sum();
        assert!(rows > 2 * BATCH_ROWS, "{rows} rows: several batches");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // The baseline build and the best this CPU runs (the builds agree
        // with each other: `tests/encoder.rs`).
        for kernel in [Kernel::Portable, Kernel::best()] {
            let batch = encoder.embed_batch_with(&refs, kernel);
            assert_eq!(batch.len(), refs.len());
            for (text, got) in refs.iter().zip(&batch) {
                let alone = encoder.embed_with(text, kernel);
                assert_eq!(bits(got), bits(&alone), "{kernel:?}: {text:?}");
            }
            // The same texts in another order, so in other batches.
            let reversed: Vec<&str> = refs.iter().rev().copied().collect();
            let again = encoder.embed_batch_with(&reversed, kernel);
            for (got, want) in again.iter().rev().zip(&batch) {
                assert_eq!(bits(got), bits(want), "{kernel:?}");
            }
        }
        assert!(encoder.embed_batch(&[]).is_empty());
    }
}
