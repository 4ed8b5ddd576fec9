//! The longest beginning of a text that stays within a token budget, cut where a token ends, so
//! a cut result is still valid UTF-8 and no token is split in two. One pass over the text's
//! pieces (the encoding's own splitting) counts the whole text and finds the cut; only the piece
//! the budget runs out in is looked into, and only as far as the budget could reach.
//!
//! It decides where a text is cut; what is cut and what is said about it is
//! [`crate::results`]'s.

use super::Encoding;

/// Most bytes one token of the OpenAI encodings spans in practice; a piece the budget runs out
/// in is looked into only this far per token left, so a hostile megabyte-long word is not
/// counted again and again.
const MAX_TOKEN_BYTES: usize = 64;

/// Where a text is cut to fit a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// Bytes kept: `text[..end]` is the beginning that fits, on a character boundary.
    pub end: usize,
    /// Tokens of `text[..end]`.
    pub kept: u32,
    /// Tokens of the whole text: counted, or estimated past the cut when
    /// [`Prefix::estimated`].
    pub total: u32,
    /// Whether `total` is an estimate for the text past the cut.
    pub estimated: bool,
}

/// Bytes counted at least before the rest of a text is estimated: enough text for its bytes
/// per token to hold.
pub const SAMPLE_BYTES: usize = 4096;

/// The estimated tokens of `rest` bytes more, at the bytes per token of `counted_tokens` in
/// `counted_bytes` (4 bytes a token when nothing was counted), rounded up.
fn rest_of(rest: usize, counted_bytes: usize, counted_tokens: u64) -> u64 {
    if rest == 0 {
        return 0;
    }
    if counted_bytes == 0 || counted_tokens == 0 {
        return (rest as u64).div_ceil(4);
    }
    (rest as u64 * counted_tokens).div_ceil(counted_bytes as u64)
}

impl Encoding {
    /// The longest beginning of `text` whose count is at most `budget`, ending where a token
    /// ends, with the count of the whole text.
    ///
    /// # Example
    /// ```
    /// use muster::tokens::Encoding;
    /// let p = Encoding::O200kBase.prefix_within("one two three four", 2);
    /// assert_eq!(&"one two three four"[..p.end], "one two");
    /// assert_eq!((p.kept, p.total), (2, 4));
    /// ```
    pub fn prefix_within(self, text: &str, budget: u32) -> Prefix {
        self.prefix(text, budget, false)
    }

    /// [`Encoding::prefix_within`], but the text past the cut is not counted: its tokens are
    /// estimated from the bytes per token of what was counted (at least [`SAMPLE_BYTES`]), and
    /// [`Prefix::estimated`] says so. The work is bounded by the budget, not by the text.
    pub fn prefix_within_estimating(self, text: &str, budget: u32) -> Prefix {
        self.prefix(text, budget, true)
    }

    /// Tokens of `text`, counted exactly for its first `exact_bytes` (at least
    /// [`SAMPLE_BYTES`]) and estimated past them from the bytes per token counted; whether it
    /// was estimated.
    pub fn count_estimating(self, text: &str, exact_bytes: usize) -> (u64, bool) {
        let tokenizer = self.tokenizer();
        let (mut at, mut total) = (0usize, 0u64);
        for piece in tokenizer.split(text) {
            if at >= exact_bytes.max(SAMPLE_BYTES) {
                break;
            }
            total += tokenizer.count_piece(piece.as_bytes()) as u64;
            at += piece.len();
        }
        (total + rest_of(text.len() - at, at, total), at < text.len())
    }

    fn prefix(self, text: &str, budget: u32, estimate: bool) -> Prefix {
        let tokenizer = self.tokenizer();
        let budget = budget as usize;
        let (mut total, mut kept, mut end) = (0usize, 0usize, 0usize);
        let mut open = true;
        let mut at = 0usize;
        for piece in tokenizer.split(text) {
            if estimate && !open && at >= SAMPLE_BYTES {
                break;
            }
            let tokens = tokenizer.count_piece(piece.as_bytes());
            total += tokens;
            if open {
                if kept + tokens <= budget {
                    kept += tokens;
                    end = at + piece.len();
                } else {
                    let (more, bytes) = self.inside(piece, budget - kept);
                    kept += more;
                    end = at + bytes;
                    open = false;
                }
            }
            at += piece.len();
        }
        let rest = rest_of(text.len() - at, at, total as u64);
        // A beginning can split differently at its end than inside the whole text (a run of
        // spaces gives its last one to the next word): count what is kept, and give back
        // pieces until it fits. A text kept whole was counted as it is.
        if end < text.len() {
            kept = self.count_text(&text[..end]) as usize;
            while kept > budget && end > 0 {
                let last = tokenizer.split(&text[..end]).last().map_or(end, str::len);
                end -= last;
                kept = self.count_text(&text[..end]) as usize;
            }
        }
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        Prefix {
            end,
            kept: clamp(kept as u64),
            total: clamp(total as u64 + rest),
            estimated: at < text.len(),
        }
    }

    /// The longest beginning of one piece within `left` tokens, by halving over its character
    /// boundaries: (its tokens, its bytes).
    fn inside(self, piece: &str, left: usize) -> (usize, usize) {
        if left == 0 {
            return (0, 0);
        }
        let tokenizer = self.tokenizer();
        let reach = floor_char(piece, left.saturating_mul(MAX_TOKEN_BYTES));
        let (mut lo, mut hi) = (0usize, reach);
        let mut best = (0usize, 0usize);
        while lo < hi {
            let mid = floor_char(piece, lo + (hi - lo).div_ceil(2));
            if mid <= lo {
                break;
            }
            let tokens = tokenizer.count_piece(&piece.as_bytes()[..mid]);
            if tokens <= left {
                best = (tokens, mid);
                lo = mid;
            } else {
                hi = floor_char(piece, mid - 1);
            }
        }
        best
    }
}

/// The largest character boundary of `text` at or below `at`.
fn floor_char(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_within_its_budget_is_kept_whole() {
        let text = "héllo wörld, 12345 ✓";
        let p = Encoding::O200kBase.prefix_within(text, 1000);
        assert_eq!(p.end, text.len());
        assert_eq!(p.kept, p.total);
        assert_eq!(p.total, Encoding::O200kBase.count_text(text));
    }

    #[test]
    fn a_cut_ends_on_a_character_and_fits() {
        let text = "日本語のテキスト ".repeat(500) + &"x".repeat(10_000);
        for budget in [0, 1, 7, 100, 1000, 5000] {
            for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let p = e.prefix_within(&text, budget);
                assert!(text.is_char_boundary(p.end));
                assert!(e.count_text(&text[..p.end]) <= budget);
                assert_eq!(p.kept, e.count_text(&text[..p.end]));
                assert_eq!(p.total, e.count_text(&text));
            }
        }
    }

    #[test]
    fn an_estimate_stops_counting_at_the_cut_and_says_so() {
        let text = "word ".repeat(200_000);
        let e = Encoding::O200kBase;
        let p = e.prefix_within_estimating(&text, 100);
        let exact = e.prefix_within(&text, 100);
        assert_eq!((p.end, p.kept), (exact.end, exact.kept));
        assert!(p.estimated && !exact.estimated);
        let off = (i64::from(p.total) - i64::from(exact.total)).abs();
        assert!(off * 100 <= i64::from(exact.total), "{p:?} vs {exact:?}");
        let (n, estimated) = e.count_estimating(&text, 10_000);
        assert!(estimated && (n as i64 - i64::from(exact.total)).abs() * 100 <= n as i64);
        assert_eq!(e.count_estimating("short", 10_000), (1, false));
        // A text that fits is counted whole, estimate or not.
        let short = e.prefix_within_estimating("one two", 100);
        assert_eq!((short.end, short.total, short.estimated), (7, 2, false));
    }

    #[test]
    fn one_long_word_is_cut_inside() {
        let text = "a".repeat(1 << 20);
        let p = Encoding::O200kBase.prefix_within(&text, 50);
        assert!(p.end > 0 && p.kept <= 50, "{p:?}");
    }
}
