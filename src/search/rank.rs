//! One search, end to end: the request cut into its needs
//! ([`super::needs`]), each need's candidates scored by its words and its
//! meaning ([`super::mix::scored`], a server it names weighted up), the
//! best tool's server weighted up when there are several needs, and the
//! needs' rankings merged ([`super::mix::merge`]). It orders hits; which
//! entries are searched, and what their words score, are the index's.

#[cfg(feature = "encoder")]
use super::encoder;
use super::{Embed, Hit, Index, Knobs, mix, needs};

impl Index {
    /// How well the words of `text` tell entries apart: the sum of each
    /// word's IDF at its best match in the index (0 for a word nothing
    /// matches), in units of the IDF of a word found in one entry. "Can
    /// you provide me with a solution?" scores little where many tools
    /// provide things; "convert the video to mp4" scores its rare words.
    pub(super) fn distinctness(&self, text: &str) -> f64 {
        if self.idf_unmatched <= 0.0 {
            return 0.0;
        }
        let sum: f64 = self
            .query_terms(text)
            .iter()
            .map(|t| {
                let idf = t
                    .expansions
                    .iter()
                    .map(|&(id, f)| self.idf[id as usize] * f);
                t.count * idf.fold(0.0, f64::max)
            })
            .sum();
        sum / self.idf_unmatched
    }

    /// [`Index::search`] ranked by `knobs`, each text's vector from `embed`
    /// (to measure and tune the ranking: `examples/search_rank.rs`).
    #[doc(hidden)]
    pub fn search_with(
        &self,
        query: &str,
        limit: usize,
        knobs: &Knobs,
        embed: Embed<'_>,
    ) -> Vec<Hit> {
        if limit == 0 {
            return Vec::new();
        }
        let exact = self.exact(query.trim());
        let mut hits: Vec<Hit> = exact
            .map(|entry| Hit {
                entry,
                score: 1.0,
                lexical: 1.0,
                cosine: None,
            })
            .into_iter()
            .collect();
        let query = super::bound::readable(query);
        let Some((lexical, said)) = self.lexical_of(query, exact) else {
            return hits;
        };
        // The most distinct piece, for a piece's share of it.
        let most = match knobs.need_share > 0.0 {
            true => needs::split_by(query, usize::MAX, knobs.clauses, |_| true)
                .iter()
                .map(|piece| self.distinctness(piece))
                .fold(0.0, f64::max),
            false => 0.0,
        };
        let needs = needs::split_by(query, knobs.needs, knobs.clauses, |piece| {
            let d = self.distinctness(piece);
            d >= knobs.need_idf && d >= knobs.need_share * most
        });
        let mut lists = Vec::with_capacity(needs.len() + 1);
        if let [_] = needs[..] {
            let vector = self.has_vectors().then(|| embed(query, knobs.query_tokens));
            lists.push(self.scored(query, &lexical, &said, vector, exact, knobs));
        } else {
            let caps = match self.has_vectors() {
                true => mix::shares(&needs, knobs.need_tokens),
                false => vec![0; needs.len()],
            };
            let vectors: Vec<Option<Vec<f32>>> = needs
                .iter()
                .zip(caps)
                .map(|(n, cap)| self.has_vectors().then(|| embed(n, cap)))
                .collect();
            if knobs.whole {
                let whole = self.has_vectors().then(|| match knobs.whole_encoded {
                    true => embed(query, knobs.query_tokens),
                    false => mix::mean(&vectors),
                });
                lists.push(self.scored(query, &lexical, &said, whole, exact, knobs));
            }
            for (need, vector) in needs.iter().zip(vectors) {
                let (lexical, said) = self.lexical_of(need, exact).unwrap_or_default();
                let mut list = self.scored(need, &lexical, &said, vector, exact, knobs);
                for s in &mut list {
                    s.1 = (s.1 as f64 * knobs.need_weight).round() as u64;
                }
                lists.push(list);
            }
        }
        if lists.len() > 1 && knobs.same_server > 0.0 {
            self.weigh_best_server(&mut lists, knobs.same_server);
        }
        let keep = limit - hits.len();
        let first = knobs.whole && knobs.whole_first;
        let merged = mix::merge(lists, keep, knobs.gamma, first, &self.name_rank);
        hits.extend(
            merged
                .into_iter()
                .map(|(entry, score, lexical, cosine)| Hit {
                    entry: entry as usize,
                    score: score as f64 / 10_000.0,
                    lexical: lexical as f64 / 10_000.0,
                    cosine: cosine.map(|c| c as f64 / 10_000.0),
                }),
        );
        hits
    }

    /// A request cut into needs most often wants several tools of one
    /// service (StableToolBench's requests: 2.35 tools each, mostly of one
    /// RapidAPI service): the scores, in every need's list, of the tools
    /// of the best-scored tool's server (ties to the first name, as the
    /// merge breaks them) are multiplied by `1 + weight`.
    fn weigh_best_server(&self, lists: &mut [Vec<mix::Scored>], weight: f64) {
        let best = lists
            .iter()
            .flatten()
            .max_by_key(|s| (s.1, std::cmp::Reverse(self.name_rank[s.0 as usize])))
            .map(|s| self.servers.of(s.0));
        let Some(server) = best else { return };
        for s in lists.iter_mut().flatten() {
            if self.servers.of(s.0) == server {
                s.1 = ((s.1 as f64 * (1.0 + weight)).round() as u64).min(super::BELOW_EXACT);
            }
        }
    }

    /// The terms a text's words (`terms`, [`Index::query_terms`]) match, by
    /// id, each with how much: 1 for the word or its stem, less for a
    /// synonym, typo or longer form (its factor over the stem's).
    pub(super) fn said(terms: Vec<super::QueryTerm>) -> super::Said {
        let mut said: Vec<(u32, f64)> = Vec::new();
        for term in terms {
            for (id, factor) in term.expansions {
                said.push((id, (factor / super::STEM_FACTOR).min(1.0)));
            }
        }
        said.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        said.dedup_by_key(|t| t.0);
        said
    }

    /// The share of entry `e`'s own name that `said` ([`Index::said`])
    /// says: each of the name's stems counts its IDF, times how much it is
    /// said. `search_icons` is wholly said by "search for icons", in part
    /// by "list the icons"; a word most names have (`get`) counts little.
    pub(super) fn name_cover(&self, e: u32, said: &[(u32, f64)]) -> f64 {
        let e = e as usize;
        let terms = &self.name_terms[self.name_start[e] as usize..self.name_start[e + 1] as usize];
        let (mut got, mut all) = (0.0, 0.0);
        for &t in terms {
            let idf = self.idf[t as usize];
            all += idf;
            if let Ok(i) = said.binary_search_by_key(&t, |s| s.0) {
                got += idf * said[i].1;
            }
        }
        if all > 0.0 { got / all } else { 0.0 }
    }

    /// Whether entries have vectors.
    fn has_vectors(&self) -> bool {
        #[cfg(feature = "encoder")]
        return self.vectors.is_some();
        #[cfg(not(feature = "encoder"))]
        false
    }

    /// The candidates of one need, `text` ([`mix::scored`]), a server it
    /// names weighted up by `knobs.named`.
    #[cfg_attr(not(feature = "encoder"), allow(unused_variables))]
    fn scored(
        &self,
        text: &str,
        lexical: &[(u32, u64)],
        said: &[(u32, f64)],
        vector: Option<Vec<f32>>,
        exact: Option<usize>,
        knobs: &Knobs,
    ) -> Vec<mix::Scored> {
        let places = mix::lexical_places(lexical, exact, knobs.lex_rank, &self.name_rank);
        let named = self.servers.named(text);
        let boost = |e: u32| {
            let server = self.servers.of(e);
            let named = named
                .iter()
                .find(|(s, _)| *s == server)
                .map_or(0, |(_, share)| {
                    (knobs.named * share * 10_000.0).round() as u64
                });
            let cover = match knobs.name_cover > 0.0 {
                true => (knobs.name_cover * self.name_cover(e, said) * 10_000.0).round() as u64,
                false => 0,
            };
            let place = places
                .binary_search_by_key(&e, |p| p.0)
                .map_or(0, |i| places[i].1);
            named + cover + place
        };
        #[cfg(feature = "encoder")]
        let cosines = match (&self.vectors, vector) {
            (Some(packed), Some(v)) => {
                let mut out = Vec::new();
                packed.cosines(&encoder::packed::Query::new(&v), &mut out);
                Some(out)
            }
            _ => None,
        };
        #[cfg(not(feature = "encoder"))]
        let cosines: Option<Vec<f64>> = None;
        mix::scored(lexical, cosines.as_deref(), exact, knobs, boost)
    }
}
