//! BERT uncased WordPiece over the vendored vocabulary
//! (`models/minilm-l6-v2/vocab.txt`), shared by both models: MiniLM reads
//! its ids through the transformer, the static model looks each one up.
//! It decides how a text is cut into token ids and nothing else.

use std::collections::HashMap;
use std::sync::OnceLock;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// A word longer than this (in characters) is `[UNK]`.
const MAX_WORD_CHARS: usize = 100;
pub(crate) static VOCAB: &str = include_str!("../../../models/minilm-l6-v2/vocab.txt");
const SPECIAL: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// The vocabulary, loaded once per process ([`Tokenizer::get`]).
pub struct Tokenizer {
    vocab: HashMap<&'static str, u32>,
    pub(crate) unk: u32,
    pub(crate) cls: u32,
    pub(crate) sep: u32,
}

impl Tokenizer {
    /// The vocabulary (30,522 entries), read on first use.
    pub fn get() -> &'static Tokenizer {
        static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
        TOKENIZER.get_or_init(|| {
            let vocab: HashMap<&'static str, u32> = VOCAB
                .lines()
                .enumerate()
                .map(|(i, w)| (w, i as u32))
                .collect();
            Tokenizer {
                unk: vocab["[UNK]"],
                cls: vocab["[CLS]"],
                sep: vocab["[SEP]"],
                vocab,
            }
        })
    }

    /// How many ids the vocabulary has.
    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    /// Whether the vocabulary is empty (never, for the vendored one).
    pub fn is_empty(&self) -> bool {
        self.vocab.is_empty()
    }

    /// Token ids of `text`: `[CLS]`, the WordPiece ids of its first
    /// `max` − 2 tokens, `[SEP]` (BERT uncased: control characters
    /// dropped, CJK characters split, accents stripped, lowercased, split
    /// at white space and punctuation). Work is bounded by `max`: the text
    /// past the token that fills it is not read.
    pub fn tokenize(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let mut rest = text;
        while !rest.is_empty() && ids.len() < max - 1 {
            // Special tokens written out in the text are read as themselves.
            let next = SPECIAL
                .iter()
                .filter_map(|s| rest.find(s).map(|at| (at, *s)))
                .min();
            let (plain, special) = match next {
                Some((at, s)) => (&rest[..at], Some(s)),
                None => (rest, None),
            };
            self.wordpieces(plain, max, &mut ids);
            match special {
                Some(s) => {
                    ids.push(self.vocab[s]);
                    rest = &rest[plain.len() + s.len()..];
                }
                None => rest = "",
            }
        }
        ids.truncate(max - 1);
        ids.push(self.sep);
        ids
    }

    fn wordpieces(&self, text: &str, max: usize, ids: &mut Vec<u32>) {
        // Normalizing is linear in the text; bound it by what `max` tokens
        // can use (a token is at most 100 characters of 4 bytes).
        let cut = floor_char_boundary(text, max.saturating_mul(4 * MAX_WORD_CHARS + 4));
        for word in pre_tokenize(&normalize(&text[..cut])) {
            if ids.len() >= max - 1 {
                return;
            }
            let chars: Vec<(usize, char)> = word.char_indices().collect();
            if chars.len() > MAX_WORD_CHARS {
                ids.push(self.unk);
                continue;
            }
            let mark = ids.len();
            let mut start = 0;
            let mut piece = String::new();
            while start < word.len() {
                // The longest piece from `start` the vocabulary knows.
                let ends = std::iter::once(word.len()).chain(chars.iter().rev().map(|&(i, _)| i));
                let found = ends.take_while(|&end| end > start).find_map(|end| {
                    piece.clear();
                    if start > 0 {
                        piece.push_str("##");
                    }
                    piece.push_str(&word[start..end]);
                    self.vocab.get(piece.as_str()).map(|&id| (id, end))
                });
                match found {
                    Some((id, end)) => {
                        ids.push(id);
                        start = end;
                    }
                    None => {
                        ids.truncate(mark);
                        ids.push(self.unk);
                        break;
                    }
                }
            }
        }
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// BERT's normalizer: control characters dropped, white space made a
/// space, CJK ideographs spaced apart, accents stripped (NFD, marks
/// dropped), lowercased.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            cleaned.push(' ');
        } else if is_chinese(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    let mut out = String::with_capacity(cleaned.len());
    for c in cleaned.nfd() {
        if get_general_category(c) != GeneralCategory::NonspacingMark {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Words split at white space, each punctuation character a word of its own.
fn pre_tokenize(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for chunk in text.split(is_whitespace) {
        let mut start = 0;
        for (i, c) in chunk.char_indices() {
            if is_punctuation(c) {
                if start < i {
                    words.push(&chunk[start..i]);
                }
                words.push(&chunk[i..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        if start < chunk.len() {
            words.push(&chunk[start..]);
        }
    }
    words
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

fn is_control(c: char) -> bool {
    use GeneralCategory::*;
    !matches!(c, '\t' | '\n' | '\r')
        && matches!(
            get_general_category(c),
            Control | Format | Surrogate | PrivateUse | Unassigned
        )
}

fn is_punctuation(c: char) -> bool {
    use GeneralCategory::*;
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            ConnectorPunctuation
                | DashPunctuation
                | OpenPunctuation
                | ClosePunctuation
                | InitialPunctuation
                | FinalPunctuation
                | OtherPunctuation
        )
}

fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}
