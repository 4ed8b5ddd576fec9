//! Text into index terms: words (names split at `_ . - /`, camelCase humps
//! and digit runs), lowercased, stop words dropped, Porter-stemmed; and the
//! small synonym table. One rule for tool text and for queries, so both sides
//! meet. It must not weigh or rank anything.

use super::stem::stem;

/// The lowercased words of `text`, in order. A word breaks at anything not
/// alphanumeric, where a lowercase letter meets an uppercase one (`listCalls`),
/// before the last capital of an acronym (`HTTPServer` → `http`, `server`) and
/// between letters and digits (`base64` → `base`, `64`). Single letters are
/// dropped (the `s` of `call's`); single digits are kept. Scripts written
/// without spaces between words (Chinese, Japanese: [`unspaced`]) give the
/// overlapping pairs of each run of their characters (`获取八字` → `获取`,
/// `取八`, `八字`), a run of one character itself, so a word written inside a
/// longer run still meets the same word alone.
pub fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        let keep = word.chars().nth(1).is_some() || word.chars().all(|c| c.is_numeric());
        if !word.is_empty() && keep {
            out.push(word.to_lowercase());
        }
        word.clear();
    };
    let mut run_start = None;
    for (i, &c) in chars.iter().enumerate() {
        if unspaced(c) {
            flush(&mut word, &mut out);
            run_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = run_start.take() {
            pairs(&chars[start..i], &mut out);
        }
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next = chars.get(i + 1).copied();
            let hump = prev.is_lowercase() && c.is_uppercase();
            let acronym_end =
                prev.is_uppercase() && c.is_uppercase() && next.is_some_and(|n| n.is_lowercase());
            let digits = prev.is_alphanumeric() && prev.is_numeric() != c.is_numeric();
            if hump || acronym_end || digits {
                flush(&mut word, &mut out);
            }
        }
        word.push(c);
    }
    flush(&mut word, &mut out);
    if let Some(start) = run_start {
        pairs(&chars[start..], &mut out);
    }
    out
}

/// Whether `c` belongs to a script written without spaces between words:
/// CJK ideographs (with their extensions and compatibility forms), hiragana
/// and katakana (half-width forms included). Their text has no word
/// boundaries to cut at, so [`words`] reads it in pairs of characters, as
/// search engines' CJK analyzers do.
fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'       // hiragana, katakana
        | '\u{31F0}'..='\u{31FF}'     // katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}'     // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'     // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}'     // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}'     // half-width katakana
        | '\u{20000}'..='\u{3134F}')  // CJK extensions B to G
        && c != '\u{30FB}' // the katakana middle dot separates words
}

/// The overlapping pairs of `run` (one character alone when it is alone).
fn pairs(run: &[char], out: &mut Vec<String>) {
    if let [one] = run {
        out.push(one.to_string());
    }
    out.extend(run.windows(2).map(|w| w.iter().collect::<String>()));
}

/// Letters a run-together name word has at least to be split
/// ([`run_on`]), and each of its pieces.
const RUN_ON_LETTERS: (usize, usize) = (6, 3);

/// A lowercase name word written without breaks (`diceroller`,
/// `keywordexplorer`, `themeparkhipster`) read as the fewest `known` words
/// of at least 3 letters that spell it whole, the longest first piece among
/// equals; `None` when it is no such word, or is `known` itself.
pub fn run_on(word: &str, known: impl Fn(&str) -> bool) -> Option<Vec<String>> {
    let (least, piece) = RUN_ON_LETTERS;
    // Past `MAX_EXPANDED_LETTERS` a word is matched only as written: the
    // pieces tried grow with the square of its length.
    if word.len() < least
        || !super::bound::expandable(word)
        || !word.bytes().all(|b| b.is_ascii_lowercase())
        || known(word)
    {
        return None;
    }
    let n = word.len();
    // best[i]: the fewest pieces that spell word[i..], and the first's end.
    let mut best: Vec<Option<(usize, usize)>> = vec![None; n + 1];
    best[n] = Some((0, n));
    for i in (0..n).rev() {
        for end in (i + piece..=n).rev() {
            let Some((count, _)) = best[end] else {
                continue;
            };
            if known(&word[i..end]) && best[i].is_none_or(|(c, _)| count + 1 < c) {
                best[i] = Some((count + 1, end));
            }
        }
    }
    let (count, _) = best[0]?;
    if count < 2 {
        return None;
    }
    let mut pieces = Vec::with_capacity(count);
    let mut at = 0;
    while at < n {
        let (_, end) = best[at]?;
        pieces.push(word[at..end].to_owned());
        at = end;
    }
    Some(pieces)
}

/// Words too common in requests and descriptions to say which tool is meant.
/// Sorted, for `binary_search`. Kept small and general: words that name an
/// action or an object (`get`, `list`, `all`, `new`) are not here.
const STOP_WORDS: &[&str] = &[
    "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "if", "in", "into",
    "is", "it", "its", "let", "me", "my", "need", "of", "on", "or", "our", "please", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "this",
    "those", "to", "us", "using", "via", "want", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Whether `word` (lowercase) carries no meaning for search.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// The index term of a lowercase word, or `None` for a stop word.
pub fn term(word: &str) -> Option<String> {
    (!is_stop_word(word)).then(|| stem(word))
}

/// The index terms of `text`, in order, repeats kept.
#[cfg(test)]
pub fn terms(text: &str) -> Vec<String> {
    words(text).iter().filter_map(|w| term(w)).collect()
}

/// Groups of words that name the same thing in requests and in tool text.
/// General vocabulary only (abbreviations and common alternatives), never
/// tuned to one tool; a query word also matches the others of its group at
/// [`SYNONYM_FACTOR`].
pub const SYNONYMS: &[&[&str]] = &[
    &["mail", "email"],
    &["delete", "remove", "erase"],
    &["find", "search", "lookup", "locate"],
    &["file", "document"],
    &["folder", "directory", "dir"],
    &["create", "make"],
    &["get", "fetch", "retrieve"],
    &["show", "display", "view"],
    &["image", "picture", "photo"],
    &["phone", "dial"],
    &["label", "tag"],
    &["compress", "zip"],
    &["env", "environment"],
    &["info", "information"],
    &["config", "configuration"],
    &["sum", "total"],
    &["list", "enumerate"],
    &["repository", "repo"],
    &["convert", "transform"],
    &["price", "cost"],
    &["statistics", "stats"],
];

/// How much a synonym's match counts against the word itself.
pub const SYNONYM_FACTOR: f64 = 0.6;

/// The stems of the synonyms of the word whose stem is `stem`, without it.
pub fn synonyms(stem_of_word: &str) -> Vec<String> {
    let mut out = Vec::new();
    for group in SYNONYMS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        if stems.iter().any(|s| s == stem_of_word) {
            out.extend(stems.into_iter().filter(|s| s != stem_of_word));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A one-line description: the first sentence of the first line, cut to
/// about 120 characters at a word boundary (marked with `…`).
///
/// # Example
/// ```
/// assert_eq!(
///     muster::search::one_line("Get one call's details. Returns the status."),
///     "Get one call's details."
/// );
/// ```
pub fn one_line(description: &str) -> String {
    const MAX: usize = 120;
    const ABBREVIATIONS: [&str; 4] = ["e.g.", "i.e.", "etc.", "vs."];
    let line = description.trim().lines().next().unwrap_or("").trim();
    let mut end = line.len();
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at_space = chars.peek().is_none_or(|&(_, n)| n.is_whitespace());
        if matches!(c, '.' | '!' | '?') && at_space {
            let word_start = line[..i].rfind(char::is_whitespace).map_or(0, |s| s + 1);
            let word = line[word_start..=i].to_lowercase();
            if !ABBREVIATIONS.contains(&word.as_str()) {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    let sentence = &line[..end];
    if sentence.chars().count() <= MAX {
        return sentence.to_owned();
    }
    let cut = sentence
        .char_indices()
        .nth(MAX)
        .map_or(sentence.len(), |(i, _)| i);
    let head = &sentence[..cut];
    let head = head.rfind(char::is_whitespace).map_or(head, |s| &head[..s]);
    format!("{}…", head.trim_end_matches([',', ';', ':', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        let cases: [(&str, &[&str]); 9] = [
            ("get_call", &["get", "call"]),
            ("listCalls", &["list", "calls"]),
            (
                "mcp.gmail_read.search_threads",
                &["mcp", "gmail", "read", "search", "threads"],
            ),
            ("read-text-file", &["read", "text", "file"]),
            ("HTTPServer", &["http", "server"]),
            ("base64", &["base", "64"]),
            ("get2fa_code", &["get", "2", "fa", "code"]),
            ("the call's ID", &["the", "call", "id"]),
            ("", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(words(text), want, "{text}");
        }
    }

    #[test]
    fn unspaced_scripts_are_read_in_pairs() {
        let cases: [(&str, &[&str]); 6] = [
            ("获取八字信息", &["获取", "取八", "八字", "字信", "信息"]),
            ("八字", &["八字"]),
            ("查询12306车票", &["查询", "12306", "车票"]),
            ("get_天气 forecast", &["get", "天气", "forecast"]),
            ("天", &["天"]),
            (
                "カレンダー・予定",
                &["カレ", "レン", "ンダ", "ダー", "予定"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(words(text), want, "{text}");
        }
        // Korean is written with spaces: its words stay whole.
        assert_eq!(words("날씨 예보"), ["날씨", "예보"]);
    }

    #[test]
    fn stop_words_are_sorted_and_dropped() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            terms("Show me the listing of my emails"),
            ["show", "list", "email"]
        );
        assert!(terms("what is it").is_empty());
    }

    #[test]
    fn run_together_words_split_into_known_words() {
        let known = |w: &str| {
            [
                "dice", "roller", "keyword", "explorer", "theme", "park", "hip", "hipster",
                "rolle", "time", "port",
            ]
            .contains(&w)
        };
        let split = |w: &str| run_on(w, known);
        assert_eq!(split("diceroller").unwrap(), ["dice", "roller"]);
        assert_eq!(split("keywordexplorer").unwrap(), ["keyword", "explorer"]);
        // The fewest pieces: `hipster`, not `hip` + `ster`.
        assert_eq!(
            split("themeparkhipster").unwrap(),
            ["theme", "park", "hipster"]
        );
        assert_eq!(split("timeport").unwrap(), ["time", "port"]);
        // A known word, one piece, a piece not known, short or mixed words:
        // no split.
        for word in [
            "explorer",
            "dicerollerx",
            "dicex",
            "Diceroller",
            "dice_roller",
            "diceroller2",
        ] {
            assert_eq!(split(word), None, "{word}");
        }
    }

    #[test]
    fn synonyms_go_both_ways_by_stem() {
        assert_eq!(synonyms("email"), ["mail"]);
        assert_eq!(synonyms(&stem("folders")), ["dir", "directori"]);
        assert!(synonyms("thread").is_empty());
    }
}
