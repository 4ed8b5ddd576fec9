//! The dense sentence encoder: all-MiniLM-L6-v2 (Apache-2.0, vendored in
//! `models/minilm-l6-v2/`, int8 with one scale per row), run in Rust. Text
//! → BERT uncased WordPiece ids → embeddings + 6 transformer layers → mean
//! pooling → a unit vector of 384 numbers, whose dot product with another
//! is the cosine the search mixes with BM25F (`docs/search.md`).
//!
//! It reads only the weights compiled into the binary: no network, no
//! files, no clock. Its arithmetic ([`linear`]: exact integer sums;
//! [`kernel`]: every float sum in one fixed order with no fused
//! multiply-add, its own `exp`) gives the same
//! text the same vector, bit for bit, on any CPU the binary runs on;
//! a vector cached by one run (muster's `search::vectors`) is the one another run
//! would compute.

mod forward;
mod kernel;
#[cfg(not(feature = "sixteen-bit-inputs"))]
#[path = "linear8.rs"]
mod linear;
#[cfg(feature = "sixteen-bit-inputs")]
mod linear;
pub mod packed;
#[cfg(feature = "static")]
pub mod static_model;
mod tokenizer;

pub use kernel::Kernel;
use linear::Linear;
use std::sync::{Arc, OnceLock};
pub use tokenizer::Tokenizer;

/// The vocabulary's tokens, in id order.
pub fn vocabulary() -> impl Iterator<Item = &'static str> {
    tokenizer::VOCAB.lines()
}

/// Length of a vector.
pub const DIM: usize = 384;
/// Tokens per text, at most, `[CLS]` and `[SEP]` included (the model's
/// `max_seq_length`); the rest of a longer text is not read.
pub const MAX_TOKENS: usize = 256;
/// Tokens of a query the encoder reads, at most, `[CLS]` and `[SEP]`
/// included ([`Encoder::embed_query`]; muster's search reads this many of
/// a request, or of all its needs together): a query's encoding costs at
/// most one encoding of this many tokens (about 13 ms of CPU), whatever its
/// length (issue 35: ≤ 15 ms), and the rest of a long request still matches
/// by its words. 64 read a third of MCP-Bench's long requests (the share of
/// their tools in the top 5: 0.47 at 64, 0.59 at 128); 160 would cost more
/// than 15 ms (muster's docs/search-figures.md, "Long requests").
pub const MAX_QUERY_TOKENS: usize = 128;
/// The model's identity: SHA-256 over `model.bin` (inflated from
/// `model.bin.z`), then `vocab.txt` (checked by a test). Cached vectors are keyed by it.
pub const MODEL_ID: &str =
    "sha256:cd4cc3260d0d131a9c076b5cdbe5b33785cde034d48c4a7a4ae9e4207dfe9f30";
/// The arithmetic's identity. Change it with any change that moves a bit
/// of a vector (the kernel, the order of a sum, a function's
/// approximation): `tests/encoder.rs` pins the bits and fails until the
/// pin is updated, and a new tag keeps older cached vectors from being
/// used.
///
/// The default: 8-bit inputs to the linear layers (`linear8.rs`).
#[cfg(not(feature = "sixteen-bit-inputs"))]
pub const ARITHMETIC: &str = "fixed-order-4";
/// The arithmetic's identity with 16-bit inputs to the linear layers
/// (`linear.rs`, feature `sixteen-bit-inputs`).
#[cfg(feature = "sixteen-bit-inputs")]
pub const ARITHMETIC: &str = "fixed-order-3";

/// `model.bin`, zlib-compressed (level 9): 1.9 MB less binary (issue 34),
/// inflated once, when the model is first used ([`Encoder::get`]).
static MODEL_Z: &[u8] = include_bytes!("../../../models/minilm-l6-v2/model.bin.z");
/// The most `model.bin` may inflate to (it is 22.8 MB).
const MODEL_MAX: usize = 64 << 20;
const MAGIC: &[u8; 8] = b"MUSTENC1";

/// A unit vector.
pub type Vector = Arc<[f32]>;

/// The loaded model. One per process ([`Encoder::get`]).
pub struct Encoder {
    tokenizer: &'static Tokenizer,
    heads: usize,
    /// Word embeddings, int8 rows with their scales, read as stored.
    words: Int8Rows,
    /// Position embeddings with token type 0 folded in.
    positions: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

struct Int8Rows {
    bytes: Vec<u8>,
    cols: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    down: Linear,
    output_norm: Norm,
}

/// Reads `model.bin` (written by `scripts/search-eval/encoder.py export`).
struct Reader {
    model: Vec<u8>,
    at: usize,
}

impl Reader {
    fn u32(&mut self) -> usize {
        let v = u32::from_le_bytes(
            self.model[self.at..self.at + 4]
                .try_into()
                .expect("4 bytes"),
        );
        self.at += 4;
        v as usize
    }

    fn vector(&mut self, len: usize) -> Vec<f32> {
        let out = self.model[self.at..self.at + 4 * len]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        self.at += 4 * len;
        out
    }

    fn rows(&mut self, rows: usize, cols: usize) -> Int8Rows {
        let len = rows * (4 + cols);
        let bytes = self.model[self.at..self.at + len].to_vec();
        self.at += len;
        Int8Rows { bytes, cols }
    }

    fn matrix(&mut self, rows: usize, cols: usize) -> Vec<f32> {
        let m = self.rows(rows, cols);
        let mut out = vec![0f32; rows * cols];
        for (r, row) in out.chunks_exact_mut(cols).enumerate() {
            m.row_into(r, row);
        }
        out
    }

    /// Stored [outputs × inputs], one int8 row per output.
    fn linear(&mut self, outputs: usize, inputs: usize) -> Linear {
        let m = self.rows(outputs, inputs);
        let bias = self.vector(outputs);
        Linear::pack(|o| m.row(o), inputs, outputs, bias)
    }

    fn norm(&mut self, len: usize) -> Norm {
        let weight = self.vector(len);
        let bias = self.vector(len);
        Norm { weight, bias }
    }
}

impl Int8Rows {
    /// Row `r`: its scale and its int8 codes (as stored bytes).
    fn row(&self, r: usize) -> (f32, &[u8]) {
        let row = &self.bytes[r * (4 + self.cols)..(r + 1) * (4 + self.cols)];
        let scale = f32::from_le_bytes(row[..4].try_into().expect("4 bytes"));
        (scale, &row[4..])
    }

    fn row_into(&self, r: usize, out: &mut [f32]) {
        let row = &self.bytes[r * (4 + self.cols)..(r + 1) * (4 + self.cols)];
        let scale = f32::from_le_bytes(row[..4].try_into().expect("4 bytes"));
        for (o, &q) in out.iter_mut().zip(&row[4..]) {
            *o = f32::from(q as i8) * scale;
        }
    }
}

impl Encoder {
    /// The model, loaded (about 25 MB: the layers' weights as i16) on first use.
    pub fn get() -> &'static Encoder {
        static ENCODER: OnceLock<Encoder> = OnceLock::new();
        ENCODER.get_or_init(Encoder::load)
    }

    fn load() -> Encoder {
        let model = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(MODEL_Z, MODEL_MAX)
            .expect("models/minilm-l6-v2/model.bin.z inflates");
        assert_eq!(&model[..8], MAGIC, "models/minilm-l6-v2/model.bin");
        let mut r = Reader { model, at: 8 };
        let [vocab_len, hidden, layers, heads, inner, positions] = [(); 6].map(|()| r.u32());
        assert_eq!(hidden, DIM);
        assert!(positions >= MAX_TOKENS);
        let words = r.rows(vocab_len, hidden);
        let positions = r.matrix(positions, hidden);
        let norm = r.norm(hidden);
        let layers = (0..layers)
            .map(|_| {
                let query = r.linear(hidden, hidden);
                let key = r.linear(hidden, hidden);
                let value = r.linear(hidden, hidden);
                let output = r.linear(hidden, hidden);
                let attention_norm = r.norm(hidden);
                let intermediate = r.linear(inner, hidden);
                let down = r.linear(hidden, inner);
                let output_norm = r.norm(hidden);
                Layer {
                    query,
                    key,
                    value,
                    output,
                    attention_norm,
                    intermediate,
                    down,
                    output_norm,
                }
            })
            .collect();
        assert_eq!(
            r.at,
            r.model.len(),
            "models/minilm-l6-v2/model.bin: trailing bytes"
        );
        let tokenizer = Tokenizer::get();
        assert_eq!(tokenizer.len(), vocab_len);
        Encoder {
            tokenizer,
            heads,
            words,
            positions,
            norm,
            layers,
        }
    }

    /// Token ids of `text` as the model reads it ([`Tokenizer::tokenize`]).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        self.tokenizer.tokenize(text, MAX_TOKENS)
    }

    /// The unit vector of `text` (see [`Encoder::tokenize`]).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_with(text, Kernel::best())
    }

    /// [`Encoder::embed`] computed by the given build of the arithmetic
    /// (the same bits from each; tests compare them). [`Kernel::Avx`] on a
    /// CPU without AVX runs the portable build.
    pub fn embed_with(&self, text: &str, kernel: Kernel) -> Vec<f32> {
        self.unit(&self.tokenize(text), kernel)
    }

    /// The unit vector of a query: [`Encoder::embed`] of its first
    /// [`MAX_QUERY_TOKENS`] tokens, so a long request costs what a short
    /// one does.
    pub fn embed_query(&self, text: &str) -> Vec<f32> {
        self.embed_capped(text, MAX_QUERY_TOKENS)
    }

    /// [`Encoder::embed`] of the first `max` tokens of `text` (at most
    /// [`MAX_TOKENS`]; for choosing [`MAX_QUERY_TOKENS`]:
    /// `examples/search_eval.rs --query-tokens`).
    #[doc(hidden)]
    pub fn embed_capped(&self, text: &str, max: usize) -> Vec<f32> {
        let ids = self.tokenizer.tokenize(text, max.clamp(2, MAX_TOKENS));
        self.unit(&ids, Kernel::best())
    }

    fn unit(&self, ids: &[u32], kernel: Kernel) -> Vec<f32> {
        normalize(self.pool(ids, kernel))
    }

    /// The unit vector of each text, in order: [`Encoder::embed`] of each,
    /// the same bits, computed batch by batch (rows of several texts in
    /// one pass, `forward.rs`), which costs less per text than one at a
    /// time.
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        self.embed_batch_with(texts, Kernel::best())
    }

    /// [`Encoder::embed_batch`] by the given build of the arithmetic (the
    /// same bits from each, and the same as [`Encoder::embed_with`]).
    pub fn embed_batch_with(&self, texts: &[&str], kernel: Kernel) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.tokenize(t)).collect();
        let mut scratch = forward::Scratch::default();
        let mut out = Vec::with_capacity(texts.len());
        let mut rest = &ids[..];
        while !rest.is_empty() {
            // As many texts as fit in a batch's rows (at least one).
            let mut rows = 0;
            let take = rest
                .iter()
                .take_while(|ids| {
                    rows += ids.len();
                    rows <= forward::BATCH_ROWS
                })
                .count()
                .max(1);
            let batch: Vec<&[u32]> = rest[..take].iter().map(Vec::as_slice).collect();
            let pooled = self.pool_batch(&batch, kernel, &mut scratch);
            out.extend(pooled.into_iter().map(normalize));
            rest = &rest[take..];
        }
        out
    }

    /// The sum of the last layer's outputs for token ids `ids` (at most
    /// [`MAX_TOKENS`], `[CLS]` and `[SEP]` included), not normalized: what
    /// the static model is distilled from (`examples/distill.rs`).
    pub fn pool(&self, ids: &[u32], kernel: Kernel) -> Vec<f32> {
        let mut pooled = self.pool_batch(&[ids], kernel, &mut forward::Scratch::default());
        pooled.pop().expect("one text, one vector")
    }
}

/// `v` divided by its length (a zero vector stays zero).
fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = dot(&v, &v).sqrt();
    if norm > 0.0 {
        for p in &mut v {
            *p /= norm;
        }
    }
    v
}

/// Dot product in a fixed order (eight lanes, then the lanes in order), so
/// the same vectors always give the same number.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let mut sum = lanes.iter().sum::<f32>();
    for (x, y) in ar.iter().zip(br) {
        sum += x * y;
    }
    sum
}
