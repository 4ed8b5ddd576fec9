//! A request cut into its needs: "search for documentaries on Vimeo.
//! Additionally, fetch the related people; finally give me a streaming
//! link" asks for three tools, and a ranking of the whole request fills its
//! top 5 with the need whose words weigh most. Each need is ranked on its
//! own and the rankings are merged ([`super::mix`]). It only cuts text; it
//! must not rank.
//!
//! A need ends at the end of a sentence (`.`, `!`, `?` or `;` before white
//! space or the end, a line break, or the full-width `。！？；` of Chinese
//! and Japanese, which no space follows) and before a word that starts
//! another need (`additionally`, `also`, `then`, `finally`, …). A piece
//! with fewer than [`MIN_WORDS`] words that carry meaning ("Thanks!",
//! "Then,"), or whose words the caller says tell no tools apart ("Can you
//! provide me with a solution?": [`split_by`]), is no need of its own: it
//! joins the need before it (or the one after, at the start).

use super::bound::MAX_QUERY_WORDS;
use super::text;

/// Sentence ends of Chinese and Japanese text: full-width, and followed by
/// the next sentence without a space.
const WIDE_ENDS: [&str; 4] = ["。", "！", "？", "；"];

/// Words (stop words not counted) a need has at least.
pub const MIN_WORDS: usize = 2;

/// Words that start another need when they begin a clause. Lowercase.
const STARTERS: &[&str] = &[
    "additionally",
    "afterwards",
    "also",
    "finally",
    "furthermore",
    "lastly",
    "moreover",
    "next",
    "then",
];

/// The needs of `query`, in order, at most `max` (the rest joins the
/// last); the whole query when it has one need, or `max` is 1. With
/// `clauses`, a comma before white space and the word `and` end a need
/// too ("beat tracking, MFCC extraction and chroma calculation").
#[cfg(test)]
pub fn split(query: &str, max: usize, clauses: bool) -> Vec<&str> {
    split_by(query, max, clauses, |_| true)
}

/// [`split`], where a piece is a need of its own only when it has
/// [`MIN_WORDS`] words that carry meaning and `distinct(piece)` holds (the
/// index says whether its words tell tools apart: "Can you provide me with
/// a solution?" has two words that carry meaning and says nothing about
/// which tool); otherwise it joins a neighbour. `distinct` must read no
/// more than a piece's first [`MAX_QUERY_WORDS`] words that carry meaning,
/// as the index's searches do.
pub fn split_by(
    query: &str,
    max: usize,
    clauses: bool,
    distinct: impl Fn(&str) -> bool,
) -> Vec<&str> {
    if max <= 1 {
        return vec![query];
    }
    let pieces = cut(query, clauses);
    let Some(mut needs) = join(query, pieces, &distinct) else {
        return vec![query];
    };
    if needs.len() > max {
        let end = needs[needs.len() - 1].1;
        needs.truncate(max);
        needs[max - 1].1 = end;
    }
    if needs.len() <= 1 {
        return vec![query];
    }
    needs
        .iter()
        .map(|&(s, e)| query[s..e].trim().trim_end_matches(',').trim_end())
        .collect()
}

/// `query` cut at every sentence end and starter (and, with `clauses`, comma and `and`): the
/// byte ranges of its pieces, in order.
fn cut(query: &str, clauses: bool) -> Vec<(usize, usize)> {
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let bytes = query.as_bytes();
    let at_space = |j: usize| j >= bytes.len() || bytes[j].is_ascii_whitespace();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' || (matches!(b, b'.' | b'!' | b'?' | b';') && at_space(i + 1)) {
            pieces.push((start, i + 1));
            start = i + 1;
        } else if let Some(end) = WIDE_ENDS
            .iter()
            .find(|e| bytes[i..].starts_with(e.as_bytes()))
        {
            pieces.push((start, i + end.len()));
            start = i + end.len();
            i = start;
            continue;
        } else if clauses && b == b',' && at_space(i + 1) {
            pieces.push((start, i));
            start = i + 1;
        } else if (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) && b.is_ascii_alphabetic() {
            let word_end = bytes[i..]
                .iter()
                .position(|c| !c.is_ascii_alphabetic())
                .map_or(bytes.len(), |p| i + p);
            let word = query[i..word_end].to_ascii_lowercase();
            if clauses && word == "and" {
                pieces.push((start, i));
                start = word_end;
                i = word_end;
                continue;
            }
            // A starter after a comma or "and" begins a need; at the start
            // of a sentence it already does.
            let before = query[start..i].trim_end();
            if STARTERS.contains(&word.as_str())
                && (before.ends_with(',') || before.ends_with(" and"))
            {
                let mut end = before;
                if let Some(e) = end.strip_suffix(" and") {
                    end = e.trim_end();
                }
                if let Some(e) = end.strip_suffix(',') {
                    end = e;
                }
                pieces.push((start, start + end.len()));
                start = i;
            }
            i = word_end;
            continue;
        }
        i += 1;
    }
    pieces.push((start, bytes.len()));
    pieces
}

/// The needs `pieces` make: pieces without enough meaning joined to a neighbour; `None` when no
/// piece has enough.
fn join(
    query: &str,
    pieces: Vec<(usize, usize)>,
    distinct: &impl Fn(&str) -> bool,
) -> Option<Vec<(usize, usize)>> {
    // Pieces without enough meaning join a neighbour. Each piece's words
    // are counted once and a start still waiting for meaning carries its
    // count. A piece without words joins unjudged (it cannot make its
    // neighbour mean more), and so does any piece once the start it joins
    // has [`MAX_QUERY_WORDS`] words (`distinct` reads no more, so its
    // answer cannot change): a start is judged at most that many times,
    // however many lines or sentences follow it.
    let terms = |(s, e): (usize, usize)| {
        let words = text::words(&query[s..e]);
        words.iter().filter(|w| text::term(w).is_some()).count()
    };
    let mut needs: Vec<(usize, usize)> = Vec::new();
    let mut pending: Option<(usize, usize)> = None;
    for (s, e) in pieces {
        let own = terms((s, e));
        let (s, before) = pending.take().unwrap_or((s, 0));
        let n = before + own;
        if own > 0 && before < MAX_QUERY_WORDS && n >= MIN_WORDS && distinct(&query[s..e]) {
            needs.push((s, e));
        } else if let Some(last) = needs.last_mut() {
            last.1 = e;
        } else {
            pending = Some((s, n));
        }
    }
    if let Some((s, _)) = pending {
        needs.first_mut()?.0 = s;
    }
    Some(needs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The join as it was before pieces without words, and starts past
    /// what `distinct` reads, went unjudged: every piece judged with the
    /// start waiting for meaning.
    fn join_judging_all(
        query: &str,
        pieces: Vec<(usize, usize)>,
        distinct: &impl Fn(&str) -> bool,
    ) -> Option<Vec<(usize, usize)>> {
        let meaningful = |(s, e): (usize, usize)| {
            let words = text::words(&query[s..e]);
            words.iter().filter(|w| text::term(w).is_some()).count() >= MIN_WORDS
                && distinct(&query[s..e])
        };
        let mut needs: Vec<(usize, usize)> = Vec::new();
        let mut pending: Option<usize> = None;
        for (s, e) in pieces {
            let s = pending.take().unwrap_or(s);
            if meaningful((s, e)) {
                needs.push((s, e));
            } else if let Some(last) = needs.last_mut() {
                last.1 = e;
            } else {
                pending = Some(s);
            }
        }
        if let Some(s) = pending {
            needs.first_mut()?.0 = s;
        }
        Some(needs)
    }

    proptest! {
        // The needs are the ones judging every piece gave, for a `distinct`
        // that reads at most the first MAX_QUERY_WORDS words carrying
        // meaning, as the index's does.
        #[test]
        fn unjudged_pieces_change_no_need(
            vague in 0usize..100,
            words in proptest::collection::vec("(dog|cat|the|a|of|x1|\\.|\\. |\n|, and )", 0..120),
            clauses in proptest::bool::ANY,
        ) {
            // A run of vague sentences first, so a start waits past what `distinct` reads.
            let query = format!("{}{}", "cat. ".repeat(vague), words.join(" "));
            let distinct = |piece: &str| {
                let words = text::words(piece);
                let read: Vec<&String> =
                    words.iter().filter(|w| text::term(w).is_some()).take(MAX_QUERY_WORDS).collect();
                read.iter().filter(|w| w.as_str() == "dog").count() >= 2
            };
            let pieces = cut(&query, clauses);
            prop_assert_eq!(
                join(&query, pieces.clone(), &distinct),
                join_judging_all(&query, pieces, &distinct)
            );
        }

        // Any text, wide punctuation and CJK among it, is cut on character
        // boundaries into at most `max` pieces of itself.
        #[test]
        fn any_text_is_cut_into_pieces_of_itself(
            query in "[a-z 。！？；.!?,\n获取八字天気カ]{0,40}",
            max in 1usize..6,
        ) {
            let needs = split(&query, max, true);
            prop_assert!(!needs.is_empty() && needs.len() <= max);
            for need in needs {
                prop_assert!(query.contains(need));
            }
        }
    }

    #[test]
    fn sentences_and_starters_cut_needs() {
        assert_eq!(
            split(
                "Can you search for videos about 'documentary' on Vimeo? Additionally, fetch \
                 the related people in the cinema category, and finally give me a streaming \
                 link for a YouTube video.",
                4,
                false
            ),
            [
                "Can you search for videos about 'documentary' on Vimeo?",
                "Additionally, fetch the related people in the cinema category",
                "finally give me a streaming link for a YouTube video."
            ]
        );
        // One need: the whole query, untouched.
        for one in [
            "list pods in the cluster",
            "read file.txt and summarize it",
            "what's 3.5 plus 2? Thanks!",
        ] {
            assert_eq!(split(one, 4, false), [one], "{one:?}");
        }
        assert_eq!(split("a. b. c. d.", 4, false), ["a. b. c. d."]);
        assert_eq!(
            split(
                "Get the weather. Then book a table. Also send an email.",
                2,
                false
            ),
            ["Get the weather.", "Then book a table. Also send an email."]
        );
        assert_eq!(
            split(
                "查询北京到上海的火车票。然后把结果保存到文件！谢谢。",
                4,
                false
            ),
            ["查询北京到上海的火车票。", "然后把结果保存到文件！谢谢。"]
        );
        assert_eq!(
            split("Get the weather. Then book a table.", 1, false),
            ["Get the weather. Then book a table."]
        );
    }

    /// Found by the search fuzz target: a first piece whose words told no
    /// tools apart, then thousands of empty lines, re-read and re-judged
    /// the growing start once per line (35 s for a 30 KB query). A piece
    /// without words now joins unjudged: one judgement per piece with words.
    #[test]
    fn empty_lines_are_not_judged() {
        let query = format!("can you provide a solution{}", "\n".repeat(5_000));
        let judged = std::cell::Cell::new(0);
        let needs = split_by(&query, usize::MAX, false, |_| {
            judged.set(judged.get() + 1);
            false
        });
        assert_eq!(needs, [query.as_str()]);
        assert_eq!(judged.get(), 1);
        // Sentences with words, none telling tools apart: the start is
        // judged until it has as many words as `distinct` reads, no more.
        let query = "can you provide a solution. ".repeat(5_000);
        judged.set(0);
        let needs = split_by(&query, usize::MAX, false, |_| {
            judged.set(judged.get() + 1);
            false
        });
        assert_eq!(needs, [query.as_str()]);
        assert!(judged.get() <= MAX_QUERY_WORDS, "{}", judged.get());
    }

    #[test]
    fn clauses_cut_at_commas_and_and() {
        assert_eq!(
            split(
                "The analysis should include beat tracking, MFCC extraction, and chroma CQT calculation.",
                4,
                true
            ),
            [
                "The analysis should include beat tracking",
                "MFCC extraction",
                "chroma CQT calculation."
            ]
        );
        // Without clauses, one sentence is one need.
        let one = "The analysis should include beat tracking, MFCC extraction, and chroma CQT calculation.";
        assert_eq!(split(one, 4, false), [one]);
        // "and" inside a word, or "and" between single words, cuts nothing.
        assert_eq!(split("band android", 4, true), ["band android"]);
        assert_eq!(
            split("search and replace text", 4, true),
            ["search and replace text"]
        );
    }

    #[test]
    fn short_pieces_join_a_neighbour() {
        assert_eq!(
            split(
                "Hi! Convert the video to mp4. Thanks. Then upload it to the drive.",
                4,
                false
            ),
            [
                "Hi! Convert the video to mp4. Thanks.",
                "Then upload it to the drive."
            ]
        );
        // Non-ASCII text and punctuation anywhere never split a character.
        assert_eq!(
            split("日本語のテキスト。 ok", 4, false),
            ["日本語のテキスト。 ok"]
        );
        assert_eq!(split("", 4, false), [""]);
        assert_eq!(split(". ; ! ?", 4, false), [". ; ! ?"]);
    }
}
