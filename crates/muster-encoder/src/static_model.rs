//! The static model: one row per vocabulary id, distilled from the vendored
//! MiniLM (`models/minilm-static/`, `examples/distill.rs`), and a text's
//! vector is the normalized sum of its tokens' rows. No transformer runs:
//! a text costs its tokenization and one add per token and dimension, so a
//! catalog of thousands of tools is encoded in milliseconds and a long
//! query costs no more than [`MAX_TOKENS`] rows.
//!
//! Sums run in token order in f32, each row dequantized as `q × scale`,
//! with no fused multiply-add: the same text gives the same bits on every
//! CPU. It decides nothing about rankings.

use crate::Tokenizer;
use std::sync::OnceLock;

/// Length of a vector.
pub const DIM: usize = 256;
/// Tokens read per text, `[CLS]` and `[SEP]` included; the rest of a longer
/// text is not read (a bound on the work a text can cause).
pub const MAX_TOKENS: usize = 512;
/// The model's identity: SHA-256 over `table.bin`, then `vocab.txt`
/// (checked by a test). Cached vectors are keyed by it.
pub const MODEL_ID: &str =
    "sha256:9898298fae82e01913e534d5303a93869f26d0d372f4e6577acf86df318a3e64";
/// The arithmetic's identity (see the crate's `ARITHMETIC`).
pub const ARITHMETIC: &str = "static-sum-1";

pub(crate) static TABLE: &[u8] = include_bytes!("../../../models/minilm-static/table.bin");
const MAGIC: &[u8; 8] = b"MUSTSTA1";
const HEADER: usize = 16;
const ROW: usize = 4 + DIM;

/// The loaded table: int8 rows with one f32 scale each, read in place.
pub struct Static {
    tokenizer: &'static Tokenizer,
    rows: &'static [u8],
}

impl Static {
    /// The table (read in place; nothing is copied) and the vocabulary.
    pub fn get() -> &'static Static {
        static STATIC: OnceLock<Static> = OnceLock::new();
        STATIC.get_or_init(|| {
            assert_eq!(&TABLE[..8], MAGIC, "models/minilm-static/table.bin");
            let word = |at: usize| {
                u32::from_le_bytes(TABLE[at..at + 4].try_into().expect("4 bytes")) as usize
            };
            let tokenizer = Tokenizer::get();
            assert_eq!(word(8), tokenizer.len(), "table rows = vocabulary");
            assert_eq!(word(12), DIM);
            assert_eq!(TABLE.len(), HEADER + tokenizer.len() * ROW);
            Static {
                tokenizer,
                rows: &TABLE[HEADER..],
            }
        })
    }

    /// The unit vector of `text`: the sum of its first [`MAX_TOKENS`] − 2
    /// tokens' rows, normalized; all zeros for a text with no token.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let ids = self.tokenizer.tokenize(text, MAX_TOKENS);
        let mut sum = vec![0f32; DIM];
        for &id in &ids[1..ids.len() - 1] {
            let row = &self.rows[id as usize * ROW..(id as usize + 1) * ROW];
            let scale = f32::from_le_bytes(row[..4].try_into().expect("4 bytes"));
            for (s, &q) in sum.iter_mut().zip(&row[4..]) {
                *s += f32::from(q as i8) * scale;
            }
        }
        let norm = crate::dot(&sum, &sum).sqrt();
        if norm > 0.0 {
            for s in &mut sum {
                *s /= norm;
            }
        }
        sum
    }
}
