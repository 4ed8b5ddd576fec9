//! Agent sessions: the roster a chat was created with, pinned in a
//! document the host stores, and the deferred tools loaded into it since.
//!
//! muster keeps no state: [`new`] plans and returns the document; every
//! later call takes the document back, rebuilds the pinned selection (agent
//! version, flags, caps) from the current policies and first checks that
//! every pinned definition is still what the session was given. A session
//! whose pin no longer holds is answered with a [`ResumeReport`] naming each
//! change and is never served or rewritten. Loading is append-only and
//! bounded by the policy's `[deferral]` limits, so every definition the
//! model has seen stays byte-identical for the rest of the session.
//!
//! This module decides what can be found and loaded; it never prints,
//! never writes files and never decides a placement (the planner does).

use crate::canon;
use crate::catalog::{Catalog, Selection};
use crate::contract::{Code, Status};
use crate::contract::{
    DefinitionPart, DefinitionParts, FingerprintPair, LoadAnswer, LoadNote, LoadStatus, LoadedTool,
    PinChange, PinnedAgent, PinnedCaps, PinnedSelection, PinnedTool, Place, ResumeReport,
    ResumeStatus, SESSION_FORMAT_VERSION, SearchResult, SearchResults, SessionDocument,
};
use crate::error::{Error, ErrorKind, Problem};
use crate::plan::{self, Plan, RosterEntry};
use crate::policy::{Caps, Policy};
use crate::search::{self, DeferredEntry, DeferredIndex};
use crate::tokens::TokenCache;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Most results one search returns.
pub const MAX_RESULTS: usize = 10;

/// Plans `selection` (with optional cap overrides: items, tokens) and pins
/// the result, taking token counts from `cache` and adding those it lacked.
///
/// # Errors
/// A usage error when the selection names an agent, version or flag
/// profile the policy does not have.
///
/// # Example
/// ```no_run
/// use muster::{catalog::Selection, policy::Policy, session};
/// let policy = Policy::load("policies".as_ref())?;
/// let mut cache = muster::tokens::TokenCache::in_memory();
/// let doc = session::new(&policy, &Selection::default(), (None, None), &mut cache)?;
/// assert_eq!(doc.loaded.len(), 0);
/// # Ok::<(), muster::Error>(())
/// ```
pub fn new(
    policy: &Policy,
    selection: &Selection,
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
) -> Result<SessionDocument, Error> {
    let catalog = Catalog::build_cached(policy, selection, cache)?;
    let caps = catalog.caps.with_overrides(caps.0, caps.1);
    let plan = plan::plan(&catalog, caps);
    Ok(SessionDocument {
        format_version: SESSION_FORMAT_VERSION,
        agent: PinnedAgent {
            name: catalog.agent.clone(),
            version: catalog.agent_version,
        },
        selection: PinnedSelection {
            profile: selection.profile.clone(),
            flags: catalog.flags.clone(),
        },
        encoding: catalog.encoding.name().to_string(),
        caps: PinnedCaps {
            items: caps.items,
            tokens: caps.tokens,
        },
        control_tool: plan
            .control
            .as_ref()
            .map(|c| catalog.candidates[c.index].name.clone()),
        fingerprint: plan.fingerprint(),
        roster: plan.roster.iter().map(|&i| pinned(&plan, i)).collect(),
        deferred: plan.deferred.iter().map(|&i| pinned(&plan, i)).collect(),
        loaded: Vec::new(),
    })
}

fn pinned(plan: &Plan<'_>, i: usize) -> PinnedTool {
    PinnedTool {
        name: plan.catalog.candidates[i].name.clone(),
        definition_hash: canon::labelled_hex(&plan.definition_hash(i)),
        parts: parts(plan, i),
    }
}

fn parts(plan: &Plan<'_>, i: usize) -> DefinitionParts {
    let c = &plan.catalog.candidates[i];
    let hash = |value: &Value| canon::labelled_hex(&canon::digest(value));
    DefinitionParts {
        description: hash(&Value::String(plan.description(i).to_string())),
        input_schema: hash(&c.input_schema),
        fixed: hash(&serde_json::json!(c.call.fixed)),
        only: hash(&serde_json::json!(c.call.only)),
    }
}

/// The document as pretty JSON with a trailing newline: what `session new`
/// writes and every changing verb rewrites.
pub fn to_json_string(doc: &SessionDocument) -> String {
    json_text(doc)
}

pub(crate) fn json_text<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// Reads a session document and checks that it is whole: the version this
/// muster writes, well-formed hashes, each name once, loaded tools among
/// the deferred ones, and a fingerprint that matches its roster.
///
/// # Errors
/// An [`ErrorKind::Input`] error naming `file` (and the line, for JSON that
/// cannot be read) and the field to correct.
pub fn read(text: &str, file: &Path) -> Result<SessionDocument, Error> {
    let doc: SessionDocument = serde_json::from_str(text).map_err(|err| {
        Error::json(
            file,
            "session document",
            &err,
            "give the document `muster session new` wrote, unchanged but for what muster rewrote",
        )
    })?;
    let mut problems = Vec::new();
    let mut problem = |message: String, help: &str| {
        problems.push(Problem::new(message).in_file(file).help(help));
    };
    if doc.format_version != SESSION_FORMAT_VERSION {
        problem(
            format!(
                "format_version {} is not one this muster reads ({SESSION_FORMAT_VERSION})",
                doc.format_version
            ),
            "create the session again with this muster's `session new`",
        );
    }
    let mut names = BTreeSet::new();
    for (place, tools) in [("roster", &doc.roster), ("deferred", &doc.deferred)] {
        for tool in tools {
            if !names.insert(tool.name.as_str()) {
                problem(
                    format!("{place} names {:?} a second time", tool.name),
                    "a session pins each tool once; create the session again",
                );
            }
            let hashes = [
                ("definition_hash", &tool.definition_hash),
                ("parts.description", &tool.parts.description),
                ("parts.input_schema", &tool.parts.input_schema),
                ("parts.fixed", &tool.parts.fixed),
                ("parts.only", &tool.parts.only),
            ];
            for (field, hash) in hashes {
                if canon::parse_labelled_hex(hash).is_none() {
                    problem(
                        format!(
                            "{place} tool {:?}: {field} {hash:?} is not a sha256: hash",
                            tool.name
                        ),
                        "hashes are \"sha256:\" and 64 lowercase hex digits; create the session again",
                    );
                }
            }
        }
    }
    let deferred: BTreeSet<&str> = doc.deferred.iter().map(|t| t.name.as_str()).collect();
    let mut loaded = BTreeSet::new();
    for tool in &doc.loaded {
        if !deferred.contains(tool.name.as_str()) {
            problem(
                format!(
                    "loaded names {:?}, which the session did not defer",
                    tool.name
                ),
                "only deferred tools can be loaded; load through `muster session load`",
            );
        }
        if !loaded.insert(tool.name.as_str()) {
            problem(
                format!("loaded names {:?} a second time", tool.name),
                "a tool is loaded once; load through `muster session load`",
            );
        }
    }
    if let Some(control) = &doc.control_tool
        && !doc.roster.iter().any(|t| &t.name == control)
    {
        problem(
            format!("control_tool {control:?} is not in the roster"),
            "create the session again",
        );
    }
    let hashes: Option<Vec<[u8; 32]>> = doc
        .roster
        .iter()
        .map(|t| canon::parse_labelled_hex(&t.definition_hash))
        .collect();
    if let Some(hashes) = hashes
        && plan::fingerprint(&doc.agent.name, doc.agent.version, &hashes) != doc.fingerprint
    {
        problem(
            format!(
                "fingerprint {} does not match the pinned agent and roster",
                doc.fingerprint
            ),
            "the document was edited; create the session again",
        );
    }
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(Error::many(ErrorKind::Input, problems))
    }
}

/// A session whose pin holds: ready to search, load and offer.
#[derive(Debug)]
pub struct Live {
    catalog: Catalog,
    caps: Caps,
    doc: SessionDocument,
}

/// What opening a session found.
#[derive(Debug)]
pub enum Opened {
    /// The pin holds.
    Live(Box<Live>),
    /// The current policies no longer give the pinned tools.
    Mismatch(ResumeReport),
}

/// Rebuilds the pinned selection from `policy` and compares every pinned
/// and loaded definition with what it gives now. Never changes the
/// document.
///
/// # Errors
/// Only for a catalog that cannot be built at all; a missing agent version
/// is a mismatch, not an error.
pub fn resume(
    policy: &Policy,
    doc: &SessionDocument,
    cache: &mut TokenCache,
) -> Result<ResumeReport, Error> {
    Ok(match open(policy, doc.clone(), cache)? {
        Opened::Live(live) => live.report(Vec::new()),
        Opened::Mismatch(report) => report,
    })
}

/// Opens `doc` against the current policies.
///
/// # Errors
/// As [`resume`].
pub fn open(
    policy: &Policy,
    doc: SessionDocument,
    cache: &mut TokenCache,
) -> Result<Opened, Error> {
    let selection = Selection {
        agent: Some(doc.agent.name.clone()),
        version: Some(doc.agent.version),
        profile: None,
        flags: doc.selection.flags.clone(),
    };
    if policy
        .agent(selection.agent.as_deref(), selection.version)
        .is_none()
    {
        return Ok(Opened::Mismatch(ResumeReport {
            format_version: SESSION_FORMAT_VERSION,
            status: ResumeStatus::ToolPinMismatch,
            agent: doc.agent.clone(),
            fingerprint: FingerprintPair {
                pinned: doc.fingerprint.clone(),
                now: None,
            },
            changes: vec![PinChange::AgentVersionRemoved {
                agent: doc.agent.name.clone(),
                version: doc.agent.version,
            }],
        }));
    }
    let catalog = Catalog::build_cached(policy, &selection, cache)?;
    let caps = Caps {
        items: doc.caps.items,
        tokens: doc.caps.tokens,
    };
    let live = Live { catalog, caps, doc };
    let changes = live.changes();
    Ok(if changes.is_empty() {
        Opened::Live(Box::new(live))
    } else {
        Opened::Mismatch(live.report(changes))
    })
}

impl Live {
    /// The plan the session was pinned to, rebuilt.
    pub fn plan(&self) -> Plan<'_> {
        plan::plan(&self.catalog, self.caps)
    }

    /// The session document as it stands.
    pub fn document(&self) -> &SessionDocument {
        &self.doc
    }

    /// The session document, consumed.
    pub fn into_document(self) -> SessionDocument {
        self.doc
    }

    fn report(&self, changes: Vec<PinChange>) -> ResumeReport {
        ResumeReport {
            format_version: SESSION_FORMAT_VERSION,
            status: if changes.is_empty() {
                ResumeStatus::Ok
            } else {
                ResumeStatus::ToolPinMismatch
            },
            agent: self.doc.agent.clone(),
            fingerprint: FingerprintPair {
                pinned: self.doc.fingerprint.clone(),
                now: Some(self.plan().fingerprint()),
            },
            changes,
        }
    }

    /// Every difference between the pin and the rebuilt plan.
    fn changes(&self) -> Vec<PinChange> {
        let plan = self.plan();
        let mut changes = Vec::new();
        if plan.catalog.encoding.name() != self.doc.encoding {
            changes.push(PinChange::EncodingChanged {
                pinned: self.doc.encoding.clone(),
                now: plan.catalog.encoding.name().to_string(),
            });
        }
        compare(
            &plan,
            &self.doc.roster,
            &plan.roster,
            Place::Roster,
            &mut changes,
        );
        compare(
            &plan,
            &self.doc.deferred,
            &plan.deferred,
            Place::Deferred,
            &mut changes,
        );
        // A loaded tool must still be deferred with the definition the
        // model was given when it was loaded.
        for tool in &self.doc.loaded {
            let pin = self.doc.deferred.iter().find(|t| t.name == tool.name);
            let now = plan
                .deferred
                .iter()
                .copied()
                .find(|&i| plan.catalog.candidates[i].name == tool.name);
            match (pin, now) {
                (Some(pin), Some(i)) => {
                    let what = differing_parts(&pin.parts, &parts(&plan, i));
                    if !what.is_empty() {
                        changes.push(PinChange::Changed {
                            name: tool.name.clone(),
                            place: Place::Loaded,
                            what,
                        });
                    }
                }
                _ => changes.push(PinChange::Removed {
                    name: tool.name.clone(),
                    place: Place::Loaded,
                }),
            }
        }
        changes
    }

    fn is_loaded(&self, name: &str) -> bool {
        self.doc.loaded.iter().any(|t| t.name == name)
    }

    /// The best matches for `query` among the deferred tools, at most
    /// `limit` (and never more than [`MAX_RESULTS`]). Changes nothing.
    pub fn search(&self, query: &str, limit: usize) -> SearchResults {
        let plan = self.plan();
        let index = DeferredIndex::new(&plan);
        let results = index
            .search(query, limit.min(MAX_RESULTS))
            .into_iter()
            .map(|hit| self.result(&plan, &index.entries[hit.entry], hit.score))
            .collect();
        SearchResults {
            query: query.to_string(),
            results,
        }
    }

    fn result(&self, plan: &Plan<'_>, entry: &DeferredEntry, score: f64) -> SearchResult {
        let tools: Vec<String> = entry
            .tools
            .iter()
            .map(|&i| plan.catalog.candidates[i].name.clone())
            .collect();
        SearchResult {
            name: entry.name.clone(),
            description: search::one_line(&entry.description),
            score,
            entry: entry.kind,
            loaded: tools.iter().all(|t| self.is_loaded(t)),
            tools,
        }
    }

    /// Loads what `request` asks for into the session, within the policy's
    /// bounds, and answers as the control tool answers the model. Nothing
    /// changes unless the answer's status is [`LoadStatus::Loaded`].
    pub fn load(&mut self, request: &LoadRequest) -> LoadAnswer {
        let mut notes = Vec::new();
        let picked = if self.doc.control_tool.is_none() {
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
            .map(|p| canonical_name(p.trim()))
            .filter(|p| !p.is_empty())
            .collect();
        let known = |name: &str| {
            self.catalog.candidates.iter().any(|c| c.name == name)
                || self.catalog.kinds.iter().any(|k| k.name == name)
        };
        (!parts.is_empty() && parts.iter().all(|p| known(p))).then_some(parts)
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
            let name = canonical_name(name);
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
        let policy = &self.catalog.deferral_policy;
        let mut count = self.doc.loaded.len() as u32;
        let mut used: u32 = self.doc.loaded.iter().map(|t| t.tokens).sum();
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
            for &i in unit {
                let c = &self.catalog.candidates[i];
                self.doc.loaded.push(LoadedTool {
                    name: c.name.clone(),
                    tokens: c.tokens,
                });
                loaded.push(c.name.clone());
            }
            count += size;
            used += tokens;
        }
        if !loaded.is_empty() {
            notes.insert(
                0,
                LoadNote::Loaded {
                    tools: loaded.clone(),
                },
            );
        }
        loaded
    }

    /// What the model is offered now: the pinned roster, then the loaded
    /// tools in load order, in the plan JSON's roster shape (pretty JSON
    /// with a trailing newline, as `session roster --format json` prints).
    pub fn roster_json(&self) -> String {
        let plan = self.plan();
        json_text(&SessionRoster::new(self, &plan))
    }
}

/// Names written the way providers spell them (`mcp__server__tool`) are
/// read as muster names.
fn canonical_name(name: &str) -> String {
    name.replace("__", ".")
}

/// Pinned tools at `place` against what the rebuilt plan puts there.
fn compare(
    plan: &Plan<'_>,
    pinned: &[PinnedTool],
    now: &[usize],
    place: Place,
    changes: &mut Vec<PinChange>,
) {
    let position: BTreeMap<&str, usize> = now
        .iter()
        .enumerate()
        .map(|(p, &i)| (plan.catalog.candidates[i].name.as_str(), p))
        .collect();
    let pinned_names: BTreeSet<&str> = pinned.iter().map(|t| t.name.as_str()).collect();
    for (p, pin) in pinned.iter().enumerate() {
        match position.get(pin.name.as_str()) {
            None => changes.push(PinChange::Removed {
                name: pin.name.clone(),
                place,
            }),
            Some(&q) => {
                let mut what = differing_parts(&pin.parts, &parts(plan, now[q]));
                if place == Place::Roster && p != q {
                    what.push(DefinitionPart::Position);
                }
                if !what.is_empty() {
                    changes.push(PinChange::Changed {
                        name: pin.name.clone(),
                        place,
                        what,
                    });
                }
            }
        }
    }
    for &i in now {
        let name = &plan.catalog.candidates[i].name;
        if !pinned_names.contains(name.as_str()) {
            changes.push(PinChange::Added {
                name: name.clone(),
                place,
            });
        }
    }
}

fn differing_parts(pinned: &DefinitionParts, now: &DefinitionParts) -> Vec<DefinitionPart> {
    let mut what = Vec::new();
    if pinned.description != now.description {
        what.push(DefinitionPart::Description);
    }
    if pinned.input_schema != now.input_schema {
        what.push(DefinitionPart::InputSchema);
    }
    if pinned.fixed != now.fixed {
        what.push(DefinitionPart::Fixed);
    }
    if pinned.only != now.only {
        what.push(DefinitionPart::Only);
    }
    what
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

/// What `session roster --format json` prints: the plan JSON's shape for
/// the offered tools, so `check` reads it as it reads a plan.
#[derive(Debug, Serialize)]
pub struct SessionRoster<'a> {
    /// The plan JSON's version: the roster entries have its shape.
    pub format_version: u32,
    /// The pinned agent.
    pub agent: &'a PinnedAgent,
    /// The pinned encoding.
    pub encoding: &'a str,
    /// The control tool, when the session has one.
    pub control_tool: Option<&'a str>,
    /// The pinned fingerprint.
    pub fingerprint: &'a str,
    /// Pinned roster, then loaded tools in load order (code `loaded`).
    pub roster: Vec<RosterEntry<'a>>,
    /// Deferred tools not loaded yet.
    pub deferred: Vec<UnloadedTool<'a>>,
    /// Sizes.
    pub totals: SessionTotals,
}

/// A deferred tool not loaded yet.
#[derive(Debug, Serialize)]
pub struct UnloadedTool<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Why it was deferred.
    pub code: Code,
    /// Tokens it would cost.
    pub tokens: u32,
}

/// The session's offer against its caps and load bounds.
#[derive(Debug, Serialize)]
pub struct SessionTotals {
    /// Pinned roster items.
    pub pinned_items: u32,
    /// Pinned roster tokens, wrapper included.
    pub pinned_tokens: u32,
    /// Loaded tools.
    pub loaded_items: u32,
    /// Tokens of the loaded tools.
    pub loaded_tokens: u32,
    /// `deferral.max_loaded`.
    pub max_loaded: u32,
    /// `deferral.max_loaded_tokens`.
    pub max_loaded_tokens: u32,
}

impl<'a> SessionRoster<'a> {
    fn new(live: &'a Live, plan: &'a Plan<'a>) -> Self {
        let catalog = &live.catalog;
        let mut roster: Vec<RosterEntry<'a>> =
            plan.roster.iter().map(|&i| plan.roster_entry(i)).collect();
        for tool in &live.doc.loaded {
            if let Some(i) = catalog.find(&tool.name) {
                let mut entry = plan.roster_entry(i);
                entry.code = Code::Loaded;
                roster.push(entry);
            }
        }
        let deferred = plan
            .deferred
            .iter()
            .copied()
            .filter(|&i| !live.is_loaded(&catalog.candidates[i].name))
            .map(|i| UnloadedTool {
                name: &catalog.candidates[i].name,
                code: plan.decisions[i].code,
                tokens: catalog.candidates[i].tokens,
            })
            .collect();
        SessionRoster {
            format_version: plan::FORMAT_VERSION,
            agent: &live.doc.agent,
            encoding: &live.doc.encoding,
            control_tool: live.doc.control_tool.as_deref(),
            fingerprint: &live.doc.fingerprint,
            roster,
            deferred,
            totals: SessionTotals {
                pinned_items: plan.totals.items,
                pinned_tokens: plan.totals.tokens,
                loaded_items: live.doc.loaded.len() as u32,
                loaded_tokens: live.doc.loaded.iter().map(|t| t.tokens).sum(),
                max_loaded: catalog.deferral_policy.max_loaded,
                max_loaded_tokens: catalog.deferral_policy.max_loaded_tokens,
            },
        }
    }
}
