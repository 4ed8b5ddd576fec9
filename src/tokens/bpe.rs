//! The OpenAI byte-pair encodings, built on first use from OpenAI's own
//! rank files (`models/tiktoken/*.tokens.gz`, their tokens in rank order,
//! 1.1 MB and 0.5 MB compiled in): a count is tiktoken's `encode_ordinary` length, and a run builds
//! only the encoding it counts with.
//!
//! It decides how a text splits into pieces (the encodings' regular
//! expressions) and how many tokens a piece is (tiktoken's merge: the
//! adjacent pair of lowest rank merges first, the leftmost on a tie). It
//! must not keep anything but the ranks: prebuilt automata (bpe-openai's
//! dictionaries) cost 47 MB of binary and a four-minute build script, and
//! building them at run time costs seconds; a rank table costs tens of
//! milliseconds. `tests/tokenizer.rs` checks every count against
//! tiktoken-rs.
//!
//! The splitting is bpe-openai's (MIT, github/rust-gems): the look-ahead
//! `\s+(?!\S)` is one pattern `\s+\s` whose last character is given back.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};
use rustc_hash::FxHashMap;
use std::collections::BinaryHeap;
use std::io::Read as _;
use std::sync::LazyLock;

/// Each encoding's rank file as OpenAI publishes it, less the ranks (a
/// token's rank is its line number: issue 34, 0.8 MB less binary), gzipped.
/// The tests put the ranks back and check the bytes against tiktoken's
/// pinned SHA-256.
const O200K_GZ: &[u8] = include_bytes!("../../models/tiktoken/o200k_base.tokens.gz");
const CL100K_GZ: &[u8] = include_bytes!("../../models/tiktoken/cl100k_base.tokens.gz");

/// The patterns of each encoding, as bpe-openai writes tiktoken's: the
/// second is the look-ahead one.
const O200K_SPLIT: &str = concat!(
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|\\p{N}{1,3}",
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
    "|\\s*[\\r\\n]+",
    "|\\s+$",
);
const CL100K_SPLIT: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$";
const LOOKAHEAD: &str = "\\s+\\s";
const SPACES: &str = "\\s+";

/// Pieces up to this many bytes merge by scanning every pair (tiktoken's
/// own loop, quadratic in the piece); longer ones through a heap, so a
/// hostile megabyte-long word costs `n log n`, not `n²`.
pub const SCAN_MERGE_MAX: usize = 128;

static O200K_BASE: LazyLock<Tokenizer> = LazyLock::new(|| Tokenizer::build(O200K_GZ, O200K_SPLIT));
static CL100K_BASE: LazyLock<Tokenizer> =
    LazyLock::new(|| Tokenizer::build(CL100K_GZ, CL100K_SPLIT));

/// `o200k_base`, built on first use.
pub(crate) fn o200k_base() -> &'static Tokenizer {
    &O200K_BASE
}

/// `cl100k_base`, built on first use.
pub(crate) fn cl100k_base() -> &'static Tokenizer {
    &CL100K_BASE
}

/// One encoding: its ranks and its splitting.
pub(crate) struct Tokenizer {
    ranks: FxHashMap<Box<[u8]>, u32>,
    split: Regex,
}

impl Tokenizer {
    fn build(gz: &[u8], pattern: &str) -> Self {
        let ranks = ranks(&unzip(gz));
        let split = Regex::new_many(&[pattern, LOOKAHEAD, SPACES])
            // The patterns are constants this module's tests build.
            .expect("the encodings' patterns compile");
        Self { ranks, split }
    }

    /// Tokens of `text`: the sum of its pieces' tokens.
    pub(crate) fn count(&self, text: &str) -> usize {
        self.split(text)
            .map(|piece| self.count_piece(piece.as_bytes()))
            .sum()
    }

    /// The pieces tiktoken encodes one by one, in order.
    pub(crate) fn split<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut at = 0;
        std::iter::from_fn(move || {
            let found = self
                .split
                .find(Input::new(&text[at..]).anchored(Anchored::Yes))?;
            let start = at;
            let mut end = at + found.end();
            if found.pattern().as_usize() == 1 {
                // `\s+\s` stands for `\s+(?!\S)`: its last character is
                // the look-ahead, given back to the next piece.
                let last = text[start..end]
                    .chars()
                    .next_back()
                    .map_or(0, char::len_utf8);
                end -= last;
            }
            if end == start {
                return None;
            }
            at = end;
            Some(&text[start..end])
        })
    }

    /// Tokens of one piece: tiktoken's `encode_ordinary` of it, counted.
    pub(crate) fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() < 2 || self.ranks.contains_key(piece) {
            return piece.len().min(1);
        }
        if piece.len() <= SCAN_MERGE_MAX {
            self.scan_merge(piece)
        } else {
            self.heap_merge(piece)
        }
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).copied().unwrap_or(u32::MAX)
    }

    /// tiktoken's `_byte_pair_merge`: `parts` holds each part's start and
    /// the rank of it merged with the next; the lowest merges, the
    /// leftmost first, until no pair is a token.
    fn scan_merge(&self, piece: &[u8]) -> usize {
        let mut parts: Vec<(usize, u32)> = (0..piece.len() - 1)
            .map(|i| (i, self.rank(&piece[i..i + 2])))
            .collect();
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let pair = |parts: &[(usize, u32)], i: usize| match parts.get(i + 3) {
            Some(&(end, _)) => self.rank(&piece[parts[i].0..end]),
            None => u32::MAX,
        };
        loop {
            let mut lowest = (u32::MAX, 0);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < lowest.0 {
                    lowest = (rank, i);
                }
            }
            let (rank, i) = lowest;
            if rank == u32::MAX {
                return parts.len() - 1;
            }
            if i > 0 {
                parts[i - 1].1 = pair(&parts, i - 1);
            }
            parts[i].1 = pair(&parts, i);
            parts.remove(i + 1);
        }
    }

    /// The same merges as [`Tokenizer::scan_merge`] in the same order: the
    /// parts are a linked list, every pair waits in a heap under (rank,
    /// start), and a popped pair that has changed since is skipped.
    fn heap_merge(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // Part `i` starts at byte `i`; `next[i]` is the start of the part
        // after it (`n` past the last), `prev[i]` of the one before it.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let rank_at = |next: &[usize], i: usize| -> u32 {
            let j = next[i];
            if j >= n {
                return u32::MAX;
            }
            self.rank(&piece[i..next[j]])
        };
        let mut pair_rank: Vec<u32> = (0..n).map(|i| rank_at(&next, i)).collect();
        let mut heap: BinaryHeap<_> = pair_rank
            .iter()
            .enumerate()
            .filter(|&(_, &rank)| rank != u32::MAX)
            .map(|(i, &rank)| std::cmp::Reverse((rank, i)))
            .collect();
        let mut parts = n;
        while let Some(std::cmp::Reverse((rank, i))) = heap.pop() {
            if !alive[i] || pair_rank[i] != rank {
                continue;
            }
            let j = next[i];
            alive[j] = false;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            parts -= 1;
            pair_rank[i] = rank_at(&next, i);
            if pair_rank[i] != u32::MAX {
                heap.push(std::cmp::Reverse((pair_rank[i], i)));
            }
            let before = prev[i];
            if before < n {
                pair_rank[before] = rank_at(&next, before);
                if pair_rank[before] != u32::MAX {
                    heap.push(std::cmp::Reverse((pair_rank[before], before)));
                }
            }
        }
        parts
    }
}

fn unzip(gz: &[u8]) -> String {
    let mut text = String::new();
    // The files are constants this module's tests read whole.
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .expect("the rank files unzip");
    text
}

/// A tokens file's lines, one `<base64 token>` per rank from 0, as a table.
fn ranks(text: &str) -> FxHashMap<Box<[u8]>, u32> {
    use base64::Engine as _;
    let mut ranks = FxHashMap::with_capacity_and_hasher(text.len() / 8, rustc_hash::FxBuildHasher);
    for (rank, token) in (0u32..).zip(text.lines()) {
        if let Ok(token) = base64::engine::general_purpose::STANDARD.decode(token) {
            ranks.insert(token.into_boxed_slice(), rank);
        }
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    /// The compiled-in files are OpenAI's: unzipped, with each line's rank
    /// (its line number) put back, they hash to tiktoken's pinned digests,
    /// and every line is a token.
    #[test]
    fn the_rank_files_are_openais() {
        let files = [
            (
                O200K_GZ,
                "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                199_998,
            ),
            (
                CL100K_GZ,
                "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                100_256,
            ),
        ];
        for (gz, sha256, tokens) in files {
            let text = unzip(gz);
            // OpenAI's file: each token, a space, its rank (the line number).
            let published: String = (0..)
                .zip(text.lines())
                .map(|(rank, token)| format!("{token} {rank}\n"))
                .collect();
            let digest = sha2::Sha256::digest(published.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, sha256);
            assert_eq!(text.lines().count(), tokens);
            let ranks = ranks(&text);
            assert_eq!(ranks.len(), tokens);
            assert!(ranks.values().all(|&rank| (rank as usize) < tokens));
        }
    }

    /// The heap merges as the scan does, piece by piece, on pieces long
    /// enough to take either way.
    #[test]
    fn heap_and_scan_merge_alike() {
        let tokenizer = cl100k_base();
        let words = [
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "antidisestablishmentarianism",
            "ababababababababababababababababa",
            "\u{1F980}\u{1F980}\u{1F980}\u{4E2D}\u{6587}\u{0442}\u{0435}\u{043A}",
            "xyzzyplughxyzzyplugh",
            "0123456789",
        ];
        for (a, b) in words.iter().zip(words.iter().cycle().skip(1)) {
            for times in [1, 3, 9] {
                let piece = format!("{a}{b}").repeat(times);
                let bytes = piece.as_bytes();
                assert_eq!(
                    tokenizer.scan_merge(bytes),
                    tokenizer.heap_merge(bytes),
                    "{piece:?}"
                );
            }
        }
    }

    /// A hostile word a megabyte long counts through the heap.
    #[test]
    fn a_megabyte_word_counts() {
        let word = "abcdefghij".repeat(100_000);
        let tokens = o200k_base().count(&word);
        assert!(tokens > 0 && tokens < word.len());
    }
}
