//! Typo tolerance: which known words are within a small edit distance of a
//! query word. A symmetric-delete index (every word with up to one or two
//! letters deleted, pointing back at the word) makes a lookup a few dozen
//! hash probes however large the vocabulary. It decides only which words are
//! near; it must not rank (the caller discounts by distance). A word past
//! [`MAX_EXPANDED_LETTERS`](super::MAX_EXPANDED_LETTERS) has no neighbourhood, stored or probed: its
//! deletions would grow with the cube of its length.

use super::bound::expandable;
use std::collections::HashMap;

/// The largest edit distance (optimal string alignment: insert, delete,
/// substitute, swap neighbours) forgiven for a query word of `len` letters:
/// none under 4, one under 8, two from 8.
pub fn allowed_distance(len: usize) -> usize {
    match len {
        // A 4-letter word has too many real words one letter away (`here`,
        // `hire`; `bake`, `make`) to be read as a typo of any of them.
        0..5 => 0,
        5..8 => 1,
        _ => 2,
    }
}

/// Known words by their deletion neighbourhoods.
#[derive(Debug, Clone, Default)]
pub struct Neighbours {
    words: Vec<String>,
    /// Deletion variant → indices into `words`, ascending, no repeats.
    by_delete: HashMap<String, Vec<u32>>,
}

impl Neighbours {
    /// Index `words` (distinct). A word of `n` letters is stored with up to
    /// the deletions a query of `n + d` letters could need at distance `d`;
    /// a word past [`MAX_EXPANDED_LETTERS`](super::MAX_EXPANDED_LETTERS) is not stored.
    pub fn build(words: Vec<String>) -> Neighbours {
        let mut by_delete: HashMap<String, Vec<u32>> = HashMap::new();
        for (id, word) in words.iter().enumerate() {
            if !expandable(word) {
                continue;
            }
            let n = word.chars().count();
            // The longest query that may reach this word decides the depth.
            let depth = (1..=2).filter(|d| allowed_distance(n + d) >= *d).max();
            let Some(depth) = depth else { continue };
            for variant in deletes(word, depth) {
                let ids = by_delete.entry(variant).or_default();
                if ids.last() != Some(&(id as u32)) {
                    ids.push(id as u32);
                }
            }
        }
        Neighbours { words, by_delete }
    }

    /// The known words within [`allowed_distance`] of `query` (other than
    /// `query` itself), each with its distance, in word order; none for a
    /// query word past [`MAX_EXPANDED_LETTERS`](super::MAX_EXPANDED_LETTERS).
    pub fn near(&self, query: &str) -> Vec<(&str, usize)> {
        let max = allowed_distance(query.chars().count());
        if max == 0 || !expandable(query) {
            return Vec::new();
        }
        let mut ids: Vec<u32> = deletes(query, max)
            .iter()
            .filter_map(|v| self.by_delete.get(v))
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|id| self.words[id as usize].as_str())
            .filter(|w| *w != query)
            // A misspelling rarely changes the first letter; a real word
            // that does is another word (`looking`, `cooking`).
            .filter(|w| w.chars().next() == query.chars().next())
            .map(|w| (w, strsim::osa_distance(query, w)))
            .filter(|&(_, d)| d <= max)
            .collect()
    }
}

/// `word` and every string made from it by deleting up to `depth` letters.
fn deletes(word: &str, depth: usize) -> Vec<String> {
    let mut all = vec![word.to_owned()];
    let mut frontier = vec![word.to_owned()];
    for _ in 0..depth {
        let mut next = Vec::new();
        for w in &frontier {
            let chars: Vec<char> = w.chars().collect();
            if chars.len() <= 1 {
                continue;
            }
            for skip in 0..chars.len() {
                let v: String = chars
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != skip)
                    .map(|(_, c)| c)
                    .collect();
                next.push(v);
            }
        }
        next.sort_unstable();
        next.dedup();
        all.extend(next.iter().cloned());
        frontier = next;
    }
    all.sort_unstable();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::MAX_EXPANDED_LETTERS;

    fn vocabulary() -> Neighbours {
        let words = [
            "email",
            "search",
            "directory",
            "thread",
            "list",
            "addresses",
            "cat",
        ];
        Neighbours::build(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn one_slip_is_forgiven_from_five_letters_two_from_eight() {
        let v = vocabulary();
        assert_eq!(v.near("emial"), [("email", 1)]); // swapped neighbours
        assert_eq!(v.near("serch"), [("search", 1)]); // dropped letter
        assert_eq!(v.near("threadd"), [("thread", 1)]); // doubled letter
        assert_eq!(v.near("dirctroy"), [("directory", 2)]);
        assert_eq!(v.near("adresess"), [("addresses", 2)]);
    }

    /// Issue 22: a correctly spelled word no tool has was matched to a
    /// rare look-alike (`here` → `hire`, `looking` → `cooking`, `bake` →
    /// `make`). Four letters are too few to tell a slip from another word,
    /// and a slip rarely changes the first letter.
    #[test]
    fn real_words_are_not_read_as_slips_of_other_words() {
        let v = Neighbours::build(
            ["list", "make", "cooking", "hire", "post"]
                .iter()
                .map(|w| w.to_string())
                .collect(),
        );
        for word in ["lits", "bake", "here", "most", "looking"] {
            assert!(v.near(word).is_empty(), "{word}: {:?}", v.near(word));
        }
        assert_eq!(v.near("cookng"), [("cooking", 1)]);
    }

    #[test]
    fn short_words_and_far_words_are_not_matched() {
        let v = vocabulary();
        assert!(v.near("cot").is_empty()); // three letters: exact only
        assert!(v.near("emxyl").is_empty()); // two edits at five letters
        assert!(v.near("email").is_empty()); // itself is not a typo
    }

    /// Issue 30: a 1,000-letter word in a description stored half a million
    /// deletions, a 2,000-letter query word probed two million.
    #[test]
    fn a_word_past_the_bound_has_no_neighbourhood() {
        let long: String = (0..MAX_EXPANDED_LETTERS + 1)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let plain = vocabulary();
        let mut words = plain.words.clone();
        words.push(long.clone());
        let with_long = Neighbours::build(words);
        assert_eq!(with_long.by_delete.len(), plain.by_delete.len());
        let mut slip = long.clone();
        slip.pop();
        assert!(with_long.near(&slip).is_empty());
        assert!(with_long.near(&format!("{long}x")).is_empty());
    }
}
