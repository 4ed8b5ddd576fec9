//! The spans of one answered `tools/call` ([`crate::trace`]): a span for
//! the call as muster answered it (a server span under the caller's trace
//! when it sent one; inside a `/v1/call` request, an internal span under
//! that request's), with children for its parts: the `check`, the `load`
//! of deferred tools the control tool asked for, and for a call that
//! reached its server a client span `upstream <server>`, whose id the
//! request to the server carries in its `traceparent`.
//!
//! A call's ids are fixed when it starts ([`begin`]) and its parts' times
//! are noted as they run; the spans are made from the call's record after
//! the answer. With tracing off, [`begin`] gives `None` and every other
//! function here returns at once: no id, no clock, no allocation.

use std::time::Instant;

use serde_json::{Map, Value};

use super::CallRecord;
use crate::check::{Report, Status, Verdict};
use crate::contract::LoadAnswer;
use crate::trace::{self, Context, Kind, Outgoing, Span};

/// A window of time, in nanoseconds since the Unix epoch.
type Window = (u64, u64);

/// One call's trace, as it is made.
#[derive(Debug, Clone)]
pub(super) struct CallSpans {
    context: Context,
    /// The caller's span, when there is one.
    parent: Option<[u8; 8]>,
    /// The call's own span.
    span_id: [u8; 8],
    /// Server (a caller's request) or internal (a `/v1/call` turn's call).
    kind: Kind,
    /// When the call came, in nanoseconds since the Unix epoch.
    start_ns: u64,
    /// The check's window, its status and codes.
    check: Option<(Window, &'static str, Vec<String>)>,
    /// The load's window, its verdict and the tools it loaded.
    load: Option<(Window, &'static str, Vec<String>)>,
    /// The upstream span's id (fixed at the start, so the request to the
    /// server can name it) and its window once it ran.
    upstream_id: [u8; 8],
    upstream: Option<Window>,
}

/// The trace a call starts: under `parent` (a transport's `traceparent`),
/// else under the `_meta` of its `params`, else under the `/v1` request it
/// runs in, else a new trace; the call came at `started`. `None` when
/// tracing is off.
pub(super) fn begin(
    parent: Option<Context>,
    params: Option<&Map<String, Value>>,
    started: Instant,
) -> Option<Box<CallSpans>> {
    if !trace::enabled() {
        return None;
    }
    let elapsed = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let start_ns = trace::now_ns().saturating_sub(elapsed);
    let meta = || {
        let meta = params?.get("_meta")?;
        let text = |key: &str| meta.get(key).and_then(Value::as_str);
        Context::read(text("traceparent"), text("tracestate"))
    };
    let (context, kind) = match parent.or_else(meta) {
        Some(context) => (Some(context), Kind::Server),
        None => match trace::current() {
            Some(inside) => (Some(inside), Kind::Internal),
            None => (None, Kind::Server),
        },
    };
    let context = context.unwrap_or_else(Context::root);
    let parent = context.parent_span();
    Some(Box::new(CallSpans {
        context,
        parent,
        span_id: trace::new_id(),
        kind,
        start_ns,
        check: None,
        load: None,
        upstream_id: trace::new_id(),
        upstream: None,
    }))
}

/// Now, when `record` is traced: where one of its parts starts.
pub(super) fn now(record: &CallRecord) -> Option<u64> {
    record.spans.as_ref().map(|_| trace::now_ns())
}

/// The check that started at `start` ended now with `status`; its codes
/// are the record's so far.
pub(super) fn checked(record: &mut CallRecord, start: Option<u64>, status: Status) {
    if let (Some(spans), Some(start)) = (record.spans.as_mut(), start) {
        let status = match status {
            Status::Ok => "ok",
            Status::Refused => "refused",
            Status::NotRun => "not-run",
        };
        spans.check = Some(((start, trace::now_ns()), status, record.codes.clone()));
    }
}

/// The load that started at `start` ended now with `answer` and the
/// record's verdict.
pub(super) fn loaded(record: &mut CallRecord, start: Option<u64>, answer: &LoadAnswer) {
    if let (Some(spans), Some(start)) = (record.spans.as_mut(), start) {
        let window = (start, trace::now_ns());
        spans.load = Some((window, record.verdict, answer.loaded.clone()));
    }
}

/// The load a call-through made in `from` (a copy of `record`), kept.
pub(super) fn load_of(record: &mut CallRecord, from: &CallRecord) {
    if let (Some(spans), Some(theirs)) = (record.spans.as_mut(), from.spans.as_ref()) {
        spans.load = theirs.load.clone();
    }
}

/// What the call's request to its server carries, when traced.
pub(super) fn outgoing(record: &CallRecord) -> Option<Outgoing> {
    let spans = record.spans.as_ref()?;
    Some(spans.context.outgoing(spans.upstream_id))
}

/// The server's part, from `start` to now.
pub(super) fn upstream(record: &mut CallRecord, start: Option<u64>) {
    ran(record, start.map(|start| (start, trace::now_ns())));
}

/// The server's part, in `window` (measured where the call ran).
pub(super) fn ran(record: &mut CallRecord, window: Option<Window>) {
    if let (Some(spans), Some(window)) = (record.spans.as_mut(), window) {
        spans.upstream = Some(window);
    }
}

/// Records `record`'s spans (an unsampled trace's are made and dropped:
/// its ids still went upstream, as OpenTelemetry's parent-based sampling
/// does).
pub(super) fn of_call(record: &CallRecord) {
    let Some(spans) = record.spans.as_deref() else {
        return;
    };
    if !spans.context.parent.sampled {
        return;
    }
    let start = spans.start_ns;
    let end = start.saturating_add((record.total_ms * 1e6).max(0.0) as u64);
    let trace_id = spans.context.parent.trace_id;
    let child = |name: String, kind, window: Window, attributes, error| Span {
        trace_id,
        span_id: trace::new_id(),
        parent: Some(spans.span_id),
        name,
        kind,
        start_ns: window.0,
        end_ns: window.1,
        attributes,
        error,
    };
    let tool = || ("gen_ai.tool.name", trace::Value::Text(record.tool.clone()));
    if let Some((window, status, codes)) = &spans.check {
        trace::record(child(
            "check".into(),
            Kind::Internal,
            *window,
            vec![
                tool(),
                ("muster.verdict", trace::Value::Text((*status).into())),
                ("muster.codes", trace::Value::Texts(codes.clone())),
            ],
            false,
        ));
    }
    if let Some((window, verdict, tools)) = &spans.load {
        trace::record(child(
            "load".into(),
            Kind::Internal,
            *window,
            vec![
                ("muster.verdict", trace::Value::Text((*verdict).into())),
                ("muster.tools.loaded", trace::Value::Texts(tools.clone())),
                (
                    "muster.tools.count",
                    trace::Value::Int(i64::try_from(tools.len()).unwrap_or(i64::MAX)),
                ),
            ],
            false,
        ));
    }
    if let (Some(server), Some(_), Some(window)) =
        (&record.server, record.upstream_ms, spans.upstream)
    {
        trace::record(Span {
            span_id: spans.upstream_id,
            ..child(
                format!("upstream {server}"),
                Kind::Client,
                window,
                vec![
                    ("muster.server", trace::Value::Text(server.clone())),
                    tool(),
                ],
                record.verdict == "upstream-failed",
            )
        });
    }
    let mut attributes = vec![
        ("mcp.method.name", trace::Value::Text("tools/call".into())),
        tool(),
        ("muster.chat", trace::Value::Text(record.chat.clone())),
        (
            "muster.verdict",
            trace::Value::Text(record.verdict.to_string()),
        ),
        ("muster.codes", trace::Value::Texts(record.codes.clone())),
        ("jsonrpc.request.id", trace::Value::Text(record.id.clone())),
    ];
    if let Some(server) = &record.server {
        attributes.push(("muster.server", trace::Value::Text(server.clone())));
    }
    trace::record(Span {
        trace_id,
        span_id: spans.span_id,
        parent: spans.parent,
        name: format!("tools/call {}", record.tool),
        kind: spans.kind,
        start_ns: start,
        end_ns: end,
        attributes,
        error: matches!(record.verdict, "upstream-failed" | "invalid"),
    });
}

/// A whole turn's check (`/v1/check`, `/v1/call`, `muster call`), traced
/// as a `tools/call`'s is: an internal span `check` under the span `under` (a
/// request's, taken on the async side, since the check runs on the
/// blocking pool where the request's context is not), from `start_ns` to now, with
/// the turn's verdict (`run`, `refused`), its calls' problem and note codes
/// (sorted, once each), how many calls it had and the tools they named.
/// Nothing when tracing is off or the trace is not sampled.
pub fn turn_checked(under: Option<&Context>, start_ns: Option<u64>, report: &Report<'_>) {
    let (Some(under), Some(start_ns)) = (under, start_ns) else {
        return;
    };
    if !under.parent.sampled {
        return;
    }
    let verdict = match report.verdict {
        Verdict::Run => "run",
        Verdict::Refused => "refused",
    };
    let mut codes: Vec<String> = report
        .calls
        .iter()
        .flat_map(|c| {
            let problems = c.problems.iter().map(|p| p.problem.code().to_string());
            problems.chain(c.notes.iter().map(|n| n.note.code().to_string()))
        })
        .collect();
    codes.sort();
    codes.dedup();
    let tools: Vec<String> = report
        .calls
        .iter()
        .filter_map(|c| c.tool.as_ref())
        .map(|t| t.provider_name.clone().unwrap_or_else(|| t.name.clone()))
        .collect();
    trace::record(Span {
        trace_id: under.parent.trace_id,
        span_id: trace::new_id(),
        parent: under.parent_span(),
        name: "check".into(),
        kind: Kind::Internal,
        start_ns,
        end_ns: trace::now_ns(),
        attributes: vec![
            ("muster.verdict", trace::Value::Text(verdict.into())),
            ("muster.codes", trace::Value::Texts(codes)),
            (
                "muster.calls",
                trace::Value::Int(i64::try_from(report.calls.len()).unwrap_or(i64::MAX)),
            ),
            ("muster.tools", trace::Value::Texts(tools)),
        ],
        error: false,
    });
}

/// When a check that [`turn_checked`] may trace starts: now, when the request
/// is traced (`under`); else nothing, and no clock is read.
pub fn turn_start(under: Option<&Context>) -> Option<u64> {
    under.map(|_| trace::now_ns())
}

/// A `muster call` process's trace: one span `muster call` for the whole
/// turn (its check and its calls under it), under the W3C context the
/// `TRACEPARENT` and `TRACESTATE` environment variables carry (as a CLI
/// is handed a trace), else a new trace.
pub struct Run {
    caller: Context,
    span_id: [u8; 8],
    start_ns: u64,
}

impl Run {
    /// The run's span, started now; `None` when tracing is off.
    pub fn start(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Run> {
        if !trace::enabled() {
            return None;
        }
        Some(Run {
            caller: Context::read(traceparent, tracestate).unwrap_or_else(Context::root),
            span_id: trace::new_id(),
            start_ns: trace::now_ns(),
        })
    }

    /// The context the run's work runs under.
    pub fn under(&self) -> Context {
        self.caller.child(self.span_id)
    }

    /// The run ended now with `outcome` (`ran`, `refused`, `failed`).
    pub fn end(self, outcome: &str) {
        if !self.caller.parent.sampled {
            return;
        }
        trace::record(Span {
            trace_id: self.caller.parent.trace_id,
            span_id: self.span_id,
            parent: self.caller.parent_span(),
            name: "muster call".into(),
            kind: Kind::Internal,
            start_ns: self.start_ns,
            end_ns: trace::now_ns(),
            attributes: vec![("muster.outcome", trace::Value::Text(outcome.into()))],
            error: outcome == "failed",
        });
    }
}
