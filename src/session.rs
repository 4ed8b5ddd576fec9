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
use crate::contract::{
    DefinitionParts, FingerprintPair, PinChange, PinnedAgent, PinnedCaps, PinnedSelection,
    PinnedTool, ResumeReport, ResumeStatus, SESSION_FORMAT_VERSION, SearchResult, SearchResults,
    SessionDocument,
};
use crate::error::Error;
use crate::plan::{self, Plan};
use crate::policy::{Caps, Inputs};
use crate::search::{self, DeferredEntry, DeferredIndex};
use crate::tokens::TokenCache;
use serde_json::Value;

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
/// use muster::{catalog::Selection, policy::Inputs, session};
/// let inputs = Inputs::load("policies".as_ref())?;
/// let mut cache = muster::tokens::TokenCache::in_memory();
/// let doc = session::new(&inputs, &Selection::default(), (None, None), &mut cache)?;
/// assert_eq!(doc.loaded.len(), 0);
/// # Ok::<(), muster::Error>(())
/// ```
pub fn new(
    inputs: &Inputs,
    selection: &Selection,
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
) -> Result<SessionDocument, Error> {
    let catalog = Catalog::build_cached(inputs, selection, cache)?;
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
        input_schema: canon::labelled_hex(&c.input_schema.digest()),
        fixed: hash(&serde_json::json!(c.call.fixed)),
        only: hash(&serde_json::json!(c.call.only)),
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

/// Rebuilds the pinned selection from `inputs` and compares every pinned
/// and loaded definition with what it gives now. Never changes the
/// document.
///
/// # Errors
/// Only for a catalog that cannot be built at all; a missing agent version
/// is a mismatch, not an error.
pub fn resume(
    inputs: &Inputs,
    doc: &SessionDocument,
    cache: &mut TokenCache,
) -> Result<ResumeReport, Error> {
    Ok(match open(inputs, doc.clone(), cache)? {
        Opened::Live(live) => live.report(Vec::new()),
        Opened::Mismatch(report) => report,
    })
}

/// Opens `doc` against the current policies.
///
/// # Errors
/// As [`resume`].
pub fn open(
    inputs: &Inputs,
    doc: SessionDocument,
    cache: &mut TokenCache,
) -> Result<Opened, Error> {
    let selection = Selection {
        agent: Some(doc.agent.name.clone()),
        version: Some(doc.agent.version),
        profile: None,
        flags: doc.selection.flags.clone(),
    };
    if inputs
        .policy
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
    let catalog = Catalog::build_cached(inputs, &selection, cache)?;
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

    fn is_loaded(&self, name: &str) -> bool {
        self.doc.loaded.iter().any(|t| t.name == name)
    }

    /// The best matches for `query` among the deferred tools, at most
    /// `limit` (and never more than [`MAX_RESULTS`]). Changes nothing.
    pub fn search(&self, query: &str, limit: usize) -> SearchResults {
        let plan = self.plan();
        let index = DeferredIndex::new(&plan);
        // A provider name is searched as the tool or kind it was made from.
        let name = self.muster_name(query.trim());
        let text = if self.known(&name) {
            name.as_str()
        } else {
            query
        };
        let results = index
            .search(text, limit.min(MAX_RESULTS))
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
}

mod document;
mod load;
mod pin;
mod roster;

pub(crate) use document::json_text;
pub use document::{read, to_json_string};
pub use load::LoadRequest;
pub use roster::{SessionRoster, SessionTotals, UnloadedTool};
