//! Unit vectors packed for scoring: each entry's vector as int8 codes with
//! one scale (`max |v| / 127`), all codes in one contiguous block; a query
//! as int16 codes with its scale. A cosine is the exact integer dot
//! product of the codes (i32, no overflow: 384 · 127 · 32,767 < 2³¹) times
//! the two scales, so it is the same number on every CPU and whichever
//! build of the loop ran: the AVX2 and AVX-512 builds only add more
//! products side by side, and integer addition has no order to keep.
//!
//! int8 against the f32 dot product: the cosine moves by about 0.001
//! (docs/search-cost.md, "Scoring cached vectors"), a quarter of the memory an
//! index holds, and 10,000 entries scored in well under a millisecond.
//!
//! It decides nothing about search; it only multiplies.

use crate::DIM;

/// The largest int8 code.
const I8_MAX: f32 = 127.0;
/// The largest int16 code.
const I16_MAX: f32 = 32_767.0;

/// Entry vectors as int8 codes, contiguous, one scale each.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    codes: Vec<i8>,
    scales: Vec<f32>,
}

/// A query vector as int16 codes and its scale.
#[derive(Debug, Clone)]
pub struct Query {
    codes: Vec<i16>,
    scale: f32,
}

/// `v`'s codes (each `round(x / scale)`) and scale, `max |x| / max`; all
/// zeros (scale 0) for a zero or non-finite vector.
fn quantize<T>(v: &[f32], max: f32, code: impl Fn(f32) -> T) -> (Vec<T>, f32) {
    let top = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if !(top.is_finite() && top > 0.0) {
        return ((0..v.len()).map(|_| code(0.0)).collect(), 0.0);
    }
    let scale = top / max;
    (
        v.iter().map(|&x| code((x / scale).round())).collect(),
        scale,
    )
}

impl Query {
    /// The query `v` (a unit vector of [`DIM`] numbers; shorter is padded
    /// with zeros, longer cut).
    pub fn new(v: &[f32]) -> Query {
        let mut full = [0f32; DIM];
        let n = v.len().min(DIM);
        full[..n].copy_from_slice(&v[..n]);
        let (codes, scale) = quantize(&full, I16_MAX, |x| x as i16);
        Query { codes, scale }
    }
}

impl Packed {
    /// Packs `vectors` (unit vectors of [`DIM`] numbers; shorter is padded
    /// with zeros, longer cut), in order.
    pub fn new<V: AsRef<[f32]>>(vectors: &[V]) -> Packed {
        let mut codes = Vec::with_capacity(vectors.len() * DIM);
        let mut scales = Vec::with_capacity(vectors.len());
        for v in vectors {
            let v = v.as_ref();
            let mut full = [0f32; DIM];
            let n = v.len().min(DIM);
            full[..n].copy_from_slice(&v[..n]);
            let (c, s) = quantize(&full, I8_MAX, |x| x as i8);
            codes.extend(c);
            scales.push(s);
        }
        Packed { codes, scales }
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// The cosine of `query` and every vector, in order, into `out`
    /// (cleared first).
    pub fn cosines(&self, query: &Query, out: &mut Vec<f64>) {
        out.clear();
        out.reserve(self.len());
        let q: &[i16; DIM] = query.codes[..].try_into().expect("DIM codes");
        let qs = f64::from(query.scale);
        dots(&self.codes, q, |i, dot| {
            out.push(f64::from(dot) * f64::from(self.scales[i]) * qs);
        });
    }

    /// The cosine of `query` and vector `i`.
    pub fn cosine(&self, query: &Query, i: usize) -> f64 {
        let q: &[i16; DIM] = query.codes[..].try_into().expect("DIM codes");
        f64::from(dot_one(self.row(i), q)) * f64::from(self.scales[i]) * f64::from(query.scale)
    }

    /// The cosine of vectors `i` and `j` (how alike two entries are).
    pub fn similarity(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (self.row(i), self.row(j));
        let dot: i32 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        f64::from(dot) * f64::from(self.scales[i]) * f64::from(self.scales[j])
    }

    fn row(&self, i: usize) -> &[i8; DIM] {
        self.codes[i * DIM..(i + 1) * DIM]
            .try_into()
            .expect("DIM codes")
    }
}

/// One exact dot product of int8 entry codes and int16 query codes.
#[inline(always)]
fn dot_one(row: &[i8; DIM], q: &[i16; DIM]) -> i32 {
    // Pairs of products summed in i32, as `pmaddwd` does: the loop the
    // compiler vectorizes. Exact, so any grouping gives the same number.
    let mut sum = 0i32;
    for (r, q) in row.chunks_exact(2).zip(q.chunks_exact(2)) {
        sum += i32::from(r[0]) * i32::from(q[0]) + i32::from(r[1]) * i32::from(q[1]);
    }
    sum
}

/// Calls `each(i, dot)` for every row of `codes`, in order, with the
/// widest build of the loop this CPU runs (all give the same numbers).
fn dots(codes: &[i8], q: &[i16; DIM], each: impl FnMut(usize, i32)) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512 BW (checked just above).
            return unsafe { dots_avx512(codes, q, each) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { dots_avx2(codes, q, each) };
        }
    }
    dots_body(codes, q, each);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn dots_avx512(codes: &[i8], q: &[i16; DIM], each: impl FnMut(usize, i32)) {
    dots_body(codes, q, each);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2(codes: &[i8], q: &[i16; DIM], each: impl FnMut(usize, i32)) {
    dots_body(codes, q, each);
}

#[inline(always)]
fn dots_body(codes: &[i8], q: &[i16; DIM], mut each: impl FnMut(usize, i32)) {
    for (i, row) in codes.chunks_exact(DIM).enumerate() {
        let row: &[i8; DIM] = row.try_into().expect("DIM codes");
        each(i, dot_one(row, q));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32) -> Vec<f32> {
        // A deterministic spread of values, normalized.
        let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        let mut v: Vec<f32> = (0..DIM)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.iter_mut().for_each(|a| *a /= n);
        v
    }

    fn exact(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| f64::from(x) * f64::from(y))
            .sum()
    }

    #[test]
    fn cosines_are_within_a_thousandth_of_the_float_ones() {
        let vectors: Vec<Vec<f32>> = (0..50).map(unit).collect();
        let packed = Packed::new(&vectors);
        assert_eq!(packed.len(), 50);
        let q = unit(999);
        let query = Query::new(&q);
        let mut out = Vec::new();
        packed.cosines(&query, &mut out);
        for (i, v) in vectors.iter().enumerate() {
            let want = exact(&q, v);
            assert!((out[i] - want).abs() < 2e-3, "{i}: {} vs {want}", out[i]);
            assert_eq!(out[i], packed.cosine(&query, i));
        }
        let self_similarity = packed.similarity(3, 3);
        assert!((self_similarity - 1.0).abs() < 2e-3, "{self_similarity}");
        assert!((packed.similarity(3, 4) - exact(&vectors[3], &vectors[4])).abs() < 2e-3);
    }

    #[test]
    fn every_build_of_the_loop_gives_the_same_numbers() {
        let vectors: Vec<Vec<f32>> = (0..37).map(unit).collect();
        let packed = Packed::new(&vectors);
        let query = Query::new(&unit(7));
        let q: &[i16; DIM] = query.codes[..].try_into().unwrap();
        let mut portable = Vec::new();
        dots_body(&packed.codes, q, |_, d| portable.push(d));
        let mut best = Vec::new();
        dots(&packed.codes, q, |_, d| best.push(d));
        assert_eq!(portable, best);
        // The extremes: every code at its largest magnitude does not overflow.
        let big = Packed {
            codes: vec![-127; DIM],
            scales: vec![1.0],
        };
        let q = [-32_767i16; DIM];
        let mut out = Vec::new();
        dots(&big.codes, &q, |_, d| out.push(d));
        assert_eq!(out, [127 * 32_767 * DIM as i32]);
    }

    #[test]
    fn a_zero_or_broken_vector_scores_zero() {
        let packed = Packed::new(&[vec![0f32; DIM], vec![f32::NAN; DIM], vec![0.5f32; 3]]);
        let query = Query::new(&unit(1));
        let mut out = Vec::new();
        packed.cosines(&query, &mut out);
        assert_eq!(out[..2], [0.0, 0.0]);
        // A short vector is padded: only its first three numbers count.
        let q = unit(1);
        assert!((out[2] - exact(&q[..3], &[0.5; 3])).abs() < 2e-3);
    }
}
