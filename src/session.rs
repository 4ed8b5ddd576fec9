//! Agent sessions: the roster a chat was created with, pinned in a
//! document the host stores, and the deferred tools loaded into it since.
//!
//! muster keeps no state: [`new`] plans and returns the document; every
//! later call takes the document back, rebuilds the pinned selection (agent
//! version, flags, caps) from the current policies and first checks that
//! every pinned definition is still what the session was given. A session
//! whose pin no longer holds is answered with a [`ResumeReport`] naming each
//! change and is never served or rewritten. Loading appends, bounded by the
//! policy's `[deferral]` limits, so every definition the model has seen
//! stays byte-identical; only a load that would not fit replaces the
//! earliest loads (docs/session.md, "Replacing loads").
//!
//! This module decides what can be found and loaded; it never prints,
//! never writes files and never decides a placement (the planner does).

use crate::canon;
use crate::catalog::{Catalog, Selection};
use crate::contract::{
    FingerprintPair, NameSpelling, PinChange, PinnedAgent, PinnedCaps, PinnedSelection, PinnedSet,
    PinnedTool, ResumeReport, ResumeStatus, SESSION_FORMAT_VERSION, SearchResult, SearchResults,
    SessionDocument,
};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::plan::{self, Plan};
use crate::policy::{Caps, Inputs};
use crate::search::{self, DeferredEntry, DeferredIndex};
use crate::tokens::TokenCache;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Most results one search returns.
pub const MAX_RESULTS: usize = 10;

/// How a new session is pinned, beyond the selection.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// A different item cap and token cap.
    pub caps: (Option<u32>, Option<u32>),
    /// How the model is given tool names.
    pub names: NameSpelling,
    /// The id a session store keeps it under.
    pub id: Option<String>,
}

/// Plans `selection` and pins the result, taking token counts from `cache`
/// and adding those it lacked; the document is signed with `keys`' first
/// key when there is one.
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
/// let keys = session::SessionKeys::none();
/// let doc = session::new(&inputs, &Selection::default(), &Default::default(), &keys, &mut cache)?;
/// assert_eq!(doc.loaded.len(), 0);
/// # Ok::<(), muster::Error>(())
/// ```
pub fn new(
    inputs: &Inputs,
    selection: &Selection,
    options: &NewSession,
    keys: &SessionKeys,
    cache: &mut TokenCache,
) -> Result<SessionDocument, Error> {
    let catalog = Catalog::build_cached(inputs, selection, cache)?;
    let caps = catalog.caps.with_overrides(options.caps.0, options.caps.1);
    let plan = plan::plan_counted(&catalog, caps, cache);
    let mut doc = SessionDocument {
        format_version: SESSION_FORMAT_VERSION,
        id: options.id.clone(),
        revision: 0,
        agent: PinnedAgent {
            name: catalog.agent.clone(),
            version: catalog.agent_version,
        },
        selection: PinnedSelection {
            profile: selection.profile.clone(),
            flags: catalog.flags.clone(),
            mcp_only: selection.mcp_only,
        },
        provider: catalog.provider,
        names: options.names,
        encoding: catalog.encoding.name().to_string(),
        caps: PinnedCaps {
            items: caps.items,
            tokens: caps.tokens,
        },
        fingerprint: plan.fingerprint(),
        roster: plan.roster.iter().map(|&i| pinned(&plan, i)).collect(),
        deferred: deferred_pin(&plan),
        loaded: Vec::new(),
        repinned: None,
        owner: None,
        signature: None,
    };
    keys.sign(&mut doc);
    Ok(doc)
}

fn pinned(plan: &Plan<'_>, i: usize) -> PinnedTool {
    PinnedTool {
        name: plan.catalog.candidates[i].name.clone(),
        digest: short(&plan.definition_hash(i)),
        parts: parts(plan, i),
    }
}

/// The first 16 hex digits of a definition hash: enough to tell which
/// tool changed once the fingerprint says one did.
fn short(hash: &[u8; 32]) -> String {
    canon::hex(&hash[..8])
}

/// The first 8 hex digits of each part's hash, joined by `.`.
fn parts(plan: &Plan<'_>, i: usize) -> String {
    let c = &plan.catalog.candidates[i];
    let hash = |value: &Value| canon::digest(value);
    [
        hash(&Value::String(plan.description(i).to_string())),
        c.input_schema.digest(),
        hash(&serde_json::json!(c.call.fixed)),
        hash(&serde_json::json!(c.call.only)),
    ]
    .iter()
    .map(|d| canon::hex(&d[..4]))
    .collect::<Vec<_>>()
    .join(".")
}

/// [`parts`] of a deferred tool (whose description is its own: only the
/// control tool's is the plan's), without a plan.
fn deferred_parts(catalog: &Catalog, i: usize) -> String {
    let c = &catalog.candidates[i];
    [
        canon::digest(&Value::String(c.description.clone())),
        c.input_schema.digest(),
        canon::digest(&serde_json::json!(c.call.fixed)),
        canon::digest(&serde_json::json!(c.call.only)),
    ]
    .iter()
    .map(|d| canon::hex(&d[..4]))
    .collect::<Vec<_>>()
    .join(".")
}

/// Every deferred tool's name and full definition hash, in rank order, as
/// one digest.
fn deferred_pin(plan: &Plan<'_>) -> PinnedSet {
    let mut hasher = Sha256::new();
    hasher.update(b"muster-deferred-v1\0");
    for &i in &plan.deferred {
        hasher.update(plan.catalog.candidates[i].name.as_bytes());
        hasher.update(b"\0");
        hasher.update(plan.definition_hash(i));
    }
    PinnedSet {
        count: plan.deferred.len() as u32,
        digest: canon::labelled_hex(&hasher.finalize()),
    }
}

/// What the current policies give one pinned selection (agent, version,
/// flags, provider, caps), built once per read of the policies and shared
/// by every session of that selection: the catalog, what the pin is
/// compared with, and the index the control tool searches. A batch of
/// searches or a service generation builds it once, not once per query
/// (issue 22: it was rebuilt, plan and index, for every query).
#[derive(Debug)]
pub struct Basis {
    catalog: Catalog,
    caps: Caps,
    /// The control tool's offer, counted once through the token-count
    /// cache, so each [`Live::plan`] builds no tokenizer.
    control: Option<plan::Offered>,
    /// The plan's fingerprint, roster pins and deferred pin.
    fingerprint: String,
    roster: Vec<PinnedTool>,
    deferred_pin: PinnedSet,
    /// Deferred candidates by name.
    deferred: HashMap<String, usize>,
    /// Items and tokens the plan offers before any load.
    totals: (u32, u32),
    /// Whether the plan offers the control tool.
    has_control: bool,
    /// The deferred candidates in rank order.
    ranked: Vec<usize>,
    /// The offered candidates but the control tool, in roster order.
    offered: Vec<usize>,
    /// Built at the first search or load, so verbs that do neither
    /// (`roster`, `check --session`) never pay for it.
    index: OnceLock<DeferredIndex>,
    /// The offered tools' index, built at the first load in words.
    offered_index: OnceLock<DeferredIndex>,
    /// Every candidate's and kind's name, and each candidate's provider
    /// name, → the name muster gives it (see [`Live::muster_name`]).
    spellings: HashMap<String, Spelling>,
}

/// What a name written by a model or a host means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// A candidate's muster name.
    Candidate(usize),
    /// A kind's name.
    Kind(usize),
    /// A candidate's provider name (a live one wins over an excluded one).
    Provider(usize),
}

impl Basis {
    /// Builds the catalog of `doc`'s pinned selection from `inputs` and
    /// plans it under the pinned caps, taking token counts from `cache`.
    /// `None` when the policy no longer has the pinned agent version (the
    /// session is a mismatch, not an error).
    ///
    /// # Errors
    /// A catalog that cannot be built at all.
    pub fn build(
        inputs: &Inputs,
        doc: &SessionDocument,
        cache: &mut TokenCache,
    ) -> Result<Option<Basis>, Error> {
        let selection = Selection {
            agent: Some(doc.agent.name.clone()),
            version: Some(doc.agent.version),
            profile: None,
            flags: doc.selection.flags.clone(),
            provider: Some(doc.provider),
            mcp_only: doc.selection.mcp_only,
        };
        if inputs
            .policy
            .agent(selection.agent.as_deref(), selection.version)
            .is_none()
        {
            return Ok(None);
        }
        let catalog = Catalog::build_cached(inputs, &selection, cache)?;
        let caps = Caps {
            items: doc.caps.items,
            tokens: doc.caps.tokens,
        };
        let control = plan::control_offered(&catalog, caps, cache);
        Ok(Some(Basis::of(catalog, caps, control)))
    }

    fn of(catalog: Catalog, caps: Caps, control: Option<plan::Offered>) -> Basis {
        let planned = plan::plan_offered(&catalog, caps, control.as_ref());
        let fingerprint = planned.fingerprint();
        let roster = planned
            .roster
            .iter()
            .map(|&i| pinned(&planned, i))
            .collect();
        let deferred_pin = deferred_pin(&planned);
        let deferred = planned
            .deferred
            .iter()
            .map(|&i| (catalog.candidates[i].name.clone(), i))
            .collect();
        let totals = (planned.totals.items, planned.totals.tokens);
        let has_control = planned.control.is_some();
        let ranked = planned.deferred.clone();
        let offered = planned.offered_tools();
        drop(planned);
        let mut spellings = HashMap::new();
        // Later inserts never replace earlier ones: a muster name wins over
        // a kind's, and both over a provider spelling.
        for (i, c) in catalog.candidates.iter().enumerate() {
            spellings
                .entry(c.name.clone())
                .or_insert(Spelling::Candidate(i));
        }
        for (k, kind) in catalog.kinds.iter().enumerate() {
            spellings
                .entry(kind.name.clone())
                .or_insert(Spelling::Kind(k));
        }
        for (i, c) in catalog.candidates.iter().enumerate() {
            if c.exclusion.is_none() {
                spellings
                    .entry(c.provider_name.clone())
                    .or_insert(Spelling::Provider(i));
            }
        }
        for (i, c) in catalog.candidates.iter().enumerate() {
            spellings
                .entry(c.provider_name.clone())
                .or_insert(Spelling::Provider(i));
        }
        for (k, kind) in catalog.kinds.iter().enumerate() {
            spellings
                .entry(crate::provider::spell(&kind.name, &catalog.names).name)
                .or_insert(Spelling::Kind(k));
        }
        Basis {
            catalog,
            caps,
            control,
            fingerprint,
            roster,
            deferred_pin,
            deferred,
            totals,
            has_control,
            ranked,
            offered,
            index: OnceLock::new(),
            offered_index: OnceLock::new(),
            spellings,
        }
    }

    /// The bytes that decide a basis, besides the policies: what a service
    /// keys its per-generation memo of bases by.
    pub fn key(doc: &SessionDocument) -> Vec<u8> {
        serde_json::to_vec(&(
            &doc.agent.name,
            doc.agent.version,
            &doc.selection.flags,
            doc.provider,
            doc.caps.items,
            doc.caps.tokens,
            doc.selection.mcp_only,
        ))
        .unwrap_or_default()
    }

    /// About how many bytes it holds: its tools' text, several times over
    /// (the catalog, the index's words and postings).
    pub fn cost(&self) -> usize {
        self.catalog
            .candidates
            .iter()
            .map(|c| 4 * (c.name.len() + c.description.len()) + 512)
            .sum()
    }

    /// The index the control tool searches: the deferred tools.
    fn index(&self) -> &DeferredIndex {
        self.index
            .get_or_init(|| DeferredIndex::of(&self.catalog, &self.ranked))
    }

    /// What a load in words searches: the deferred tools and, apart, the
    /// offered ones.
    fn reach(&self) -> load::Reach<'_> {
        load::Reach {
            deferred: self.index(),
            offered: self
                .offered_index
                .get_or_init(|| DeferredIndex::offered(&self.catalog, &self.offered)),
        }
    }

    /// Whether a candidate or a kind has this name.
    fn known(&self, name: &str) -> bool {
        matches!(
            self.spellings.get(name),
            Some(Spelling::Candidate(_) | Spelling::Kind(_))
        )
    }
}

/// A session whose pin holds: ready to search, load and offer.
#[derive(Debug)]
pub struct Live {
    basis: Arc<Basis>,
    doc: SessionDocument,
    keys: SessionKeys,
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
/// As [`open`].
pub fn resume(
    inputs: &Inputs,
    doc: &SessionDocument,
    keys: &SessionKeys,
    file: &Path,
    cache: &mut TokenCache,
) -> Result<ResumeReport, Error> {
    Ok(match open(inputs, doc.clone(), keys, file, cache)? {
        Opened::Live(live) => live.report(Vec::new()),
        Opened::Mismatch(report) => report,
    })
}

/// Opens `doc` against the current policies: checks its signature with
/// `keys`, rebuilds the pinned selection and compares the pin with it, and
/// when the pin holds re-checks every load the document claims against
/// the policy's bounds. `file` names the document in errors.
///
/// # Errors
/// [`ErrorKind::Session`] for a document muster did not write as it
/// stands (see [`SessionKeys::verify`] and the load checks); a catalog
/// that cannot be built at all. A missing agent version is a mismatch, not
/// an error.
pub fn open(
    inputs: &Inputs,
    doc: SessionDocument,
    keys: &SessionKeys,
    file: &Path,
    cache: &mut TokenCache,
) -> Result<Opened, Error> {
    keys.verify(&doc, file)?;
    match Basis::build(inputs, &doc, cache)? {
        Some(basis) => open_on(Arc::new(basis), doc, keys, file),
        None => Ok(Opened::Mismatch(agent_removed(&doc))),
    }
}

/// [`open`] on a basis already built for `doc`'s selection
/// ([`Basis::build`], kept under [`Basis::key`]): what a service does so
/// each request builds neither the catalog, the plan nor the index again.
///
/// # Errors
/// As [`open`].
pub fn open_on(
    basis: Arc<Basis>,
    doc: SessionDocument,
    keys: &SessionKeys,
    file: &Path,
) -> Result<Opened, Error> {
    keys.verify(&doc, file)?;
    let live = Live {
        basis,
        doc,
        keys: keys.clone(),
    };
    let changes = live.changes();
    if !changes.is_empty() {
        return Ok(Opened::Mismatch(live.report(changes)));
    }
    live.check_loads(file)?;
    Ok(Opened::Live(Box::new(live)))
}

/// The report for a session whose agent version the policy no longer has.
pub fn agent_removed(doc: &SessionDocument) -> ResumeReport {
    ResumeReport {
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
    }
}

impl Live {
    /// The plan the session was pinned to, rebuilt.
    pub fn plan(&self) -> Plan<'_> {
        let b = &self.basis;
        plan::plan_offered(&b.catalog, b.caps, b.control.as_ref())
    }

    /// The session document as it stands.
    pub fn document(&self) -> &SessionDocument {
        &self.doc
    }

    /// The session document, consumed: signed again when it changed.
    pub fn into_document(self) -> SessionDocument {
        self.doc
    }

    /// How many tools are loaded.
    pub fn loaded_len(&self) -> usize {
        self.doc.loaded.len()
    }

    /// Every claim the fingerprint does not cover, checked against the
    /// rebuilt plan and the policy's bounds: the roster's digests, and
    /// every load: each a tool deferred at the pin (the
    /// deferred digest matched, so the plan's deferred tools are the
    /// pinned ones), loaded once, with the definition it has now, at a
    /// revision after the one before and no later than the document's;
    /// together within `max_loaded` and `max_loaded_tokens` as counted now.
    /// Tokens are never taken from the document.
    fn check_loads(&self, file: &Path) -> Result<(), Error> {
        let basis = &*self.basis;
        let catalog = &basis.catalog;
        let policy = &catalog.deferral_policy;
        let mut problems = Vec::new();
        let mut problem = |message: String| {
            problems.push(Problem::coded(code::SESSION_TAMPERED, message).in_file(file).help(
                "give the document exactly as muster last returned it, or start a new session",
            ));
        };
        // The fingerprint matched, so the roster is the pinned one: the
        // document's per-tool digests must say so too.
        if basis.roster != self.doc.roster {
            problem(
                "the roster's names or digests are not the ones its fingerprint pins".to_string(),
            );
        }
        let mut seen = BTreeMap::new();
        let mut tokens: u64 = 0;
        let mut last = 0;
        for tool in &self.doc.loaded {
            match basis.deferred.get(tool.name.as_str()) {
                None => problem(format!(
                    "loaded names {:?}, which the session did not defer",
                    tool.name
                )),
                Some(&i) => {
                    if tool.digest != short(&catalog.candidates[i].definition_hash) {
                        problem(format!(
                            "loaded tool {:?} claims a definition (digest {}) the pinned policy does not give it",
                            tool.name, tool.digest
                        ));
                    }
                    tokens += u64::from(catalog.candidates[i].tokens);
                }
            }
            if seen.insert(tool.name.as_str(), ()).is_some() {
                problem(format!("loaded names {:?} a second time", tool.name));
            }
            // One load makes one revision: the tools it loaded share it,
            // and later loads' come after (a load that replaced earlier
            // ones leaves gaps).
            if tool.revision < last || tool.revision == 0 {
                problem(format!(
                    "loaded tool {:?} claims revision {}, after a load at revision {last}",
                    tool.name, tool.revision
                ));
            }
            last = tool.revision;
        }
        if self.doc.loaded.len() > policy.max_loaded as usize {
            problem(format!(
                "{} tools are loaded; deferral.max_loaded allows {}",
                self.doc.loaded.len(),
                policy.max_loaded
            ));
        }
        if tokens > u64::from(policy.max_loaded_tokens) {
            problem(format!(
                "the loaded tools cost {tokens} tokens; deferral.max_loaded_tokens allows {}",
                policy.max_loaded_tokens
            ));
        }
        // And the offer after loads within what `deferral.loads` allows.
        let (item_limit, token_limit) = policy.loads.limits(basis.caps);
        let offered = (
            u64::from(basis.totals.0) + self.doc.loaded.len() as u64,
            u64::from(basis.totals.1) + tokens,
        );
        for (what, offered, limit) in [
            ("items", offered.0, item_limit),
            ("tokens", offered.1, token_limit),
        ] {
            if let Some(limit) = limit
                && offered > u64::from(limit)
            {
                problem(format!(
                    "the offer after loads is {offered} {what}; deferral.loads allows {limit}"
                ));
            }
        }
        // Only a load or a re-pin makes a revision: the last of them made
        // the document's.
        if last.max(self.doc.repinned.unwrap_or(0)) != self.doc.revision {
            problem(format!(
                "the document is at revision {}, and its last load made revision {last}",
                self.doc.revision
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::many(ErrorKind::Session, problems))
        }
    }

    fn is_loaded(&self, name: &str) -> bool {
        self.doc.loaded.iter().any(|t| t.name == name)
    }

    /// The best matches for `query` among the deferred tools, at most
    /// `limit` (and never more than [`MAX_RESULTS`]). Changes nothing.
    pub fn search(&self, query: &str, limit: usize) -> SearchResults {
        let index = self.basis.index();
        // A provider name is searched as the tool or kind it was made from.
        let name = self.muster_name(query.trim());
        let text = if self.basis.known(&name) {
            name.as_str()
        } else {
            query
        };
        let results = index
            .search(text, limit.min(MAX_RESULTS))
            .into_iter()
            .map(|hit| self.result(&index.entries[hit.entry], hit.score))
            .collect();
        SearchResults {
            query: query.to_string(),
            results,
        }
    }

    fn result(&self, entry: &DeferredEntry, score: f64) -> SearchResult {
        let tools: Vec<String> = entry
            .tools
            .iter()
            .map(|&i| self.basis.catalog.candidates[i].name.clone())
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
mod repin;
mod roster;
mod seal;

pub(crate) use document::json_text;
pub use document::{is_session_id, read, to_json_string};
pub(crate) use load::{Decision, Reach, decide, relevant};
pub use load::{LoadRequest, MAX_KINDS, MAX_LOAD_NAMES};
pub use repin::{Repinned, repin};
pub use roster::{SessionRoster, SessionTotals, UnloadedTool};
pub use seal::SessionKeys;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::deferred_indexes_built;
    use crate::tokens::tokenizer_asked;

    fn production() -> (Inputs, Selection) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let mut inputs = Inputs::load(&root).expect("bundled policies load");
        inputs.policy.deferral.enabled = true;
        let selection = Selection {
            profile: Some("production".into()),
            ..Selection::default()
        };
        (inputs, selection)
    }

    /// Issue 22 item 3: every search built the plan and the deferred index
    /// again (~20 ms a query over 199 tools, seconds over 4,000). A session
    /// read once builds the index once, at its first search, however many
    /// searches and loads follow; verbs that neither search nor load never
    /// build it.
    #[test]
    fn a_session_read_once_builds_its_index_once() {
        let (inputs, selection) = production();
        let keys = SessionKeys::none();
        let mut cache = TokenCache::in_memory();
        let doc = new(
            &inputs,
            &selection,
            &NewSession::default(),
            &keys,
            &mut cache,
        )
        .unwrap();
        let file = Path::new("s.json");
        let before = deferred_indexes_built();
        let Opened::Live(mut live) = open(&inputs, doc.clone(), &keys, file, &mut cache).unwrap()
        else {
            panic!("the pin holds");
        };
        let _ = live.roster_json();
        assert_eq!(deferred_indexes_built(), before, "opening built the index");
        let first = live.search("email", 5);
        for query in ["list my emails", "get a thread", "labels", "email"] {
            live.search(query, 5);
        }
        live.load(&LoadRequest::Query("email labels".into()));
        live.load(&LoadRequest::Query("list my emails".into()));
        // Two indexes, each once: the deferred tools' and, for loads in
        // words, the offered tools'.
        assert_eq!(deferred_indexes_built(), before + 2);
        // The same results a basis built afresh gives.
        let Opened::Live(fresh) = open(&inputs, doc, &keys, file, &mut cache).unwrap() else {
            panic!("the pin holds");
        };
        assert_eq!(fresh.search("email", 5), first);
    }

    /// Issue 19 item 7: every session verb opens the document and plans
    /// again; with deferral on that counted the control tool's summary
    /// afresh, building the tokenizer on a count-cache hit.
    #[test]
    fn a_session_opened_on_a_warm_cache_builds_no_tokenizer() {
        let (inputs, selection) = production();
        let keys = SessionKeys::none();
        let mut cache = TokenCache::in_memory();
        let doc = new(
            &inputs,
            &selection,
            &NewSession::default(),
            &keys,
            &mut cache,
        )
        .unwrap();
        let file = Path::new("s.json");
        let asked = tokenizer_asked();
        let Opened::Live(live) = open(&inputs, doc.clone(), &keys, file, &mut cache).unwrap()
        else {
            panic!("the pin holds");
        };
        let roster = live.roster_json();
        assert!(live.plan().control.is_some(), "deferral is on");
        assert_eq!(
            tokenizer_asked(),
            asked,
            "a warm open asked for the tokenizer"
        );
        // The same roster as a session opened with nothing cached.
        let Opened::Live(fresh) =
            open(&inputs, doc, &keys, file, &mut TokenCache::in_memory()).unwrap()
        else {
            panic!("the pin holds");
        };
        assert_eq!(fresh.roster_json(), roster);
    }
}
