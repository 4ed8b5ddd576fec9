//! The machine answer of every verb: the JSON text `muster … --format json`
//! prints and `muster serve` returns, and what the answer means for the
//! caller (done, failed, pin mismatch). The CLI and the service both call
//! these functions, so their bodies are the same bytes by construction.
//!
//! This module picks what to serialize and how a verb's result maps to an
//! [`Outcome`]; it decides nothing the verbs below it decide, reads no file
//! and never prints. Exit codes and HTTP statuses are the callers' mapping
//! of [`Outcome`].

use crate::catalog::{Catalog, Selection};
use crate::check::{self, CheckOptions, OfferedPlan, Report, Turn, Verdict};
use crate::contract::{Explanation, PLAN_CHANGED_FORMAT_VERSION, PlanChanged, PlanChangedCode};
use crate::contract::{LoadAnswer, LoadStatus, ResumeReport, ResumeStatus, SessionDocument};
use crate::error::code;
use crate::error::{Error, ErrorKind};
use crate::explain;
use crate::gate::{self, Gate, GateResult};
use crate::plan;
use crate::policy::Inputs;
use crate::provider::shape::Format;
use crate::session::{self, Live, LoadRequest, Opened};
use crate::tokens::TokenCache;
use serde::Serialize;
use std::path::Path;

mod verified;
pub use verified::offered_from_policy;

/// Pretty JSON with a trailing newline: the one way muster renders a
/// machine answer.
pub fn json_text<T: Serialize>(value: &T) -> String {
    session::json_text(value)
}

/// What an answer means for whoever asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The verb did what was asked (a plan, a passing gate, a turn that may
    /// run, a load that loaded or had nothing to do).
    Done,
    /// The verb answered, and the answer is a refusal: a gate failed, a
    /// turn was refused, a load was refused.
    Failed,
    /// The session's pin no longer holds (the answer is the resume report
    /// and the session was not served), or the plan a check named by its
    /// fingerprint is not the one the policy makes now ([`PlanChanged`]).
    PinMismatch,
}

/// One verb's answer: the JSON text and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Pretty JSON with a trailing newline (JSON lines for a search of many
    /// queries).
    pub json: String,
    /// What the answer means.
    pub outcome: Outcome,
}

impl Answer {
    fn new(json: String, outcome: Outcome) -> Self {
        Self { json, outcome }
    }

    /// A counted request: always done.
    pub fn of_count(report: &crate::contract::CountReport) -> Self {
        Self::new(json_text(report), Outcome::Done)
    }

    /// A gate run: failed when any gate failed.
    pub fn of_gates(results: &[GateResult]) -> Self {
        let passed = results.iter().all(|r| r.passed);
        Self::new(
            json_text(&results),
            if passed {
                Outcome::Done
            } else {
                Outcome::Failed
            },
        )
    }

    /// A checked turn: failed when the turn was refused.
    pub fn of_check(report: &Report<'_>) -> Self {
        Self::new(
            json_text(report),
            match report.verdict {
                Verdict::Run => Outcome::Done,
                Verdict::Refused => Outcome::Failed,
            },
        )
    }

    /// A resume report: a pin mismatch unless the pin holds.
    pub fn of_resume(report: &ResumeReport) -> Self {
        Self::new(
            json_text(report),
            match report.status {
                ResumeStatus::Ok => Outcome::Done,
                ResumeStatus::ToolPinMismatch => Outcome::PinMismatch,
            },
        )
    }

    /// A check refused unjudged because the named plan is not the one the
    /// policy makes now.
    pub fn of_plan_changed(changed: &PlanChanged) -> Self {
        Self::new(json_text(changed), Outcome::PinMismatch)
    }

    /// A load: failed when it was refused.
    pub fn of_load(answer: &LoadAnswer) -> Self {
        Self::new(
            json_text(answer),
            match answer.status {
                LoadStatus::Refused => Outcome::Failed,
                LoadStatus::Loaded | LoadStatus::Unchanged | LoadStatus::Choose => Outcome::Done,
            },
        )
    }
}

/// Which roster to plan, with what-if caps: the options `plan`, `why` and
/// `session new` share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Select {
    /// Agent, version, flag profile and extra flags.
    pub selection: Selection,
    /// A different item cap.
    pub item_cap: Option<u32>,
    /// A different token cap.
    pub token_cap: Option<u32>,
}

/// `plan --format json`.
///
/// # Errors
/// [`ErrorKind::Usage`] when the selection names an agent, version or flag
/// profile the policy does not have.
pub fn plan(inputs: &Inputs, select: &Select, cache: &mut TokenCache) -> Result<Answer, Error> {
    plan_for_model(inputs, select, None, cache)
}

/// `plan --format json --model NAME`: the plan with its `context` share
/// stated against `model` (`None`: the provider's default).
///
/// # Errors
/// As [`plan`]; [`ErrorKind::Usage`] for a model muster does not know.
pub fn plan_for_model(
    inputs: &Inputs,
    select: &Select,
    model: Option<&str>,
    cache: &mut TokenCache,
) -> Result<Answer, Error> {
    let catalog = Catalog::build_cached(inputs, &select.selection, cache)?;
    let caps = catalog
        .caps
        .with_overrides(select.item_cap, select.token_cap);
    Ok(Answer::new(
        plan::plan_counted(&catalog, caps, cache).to_json_string_for(model)?,
        Outcome::Done,
    ))
}

/// `plan --format openai|openai-responses|anthropic`: the `tools` value
/// that provider's request takes.
///
/// # Errors
/// As [`plan`].
pub fn plan_tools(
    inputs: &Inputs,
    select: &Select,
    format: Format,
    cache: &mut TokenCache,
) -> Result<Answer, Error> {
    let catalog = Catalog::build_cached(inputs, &select.selection, cache)?;
    let caps = catalog
        .caps
        .with_overrides(select.item_cap, select.token_cap);
    Ok(Answer::new(
        plan::plan_counted(&catalog, caps, cache).provider_tools(format),
        Outcome::Done,
    ))
}

/// `why TOOL`: the explanation. A name no policy registers is answered
/// (status `unknown`, with the closest names), not refused.
///
/// # Errors
/// As [`plan`].
pub fn explain(
    inputs: &Inputs,
    select: &Select,
    tool: &str,
    cache: &mut TokenCache,
) -> Result<Explanation, Error> {
    let catalog = Catalog::build_cached(inputs, &select.selection, cache)?;
    let caps = catalog
        .caps
        .with_overrides(select.item_cap, select.token_cap);
    Ok(explain::why(
        &plan::plan_counted(&catalog, caps, cache),
        tool,
    ))
}

/// `why TOOL --format json`.
///
/// # Errors
/// As [`plan`].
pub fn why(
    inputs: &Inputs,
    select: &Select,
    tool: &str,
    cache: &mut TokenCache,
) -> Result<Answer, Error> {
    Ok(Answer::new(
        json_text(&explain(inputs, select, tool, cache)?),
        Outcome::Done,
    ))
}

/// Runs every gate, collecting every gate's problems before failing.
///
/// # Errors
/// [`ErrorKind::Input`] (or the kind of the first problem's error) with the
/// problems of every gate that could not run: tools no policy registers,
/// unknown agents or profiles.
pub fn gates(
    inputs: &Inputs,
    gates: &[Gate],
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
) -> Result<Vec<GateResult>, Error> {
    Ok(gates_until(inputs, gates, caps, cache, &mut || false)?.unwrap_or_default())
}

/// [`gates`] that asks `stop` before each gate and gives up, `Ok(None)`,
/// the first time it says yes.
///
/// # Errors
/// As [`gates`].
pub fn gates_until(
    inputs: &Inputs,
    gates: &[Gate],
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
    stop: &mut dyn FnMut() -> bool,
) -> Result<Option<Vec<GateResult>>, Error> {
    let mut results = Vec::new();
    let mut problems = Vec::new();
    for g in gates {
        if stop() {
            return Ok(None);
        }
        match gate::run_cached(inputs, g, caps, cache) {
            Ok(result) => results.push(result),
            Err(err) => problems.extend(err.problems().iter().cloned()),
        }
    }
    if problems.is_empty() {
        Ok(Some(results))
    } else {
        Err(Error::many(ErrorKind::Input, problems))
    }
}

/// Opens a session document against `inputs`: the live session, or the
/// resume report every verb answers instead when the pin no longer holds
/// (render it with [`Answer::of_resume`]).
///
/// # Errors
/// As [`session::open`].
pub fn open(
    inputs: &Inputs,
    doc: SessionDocument,
    keys: &session::SessionKeys,
    file: &Path,
    cache: &mut TokenCache,
) -> Result<Result<Live, ResumeReport>, Error> {
    Ok(match session::open(inputs, doc, keys, file, cache)? {
        Opened::Live(live) => Ok(*live),
        Opened::Mismatch(report) => Err(report),
    })
}

/// What a turn is checked against.
#[derive(Debug, Clone, Copy)]
pub enum Offer<'a> {
    /// The JSON `plan --format json` printed, and where it came from (for
    /// error messages).
    Plan {
        /// The plan's text.
        text: &'a str,
        /// Its file, or the request field it came in.
        file: &'a Path,
    },
    /// A live session: its pinned roster and loaded tools.
    Session {
        /// The session.
        live: &'a Live,
        /// Its file, or the request field it came in.
        file: &'a Path,
    },
}

/// The plan `offer` describes, ready to check turns against.
///
/// # Errors
/// [`ErrorKind::Input`] for a plan that cannot be read or judged.
pub fn offered(offer: Offer<'_>) -> Result<OfferedPlan, Error> {
    match offer {
        Offer::Plan { text, file } => OfferedPlan::from_json(text, file),
        // The session's offer has the plan's roster shape.
        Offer::Session { live, file } => OfferedPlan::from_json(&live.roster_json(), file),
    }
}

/// The plan the policy makes now for `select`, ready to check turns
/// against, when it is the plan the model was offered: its `fingerprint`
/// (the plan JSON's `fingerprint`) must match, or the answer is
/// [`PlanChanged`] and nothing is checked. This lets a caller name the plan
/// instead of sending it: any process with the same policy answers alike.
///
/// # Errors
/// [`ErrorKind::Usage`] for a fingerprint that is not `sha256:` and 64
/// lowercase hex digits, or a selection the policy does not have.
pub fn offered_now(
    inputs: &Inputs,
    select: &Select,
    fingerprint: &str,
    cache: &mut TokenCache,
) -> Result<Result<OfferedPlan, PlanChanged>, Error> {
    if crate::canon::parse_labelled_hex(fingerprint).is_none() {
        return Err(Error::new(
            ErrorKind::Usage,
            crate::error::Problem::coded(code::INVALID_FINGERPRINT, format!(
                "fingerprint {fingerprint:?} is not `sha256:` and 64 lowercase hex digits"
            ))
            .in_file("fingerprint")
            .help("give the `fingerprint` of the plan the model was offered, as `plan --format json` printed it"),
        ));
    }
    let catalog = Catalog::build_cached(inputs, &select.selection, cache)?;
    let caps = catalog
        .caps
        .with_overrides(select.item_cap, select.token_cap);
    let planned = plan::plan_counted(&catalog, caps, cache);
    let now = planned.fingerprint();
    if now != fingerprint {
        return Ok(Err(PlanChanged {
            code: PlanChangedCode::PlanChanged,
            format_version: PLAN_CHANGED_FORMAT_VERSION,
            offered: fingerprint.to_string(),
            now,
        }));
    }
    OfferedPlan::from_json(&planned.to_json_string(), Path::new("plan")).map(Ok)
}

/// `check`: reads the turn and checks it against what was offered.
///
/// # Errors
/// [`ErrorKind::Input`] for a turn that cannot be read.
pub fn check(
    offered: &OfferedPlan,
    turn: &str,
    turn_file: &Path,
    options: &CheckOptions,
) -> Result<Report<'static>, Error> {
    let turn = Turn::from_json(turn, turn_file)?;
    Ok(check::check_turn(offered, &turn, options).into_owned())
}

/// [`check`] that asks `stop` before each call and gives up, `Ok(None)`,
/// once it says yes (see [`check::check_turn_until`]).
///
/// # Errors
/// As [`check`].
pub fn check_until(
    offered: &OfferedPlan,
    turn: &str,
    turn_file: &Path,
    options: &CheckOptions,
    stop: &mut dyn FnMut() -> bool,
) -> Result<Option<Report<'static>>, Error> {
    let turn = Turn::from_json(turn, turn_file)?;
    Ok(check::check_turn_until(offered, &turn, options, stop).map(Report::into_owned))
}

/// `session search --queries`: one compact JSON line of results per query,
/// in order.
pub fn search_lines<'q>(
    live: &Live,
    queries: impl IntoIterator<Item = &'q str>,
    limit: usize,
) -> String {
    search_lines_until(live, queries, limit, &mut || false).unwrap_or_default()
}

/// [`search_lines`] that asks `stop` before each query and gives up,
/// `None`, the first time it says yes: the service's says yes once the
/// request has been answered (the timeout's 503) or dropped, so the work
/// stops with it.
pub fn search_lines_until<'q>(
    live: &Live,
    queries: impl IntoIterator<Item = &'q str>,
    limit: usize,
    stop: &mut dyn FnMut() -> bool,
) -> Option<String> {
    let mut out = String::new();
    for query in queries {
        if stop() {
            return None;
        }
        let results = live.search(query, limit);
        out.push_str(&serde_json::to_string(&results).unwrap_or_default());
        out.push('\n');
    }
    Some(out)
}

/// A load and the document it leaves: what the service answers for
/// `session load`, since it keeps no copy of the document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct SessionLoad {
    /// The control tool's answer, as `session load --format json` prints it.
    pub answer: LoadAnswer,
    /// The session document after the load, as `session load` writes it
    /// (unchanged unless `answer.status` is `loaded`).
    pub session: SessionDocument,
}

/// `session load` without a file: loads into `live` and returns the answer
/// with the document it leaves.
pub fn load(mut live: Live, request: &LoadRequest) -> SessionLoad {
    let answer = live.load(request);
    SessionLoad {
        answer,
        session: live.into_document(),
    }
}
