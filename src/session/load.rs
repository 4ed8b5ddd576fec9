//! Loading deferred tools into a live session: what the control tool does
//! with a query or exact names, within the policy's bounds. A query in
//! words is matched against every tool the chat can reach, deferred or
//! offered: it loads one clear winner, or answers near-ties as a choice,
//! or says the winner is already there (offered or loaded) unless a tool
//! not yet there comes close, or nothing below the relevance floor. Loads
//! append; one that would not fit replaces the earliest loads before it,
//! and a refused load changes nothing.

use super::{Live, MAX_RESULTS, Spelling, deferred_parts, short};
use crate::contract::{
    CapMeasure, LoadAnswer, LoadNote, LoadOption, LoadStatus, LoadedTool, NameSpelling,
    SESSION_FORMAT_VERSION, Status,
};
use crate::plan::Plan;
use crate::search::{DeferredEntry, DeferredIndex};

/// The least lexical score ([`crate::search::Hit::lexical`]: the share of
/// the best score the query's words could reach) that makes a best match
/// relevant: below it, and without meaning to back it, the ask matched
/// nothing well (issue 22: "bake a cake" loaded two Gmail tools).
pub const RELEVANCE_FLOOR: f64 = 0.15;
/// The least cosine ([`crate::search::Hit::cosine`], with the encoder) that
/// makes a best match relevant whatever its words: unrelated asks sit
/// below it over real servers' tools and public sets (docs/search.md).
#[cfg(feature = "encoder")]
pub const MEANING_FLOOR: f64 = 0.3;
/// The least cosine that lets a best match without a near-tie load alone
/// when its words are below [`RELEVANCE_FLOOR`]: between the two floors the
/// meaning is related but not sure, so the best few are offered as a
/// choice. Chosen on the public sets' load outcomes (docs/search.md).
#[cfg(feature = "encoder")]
pub const CLEAR_MEANING: f64 = 0.45;
/// Matches scoring at least this share of the best are near-ties: the
/// query is answered with them as a choice, and none is loaded.
pub const NEAR_TIE: f64 = 0.9;
/// When a query's clear winner is already offered or loaded, tools not
/// yet there that score at least this share of it (and are relevant on
/// their own) are offered beside it as a choice: the winner alone may not
/// serve the ask ("stage files for commit" with `git_diff_staged` loaded:
/// `git_add` scores 0.73 of it). Wider than [`NEAR_TIE`], since a choice
/// costs the model one more ask and a false "already there" costs it the
/// tool; chosen on the labelled asks of `tests/load_asks.rs`.
pub const RIVAL: f64 = 0.7;
/// Most kinds a query that found nothing is answered with: every group and
/// server the chat reaches, up to this bound on a hostile policy's size;
/// the rest are counted.
pub const MAX_KINDS: usize = 256;

/// Exact names one load looks up (`name`, or a query of names and commas):
/// more than a roster holds, and what bounds the notes an answer carries
/// (one per name) to a size that does not grow with what a caller sends.
pub const MAX_LOAD_NAMES: usize = 64;

/// What a query in words does, decided from its hits alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Nothing matches well: below [`RELEVANCE_FLOOR`].
    Nothing,
    /// One clear winner (an exact name, or no near-tie).
    One(usize),
    /// Near-ties, best first: the model picks.
    Choose(Vec<usize>),
}

/// The decision for `hits` (best first, as [`crate::search::Index::search`]
/// gives them): at most `choices` near-ties are offered.
pub(crate) fn pick(hits: &[crate::search::Hit], choices: usize) -> Pick {
    // An exact name is a clear winner whatever follows it.
    if let Some(first) = hits.first().filter(|h| h.score >= 1.0) {
        return Pick::One(first.entry);
    }
    let hits = backed(hits);
    let Some(first) = hits.first() else {
        return Pick::Nothing;
    };
    let best = first.score;
    let ties: Vec<usize> = hits
        .iter()
        .filter(|h| h.score >= best * NEAR_TIE)
        .take(choices.max(2))
        .map(|h| h.entry)
        .collect();
    match ties[..] {
        [one] if clear(first) => Pick::One(one),
        // A winner by a related but unsure meaning: the best few are asked.
        [_] => Pick::Choose(hits.iter().take(choices.max(2)).map(|h| h.entry).collect()),
        _ => Pick::Choose(ties),
    }
}

/// What a query in words does, decided from its hits over everything the
/// chat can reach and from which entries are there already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing matches well.
    Nothing,
    /// One clear winner, not yet there: load it.
    Load(usize),
    /// One clear winner, already offered or loaded, and nothing close that
    /// is not.
    Ready(usize),
    /// The model picks, best first: near-ties, or a winner already there
    /// with the close matches that are not.
    Choose(Vec<usize>),
}

/// The decision for `hits` (best first) where `ready` tells the entries
/// already offered or loaded; at most `choices` (and never fewer than 2)
/// are offered as a choice. An exact name is never second-guessed.
pub(crate) fn decide(
    hits: &[crate::search::Hit],
    choices: usize,
    ready: impl Fn(usize) -> bool,
) -> Decision {
    match pick(hits, choices) {
        Pick::Nothing => Decision::Nothing,
        Pick::Choose(ties) => Decision::Choose(ties),
        Pick::One(e) if !ready(e) => Decision::Load(e),
        Pick::One(e) => {
            let hits = backed(hits);
            let best = &hits[0];
            if best.score >= 1.0 {
                return Decision::Ready(e);
            }
            let rivals: Vec<usize> = hits
                .iter()
                .skip(1)
                .filter(|h| h.score >= best.score * RIVAL && !ready(h.entry) && relevant(h))
                .take(choices.max(2) - 1)
                .map(|h| h.entry)
                .collect();
            if rivals.is_empty() {
                Decision::Ready(e)
            } else {
                Decision::Choose(std::iter::once(e).chain(rivals).collect())
            }
        }
    }
}

/// What a load in words searches: the deferred entries, and the offered
/// tools in an index of their own. A hit's entry counts the deferred
/// entries first, then the offered ones.
pub(crate) struct Reach<'a> {
    /// The deferred tools (kinds that load together as one entry).
    pub deferred: &'a DeferredIndex,
    /// The tools the chat is offered, the control tool left out.
    pub offered: &'a DeferredIndex,
}

impl Reach<'_> {
    /// The best entries of both for `query`, at most `limit`, by score and
    /// then name, so the order is the same run after run.
    pub fn search(&self, query: &str, limit: usize) -> Vec<crate::search::Hit> {
        let n = self.deferred.entries.len();
        let mut hits = self.deferred.search(query, limit);
        hits.extend(self.offered.search(query, limit).into_iter().map(|mut h| {
            h.entry += n;
            h
        }));
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.entry(a.entry).name.cmp(&self.entry(b.entry).name))
        });
        hits.truncate(limit);
        hits
    }

    /// A merged hit's entry.
    pub fn entry(&self, e: usize) -> &DeferredEntry {
        let n = self.deferred.entries.len();
        if e < n {
            &self.deferred.entries[e]
        } else {
            &self.offered.entries[e - n]
        }
    }

    /// Whether a merged hit's entry is an offered tool.
    pub fn is_offered(&self, e: usize) -> bool {
        e >= self.deferred.entries.len()
    }
}

/// Whether a best match with no near-tie is sure enough to load alone: its
/// words match well, or its meaning does.
fn clear(hit: &crate::search::Hit) -> bool {
    #[cfg(feature = "encoder")]
    if hit.cosine.is_some_and(|c| c >= CLEAR_MEANING) {
        return true;
    }
    hit.lexical >= RELEVANCE_FLOOR
}

/// `hits` from the first one the ask's words or meaning back
/// ([`relevant`]); empty when none does. A higher-scored match that
/// neither backs is passed over, so "nothing found" is said only when no
/// match is relevant: over twenty real servers, "what's today's date"
/// scored the fetch tool first (its description's "up-to-date", lexical
/// share 0.13, cosine 0.15) and the offered time tool, whose meaning backs
/// it (cosine 0.41), below it (`tests/load_asks_servers.rs`).
fn backed(hits: &[crate::search::Hit]) -> &[crate::search::Hit] {
    let at = hits.iter().position(relevant).unwrap_or(hits.len());
    &hits[at..]
}

/// Whether a query's best match matches it well enough to load: by its
/// words, or by its meaning when the index has vectors.
pub(crate) fn relevant(hit: &crate::search::Hit) -> bool {
    #[cfg(feature = "encoder")]
    if hit.cosine.is_some_and(|c| c >= MEANING_FLOOR) {
        return true;
    }
    hit.lexical >= RELEVANCE_FLOOR
}

impl Live {
    /// Loads what `request` asks for into the session, within the policy's
    /// bounds, and answers as the control tool answers the model. Nothing
    /// changes unless the answer's status is [`LoadStatus::Loaded`].
    pub fn load(&mut self, request: &LoadRequest) -> LoadAnswer {
        let mut notes = Vec::new();
        let picked = if !self.basis.has_control {
            notes.push(LoadNote::NoControlTool);
            Vec::new()
        } else {
            match request {
                LoadRequest::Query(text) if text.len() > crate::search::MAX_QUERY_BYTES => {
                    notes.push(LoadNote::QueryTooLong {
                        bytes: text.len(),
                        limit: crate::search::MAX_QUERY_BYTES,
                    });
                    Vec::new()
                }
                LoadRequest::Query(text) => match self.exact_names(text) {
                    Some(names) => self.pick_names(&names, &mut notes),
                    None => self.pick_query(text, &mut notes),
                },
                LoadRequest::Names(names) => self.pick_names(names, &mut notes),
            }
        };
        let loaded = self.admit(picked, &mut notes);
        if !loaded.is_empty() {
            self.keys.sign(&mut self.doc);
        }
        for note in &mut notes {
            self.spell_note(note);
        }
        let status = if !loaded.is_empty() {
            LoadStatus::Loaded
        } else if notes.iter().any(|n| matches!(n, LoadNote::Choose { .. })) {
            LoadStatus::Choose
        } else if notes.iter().all(|n| {
            matches!(
                n,
                LoadNote::AlreadyLoaded { .. } | LoadNote::AlreadyOffered { .. }
            )
        }) && !notes.is_empty()
        {
            LoadStatus::Unchanged
        } else {
            LoadStatus::Refused
        };
        let answer = notes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        LoadAnswer {
            format_version: SESSION_FORMAT_VERSION,
            status,
            loaded,
            notes,
            answer,
        }
    }

    /// The query read as exact names: every comma-separated part names a
    /// candidate or a kind. `None` when it is words to search for.
    fn exact_names(&self, text: &str) -> Option<Vec<String>> {
        let parts: Vec<String> = text
            .split(',')
            .map(|p| self.muster_name(p.trim()))
            .filter(|p| !p.is_empty())
            .collect();
        (!parts.is_empty() && parts.iter().all(|p| self.known(p))).then_some(parts)
    }

    /// `name` as the model was given it: the provider spelling unless the
    /// session gives muster's own names.
    pub(super) fn say(&self, name: &str) -> String {
        if self.doc.names == NameSpelling::Muster {
            return name.to_string();
        }
        let catalog = &self.basis.catalog;
        match self.basis.spellings.get(name) {
            Some(&Spelling::Candidate(i)) => catalog.candidates[i].provider_name.clone(),
            _ => crate::provider::spell(name, &catalog.names).name,
        }
    }

    /// Every tool name in `note` in the model's spelling; a query stays as
    /// the model wrote it.
    fn spell_note(&self, note: &mut LoadNote) {
        let one = |name: &mut String| *name = self.say(name);
        match note {
            LoadNote::Loaded { tools }
            | LoadNote::Unloaded { tools }
            | LoadNote::MaxLoaded { tools, .. }
            | LoadNote::MaxLoadedTokens { tools, .. }
            | LoadNote::Caps { tools, .. } => tools.iter_mut().for_each(one),
            LoadNote::AlreadyLoaded { name }
            | LoadNote::AlreadyOffered { name }
            | LoadNote::NotDeferred { name, .. } => one(name),
            LoadNote::UnknownTool { closest, .. } => closest.iter_mut().for_each(one),
            LoadNote::NothingFound { kinds, .. } => kinds.iter_mut().for_each(one),
            LoadNote::Choose { options, .. } => {
                options.iter_mut().for_each(|o| one(&mut o.name));
            }
            LoadNote::NoControlTool
            | LoadNote::QueryTooLong { .. }
            | LoadNote::TooManyNames { .. } => {}
        }
    }

    /// Whether a candidate or a kind has this name.
    pub(super) fn known(&self, name: &str) -> bool {
        self.basis.known(name)
    }

    /// `name` as muster spells it: as written when a candidate or kind has
    /// that name, else read as a provider name ([`crate::provider::spell`]:
    /// `mcp__server__tool` for `mcp.server.tool`), so a real name holding
    /// `__` is never rewritten. A tool the plan cut is still named back as
    /// muster spells it, so the answer says why it cannot be loaded.
    pub(super) fn muster_name(&self, name: &str) -> String {
        let catalog = &self.basis.catalog;
        match self.basis.spellings.get(name) {
            Some(Spelling::Candidate(_)) | None => name.to_string(),
            Some(&Spelling::Kind(k)) => catalog.kinds[k].name.clone(),
            Some(&Spelling::Provider(i)) => catalog.candidates[i].name.clone(),
        }
    }

    /// The unit a query in words loads: its one clear best match among
    /// everything the chat can reach ([`decide`]). A query whose best match
    /// scores below [`RELEVANCE_FLOOR`] loads nothing and is answered with
    /// the kinds of tools there are; one whose best matches are near-ties
    /// (within [`NEAR_TIE`] of the best) loads nothing and is answered with
    /// them, for the model to pick by name; one whose winner is already
    /// offered or loaded says so, or, with tools not yet there within
    /// [`RIVAL`] of it, answers them all as a choice.
    fn pick_query(&self, query: &str, notes: &mut Vec<LoadNote>) -> Vec<Vec<usize>> {
        let catalog = &self.basis.catalog;
        let reach = self.basis.reach();
        let hits = reach.search(query, MAX_RESULTS);
        let choices = catalog.deferral_policy.per_query as usize;
        let loaded = |e: usize| {
            reach
                .entry(e)
                .tools
                .iter()
                .all(|&i| self.is_loaded(&catalog.candidates[i].name))
        };
        let ready = |e: usize| reach.is_offered(e) || loaded(e);
        match decide(&hits, choices, ready) {
            Decision::Nothing => {
                let (kinds, more) = self.reachable_kinds();
                notes.push(LoadNote::NothingFound {
                    query: query.to_string(),
                    kinds,
                    more,
                });
                Vec::new()
            }
            Decision::Ready(e) if reach.is_offered(e) => {
                notes.push(LoadNote::AlreadyOffered {
                    name: reach.entry(e).name.clone(),
                });
                Vec::new()
            }
            Decision::Ready(e) => {
                for &i in &reach.entry(e).tools {
                    notes.push(LoadNote::AlreadyLoaded {
                        name: catalog.candidates[i].name.clone(),
                    });
                }
                Vec::new()
            }
            Decision::Load(e) => {
                let todo: Vec<usize> = reach
                    .entry(e)
                    .tools
                    .iter()
                    .copied()
                    .filter(|&i| !self.is_loaded(&catalog.candidates[i].name))
                    .collect();
                vec![todo]
            }
            Decision::Choose(options) => {
                notes.push(LoadNote::Choose {
                    query: query.to_string(),
                    options: options
                        .into_iter()
                        .map(|e| LoadOption {
                            name: reach.entry(e).name.clone(),
                            description: crate::search::one_line(&reach.entry(e).description),
                            loaded: !reach.is_offered(e) && loaded(e),
                            offered: reach.is_offered(e),
                        })
                        .collect(),
                });
                Vec::new()
            }
        }
    }

    /// Every kind (group or server) of a tool the chat can reach, offered
    /// or deferred: the roster's in roster order, then the deferred tools'
    /// in rank order; at most [`MAX_KINDS`], with how many more there are.
    fn reachable_kinds(&self) -> (Vec<String>, u32) {
        let catalog = &self.basis.catalog;
        let mut seen = vec![false; catalog.kinds.len()];
        let mut kinds: Vec<usize> = Vec::new();
        for &i in self.basis.offered.iter().chain(&self.basis.ranked) {
            if let Some(k) = catalog.candidates[i].kind
                && !std::mem::replace(&mut seen[k], true)
            {
                kinds.push(k);
            }
        }
        let more = kinds.len().saturating_sub(MAX_KINDS) as u32;
        let names = kinds
            .into_iter()
            .take(MAX_KINDS)
            .map(|k| catalog.kinds[k].name.clone())
            .collect();
        (names, more)
    }

    /// The units exact names load; names that cannot be loaded get a note.
    fn pick_names(&self, names: &[String], notes: &mut Vec<LoadNote>) -> Vec<Vec<usize>> {
        if names.len() > MAX_LOAD_NAMES {
            notes.push(LoadNote::TooManyNames {
                names: names.len(),
                limit: MAX_LOAD_NAMES,
            });
            return Vec::new();
        }
        let mut plan = None;
        let catalog = &self.basis.catalog;
        let entries = &self.basis.index().entries;
        let mut units: Vec<Vec<usize>> = Vec::new();
        for name in names {
            let name = self.muster_name(name);
            let unit = entries
                .iter()
                .find(|e| {
                    e.name == name || e.tools.iter().any(|&i| catalog.candidates[i].name == name)
                })
                .map(|e| e.tools.clone())
                .or_else(|| {
                    // A kind that does not load together still names its
                    // deferred members.
                    let k = catalog.kinds.iter().position(|k| k.name == name)?;
                    let members: Vec<usize> = entries
                        .iter()
                        .flat_map(|e| e.tools.iter().copied())
                        .filter(|&i| catalog.candidates[i].kind == Some(k))
                        .collect();
                    (!members.is_empty()).then_some(members)
                });
            match unit {
                Some(tools) => {
                    let todo: Vec<usize> = tools
                        .into_iter()
                        .filter(|&i| {
                            let n = &catalog.candidates[i].name;
                            let new =
                                !self.is_loaded(n) && !units.iter().flatten().any(|&j| j == i);
                            if !new && self.is_loaded(n) {
                                notes.push(LoadNote::AlreadyLoaded { name: n.clone() });
                            }
                            new
                        })
                        .collect();
                    if !todo.is_empty() {
                        units.push(todo);
                    }
                }
                None => {
                    let plan = plan.get_or_insert_with(|| self.plan());
                    notes.push(self.unavailable(plan, &name, entries));
                }
            }
        }
        units
    }

    /// Why `name` cannot be loaded.
    fn unavailable(&self, plan: &Plan<'_>, name: &str, entries: &[DeferredEntry]) -> LoadNote {
        match plan.decision(name) {
            Some((_, d)) if d.status == Status::Offered => LoadNote::AlreadyOffered {
                name: name.to_string(),
            },
            Some((_, d)) => LoadNote::NotDeferred {
                name: name.to_string(),
                status: d.status,
                reason: d.code,
            },
            None => LoadNote::UnknownTool {
                name: name.to_string(),
                closest: crate::names::closest(
                    name,
                    entries.iter().flat_map(|e| {
                        std::iter::once(e.name.as_str()).chain(
                            e.tools
                                .iter()
                                .map(|&i| plan.catalog.candidates[i].name.as_str()),
                        )
                    }),
                    3,
                )
                .into_iter()
                .map(str::to_string)
                .collect(),
            },
        }
    }

    /// Loads whole units in order while the bounds hold. A unit that
    /// would pass a bound replaces the earliest loads made before this call
    /// (never a tool this call asked for) until it fits; a unit that would
    /// not fit even with all of them gone stops loading, is named in the
    /// answer with what it would take, and unloads nothing.
    fn admit(&mut self, units: Vec<Vec<usize>>, notes: &mut Vec<LoadNote>) -> Vec<String> {
        let policy = self.basis.catalog.deferral_policy.clone();
        let tokens_of = |basis: &super::Basis, name: &str| {
            basis
                .deferred
                .get(name)
                .map_or(0, |&i| basis.catalog.candidates[i].tokens)
        };
        // Counted now, never taken from the document.
        let mut count = self.doc.loaded.len() as u32;
        let mut used: u32 = self
            .doc
            .loaded
            .iter()
            .map(|t| tokens_of(&self.basis, &t.name))
            .sum();
        let revision = self.doc.revision + 1;
        // How far loads may take the offer (`deferral.loads`).
        let limits = policy.loads.limits(self.basis.caps);
        let base = self.basis.totals;
        // Tools asked for again stay: only other, earlier loads make room.
        let kept: Vec<String> = notes
            .iter()
            .filter_map(|n| match n {
                LoadNote::AlreadyLoaded { name } => Some(name.clone()),
                _ => None,
            })
            .collect();
        let mut unloaded: Vec<String> = Vec::new();
        let mut loaded = Vec::new();
        for (n, unit) in units.iter().enumerate() {
            let tokens: u32 = unit
                .iter()
                .map(|&i| self.basis.catalog.candidates[i].tokens)
                .sum();
            let size = unit.len() as u32;
            let over = |count: u32, used: u32| -> Option<LoadNote> {
                let rest: Vec<String> = units[n..]
                    .iter()
                    .flatten()
                    .map(|&i| self.basis.catalog.candidates[i].name.clone())
                    .collect();
                if count + size > policy.max_loaded {
                    return Some(LoadNote::MaxLoaded {
                        limit: policy.max_loaded,
                        loaded: count,
                        requested: size,
                        tools: rest,
                    });
                }
                if used.saturating_add(tokens) > policy.max_loaded_tokens {
                    return Some(LoadNote::MaxLoadedTokens {
                        limit: policy.max_loaded_tokens,
                        used,
                        requested: tokens,
                        tools: rest,
                    });
                }
                let offered = (base.0.saturating_add(count), base.1.saturating_add(used));
                [
                    (CapMeasure::Items, limits.0, offered.0, size),
                    (CapMeasure::Tokens, limits.1, offered.1, tokens),
                ]
                .into_iter()
                .find(|&(_, limit, offered, requested)| {
                    limit.is_some_and(|l| offered.saturating_add(requested) > l)
                })
                .map(|(measure, limit, offered, requested)| LoadNote::Caps {
                    measure,
                    limit: limit.unwrap_or(u32::MAX),
                    offered,
                    requested,
                    tools: rest,
                })
            };
            if let Some(note) = over(count, used) {
                // Earlier loads that may make room, oldest first.
                let earlier: Vec<(String, u32)> = self
                    .doc
                    .loaded
                    .iter()
                    .filter(|t| t.revision < revision && !kept.contains(&t.name))
                    .map(|t| (t.name.clone(), tokens_of(&self.basis, &t.name)))
                    .collect();
                let freed: u32 = earlier.iter().map(|(_, t)| t).sum();
                if over(count - earlier.len() as u32, used - freed).is_some() {
                    notes.push(note);
                    break;
                }
                let mut drop = Vec::new();
                for (name, t) in earlier {
                    if over(count, used).is_none() {
                        break;
                    }
                    count -= 1;
                    used -= t;
                    drop.push(name);
                }
                self.doc.loaded.retain(|t| !drop.contains(&t.name));
                unloaded.extend(drop);
            }
            for &i in unit {
                let catalog = &self.basis.catalog;
                let c = &catalog.candidates[i];
                self.doc.loaded.push(LoadedTool {
                    name: c.name.clone(),
                    digest: short(&c.definition_hash),
                    parts: deferred_parts(catalog, i),
                    revision,
                });
                loaded.push(c.name.clone());
            }
            count += size;
            used += tokens;
        }
        if !loaded.is_empty() {
            self.doc.revision = revision;
            if !unloaded.is_empty() {
                notes.insert(0, LoadNote::Unloaded { tools: unloaded });
            }
            notes.insert(
                0,
                LoadNote::Loaded {
                    tools: loaded.clone(),
                },
            );
        }
        loaded
    }
}

/// What to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadRequest {
    /// The control tool's `query`: words to search for, or exact names
    /// separated by commas.
    Query(String),
    /// Exact names of deferred tools or kinds.
    Names(Vec<String>),
}

#[cfg(test)]
mod tests;
