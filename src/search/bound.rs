//! How much work one word may cause. A word's typo neighbourhood grows with
//! the cube of its length and its compound splits and prefixes with the
//! square, so past [`MAX_EXPANDED_LETTERS`] a word matches only as written
//! and by its stem, in a query or in a tool's text alike; and a query is
//! read up to its first [`MAX_QUERY_BYTES`] bytes and [`MAX_QUERY_WORDS`]
//! words, and a control-tool query longer than [`MAX_QUERY_BYTES`] is
//! refused. It decides only these bounds; it must not rank or say which
//! words are near.

/// Letters a word may have and still be matched as a typo, a compound or
/// a longer or shorter form (the longest English words run to about 30).
pub const MAX_EXPANDED_LETTERS: usize = 32;

/// Words of a query (stop words not counted) that are searched; the rest
/// is not read.
pub const MAX_QUERY_WORDS: usize = 64;

/// Bytes of a query a search reads ([`readable`]), and of a control-tool
/// `query` the model may send: words saying what a tool does, or exact
/// names. A longer control-tool query is refused `query-too-long`, not
/// searched and not echoed back.
pub const MAX_QUERY_BYTES: usize = 4_096;

/// The part of `query` a search reads: its first [`MAX_QUERY_BYTES`]
/// bytes (cut at a character boundary). Cutting a request into its needs
/// and weighing each reads the text again per piece, so the text read is
/// bounded, not only its words.
pub fn readable(query: &str) -> &str {
    if query.len() <= MAX_QUERY_BYTES {
        return query;
    }
    let mut end = MAX_QUERY_BYTES;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    &query[..end]
}

/// Whether `word` is short enough to expand (typos, compounds, prefixes).
pub fn expandable(word: &str) -> bool {
    word.chars().nth(MAX_EXPANDED_LETTERS).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_read_up_to_its_bytes_at_a_character_boundary() {
        assert_eq!(readable("list pods"), "list pods");
        let long = format!("a{}", "é".repeat(MAX_QUERY_BYTES));
        let read = readable(&long);
        assert_eq!(read.len(), MAX_QUERY_BYTES - 1);
        assert!(long.starts_with(read));
    }

    #[test]
    fn words_up_to_the_bound_expand() {
        assert!(expandable(&"é".repeat(MAX_EXPANDED_LETTERS)));
        assert!(!expandable(&"a".repeat(MAX_EXPANDED_LETTERS + 1)));
    }
}
