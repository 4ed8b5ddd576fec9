//! How hits are ranked once their evidence is known: the words' score
//! (BM25F) mixed with the meaning's (the encoder's cosine) per need of the
//! request ([`super::needs`]), a named server's tools weighted up, and the
//! needs' rankings merged so every need gets its best tools near the top
//! (docs/search.md, "Ranking"). Everything is in 1/10,000ths, rounded at
//! each step, so a ranking is the same on every machine.
//!
//! It decides the order of hits only: which entries may be searched is the
//! caller's.

use super::BELOW_EXACT;

/// The weight of BM25F in the mix, `α · lexical + (1 − α) · cosine`, the
/// lexical part being [`super::Hit::lexical`]. Tuned on MetaTool's tune
/// split and Seal-Tools dev, reported on other sets (docs/search.md).
pub const ALPHA: f64 = 0.8;
/// The cosine an entry no query word matches needs to be a hit (tuned with
/// [`ALPHA`]).
pub const COSINE_FLOOR: f64 = 0.1;

/// Needs a request is cut into, at most ([`super::needs::split`]): chosen
/// on MetaTool's tune split and Seal-Tools dev (single- and multi-tool),
/// with γ 0.6; `named` 0.1 ties with 0 on the tune sets once common words
/// name no server (`Build::named_outside`, BFCL). docs/search.md,
/// "Requests with several needs".
pub const NEEDS: usize = 4;

/// The distinctness a piece of a request needs to be a need of its own
/// (`Index::distinctness`: its words' IDF at their best match, in units of
/// a word found in one entry): "Can you provide me with a solution?" joins
/// the sentence before it. Chosen with [`NEED_SHARE`] on MetaTool's tune
/// split, Seal-Tools dev and BFCL (docs/search.md, "Filler sentences").
pub const NEED_IDF: f64 = 2.0;
/// …and the share of the most distinct piece's distinctness it needs.
pub const NEED_SHARE: f64 = 0.4;
/// When a request is cut into needs, the scores of the tools of the
/// best-scored tool's server are multiplied by 1 + this: such a request
/// most often wants several tools of one service. Chosen on the tune sets
/// above and the tune half of StableToolBench's requests, reported on its
/// other half (docs/search.md, "The request's server").
pub const SAME_SERVER: f64 = 0.1;
/// Added to a tool's score, times the share of its own name's words the
/// need has (IDF-weighted: `Index::name_cover`), so a tool whose whole
/// name the request says outranks a sibling it only partly names
/// (docs/search.md, "A tool's name said whole").
pub const NAME_COVER: f64 = 0.03;
/// Added to a tool's score, divided by its place (1, 2, …) among the first
/// ten of the need's ranking by words alone ([`lexical_places`]): the
/// mix's score hides how far ahead of the rest BM25F puts a tool, and its
/// own ranking carries it back (docs/search.md, "BM25F's own ranking").
pub const LEX_RANK: f64 = 0.005;

/// The most tokens a search's encoding reads: the encoder's
/// [`MAX_QUERY_TOKENS`](super::encoder::MAX_QUERY_TOKENS), of the whole
/// request or of all its needs together ([`shares`]).
#[cfg(feature = "encoder")]
const QUERY_TOKENS: usize = super::encoder::MAX_QUERY_TOKENS;
/// Without the encoder nothing is read for meaning.
#[cfg(not(feature = "encoder"))]
const QUERY_TOKENS: usize = 0;

/// How a search ranks. [`Knobs::SHIPPED`] is what [`super::Index::search`]
/// uses; the others exist to measure and tune it
/// (`examples/search_rank.rs`).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knobs {
    /// [`ALPHA`].
    pub alpha: f64,
    /// [`COSINE_FLOOR`].
    pub floor: f64,
    /// Needs a request is cut into, at most (1: never cut).
    pub needs: usize,
    /// Whether commas and `and` cut needs too, not only sentences and
    /// words such as `then` ([`super::needs::split`]).
    pub clauses: bool,
    /// Each tool picked for a need multiplies that need's next score by
    /// this: 1.0 merges the needs' rankings by score alone, lower values
    /// take turns between them.
    pub gamma: f64,
    /// Whether the whole request ranks too, as one more need, when it is
    /// cut.
    pub whole: bool,
    /// Whether the whole request's vector, when it is cut, is its own
    /// encoding (`query_tokens` more tokens to encode) rather than the
    /// normalized sum of its needs' vectors.
    pub whole_encoded: bool,
    /// Whether the whole request's best tool comes first when it is cut
    /// (the needs then fill the places after it).
    pub whole_first: bool,
    /// Each need's scores, when a request is cut, are multiplied by this
    /// (the whole request's are not).
    pub need_weight: f64,
    /// Added to the score of a tool whose server a need names (all of its
    /// name's distinctive words; a share of them adds that share).
    pub named: f64,
    /// [`SAME_SERVER`].
    pub same_server: f64,
    /// [`NAME_COVER`].
    pub name_cover: f64,
    /// [`LEX_RANK`].
    pub lex_rank: f64,
    /// A piece of a request is a need of its own only when its words'
    /// distinctness (their IDF at their best match, in units of a word
    /// found once: `Index::distinctness`) reaches this; else it joins a
    /// neighbour. 0: any piece with enough words.
    pub need_idf: f64,
    /// …and this share of the most distinct piece's. 0: any.
    pub need_share: f64,
    /// Tokens the encoder reads of a request of one need, at most.
    pub query_tokens: usize,
    /// Tokens the encoder reads of all the needs of a request cut into
    /// several, at most, shared in proportion to their lengths
    /// ([`shares`]).
    pub need_tokens: usize,
}

impl Knobs {
    /// What [`super::Index::search`] ranks by.
    pub const SHIPPED: Knobs = Knobs {
        alpha: ALPHA,
        floor: COSINE_FLOOR,
        needs: NEEDS,
        clauses: false,
        gamma: 0.6,
        whole: true,
        whole_encoded: false,
        whole_first: false,
        need_weight: 1.0,
        named: 0.1,
        same_server: SAME_SERVER,
        name_cover: NAME_COVER,
        lex_rank: LEX_RANK,
        need_idf: NEED_IDF,
        need_share: NEED_SHARE,
        query_tokens: QUERY_TOKENS,
        need_tokens: QUERY_TOKENS,
    };
}

impl Default for Knobs {
    fn default() -> Self {
        Self::SHIPPED
    }
}

/// How a search gets a text's vector: `(text, most tokens read)`.
#[doc(hidden)]
pub type Embed<'a> = &'a mut dyn FnMut(&str, usize) -> Vec<f32>;

/// The library's [`Embed`]: the vendored encoder.
#[cfg(feature = "encoder")]
pub(super) fn encode(text: &str, max_tokens: usize) -> Vec<f32> {
    super::encoder::Encoder::get().embed_capped(text, max_tokens)
}

/// Without the encoder nothing is ever embedded.
#[cfg(not(feature = "encoder"))]
pub(super) fn encode(_: &str, _: usize) -> Vec<f32> {
    Vec::new()
}

/// Tokens a need is read up to when the needs' tokens pass the budget.
const MIN_NEED_TOKENS: usize = 8;

/// The most tokens the encoder reads of each need: all of each when their
/// tokens (`[CLS]` and `[SEP]` included) add up to `budget` or fewer, else
/// each its share of `budget` by its length, at least [`MIN_NEED_TOKENS`].
/// So a request's encoding costs about what one text of `budget` tokens
/// costs, however long it is or into how many needs it is cut.
pub(super) fn shares(needs: &[&str], budget: usize) -> Vec<usize> {
    let tokens: Vec<usize> = needs.iter().map(|n| token_count(n)).collect();
    let total: usize = tokens.iter().sum();
    if total <= budget {
        return tokens;
    }
    tokens
        .iter()
        .map(|&t| (budget * t / total.max(1)).max(MIN_NEED_TOKENS).min(t))
        .collect()
}

/// Tokens the encoder reads of `text` (at most its limit).
#[cfg(feature = "encoder")]
fn token_count(text: &str) -> usize {
    super::encoder::Encoder::get().tokenize(text).len()
}

/// Without the encoder nothing is read.
#[cfg(not(feature = "encoder"))]
fn token_count(_: &str) -> usize {
    0
}

/// One candidate of one need: entry, score, lexical score and cosine, in
/// 1/10,000ths.
pub(super) type Scored = (u32, u64, u64, Option<i64>);

/// The candidates of one need: each entry a query word matched (with its
/// `lexical` score), or, with `cosines`, whose cosine reaches the floor;
/// scored `α · lexical + (1 − α) · cosine` (the lexical score alone
/// without cosines), plus `boost(entry)`. The lexical part is not divided
/// by the best hit's: a query that matches a tool's words well keeps that
/// lead, one that matches no word well is ranked by meaning, and this
/// ranks best on the public sets (docs/search.md).
pub(super) fn scored(
    lexical: &[(u32, u64)],
    cosines: Option<&[f64]>,
    exact: Option<usize>,
    knobs: &Knobs,
    boost: impl Fn(u32) -> u64,
) -> Vec<Scored> {
    let Some(cosines) = cosines else {
        return lexical
            .iter()
            .map(|&(e, s)| (e, (s + boost(e)).min(BELOW_EXACT), s, None))
            .collect();
    };
    let mut lex = vec![0u64; cosines.len()];
    for &(e, s) in lexical {
        lex[e as usize] = s;
    }
    let floor = (knobs.floor * 10_000.0).round() as i64;
    let mut out = Vec::new();
    for (e, &c) in cosines.iter().enumerate() {
        if Some(e) == exact {
            continue;
        }
        let cosine = (c * 10_000.0).round() as i64;
        let l = lex[e];
        if l == 0 && cosine < floor {
            continue;
        }
        let score = knobs.alpha * l as f64 + (1.0 - knobs.alpha) * cosine.max(0) as f64;
        let score = score.round() as u64;
        if score > 0 {
            let score = (score + boost(e as u32)).min(BELOW_EXACT);
            out.push((e as u32, score, l, Some(cosine)));
        }
    }
    out
}

/// The key a ranking sorts by, ascending: higher `score` first (capped
/// at [`BELOW_EXACT`]), ties by `name_rank`.
fn order(score: u64, name_rank: u32) -> u64 {
    ((BELOW_EXACT - score.min(BELOW_EXACT)) << 32) | u64::from(name_rank)
}

/// How deep in a need's ranking by words alone a place earns
/// [`Knobs::lex_rank`].
const LEX_RANK_DEPTH: usize = 10;

/// The bonus of the first [`LEX_RANK_DEPTH`] of a need's ranking by words
/// alone (`lexical`; ties by `name_rank`; not the request's exact name):
/// `weight` in 1/10,000ths divided by the place (1, 2, …), by entry.
pub(super) fn lexical_places(
    lexical: &[(u32, u64)],
    exact: Option<usize>,
    weight: f64,
    name_rank: &[u32],
) -> Vec<(u32, u64)> {
    if weight <= 0.0 {
        return Vec::new();
    }
    let mut keyed: Vec<(u64, u32)> = lexical
        .iter()
        .filter(|&&(e, s)| s > 0 && Some(e as usize) != exact)
        .map(|&(e, s)| (order(s, name_rank[e as usize]), e))
        .collect();
    if keyed.len() > LEX_RANK_DEPTH {
        keyed.select_nth_unstable(LEX_RANK_DEPTH - 1);
        keyed.truncate(LEX_RANK_DEPTH);
    }
    keyed.sort_unstable();
    let mut places: Vec<(u32, u64)> = keyed
        .iter()
        .enumerate()
        .map(|(place, &(_, e))| (e, (weight * 10_000.0 / (place + 1) as f64).round() as u64))
        .collect();
    places.sort_unstable();
    places
}

/// The best `keep` candidates over the needs' `lists`, best first, each
/// with the score it was picked at. One list: by score, ties by
/// `name_rank`. Several: greedily, each step the candidate whose score in
/// some need, times `gamma` to the number of tools already picked for
/// that need, is highest; the scores picked never rise, and an entry is
/// picked once, with the parts of the need that picked it. With `first`,
/// the first pick is the first list's best, and no later pick scores above
/// it.
pub(super) fn merge(
    mut lists: Vec<Vec<Scored>>,
    keep: usize,
    gamma: f64,
    first: bool,
    name_rank: &[u32],
) -> Vec<Scored> {
    let key = |s: &Scored| order(s.1, name_rank[s.0 as usize]);
    for list in &mut lists {
        if list.len() > keep && keep > 0 {
            list.select_nth_unstable_by_key(keep - 1, key);
            list.truncate(keep);
        }
        list.sort_unstable_by_key(key);
        list.truncate(keep);
    }
    if lists.len() <= 1 {
        return lists.pop().unwrap_or_default();
    }
    let mut picked: Vec<Scored> = Vec::with_capacity(keep);
    let mut next = vec![0usize; lists.len()];
    let mut turns = vec![0i32; lists.len()];
    let mut ceiling = BELOW_EXACT;
    if first
        && keep > 0
        && let Some(&top) = lists[0].first()
    {
        picked.push(top);
        ceiling = top.1;
        next[0] = 1;
        turns[0] = 1;
    }
    while picked.len() < keep {
        let mut best: Option<(usize, Scored)> = None;
        for (n, list) in lists.iter().enumerate() {
            while next[n] < list.len() && picked.iter().any(|p| p.0 == list[next[n]].0) {
                next[n] += 1;
            }
            let Some(&candidate) = list.get(next[n]) else {
                continue;
            };
            let score = (candidate.1 as f64 * gamma.powi(turns[n])).round() as u64;
            let score = score.min(ceiling);
            let candidate = (candidate.0, score, candidate.2, candidate.3);
            if best.is_none_or(|(_, b)| key(&candidate) < key(&b)) {
                best = Some((n, candidate));
            }
        }
        let Some((n, candidate)) = best else { break };
        if candidate.1 == 0 {
            break;
        }
        next[n] += 1;
        turns[n] += 1;
        picked.push(candidate);
    }
    picked
}

/// The normalized sum of the needs' vectors: the whole request's meaning.
pub(super) fn mean(vectors: &[Option<Vec<f32>>]) -> Vec<f32> {
    let mut sum = vec![0f32; encoder_dim()];
    for v in vectors.iter().flatten() {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sum
}

/// The length of an encoder vector (0 without the encoder).
fn encoder_dim() -> usize {
    #[cfg(feature = "encoder")]
    return super::encoder::DIM;
    #[cfg(not(feature = "encoder"))]
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_is_ranked_by_score_then_name() {
        let rank = [2, 0, 1];
        let list = vec![(0, 50, 50, None), (1, 70, 70, None), (2, 50, 50, None)];
        let got: Vec<u32> = merge(vec![list], 5, 0.5, false, &rank)
            .iter()
            .map(|s| s.0)
            .collect();
        assert_eq!(got, [1, 2, 0]);
    }

    #[test]
    fn needs_take_turns_and_scores_never_rise() {
        let rank = [0, 1, 2, 3, 4];
        // Need A: entries 1, 2, 4, strong; need B: entry 3, weaker, and 1.
        let a = vec![(1, 90, 0, None), (2, 85, 0, None), (4, 80, 0, None)];
        let b = vec![(3, 60, 0, None), (1, 70, 0, None)];
        let merged = |gamma| -> Vec<(u32, u64)> {
            merge(vec![a.clone(), b.clone()], 4, gamma, false, &rank)
                .iter()
                .map(|s| (s.0, s.1))
                .collect()
        };
        // By score alone, A fills the top; 1 is picked once.
        assert_eq!(merged(1.0), [(1, 90), (2, 85), (4, 80), (3, 60)]);
        // Taking turns: A's second tool scores 85 · 0.6 = 51 after A's
        // first, below B's best.
        assert_eq!(merged(0.6), [(1, 90), (3, 60), (2, 51), (4, 29)]);
        for gamma in [1.0, 0.8, 0.6, 0.3] {
            let scores: Vec<u64> = merged(gamma).iter().map(|s| s.1).collect();
            assert!(
                scores.windows(2).all(|w| w[0] >= w[1]),
                "{gamma}: {scores:?}"
            );
        }
        assert_eq!(merge(vec![a.clone(), b.clone()], 0, 0.6, false, &rank), []);
        // The first list's best first: B's best comes first, capped at its
        // score... here B is the first list.
        let first: Vec<(u32, u64)> = merge(vec![b.clone(), a.clone()], 3, 0.6, true, &rank)
            .iter()
            .map(|s| (s.0, s.1))
            .collect();
        assert_eq!(first, [(1, 70), (2, 70), (4, 48)]);
    }

    #[test]
    fn the_first_ten_by_words_earn_their_place_ties_by_name() {
        // Twelve entries; 11 is the request's exact name; 3 and 4 tie.
        let rank: Vec<u32> = (0..12).rev().collect();
        let mut lexical: Vec<(u32, u64)> =
            (0..12).map(|e| (e, 1_000 + 10 * u64::from(e))).collect();
        lexical[3].1 = lexical[4].1;
        let places = lexical_places(&lexical, Some(11), 0.01, &rank);
        // 10 is first (100 / 1), the tie goes to 4 (name rank 7 < 8), 11
        // earns nothing, nor does 0, eleventh; 1 is tenth (100 / 10).
        let bonus = |e: u32| places.iter().find(|p| p.0 == e).map(|p| p.1);
        assert_eq!(places.len(), LEX_RANK_DEPTH);
        assert_eq!(bonus(10), Some(100));
        assert_eq!(bonus(9), Some(50));
        assert_eq!(bonus(11), None);
        assert!(bonus(4) > bonus(3), "{places:?}");
        assert_eq!((bonus(0), bonus(1)), (None, Some(10)));
        assert!(places.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(lexical_places(&lexical, None, 0.0, &rank), []);
    }

    /// A request of several needs is read whole up to the budget the
    /// shipped search gives it (`encoder::MAX_QUERY_TOKENS`, 128): six
    /// needs of about 85 tokens in all lose none (at 64 each was cut to
    /// its share), and a longer request is cut to the budget in shares.
    #[cfg(feature = "encoder")]
    #[test]
    fn a_long_request_is_read_whole_up_to_the_shipped_budget() {
        let sentence = "Find the quarterly revenue of the three largest cloud providers";
        let needs: Vec<String> = (0..6).map(|i| format!("{sentence} number {i}.")).collect();
        let needs: Vec<&str> = needs.iter().map(String::as_str).collect();
        let tokens: Vec<usize> = needs.iter().map(|n| token_count(n)).collect();
        let total: usize = tokens.iter().sum();
        assert!(
            (65..=Knobs::SHIPPED.need_tokens).contains(&total),
            "{total}"
        );
        assert_eq!(shares(&needs, Knobs::SHIPPED.need_tokens), tokens);
        let longer: Vec<&str> = needs.iter().chain(&needs).copied().collect();
        let cut = shares(&longer, Knobs::SHIPPED.need_tokens);
        assert!(
            cut.iter().sum::<usize>() <= Knobs::SHIPPED.need_tokens,
            "{cut:?}"
        );
        assert_eq!(Knobs::SHIPPED.query_tokens, Knobs::SHIPPED.need_tokens);
    }
}
