//! The index over one plan's deferred tools: what the control tool can
//! find. Tools of a kind that loads together are one entry named after the
//! kind, found by its own words and by its members' names and descriptions.
//! Cut tools are never entries; offered tools are entries only of the
//! separate index [`DeferredIndex::offered`], one tool each, so the control
//! tool can tell an ask the chat's offer already serves (issue 35).

use super::{Entry, Hit, Index, one_line};
use crate::catalog::Catalog;
use crate::contract::EntryKind;
use crate::plan::Plan;
use std::collections::BTreeMap;

/// One entry: a deferred tool, or a kind whose deferred tools load
/// together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredEntry {
    /// The tool's name, or the kind's.
    pub name: String,
    /// The tool's description, or the kind's.
    pub description: String,
    /// A tool or a kind.
    pub kind: EntryKind,
    /// Candidate indices it loads, in rank order.
    pub tools: Vec<usize>,
}

/// The searchable deferred tools of one plan.
#[derive(Debug)]
pub struct DeferredIndex {
    /// Entries, in the rank order of their first tool.
    pub entries: Vec<DeferredEntry>,
    index: Index,
}

impl DeferredIndex {
    /// Indexes `plan`'s deferred tools.
    pub fn new(plan: &Plan<'_>) -> Self {
        Self::of(plan.catalog, &plan.deferred)
    }

    /// Indexes `deferred` (candidate indices of `catalog`, in rank order).
    pub fn of(catalog: &Catalog, deferred: &[usize]) -> Self {
        Self::shared(catalog, deferred, true)
    }

    /// Indexes `offered` (candidate indices of `catalog`: the tools a chat
    /// is offered, the control tool left out) one entry per tool, whatever
    /// their kind: an offered tool is never loaded with its kind.
    pub fn offered(catalog: &Catalog, offered: &[usize]) -> Self {
        Self::shared(catalog, offered, false)
    }

    fn shared(catalog: &Catalog, tools: &[usize], together: bool) -> Self {
        // With the encoder, words and meaning (docs/search.md), through the
        // process's one vector cache.
        #[cfg(feature = "encoder")]
        {
            let mut cache = super::vectors::shared()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Self::build(catalog, tools, together, &mut cache)
        }
        #[cfg(not(feature = "encoder"))]
        Self::build(catalog, tools, together)
    }

    /// [`DeferredIndex::of`] through `cache`, which it reads, fills and
    /// saves (a cache that cannot be written costs the next run time, not
    /// this one its index).
    #[cfg(feature = "encoder")]
    pub fn of_cached(
        catalog: &Catalog,
        deferred: &[usize],
        cache: &mut super::vectors::VectorCache,
    ) -> Self {
        Self::build(catalog, deferred, true, cache)
    }

    /// `together`: a kind that loads together is one entry.
    fn build(
        catalog: &Catalog,
        deferred: &[usize],
        together: bool,
        #[cfg(feature = "encoder")] cache: &mut super::vectors::VectorCache,
    ) -> Self {
        #[cfg(test)]
        BUILT.with(|n| n.set(n.get() + 1));
        let mut entries: Vec<DeferredEntry> = Vec::new();
        let mut kinds: BTreeMap<usize, usize> = BTreeMap::new();
        for &i in deferred {
            let c = &catalog.candidates[i];
            match c.kind.filter(|&k| together && catalog.kinds[k].together) {
                Some(k) => match kinds.get(&k) {
                    Some(&e) => entries[e].tools.push(i),
                    None => {
                        kinds.insert(k, entries.len());
                        let kind = &catalog.kinds[k];
                        entries.push(DeferredEntry {
                            name: kind.name.clone(),
                            description: kind.description.clone().unwrap_or_default(),
                            kind: EntryKind::Kind,
                            tools: vec![i],
                        });
                    }
                },
                None => entries.push(DeferredEntry {
                    name: c.name.clone(),
                    description: c.description.clone(),
                    kind: EntryKind::Tool,
                    tools: vec![i],
                }),
            }
        }
        let texts: Vec<String> = entries
            .iter()
            .map(|e| match e.kind {
                EntryKind::Tool => titled(&catalog.candidates[e.tools[0]], &e.description),
                EntryKind::Kind => {
                    let mut text = e.description.clone();
                    for &i in &e.tools {
                        let c = &catalog.candidates[i];
                        text.push('\n');
                        text.push_str(&c.name);
                        text.push_str(": ");
                        text.push_str(&one_line(&c.description));
                    }
                    text
                }
            })
            .collect();
        let indexed = entries.iter().zip(&texts).map(|(e, text)| Entry {
            name: &e.name,
            description: text,
            input_schema: match e.kind {
                EntryKind::Tool => Some(&catalog.candidates[e.tools[0]].input_schema),
                EntryKind::Kind => None,
            },
        });
        // With the encoder, words and meaning (docs/search.md); the control
        // tool's floors are set for these scores (`session::load`).
        #[cfg(feature = "encoder")]
        let index = {
            let index = Index::build_mixed(indexed, cache);
            // A cache that cannot be written costs the next run time, not
            // this one its answer.
            let _ = cache.save();
            index
        };
        #[cfg(not(feature = "encoder"))]
        let index = Index::build(indexed);
        DeferredIndex { entries, index }
    }

    /// Encodes into the process's vector cache ([`super::vectors::shared`],
    /// saved to its file when [`super::vectors::use_file`] backed it) what
    /// a first search over `catalog` reads: every candidate it does not
    /// exclude but the control tool, indexed as [`DeferredIndex::of`]
    /// indexes deferred tools. Returns how many texts it encoded (0 when
    /// all were cached). A kind that loads together is one entry over the
    /// members a session defers, so its vector is reused only when the
    /// session defers them all (docs/search.md, "Warm from the first
    /// query").
    #[cfg(feature = "encoder")]
    pub fn warm(catalog: &Catalog) -> usize {
        let encoded = || {
            super::vectors::shared()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .encoded()
        };
        let before = encoded();
        let every: Vec<usize> = catalog
            .candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.exclusion.is_none() && !matches!(c.source, crate::catalog::Source::Control)
            })
            .map(|(i, _)| i)
            .collect();
        Self::of(catalog, &every);
        encoded().saturating_sub(before)
    }

    /// The best entries for `query`, at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.index.search(query, limit)
    }
}

/// A tool's description with the titles its server listed before it (the
/// tool's `title` and `annotations.title`, when they say more than the
/// name), so they are searched as description words.
fn titled(c: &crate::catalog::Candidate, description: &str) -> String {
    let Some(hints) = c.hints.as_deref() else {
        return description.to_owned();
    };
    let annotated = hints.annotations.as_ref().and_then(|a| a.get("title"));
    let mut titles: Vec<&str> = [hints.title.as_ref(), annotated]
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    titles.dedup();
    if titles.is_empty() {
        return description.to_owned();
    }
    let mut text = titles.join(". ");
    text.push_str(". ");
    text.push_str(description);
    text
}

#[cfg(test)]
thread_local! {
    static BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many deferred indexes this thread has built (tests only).
#[cfg(test)]
pub(crate) fn built() -> usize {
    BUILT.with(std::cell::Cell::get)
}
