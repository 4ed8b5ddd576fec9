//! The spans of one answered `tools/call` ([`crate::trace`]): a server span
//! for the call as muster answered it, under the caller's trace when it
//! sent one, and for a call that reached its server a client span for the
//! server's part, ending when the answer came back. Built from the call's
//! record after the answer, so tracing adds nothing to a call's own path
//! but this; nothing at all when tracing is off.

use super::CallRecord;
use crate::trace::{self, Span, Value};

/// Records `record`'s spans.
pub(super) fn of_call(record: &CallRecord) {
    if !trace::enabled() {
        return;
    }
    let end = trace::now_ns();
    let ns = |ms: f64| (ms * 1e6).max(0.0) as u64;
    let start = end.saturating_sub(ns(record.total_ms));
    let (trace_id, parent) = match record.parent {
        Some(p) => (p.trace_id, Some(p.span_id)),
        None => (trace::new_id::<16>(), None),
    };
    let span_id = trace::new_id::<8>();
    let mut attributes = vec![
        ("mcp.method.name", Value::Text("tools/call".into())),
        ("gen_ai.tool.name", Value::Text(record.tool.clone())),
        ("muster.chat", Value::Text(record.chat.clone())),
        ("muster.verdict", Value::Text(record.verdict.to_string())),
        ("muster.codes", Value::Texts(record.codes.clone())),
        ("jsonrpc.request.id", Value::Text(record.id.clone())),
    ];
    if let Some(server) = &record.server {
        attributes.push(("muster.server", Value::Text(server.clone())));
    }
    let failed = matches!(record.verdict, "upstream-failed" | "invalid");
    if let (Some(server), Some(ms)) = (&record.server, record.upstream_ms) {
        // The server's part ends when the answer came back: just before
        // muster answered.
        let upstream_end = end;
        trace::record(Span {
            trace_id,
            span_id: trace::new_id::<8>(),
            parent: Some(span_id),
            name: format!("upstream {server}"),
            server: false,
            start_ns: upstream_end.saturating_sub(ns(ms)),
            end_ns: upstream_end,
            attributes: vec![
                ("muster.server", Value::Text(server.clone())),
                ("gen_ai.tool.name", Value::Text(record.tool.clone())),
            ],
            error: record.verdict == "upstream-failed",
        });
    }
    trace::record(Span {
        trace_id,
        span_id,
        parent,
        name: format!("tools/call {}", record.tool),
        server: true,
        start_ns: start,
        end_ns: end,
        attributes,
        error: failed,
    });
}
