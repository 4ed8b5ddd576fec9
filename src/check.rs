//! The call gateway: decides whether a turn's tool calls may run, and what each tool receives.
//!
//! Each call is repaired (JSON wrapped in a string is unwrapped), matched to the tool the model
//! was offered, narrowed (MCP `only` and fixed values) and checked against the offered schema;
//! one mismatch anywhere refuses the whole turn, so no call runs beside a refused sibling. For a
//! turn that may run it returns the arguments each tool should receive, cast to the declared
//! types where the tool's policy asks for it. It must not run, print or time anything, and it
//! must not refuse what a tool commonly reads after a cast or what it cannot judge (see
//! `docs/check.md`). It reads the plan, never the policy, and never reaches back up the chain.

mod arguments;
mod branches;
mod budget;
mod cast;
mod compiled;
mod deep;
mod digits;
mod edit;
mod expansion;
mod format;
mod narrow;
mod numbers;
mod offered;
mod path;
mod pattern;
mod positional;
mod quick;
mod repair;
mod schema;
mod strict;
mod turn;
mod ty;
mod wording;

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;

use crate::contract::{CallNote, CallProblem, CheckNote, CheckProblem, Got};
use serde_json::{Map, Value};

pub use crate::contract::UnknownArguments;
pub use budget::{MAX_CHECK_BRANCHES, MAX_CHECK_COPIES, MAX_CHECK_STEPS};
pub use expansion::MAX_SCHEMA_EXPANSION;
pub use offered::{DeferredTool, McpTool, OfferedPlan, OfferedTool, Parameter, Source};
pub use pattern::MAX_VALUE_STEPS;
pub use schema::MAX_PROBLEMS;
pub use turn::{Call, Turn, Unreadable};

use schema::{Context, Findings};
use strict::Strict;

pub use strict::Checker;
pub(crate) use strict::{compile_strict, output_findings};
pub(crate) use turn::without_bom;

/// How a turn is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Return the arguments of tools that declare `parameters` as a list in declared order
    /// (the positional form) instead of an object.
    pub positional: bool,
}

/// Whether a turn may run. Serialized as `"run"` or `"refused"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every call fits; run them all.
    Run,
    /// At least one call does not fit; run none.
    Refused,
}

/// What becomes of one call. Serialized as `"ok"`, `"refused"` or `"not-run"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema), schema(as = CallStatus))]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The call fits and may run with `arguments`.
    Ok,
    /// The call does not fit; its `problems` say why.
    Refused,
    /// The call fits but is not run because another call of the turn was refused.
    NotRun,
}

/// Why a call did not run. Serialized as `"arguments"` or `"turn"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// The call itself does not fit: an unknown tool or mismatched arguments.
    Arguments,
    /// Another call of the same turn was refused.
    Turn,
}

/// The answer for one call of the turn.
///
/// JSON fields, always all present:
/// - `id` (string): the call's id, as the turn gave it.
/// - `status` (string): `"ok"`, `"refused"` or `"not-run"`.
/// - `refusal` (string or null): `"arguments"` when the call is refused, `"turn"` when it is not
///   run because a sibling was refused, null when ok.
/// - `problems` (list of strings): one sentence each, naming the tool, the argument path, what
///   was expected and what came; at most [`MAX_PROBLEMS`] sentences in all: when there are
///   more problems, the first `MAX_PROBLEMS - 1` and one sentence counting the rest. Empty when
///   ok. A not-run call's one sentence names the first three refused calls (ids cut at 64
///   characters) and counts the rest, so the report stays linear in the turn.
/// - `arguments` (object, list or null): what the tool should receive, when ok: repaired,
///   narrowed and (where the tool's `coerce` is on) cast; a list in declared order for a tool
///   with `parameters` when checked with `positional`. Null unless ok.
/// - `notes` (list of objects): each repair or drop made, as a typed note (`{"code", "call",
///   ..., "message"}`, see [`CallNote`](crate::contract::CallNote)) naming the call and the
///   argument.
/// - `tool` (object or null): the offered tool the call's name resolved to, whichever
///   spelling it used: `name` (muster's), `provider_name`, and for a discovered tool `mcp`
///   (`server`, `tool`: where to forward it); null when the name is not offered.
#[derive(Debug, PartialEq)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct CallReport<'t> {
    /// The call's id.
    pub id: Cow<'t, str>,
    /// What becomes of the call.
    pub status: Status,
    /// Why the call does not run, when it does not.
    pub refusal: Option<Refusal>,
    /// What is wrong, as typed problems, each with its sentence.
    pub problems: Vec<CheckProblem>,
    /// What the tool receives, when the call is ok; borrowed from the turn when the call goes
    /// through exactly as sent.
    pub arguments: Option<Cow<'t, Value>>,
    /// Each repair or drop made, as typed notes, each with its sentence.
    pub notes: Vec<CheckNote>,
    /// The call's integers serde_json holds as doubles, written back as the model wrote them
    /// ([`Call`]'s `written`).
    #[cfg_attr(feature = "serve", schema(ignore))]
    written: Cow<'t, [(u64, Box<str>)]>,
    /// The offered tool the call resolved to.
    pub tool: Option<ResolvedTool>,
}

/// The members in the order documented above; `arguments` with every integer the model wrote
/// written back as it wrote it (`-0`, not `-0.0`; `18446744073709551616`, not
/// `1.8446744073709552e19`).
impl Serialize for CallReport<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut out = serializer.serialize_struct("CallReport", 7)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("status", &self.status)?;
        out.serialize_field("refusal", &self.refusal)?;
        out.serialize_field("problems", &self.problems)?;
        let arguments = self.arguments.as_deref().map(|value| numbers::AsWritten {
            value,
            written: &self.written,
        });
        out.serialize_field("arguments", &arguments)?;
        out.serialize_field("notes", &self.notes)?;
        out.serialize_field("tool", &self.tool)?;
        out.end()
    }
}

/// The offered tool a call's name resolved to: what a host needs to run or
/// forward it without another look-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct ResolvedTool {
    /// muster's name.
    pub name: String,
    /// The name providers are sent.
    pub provider_name: Option<String>,
    /// For a discovered tool, its server and its name there.
    pub mcp: Option<McpTool>,
}

impl Drop for CallReport<'_> {
    fn drop(&mut self) {
        if let Some(Cow::Owned(arguments)) = self.arguments.take() {
            deep::drop_value(arguments);
        }
    }
}

impl CallReport<'_> {
    /// What the tool receives as compact JSON text, every integer as the model wrote it (the
    /// bytes to forward); `None` unless the call is ok.
    pub fn arguments_text(&self) -> Option<String> {
        let value = self.arguments.as_deref()?;
        serde_json::to_string(&numbers::AsWritten {
            value,
            written: &self.written,
        })
        .ok()
    }

    /// This answer with its arguments copied out of the turn, so it outlives the turn.
    pub fn into_owned(mut self) -> CallReport<'static> {
        CallReport {
            id: Cow::Owned(std::mem::take(&mut self.id).into_owned()),
            status: self.status,
            refusal: self.refusal,
            problems: std::mem::take(&mut self.problems),
            arguments: self.arguments.take().map(|a| {
                Cow::Owned(match a {
                    Cow::Owned(value) => value,
                    Cow::Borrowed(value) => deep::clone_value(value),
                })
            }),
            notes: std::mem::take(&mut self.notes),
            tool: self.tool.take(),
            written: Cow::Owned(std::mem::take(&mut self.written).into_owned()),
        }
    }
}

/// The gateway's answer for a turn. It borrows from the turn it answers (a call that goes
/// through as sent forwards the turn's own arguments); [`Report::into_owned`] copies it out.
///
/// JSON: `{"verdict": "run" | "refused", "calls": [CallReport, ...]}`, with `calls` one per
/// input call in the turn's order. See [`CallReport`] for each call's fields.
#[derive(Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Report<'t> {
    /// The version of this report's JSON shape: [`REPORT_FORMAT_VERSION`].
    pub format_version: u32,
    /// Whether the turn may run.
    pub verdict: Verdict,
    /// One answer per call, in the turn's order.
    pub calls: Vec<CallReport<'t>>,
}

/// The `format_version` of the check report's JSON. 3: notes are typed objects
/// (`{"code", "call", ..., "message"}`) instead of sentences. 2: problems are typed objects
/// (`{"code", ..., "message"}`) instead of sentences; the unversioned first shape is 1.
pub const REPORT_FORMAT_VERSION: u32 = 3;

/// Checks every call of `turn` against the tools `plan` offered, and decides whether the turn
/// may run and what each tool receives.
///
/// # Example
/// ```
/// use std::path::Path;
/// use muster::check::{check_turn, CheckOptions, OfferedPlan, Turn, Verdict};
/// let plan = OfferedPlan::from_json(r#"{"format_version": 3, "roster": [{"name": "memory.search",
///     "input_schema": {"type": "object", "required": ["query"],
///                      "properties": {"query": {"type": "string"}}}}]}"#,
///     Path::new("plan.json")).unwrap();
/// let turn = Turn::from_json(r#"{"calls": [{"id": "c1", "name": "memory.search",
///     "arguments": "{\"query\": \"rust\"}"}]}"#, Path::new("turn.json")).unwrap();
/// let report = check_turn(&plan, &turn, &CheckOptions::default());
/// assert_eq!(report.verdict, Verdict::Run);
/// assert_eq!(report.calls[0].arguments.as_deref(), Some(&serde_json::json!({"query": "rust"})));
/// ```
pub fn check_turn<'t>(plan: &OfferedPlan, turn: &'t Turn, options: &CheckOptions) -> Report<'t> {
    check_turn_with(plan, turn, options, true)
}

/// [`check_turn`] that asks `stop` before each call and gives up, `None`,
/// the first time it says yes: the service stops a turn's work once its
/// request was answered (the timeout's 503) or dropped, so a turn of many
/// calls keeps no thread busy for nobody. `stop` is asked once per call,
/// before the call is checked.
pub fn check_turn_until<'t>(
    plan: &OfferedPlan,
    turn: &'t Turn,
    options: &CheckOptions,
    stop: &mut dyn FnMut() -> bool,
) -> Option<Report<'t>> {
    let _budget = budget::Turn::open(MAX_CHECK_STEPS);
    let mut calls = Vec::with_capacity(turn.calls.len());
    for call in &turn.calls {
        if stop() {
            return None;
        }
        calls.push(checked(plan, call, options, true));
    }
    Some(verdict(turn, calls))
}

/// [`check_turn`], with the quick pass for calls that go through as sent (`quick`) or without
/// it, so tests can show both give the same report.
fn check_turn_with<'t>(
    plan: &OfferedPlan,
    turn: &'t Turn,
    options: &CheckOptions,
    quick: bool,
) -> Report<'t> {
    let _budget = budget::Turn::open(MAX_CHECK_STEPS);
    let calls = turn
        .calls
        .iter()
        .map(|call| checked(plan, call, options, quick))
        .collect();
    verdict(turn, calls)
}

/// One call's report, naming the offered tool it resolved to.
fn checked<'t>(
    plan: &OfferedPlan,
    call: &'t Call,
    options: &CheckOptions,
    quick: bool,
) -> CallReport<'t> {
    // The turn's budget when one is open, else this call's own: nothing is judged unbudgeted.
    let _budget = budget::Turn::open(MAX_CHECK_STEPS);
    let mut report = check_call(plan, call, options, quick);
    report.tool = plan.tool(&call.name).map(|t| ResolvedTool {
        name: t.name.clone(),
        provider_name: t.provider_name.clone(),
        mcp: t.mcp.clone(),
    });
    report
}

/// The turn's report from its calls' reports: when any call is refused,
/// the calls that were ok are not run.
fn verdict<'t>(turn: &'t Turn, mut calls: Vec<CallReport<'t>>) -> Report<'t> {
    let refused: Vec<&str> = calls
        .iter()
        .filter(|c| c.status == Status::Refused)
        .map(|c| c.id.as_ref())
        .collect();
    if refused.is_empty() {
        return Report {
            format_version: REPORT_FORMAT_VERSION,
            verdict: Verdict::Run,
            calls,
        };
    }
    let (named, more) = named_refusals(&refused);
    for (call, original) in calls.iter_mut().zip(&turn.calls) {
        if call.status == Status::Ok {
            call.status = Status::NotRun;
            call.refusal = Some(Refusal::Turn);
            call.problems = vec![
                CallProblem::NotRun {
                    tool: original.name.clone(),
                    refused: named.clone(),
                    more,
                }
                .into(),
            ];
            if let Some(Cow::Owned(arguments)) = call.arguments.take() {
                deep::drop_value(arguments);
            }
        }
    }
    Report {
        format_version: REPORT_FORMAT_VERSION,
        verdict: Verdict::Refused,
        calls,
    }
}

/// At most this many refused calls are named in each not-run call's problem, and each id at most
/// [`NAMED_ID_CHARS`] characters: every not-run call repeats the sentence, so naming every
/// refused call in full would make the report grow with the square of the turn.
const NAMED_REFUSALS: usize = 3;
/// See [`NAMED_REFUSALS`].
const NAMED_ID_CHARS: usize = 64;

/// The refused calls a not-run call names (ids cut short), and how many it leaves unnamed.
fn named_refusals(refused: &[&str]) -> (Vec<String>, usize) {
    let named: Vec<String> = refused
        .iter()
        .take(NAMED_REFUSALS)
        .map(|id| match id.char_indices().nth(NAMED_ID_CHARS) {
            Some((cut, _)) => format!("{}…", &id[..cut]),
            None => (*id).to_string(),
        })
        .collect();
    let more = refused.len() - named.len();
    (named, more)
}

fn check_call<'t>(
    plan: &OfferedPlan,
    call: &'t Call,
    options: &CheckOptions,
    quick: bool,
) -> CallReport<'t> {
    let Some((tool, compiled, strict)) = plan.entry(&call.name) else {
        return refused(
            call,
            vec![unknown_tool(plan, &call.name).into()],
            1,
            Vec::new(),
        );
    };
    // Fail closed: nothing can say whether the server would take a call to this tool.
    if let Strict::Broken(why) = strict {
        let problem = CallProblem::UncheckableSchema {
            tool: call.name.clone(),
            reason: why.clone(),
        };
        return refused(call, vec![problem.into()], 1, Vec::new());
    }
    if let Some(why) = &call.unreadable {
        let problem = match why {
            Unreadable::Json(reason) => CallProblem::UnreadableArguments {
                tool: call.name.clone(),
                reason: reason.clone(),
            },
            Unreadable::LossyNumber(number) => CallProblem::LossyNumber {
                tool: call.name.clone(),
                number: number.clone(),
            },
        };
        return refused(call, vec![problem.into()], 1, Vec::new());
    }
    // Most calls fit as sent: one pass that only answers yes or no settles them, and the steps
    // below, which explain what they find, run only for the rest.
    if quick
        && let Value::Object(arguments) = &call.arguments
        && compiled.fits_as_sent(arguments, tool)
    {
        return forward(call, tool, strict, None, Vec::new(), Vec::new(), options);
    }
    // Arguments are copied only when something changes them; most calls go through as sent.
    let (mut owned, mut notes) = repair::repair(&call.arguments, compiled, &call.id);
    match owned.as_ref().unwrap_or(&call.arguments) {
        Value::Object(_) => {}
        // No arguments at all is an empty argument object.
        Value::Null => owned = Some(Value::Object(Map::new())),
        // So is blank text: OpenAI-style hosts send "" for a tool called without arguments.
        Value::String(text) if text.trim().is_empty() => {
            owned = Some(Value::Object(Map::new()));
            notes.push(
                CallNote::BlankArguments {
                    call: call.id.clone(),
                }
                .into(),
            );
        }
        other => {
            let unread = match other {
                Value::String(text) => repair::unread(text),
                _ => None,
            };
            let problem = match unread {
                Some(Unreadable::LossyNumber(number)) => CallProblem::LossyNumber {
                    tool: call.name.clone(),
                    number,
                },
                Some(Unreadable::Json(reason)) => CallProblem::ArgumentsNotObject {
                    tool: call.name.clone(),
                    got: Got::of(other),
                    reason: Some(reason),
                },
                None => CallProblem::ArgumentsNotObject {
                    tool: call.name.clone(),
                    got: Got::of(other),
                    reason: None,
                },
            };
            return refused(call, vec![problem.into()], 1, notes);
        }
    }
    let empty = Map::new();
    let as_map = |value: &'t Value| value.as_object().unwrap_or(&empty);
    let drops = narrow::outside(
        owned
            .as_ref()
            .and_then(Value::as_object)
            .unwrap_or(as_map(&call.arguments)),
        tool,
        &call.name,
        &call.id,
    );
    if !drops.is_empty() {
        let value = owned.get_or_insert_with(|| deep::clone_value(&call.arguments));
        if let Value::Object(map) = value {
            notes.extend(narrow::restrict(map, drops));
        }
    }
    let cx = Context {
        tool: &call.name,
        call_id: &call.id,
        coerce: tool.coerce,
        unknown: tool.unknown_arguments,
    };
    let mut found = Findings::default();
    let map = owned
        .as_ref()
        .and_then(Value::as_object)
        .unwrap_or(as_map(&call.arguments));
    let refused_before = budget::refused();
    let edits = schema::check(compiled, map, &cx, &mut found);
    notes.append(&mut found.notes);
    // A budget spent while judging: the findings of a check cut short are not the schema's
    // answer, so the call gets the one problem that says so.
    if budget::refused() > refused_before {
        if let Some(value) = owned {
            deep::drop_value(value);
        }
        // The first enum the budget ran out at names the argument.
        let argument = found.problems.iter().find_map(|p| match &p.problem {
            CallProblem::NotInEnum { argument, .. } => Some(argument.clone()),
            _ => None,
        });
        let problem = CallProblem::CheckBudgetExceeded {
            tool: call.name.clone(),
            argument,
            budget: MAX_CHECK_STEPS,
            per_value: pattern::MAX_VALUE_STEPS,
        };
        return refused(call, vec![problem.into()], 1, notes);
    }
    if found.total > 0 {
        if let Some(value) = owned {
            deep::drop_value(value);
        }
        return refused(call, found.problems, found.total, notes);
    }
    forward(call, tool, strict, owned, edits, notes, options)
}

/// The answer for a call that fits the lenient rules: what the tool receives, built from the
/// repaired and narrowed arguments (`owned`, or the call's own when nothing changed them) with
/// the check's `edits`, the fixed values and, when asked, the positional form. A strictly
/// checked tool's arguments are validated first, as cast and before the fixed values (which
/// the policy wrote and the offered schema no longer declares).
fn forward<'t>(
    call: &'t Call,
    tool: &OfferedTool,
    strict: &Strict,
    owned: Option<Value>,
    edits: Vec<edit::Edit>,
    mut notes: Vec<CheckNote>,
    options: &CheckOptions,
) -> CallReport<'t> {
    let positional = match (&tool.parameters, options.positional) {
        (Some(params), true) => Some(params),
        _ => None,
    };
    let mut value = match (owned, edits.is_empty()) {
        (Some(value), _) => Cow::Owned(value),
        (None, true) => Cow::Borrowed(&call.arguments),
        (None, false) => Cow::Owned(deep::clone_value(&call.arguments)),
    };
    if !edits.is_empty()
        && let Value::Object(map) = value.to_mut()
    {
        edit::apply(map, edits);
    }
    if let Strict::On(validator) = strict {
        let mut found = Findings::default();
        strict::validate(validator, &value, &call.name, &mut found);
        if found.total > 0 {
            if let Cow::Owned(value) = value {
                deep::drop_value(value);
            }
            return refused(call, found.problems, found.total, notes);
        }
    }
    let arguments = if tool.fixed.is_empty() && positional.is_none() {
        value
    } else {
        let mut value = match value {
            Cow::Owned(value) => value,
            Cow::Borrowed(value) => deep::clone_value(value),
        };
        let mut map = match &mut value {
            Value::Object(map) => std::mem::take(map),
            _ => Map::new(),
        };
        narrow::set_fixed(&mut map, tool);
        match positional {
            Some(params) => match positional::to_positional(
                map,
                params,
                tool.variadic,
                &tool.input_schema,
                &call.name,
                &call.id,
                &mut notes,
            ) {
                Ok(list) => Cow::Owned(list),
                Err(problem) => return refused(call, vec![(*problem).into()], 1, notes),
            },
            None => Cow::Owned(Value::Object(map)),
        }
    };
    ok(call, arguments, notes)
}

/// The answer for a call that may run with `arguments`.
fn ok<'t>(call: &'t Call, arguments: Cow<'t, Value>, notes: Vec<CheckNote>) -> CallReport<'t> {
    CallReport {
        id: Cow::Borrowed(&call.id),
        status: Status::Ok,
        refusal: None,
        problems: Vec::new(),
        arguments: Some(arguments),
        notes,
        written: Cow::Borrowed(&call.written),
        tool: None,
    }
}

fn refused<'t>(
    call: &'t Call,
    mut problems: Vec<CheckProblem>,
    total: usize,
    notes: Vec<CheckNote>,
) -> CallReport<'t> {
    // At most MAX_PROBLEMS sentences in all: past that, the last place counts the rest.
    if total > MAX_PROBLEMS {
        let listed = MAX_PROBLEMS - 1;
        problems.truncate(listed);
        problems.push(
            CallProblem::MoreProblems {
                tool: call.name.clone(),
                more: total - listed,
            }
            .into(),
        );
    }
    CallReport {
        id: Cow::Borrowed(&call.id),
        status: Status::Refused,
        refusal: Some(Refusal::Arguments),
        problems,
        arguments: None,
        notes,
        written: Cow::Borrowed(&[]),
        tool: None,
    }
}

/// The problem for a call naming a tool that was not offered.
fn unknown_tool(plan: &OfferedPlan, name: &str) -> CallProblem {
    if let Some(deferred) = plan.deferred(name) {
        // Answer in the spelling the call used.
        let control = match deferred.provider_name.as_deref() == Some(name) {
            true => plan.control_tool_provider_name().or(plan.control_tool()),
            false => plan.control_tool(),
        };
        return CallProblem::DeferredTool {
            tool: name.to_string(),
            control_tool: control.map(String::from),
        };
    }
    let closest = crate::names::closest(name, plan.roster().iter().map(|t| t.name.as_str()), 3);
    CallProblem::UnknownTool {
        tool: name.to_string(),
        closest: closest.into_iter().map(String::from).collect(),
        roster_empty: plan.roster().is_empty(),
    }
}

impl Report<'_> {
    /// This report with every call's arguments copied out of the turn, so it outlives the turn.
    pub fn into_owned(self) -> Report<'static> {
        Report {
            format_version: self.format_version,
            verdict: self.verdict,
            calls: self.calls.into_iter().map(CallReport::into_owned).collect(),
        }
    }

    /// The report for people: the verdict, then each call with its problems and notes.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let refused = self
            .calls
            .iter()
            .filter(|c| c.status == Status::Refused)
            .count();
        match self.verdict {
            Verdict::Run => {
                let _ = writeln!(out, "run: all {} calls fit; run them", self.calls.len());
            }
            Verdict::Refused => {
                let _ = writeln!(
                    out,
                    "refused: {refused} of {} calls do not fit; nothing was run",
                    self.calls.len()
                );
            }
        }
        for call in &self.calls {
            let status = match call.status {
                Status::Ok => "ok",
                Status::Refused => "refused (arguments)",
                Status::NotRun => "not run (turn)",
            };
            let _ = writeln!(out, "\ncall {}: {status}", call.id);
            for problem in &call.problems {
                let _ = writeln!(out, "  - {}", problem.message);
            }
            if let Some(value) = call.arguments.as_deref() {
                let written = numbers::AsWritten {
                    value,
                    written: &call.written,
                };
                let text = serde_json::to_string(&written).unwrap_or_default();
                let _ = writeln!(out, "  arguments: {text}");
            }
            for note in &call.notes {
                let _ = writeln!(out, "  note: {}", note.message);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
