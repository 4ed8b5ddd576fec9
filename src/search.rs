//! The deferred-tool index: given tool (or group) definitions and a request
//! in the user's words, it decides which entries match best and how well,
//! as a score from 0 to 1. Lexical and offline: BM25F over the name's words,
//! the namespace, the description and the parameters, with stemming, a small
//! synonym table and typo tolerance (see `docs/search.md`).
//!
//! It must not decide what may be found or loaded (callers index only the
//! deferred tools), and it must not read models, the network, the clock or
//! the environment. The same entries and query always give the same hits.

mod bound;
mod deferred;
mod mix;
mod named;
mod needs;
mod rank;
/// The dense encoder (crate `muster-encoder`, feature `encoder`).
#[cfg(feature = "encoder")]
pub use muster_encoder as encoder;
mod stem;
mod text;
mod typo;
#[cfg(feature = "encoder")]
pub mod vectors;

pub use bound::{MAX_EXPANDED_LETTERS, MAX_QUERY_BYTES, MAX_QUERY_WORDS};
#[cfg(test)]
pub(crate) use deferred::built as deferred_indexes_built;
pub use deferred::{DeferredEntry, DeferredIndex};
pub use mix::{ALPHA, COSINE_FLOOR, NAME_COVER, NEEDS};
#[doc(hidden)]
pub use mix::{Embed, Knobs};
pub use text::one_line;

use crate::schema::Schema;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
#[cfg(feature = "encoder")]
use std::sync::Arc;
use typo::Neighbours;

/// One searchable entry: a deferred tool, or a group/server entry.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The muster name, `mcp.<server>.<tool>` or a group such as `mcp.gmail_read`.
    pub name: &'a str,
    pub description: &'a str,
    /// The tool's JSON Schema; its parameter names and descriptions are indexed.
    pub input_schema: Option<&'a Schema>,
}

/// One match: which entry and how well it matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into the entries given to [`Index::build`].
    pub entry: usize,
    /// What hits are ranked by, from 0 to 1, rounded to 4 decimals: 1.0 for
    /// an exact name; otherwise [`Hit::lexical`] alone, or mixed with
    /// [`Hit::cosine`] when the index has vectors (`docs/search.md`).
    pub score: f64,
    /// The words' evidence: the share of the best score the query's words
    /// could reach, below 1.0 (1.0 for an exact name, 0 when no word
    /// matched), rounded to 4 decimals.
    pub lexical: f64,
    /// The meaning's evidence: the cosine of the query's and the entry's
    /// vectors, rounded to 4 decimals; `None` without vectors or for an
    /// exact name.
    pub cosine: Option<f64>,
}

/// Where a word stands in an entry, and how much a match there counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    /// The words of the last name segment (`search_threads`).
    Name,
    /// The words of the earlier segments (`mcp`, `gmail_read`).
    Namespace,
    Description,
    /// Parameter names, top level and one nested level.
    Param,
    /// Parameter descriptions, same levels.
    ParamDescription,
}

const FIELDS: usize = 5;

/// One entry's terms: (term, field, count), and the length of each field.
type Bag = (Vec<(u32, Field, u32)>, [u32; FIELDS]);
/// One entry's terms as read, (term, field) repeats kept, and the length
/// of each field.
type Words = (Vec<(u32, Field)>, [u32; FIELDS]);

impl Field {
    const ALL: [Field; FIELDS] = [
        Field::Name,
        Field::Namespace,
        Field::Description,
        Field::Param,
        Field::ParamDescription,
    ];

    /// (weight, length normalization b) for BM25F.
    fn weight_and_b(self, build: &Build) -> (f64, f64) {
        match self {
            Field::Name => (3.0, 0.3),
            Field::Namespace => (build.namespace_weight, 0.3),
            Field::Description => (1.0, 0.75),
            Field::Param => (0.6, 0.5),
            Field::ParamDescription => (0.3, 0.75),
        }
    }
}

/// How an index is built. [`Build::SHIPPED`] is what [`Index::build`]
/// uses; the others exist to measure it (`examples/search_rank.rs`).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Build {
    /// Whether a name or namespace word written without breaks
    /// (`diceroller`) is also indexed as the words of the descriptions that
    /// spell it ([`text::run_on`]).
    pub run_ons: bool,
    /// The namespace field's BM25F weight (the server's name).
    pub namespace_weight: f64,
    /// A namespace word names its server ([`named`]) only when at most
    /// this share of the entries of other servers have it too.
    pub named_outside: f64,
}

impl Build {
    /// What [`Index::build`] builds.
    pub const SHIPPED: Build = Build {
        run_ons: false,
        namespace_weight: 1.5,
        named_outside: 0.0,
    };
}

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// Parameter words indexed per entry, at most; a huge schema is cut here.
const MAX_PARAM_WORDS: usize = 256;
/// How much a typo match counts, by edit distance (1, 2): well below a
/// real match, so a word matched as written always outranks it.
const TYPO_FACTOR: [f64; 2] = [0.5, 0.35];
/// How much a match on the stem alone counts (`labels` against `label`).
const STEM_FACTOR: f64 = 0.9;
/// How much a longer or shorter form counts (`relationship` against `relation`).
const PREFIX_FACTOR: f64 = 0.45;
/// Known stems a query word may be the start of, at most.
const MAX_PREFIXED: usize = 16;
/// How much each half of a split compound (`filesystem`) counts.
const COMPOUND_FACTOR: f64 = 0.9;
/// The largest rounded score a query that is not an exact name may get.
const BELOW_EXACT: u64 = 9_999;

/// A search index over owned copies of the entries' words. Cheap to share
/// (`Send + Sync`, immutable once built).
#[derive(Clone)]
pub struct Index {
    names: Vec<String>,
    /// Each entry's place in (name, index) order, the tie-break.
    name_rank: Vec<u32>,
    /// First entry of each name, for [`Index::exact`].
    by_name: HashMap<String, usize>,
    /// Stem, or [`SURFACE`] + word, → term id (lookups only; never iterated).
    terms: HashMap<String, u32>,
    /// Per term `t`, its postings are `posting_entry[posting_start[t]..
    /// posting_start[t + 1]]` (entries ascending), each with its BM25F
    /// saturation in 0..1 at the same place of `posting_saturation`: flat
    /// arrays, so a query walks contiguous memory.
    posting_start: Vec<u32>,
    posting_entry: Vec<u32>,
    posting_saturation: Vec<f64>,
    /// Per term: inverse document frequency.
    idf: Vec<f64>,
    /// The idf a term found in one entry would have, charged for query words
    /// that match nothing.
    idf_unmatched: f64,
    /// Stems (not surface words), sorted, for prefix matches.
    stems: Vec<(String, u32)>,
    /// Lowercase surface words seen in the entries, for typos.
    surface: Neighbours,
    /// Surface word → its stem.
    surface_stem: HashMap<String, String>,
    /// Stem → stems of its synonyms (only those in the index).
    synonyms: HashMap<String, Vec<String>>,
    /// Each entry's server and the words that name it.
    servers: named::Servers,
    /// Per entry `e`, the stems of its own name (the last segment) are
    /// `name_terms[name_start[e]..name_start[e + 1]]`, each once.
    name_start: Vec<u32>,
    name_terms: Vec<u32>,
    /// Each entry's unit vector, packed as int8 for scoring
    /// ([`encoder::packed`]), when built with [`Index::build_mixed`].
    #[cfg(feature = "encoder")]
    vectors: Option<Arc<encoder::packed::Packed>>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("entries", &self.names.len())
            .field("terms", &self.idf.len())
            .finish_non_exhaustive()
    }
}

/// The terms a text says, by id, each with how much ([`Index::said`]).
type Said = Vec<(u32, f64)>;

/// One query word, resolved against the vocabulary: the terms it may match,
/// each with the factor its match counts.
struct QueryTerm {
    count: f64,
    expansions: Vec<(u32, f64)>,
}

impl Index {
    /// Index `entries`; time and memory linear in their text (schemas bounded
    /// by [`MAX_PARAM_WORDS`]).
    pub fn build<'a>(entries: impl IntoIterator<Item = Entry<'a>>) -> Index {
        Index::build_with(entries, &Build::SHIPPED)
    }

    /// [`Index::build`] as `build` says (to measure it).
    #[doc(hidden)]
    pub fn build_with<'a>(entries: impl IntoIterator<Item = Entry<'a>>, build: &Build) -> Index {
        let mut names = Vec::new();
        let mut by_name = HashMap::new();
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut term_list: Vec<String> = Vec::new();
        let mut surface_stem: HashMap<String, String> = HashMap::new();
        let mut surface_words: Vec<String> = Vec::new();
        // Word → its [stem, surface] term ids, or `None` for a stop word.
        let mut word_ids: HashMap<String, Option<[u32; 2]>> = HashMap::new();
        // Per entry: (term, field) and per-field lengths.
        let mut entry_words: Vec<Words> = Vec::new();
        let mut total_len = [0f64; FIELDS];
        // Words of descriptions, and per entry its name words written
        // without breaks, for `build.run_ons`.
        let mut described: HashSet<String> = HashSet::new();
        let mut run_ons: Vec<Vec<(String, Field)>> = Vec::new();

        for entry in entries {
            let i = names.len();
            names.push(entry.name.to_owned());
            by_name.entry(entry.name.to_owned()).or_insert(i);
            let mut words: Vec<(u32, Field)> = Vec::new();
            let mut lens = [0u32; FIELDS];
            let mut joined = Vec::new();
            for (field, text) in field_texts(&entry) {
                for word in text::words(&text) {
                    if build.run_ons {
                        match field {
                            Field::Name | Field::Namespace => joined.push((word.clone(), field)),
                            Field::Description | Field::ParamDescription => {
                                described.insert(word.clone());
                            }
                            Field::Param => {}
                        }
                    }
                    // Each word counts as its stem and as itself.
                    let ids = match word_ids.get(&word) {
                        Some(&ids) => ids,
                        None => {
                            let ids = text::term(&word).map(|stem| {
                                surface_words.push(word.clone());
                                surface_stem.insert(word.clone(), stem.clone());
                                let surface = surface_key(&word);
                                [stem, surface].map(|key| intern(&mut terms, &mut term_list, key))
                            });
                            word_ids.insert(word, ids);
                            ids
                        }
                    };
                    let Some(ids) = ids else { continue };
                    lens[field as usize] += 1;
                    words.extend(ids.map(|id| (id, field)));
                }
            }
            entry_words.push((words, lens));
            run_ons.push(joined);
        }
        let known = |w: &str| described.contains(w) && !text::is_stop_word(w);
        let mut bags: Vec<Bag> = Vec::with_capacity(entry_words.len());
        for ((mut words, mut lens), joined) in entry_words.into_iter().zip(run_ons) {
            for (word, field) in joined {
                for piece in text::run_on(&word, known).into_iter().flatten() {
                    if let Some(Some(ids)) = word_ids.get(&piece) {
                        lens[field as usize] += 1;
                        words.extend(ids.map(|id| (id, field)));
                    }
                }
            }
            words.sort_unstable();
            let mut bag: Vec<(u32, Field, u32)> = Vec::new();
            for (id, field) in words {
                match bag.last_mut() {
                    Some((t, f, n)) if *t == id && *f == field => *n += 1,
                    _ => bag.push((id, field, 1)),
                }
            }
            bags.push((bag, lens));
        }
        for (_, lens) in &bags {
            for f in Field::ALL {
                total_len[f as usize] += f64::from(lens[f as usize]);
            }
        }

        // Each entry's own name's stems, for `Index::name_cover`.
        let mut name_start = Vec::with_capacity(bags.len() + 1);
        let mut name_terms = Vec::new();
        name_start.push(0);
        for (bag, _) in &bags {
            let stems = bag.iter().filter(|&&(id, field, _)| {
                field == Field::Name && !term_list[id as usize].starts_with(SURFACE)
            });
            name_terms.extend(stems.map(|&(id, _, _)| id));
            name_start.push(name_terms.len() as u32);
        }

        let n = names.len() as f64;
        let avg_len = total_len.map(|t| if n > 0.0 { t / n } else { 0.0 });
        let mut postings: Vec<Vec<(u32, f64)>> = vec![Vec::new(); term_list.len()];
        for (i, (bag, lens)) in bags.iter().enumerate() {
            // Sum each term's weighted, length-normalized frequency over fields.
            let mut pseudo: Vec<(u32, f64)> = Vec::new();
            for &(id, field, count) in bag {
                let (w, b) = field.weight_and_b(build);
                let avg = avg_len[field as usize];
                let norm = if avg > 0.0 {
                    1.0 - b + b * f64::from(lens[field as usize]) / avg
                } else {
                    1.0
                };
                let tf = w * f64::from(count) / norm;
                match pseudo.iter_mut().find(|(t, _)| *t == id) {
                    Some((_, sum)) => *sum += tf,
                    None => pseudo.push((id, tf)),
                }
            }
            for (id, tf) in pseudo {
                postings[id as usize].push((i as u32, tf / (K1 + tf)));
            }
        }
        let idf_of = |df: f64| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let idf = postings.iter().map(|p| idf_of(p.len() as f64)).collect();
        let mut posting_start = Vec::with_capacity(postings.len() + 1);
        let mut posting_entry = Vec::new();
        let mut posting_saturation = Vec::new();
        posting_start.push(0);
        for list in &postings {
            for &(entry, saturation) in list {
                posting_entry.push(entry);
                posting_saturation.push(saturation);
            }
            posting_start.push(posting_entry.len() as u32);
        }

        let mut synonyms = HashMap::new();
        for group in text::SYNONYMS {
            for word in *group {
                let stem = stem::stem(word);
                let others: Vec<String> = text::synonyms(&stem)
                    .into_iter()
                    .filter(|s| terms.contains_key(s))
                    .collect();
                if !others.is_empty() {
                    synonyms.insert(stem, others);
                }
            }
        }

        let mut stems: Vec<(String, u32)> = term_list
            .into_iter()
            .enumerate()
            .filter(|(_, t)| !t.starts_with(SURFACE))
            .map(|(id, t)| (t, id as u32))
            .collect();
        stems.sort_unstable();

        let mut by_rank: Vec<u32> = (0..names.len() as u32).collect();
        by_rank.sort_by(|&a, &b| names[a as usize].cmp(&names[b as usize]).then(a.cmp(&b)));
        let mut name_rank = vec![0u32; names.len()];
        for (rank, &entry) in by_rank.iter().enumerate() {
            name_rank[entry as usize] = rank as u32;
        }

        let mut servers = named::Servers::build(&names);
        let most = (n * build.named_outside).floor() as usize;
        servers.drop_common(most, |stem| match terms.get(stem) {
            Some(&id) => {
                let id = id as usize;
                &posting_entry[posting_start[id] as usize..posting_start[id + 1] as usize]
            }
            None => &[],
        });
        Index {
            servers,
            name_start,
            name_terms,
            name_rank,
            names,
            stems,
            by_name,
            terms,
            posting_start,
            posting_entry,
            posting_saturation,
            idf,
            idf_unmatched: idf_of(1.0),
            surface: Neighbours::build(surface_words),
            surface_stem,
            synonyms,
            #[cfg(feature = "encoder")]
            vectors: None,
        }
    }

    /// [`Index::build`], and each entry's vector from the dense encoder
    /// (its name's words and description), read from `cache` or encoded and
    /// added to it ([`vectors::VectorCache::vectors`]: only the missing
    /// texts, on up to two threads), so [`Index::search`] mixes BM25F with
    /// the cosine (`docs/search.md`). Save the cache afterwards to keep the
    /// new vectors for the next run.
    #[cfg(feature = "encoder")]
    pub fn build_mixed<'a>(
        entries: impl IntoIterator<Item = Entry<'a>>,
        cache: &mut vectors::VectorCache,
    ) -> Index {
        Index::build_mixed_with(entries, cache, &Build::SHIPPED)
    }

    /// [`Index::build_mixed`] as `build` says (to measure it).
    #[cfg(feature = "encoder")]
    #[doc(hidden)]
    pub fn build_mixed_with<'a>(
        entries: impl IntoIterator<Item = Entry<'a>>,
        cache: &mut vectors::VectorCache,
        build: &Build,
    ) -> Index {
        let entries: Vec<Entry<'a>> = entries.into_iter().collect();
        let texts: Vec<String> = entries.iter().map(dense_text).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = encoder::packed::Packed::new(&cache.vectors(&texts));
        let mut index = Index::build_with(entries, build);
        index.vectors = Some(Arc::new(vectors));
        index
    }

    /// How many entries were indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no entries were indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of entry `entry`, as given to [`Index::build`].
    pub fn name(&self, entry: usize) -> Option<&str> {
        self.names.get(entry).map(String::as_str)
    }

    /// Index of the entry whose name equals `name` exactly (the first, if
    /// several do). Provider names are read back by the caller, which knows
    /// the policy's spelling ([`crate::provider`]).
    pub fn exact(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Best matches first, at most `limit`; ties broken by entry name, then
    /// index. An exact name (see [`Index::exact`]) comes first with 1.0.
    /// Empty or stop-word-only query → empty. Scores are in 0.0..=1.0 and
    /// rounded to 4 decimals so JSON output is byte-stable.
    ///
    /// # Example
    /// ```
    /// use muster::search::{Entry, Index};
    /// let index = Index::build([
    ///     Entry { name: "mcp.mail.list_labels", description: "List all labels.", input_schema: None },
    ///     Entry { name: "mcp.mail.get_thread", description: "Get a conversation.", input_schema: None },
    /// ]);
    /// let hits = index.search("show me the whole email thred", 5);
    /// assert_eq!(hits[0].entry, 1);
    /// ```
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.search_with(query, limit, &Knobs::SHIPPED, &mut mix::encode)
    }

    /// Each entry's lexical score for `text` (1/10,000ths, `exact` left out)
    /// and the terms it says ([`Index::said`]), or `None` when no word of it
    /// can match (empty, or stop words only).
    fn lexical_of(&self, text: &str, exact: Option<usize>) -> Option<(Vec<(u32, u64)>, Said)> {
        let terms = self.query_terms(text);
        let best_possible: f64 = terms
            .iter()
            .map(|t| {
                let best = t
                    .expansions
                    .iter()
                    .map(|&(id, _)| self.idf[id as usize])
                    .fold(0.0, f64::max);
                t.count * if best > 0.0 { best } else { self.idf_unmatched }
            })
            .sum();
        if best_possible <= 0.0 {
            return None;
        }
        let query_weight: f64 = terms.iter().map(|t| t.count).sum();
        let scores = SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => {
                self.lexical(&terms, query_weight, best_possible, exact, &mut scratch)
            }
            // Only reachable if a search ran inside a search on this thread.
            Err(_) => self.lexical(
                &terms,
                query_weight,
                best_possible,
                exact,
                &mut Scratch::default(),
            ),
        });
        Some((scores, Index::said(terms)))
    }

    /// The query's first [`MAX_QUERY_WORDS`] words resolved against the
    /// vocabulary, repeats merged; only words up to [`MAX_EXPANDED_LETTERS`]
    /// are read as typos, compounds or other forms.
    fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut resolved: Vec<(String, QueryTerm)> = Vec::new();
        let mut push = |key: String, count: f64, expansions: Vec<(u32, f64)>| match resolved
            .iter_mut()
            .find(|(k, _)| *k == key)
        {
            Some((_, t)) => t.count += count,
            None => resolved.push((key, QueryTerm { count, expansions })),
        };
        let words = text::words(query).into_iter();
        let terms = words.filter_map(|w| text::term(&w).map(|stem| (w, stem)));
        for (word, stem) in terms.take(MAX_QUERY_WORDS) {
            let mut expansions = Vec::new();
            if let Some(&id) = self.terms.get(&surface_key(&word)) {
                expansions.push((id, 1.0));
            }
            if let Some(&id) = self.terms.get(&stem) {
                add_max(&mut expansions, id, STEM_FACTOR);
            }
            for synonym in self.synonyms.get(&stem).into_iter().flatten() {
                add_max(&mut expansions, self.terms[synonym], text::SYNONYM_FACTOR);
            }
            if expansions.is_empty() && bound::expandable(&word) {
                if let Some(halves) = self.compound(&word) {
                    for half in halves {
                        let id = self.terms[&half];
                        push(half, 1.0, vec![(id, COMPOUND_FACTOR)]);
                    }
                    continue;
                }
                for (near, distance) in self.surface.near(&word) {
                    let id = self.terms[&self.surface_stem[near]];
                    add_max(&mut expansions, id, TYPO_FACTOR[distance - 1]);
                }
                for id in self.prefixed(&stem) {
                    add_max(&mut expansions, id, PREFIX_FACTOR);
                }
            }
            push(stem, 1.0, expansions);
        }
        resolved.into_iter().map(|(_, t)| t).collect()
    }
}

/// Per-thread buffers a search reuses, so a query over many entries
/// allocates nothing in proportion to them: per entry, the summed score,
/// the current word's best expansion and the words matched, all zero
/// between searches; and the entries touched.
#[derive(Default)]
struct Scratch {
    acc: Vec<(f64, f64, f64)>,
    touched: Vec<u32>,
    term_touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Index {
    /// Each matched entry's lexical score, in 1/10,000ths, in the order the
    /// entries were first matched; `exact` left out.
    fn lexical(
        &self,
        terms: &[QueryTerm],
        query_weight: f64,
        best_possible: f64,
        exact: Option<usize>,
        scratch: &mut Scratch,
    ) -> Vec<(u32, u64)> {
        let Scratch {
            acc,
            touched,
            term_touched,
        } = scratch;
        if acc.len() < self.names.len() {
            acc.resize(self.names.len(), (0.0, 0.0, 0.0));
        }
        touched.clear();
        term_touched.clear();
        for term in terms {
            // A word counts once per entry: its best expansion there.
            for &(id, factor) in &term.expansions {
                let weight = self.idf[id as usize] * factor;
                let range = self.posting_start[id as usize] as usize
                    ..self.posting_start[id as usize + 1] as usize;
                let postings = self.posting_entry[range.clone()]
                    .iter()
                    .zip(&self.posting_saturation[range]);
                for (&entry, &saturation) in postings {
                    let best = &mut acc[entry as usize].1;
                    if *best == 0.0 {
                        term_touched.push(entry);
                    }
                    *best = best.max(weight * saturation);
                }
            }
            for &entry in term_touched.iter() {
                let (total, best, matched) = &mut acc[entry as usize];
                if *total == 0.0 {
                    touched.push(entry);
                }
                *total += term.count * *best;
                *matched += term.count;
                *best = 0.0;
            }
            term_touched.clear();
        }
        let mut lexical = Vec::with_capacity(touched.len());
        for &e in touched.iter() {
            let (total, _, matched) = std::mem::take(&mut acc[e as usize]);
            if Some(e as usize) == exact {
                continue;
            }
            // Lucene's coordination factor: the share of the query matched.
            let coord = matched / query_weight;
            let score = (coord * total / best_possible * 10_000.0).round() as u64;
            let score = score.min(BELOW_EXACT);
            if score > 0 {
                lexical.push((e, score));
            }
        }
        touched.clear();
        lexical
    }

    /// Stems a query word unknown to the index may be a longer or shorter
    /// form of: known stems of 5+ letters it starts with (`relationship` →
    /// `relat`), and, for a word of 4+ letters, up to [`MAX_PREFIXED`] known
    /// stems that start with it (`config` → `configur`).
    fn prefixed(&self, stem: &str) -> Vec<u32> {
        let mut ids: Vec<u32> = stem
            .char_indices()
            .skip(5)
            .filter_map(|(i, _)| self.terms.get(&stem[..i]).copied())
            .collect();
        if stem.chars().count() >= 4 {
            let start = self.stems.partition_point(|(t, _)| t.as_str() < stem);
            ids.extend(
                self.stems[start..]
                    .iter()
                    .take_while(|(t, _)| t.starts_with(stem))
                    .take(MAX_PREFIXED)
                    .map(|&(_, id)| id),
            );
        }
        ids
    }

    /// A query word unknown to the index read as two known words run
    /// together (`filesystem`, `listcalls`): the stems of both halves, the
    /// most even split first. Halves have at least 3 letters.
    fn compound(&self, word: &str) -> Option<[String; 2]> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() < 6 {
            return None;
        }
        let mut cuts: Vec<usize> = (3..=chars.len() - 3).collect();
        cuts.sort_by_key(|&c| (c.abs_diff(chars.len() - c), c));
        cuts.into_iter().find_map(|cut| {
            let left: String = chars[..cut].iter().collect();
            let right: String = chars[cut..].iter().collect();
            let left = text::term(&left).filter(|s| self.terms.contains_key(s))?;
            let right = text::term(&right).filter(|s| self.terms.contains_key(s))?;
            Some([left, right])
        })
    }
}

/// The text the encoder reads for an entry: its name's words (the last
/// segment), then its description. Public for the eval example, which
/// encodes entries as the index does.
#[cfg(feature = "encoder")]
#[doc(hidden)]
pub fn dense_text(entry: &Entry<'_>) -> String {
    let name = entry.name.rsplit_once('.').map_or(entry.name, |(_, n)| n);
    let words = text::words(name).join(" ");
    format!("{words}: {}", entry.description)
}

/// The term key of a word as written (a stem never starts with it).
const SURFACE: &str = "=";

fn surface_key(word: &str) -> String {
    format!("{SURFACE}{word}")
}

/// The id of term `key`, added to the vocabulary if new.
fn intern(terms: &mut HashMap<String, u32>, term_list: &mut Vec<String>, key: String) -> u32 {
    *terms.entry(key).or_insert_with_key(|key| {
        term_list.push(key.clone());
        term_list.len() as u32 - 1
    })
}

/// Add `id` at `factor`, or raise its factor if already there.
fn add_max(expansions: &mut Vec<(u32, f64)>, id: u32, factor: f64) {
    match expansions.iter_mut().find(|(t, _)| *t == id) {
        Some((_, f)) => *f = f.max(factor),
        None => expansions.push((id, factor)),
    }
}

/// The text of each field of `entry`. Parameters are read from
/// `properties` at the top level and one level down (an object's
/// `properties`, an array's `items.properties`), up to [`MAX_PARAM_WORDS`].
fn field_texts(entry: &Entry<'_>) -> Vec<(Field, String)> {
    let (namespace, name) = match entry.name.rsplit_once('.') {
        Some((namespace, name)) => (namespace, name),
        None => ("", entry.name),
    };
    let mut out = vec![
        (Field::Name, name.to_owned()),
        (Field::Namespace, namespace.to_owned()),
        (Field::Description, entry.description.to_owned()),
    ];
    let mut budget = MAX_PARAM_WORDS;
    let mut add = |field: Field, text: &str, out: &mut Vec<(Field, String)>| {
        if budget == 0 {
            return;
        }
        let words = text::words(text);
        let take = words.len().min(budget);
        budget -= take;
        out.push((field, words[..take].join(" ")));
    };
    fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
        schema.get("properties").and_then(Value::as_object)
    }
    // Parsed for this entry alone: an index over many deferred tools never
    // holds their trees at once.
    let tree = entry.input_schema.map(Schema::value);
    let Some(top) = tree.as_ref().and_then(properties) else {
        return out;
    };
    for (name, property) in top {
        add(Field::Param, name, &mut out);
        if let Some(d) = property.get("description").and_then(Value::as_str) {
            add(Field::ParamDescription, d, &mut out);
        }
        let nested = properties(property).or_else(|| property.get("items").and_then(properties));
        for (name, property) in nested.into_iter().flatten() {
            add(Field::Param, name, &mut out);
            if let Some(d) = property.get("description").and_then(Value::as_str) {
                add(Field::ParamDescription, d, &mut out);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
