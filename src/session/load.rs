//! Loading deferred tools into a live session: what the control tool does
//! with a query or exact names, within the policy's bounds. Append-only:
//! nothing loaded is ever dropped, and a refused load changes nothing.

use super::{Live, MAX_RESULTS, parts, short};
use crate::contract::{
    CapMeasure, LoadAnswer, LoadNote, LoadStatus, LoadedTool, NameSpelling, SESSION_FORMAT_VERSION,
    Status,
};
use crate::plan::Plan;
use crate::search::{DeferredEntry, DeferredIndex};

impl Live {
    /// Loads what `request` asks for into the session, within the policy's
    /// bounds, and answers as the control tool answers the model. Nothing
    /// changes unless the answer's status is [`LoadStatus::Loaded`].
    pub fn load(&mut self, request: &LoadRequest) -> LoadAnswer {
        let mut notes = Vec::new();
        let picked = if self.plan().control.is_none() {
            notes.push(LoadNote::NoControlTool);
            Vec::new()
        } else {
            match request {
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
        match self.catalog.find(name) {
            Some(i) => self.catalog.candidates[i].provider_name.clone(),
            None => crate::provider::spell(name, &self.catalog.names).name,
        }
    }

    /// Every tool name in `note` in the model's spelling; a query stays as
    /// the model wrote it.
    fn spell_note(&self, note: &mut LoadNote) {
        let one = |name: &mut String| *name = self.say(name);
        match note {
            LoadNote::Loaded { tools }
            | LoadNote::MaxLoaded { tools, .. }
            | LoadNote::MaxLoadedTokens { tools, .. }
            | LoadNote::Caps { tools, .. } => tools.iter_mut().for_each(one),
            LoadNote::AlreadyLoaded { name }
            | LoadNote::AlreadyOffered { name }
            | LoadNote::NotDeferred { name, .. } => one(name),
            LoadNote::UnknownTool { closest, .. } => closest.iter_mut().for_each(one),
            LoadNote::NothingFound { .. } | LoadNote::NoControlTool => {}
        }
    }

    /// Whether a candidate or a kind has this name.
    pub(super) fn known(&self, name: &str) -> bool {
        self.catalog.candidates.iter().any(|c| c.name == name)
            || self.catalog.kinds.iter().any(|k| k.name == name)
    }

    /// `name` as muster spells it: as written when a candidate or kind has
    /// that name, else read as a provider name ([`crate::provider::spell`]:
    /// `mcp__server__tool` for `mcp.server.tool`), so a real name holding
    /// `__` is never rewritten.
    pub(super) fn muster_name(&self, name: &str) -> String {
        if self.known(name) {
            return name.to_string();
        }
        let catalog = &self.catalog;
        if let Some(i) = catalog.find_spelling(name) {
            return catalog.candidates[i].name.clone();
        }
        // A tool the plan cut is still named back as muster spells it, so
        // the answer says why it cannot be loaded.
        if let Some(c) = catalog.candidates.iter().find(|c| c.provider_name == name) {
            return c.name.clone();
        }
        catalog
            .kinds
            .iter()
            .find(|k| crate::provider::spell(&k.name, &catalog.names).name == name)
            .map_or_else(|| name.to_string(), |k| k.name.clone())
    }

    /// The units a query loads: its best matches that score at least half
    /// the best, at most `deferral.per_query`.
    fn pick_query(&self, query: &str, notes: &mut Vec<LoadNote>) -> Vec<Vec<usize>> {
        let plan = self.plan();
        let index = DeferredIndex::new(&plan);
        let entries = &index.entries;
        let hits = index.search(query, MAX_RESULTS);
        let Some(best) = hits.first().map(|h| h.score) else {
            notes.push(LoadNote::NothingFound {
                query: query.to_string(),
            });
            return Vec::new();
        };
        let per_query = self.catalog.deferral_policy.per_query as usize;
        let mut units = Vec::new();
        for hit in hits
            .iter()
            .filter(|h| h.score * 2.0 >= best)
            .take(per_query)
        {
            let entry = &entries[hit.entry];
            let (done, todo): (Vec<usize>, Vec<usize>) = entry
                .tools
                .iter()
                .partition(|&&i| self.is_loaded(&self.catalog.candidates[i].name));
            if todo.is_empty() {
                for i in done {
                    notes.push(LoadNote::AlreadyLoaded {
                        name: self.catalog.candidates[i].name.clone(),
                    });
                }
            } else {
                units.push(todo);
            }
        }
        units
    }

    /// The units exact names load; names that cannot be loaded get a note.
    fn pick_names(&self, names: &[String], notes: &mut Vec<LoadNote>) -> Vec<Vec<usize>> {
        let plan = self.plan();
        let index = DeferredIndex::new(&plan);
        let entries = &index.entries;
        let mut units: Vec<Vec<usize>> = Vec::new();
        for name in names {
            let name = self.muster_name(name);
            let unit = entries
                .iter()
                .find(|e| {
                    e.name == name
                        || e.tools
                            .iter()
                            .any(|&i| plan.catalog.candidates[i].name == name)
                })
                .map(|e| e.tools.clone())
                .or_else(|| {
                    // A kind that does not load together still names its
                    // deferred members.
                    let k = self.catalog.kinds.iter().position(|k| k.name == name)?;
                    let members: Vec<usize> = plan
                        .deferred
                        .iter()
                        .copied()
                        .filter(|&i| plan.catalog.candidates[i].kind == Some(k))
                        .collect();
                    (!members.is_empty()).then_some(members)
                });
            match unit {
                Some(tools) => {
                    let todo: Vec<usize> = tools
                        .into_iter()
                        .filter(|&i| {
                            let n = &plan.catalog.candidates[i].name;
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
                None => notes.push(self.unavailable(&plan, &name, entries)),
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

    /// Loads whole units in order while the bounds hold; the first unit
    /// that would pass a bound stops loading, and is named in the answer.
    fn admit(&mut self, units: Vec<Vec<usize>>, notes: &mut Vec<LoadNote>) -> Vec<String> {
        let policy = self.catalog.deferral_policy.clone();
        let mut count = self.doc.loaded.len() as u32;
        // Counted now, never taken from the document.
        let mut used: u32 = self
            .doc
            .loaded
            .iter()
            .filter_map(|t| self.catalog.find(&t.name))
            .map(|i| self.catalog.candidates[i].tokens)
            .sum();
        let revision = self.doc.revision + 1;
        // How far loads may take the offer (`deferral.loads`); one plan
        // gives the offer before this call (pinned and loaded) and each
        // asked-for tool's digests.
        let limits = policy.loads.limits(self.caps);
        let (mut offered, plan_hashes) = {
            let plan = self.plan();
            let offered = (
                plan.totals.items.saturating_add(count),
                plan.totals.tokens.saturating_add(used),
            );
            let hashes: Vec<(usize, String, String)> = units
                .iter()
                .flatten()
                .map(|&i| (i, short(&plan.definition_hash(i)), parts(&plan, i)))
                .collect();
            (offered, hashes)
        };
        let mut loaded = Vec::new();
        for (n, unit) in units.iter().enumerate() {
            let tokens: u32 = unit
                .iter()
                .map(|&i| self.catalog.candidates[i].tokens)
                .sum();
            let size = unit.len() as u32;
            let rest: Vec<String> = units[n..]
                .iter()
                .flatten()
                .map(|&i| self.catalog.candidates[i].name.clone())
                .collect();
            if count + size > policy.max_loaded {
                notes.push(LoadNote::MaxLoaded {
                    limit: policy.max_loaded,
                    loaded: count,
                    requested: size,
                    tools: rest,
                });
                break;
            }
            if used.saturating_add(tokens) > policy.max_loaded_tokens {
                notes.push(LoadNote::MaxLoadedTokens {
                    limit: policy.max_loaded_tokens,
                    used,
                    requested: tokens,
                    tools: rest,
                });
                break;
            }
            let over = [
                (CapMeasure::Items, limits.0, offered.0, size),
                (CapMeasure::Tokens, limits.1, offered.1, tokens),
            ]
            .into_iter()
            .find(|&(_, limit, offered, requested)| {
                limit.is_some_and(|l| offered.saturating_add(requested) > l)
            });
            if let Some((measure, limit, offered, requested)) = over {
                notes.push(LoadNote::Caps {
                    measure,
                    limit: limit.unwrap_or(u32::MAX),
                    offered,
                    requested,
                    tools: rest,
                });
                break;
            }
            for &i in unit {
                let c = &self.catalog.candidates[i];
                let (_, digest, parts) = plan_hashes
                    .iter()
                    .find(|(j, _, _)| *j == i)
                    .cloned()
                    .unwrap_or_default();
                self.doc.loaded.push(LoadedTool {
                    name: c.name.clone(),
                    digest,
                    parts,
                    revision,
                });
                loaded.push(c.name.clone());
            }
            count += size;
            used += tokens;
            offered = (offered.0 + size, offered.1.saturating_add(tokens));
        }
        if !loaded.is_empty() {
            self.doc.revision = revision;
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
