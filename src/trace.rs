//! Traces: OpenTelemetry spans for the gateway's calls, sent over OTLP/HTTP
//! (JSON) to the endpoint the standard variables name, and nothing at all
//! when they name none.
//!
//! It decides how a span is written and where it goes; what spans there
//! are is decided where the work is (`gateway/spans.rs`: a `tools/call`,
//! its check, its load and its server's part; `serve/traced.rs`: a `/v1/*`
//! request). The parent is the W3C `traceparent` the caller sent (an HTTP
//! header, or `_meta.traceparent` in the request), so muster's spans join
//! the caller's trace, and a request to a server carries muster's own
//! (`context`: read, bounded, and kept for the task's work). Configuration
//! is the standard one:
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended),
//! `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
//! (`key=value,…`), `OTEL_SERVICE_NAME` (default `muster`),
//! `OTEL_SDK_DISABLED=true`. Spans are queued (at most [`MAX_QUEUED`]; past
//! it they are dropped and counted, never blocking a call) and sent by one
//! thread in batches every [`BATCH_EVERY`] or [`BATCH_SPANS`] spans.

mod context;
mod otlp;

pub use context::{
    Context, MAX_TRACESTATE_BYTES, MAX_TRACESTATE_MEMBERS, Outgoing, bounded_tracestate, carrying,
    current, outgoing, traceparent_text, within,
};

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Most spans waiting to be sent; past it new spans are dropped.
pub const MAX_QUEUED: usize = 4096;
/// Most spans one export carries.
pub const BATCH_SPANS: usize = 512;
/// How long a span waits at most before it is sent.
pub const BATCH_EVERY: Duration = Duration::from_secs(1);

/// A W3C trace context: the trace and the span a new span is a child of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id (16 bytes, not all zero).
    pub trace_id: [u8; 16],
    /// The parent span's id (8 bytes, not all zero).
    pub span_id: [u8; 8],
    /// The sampled flag.
    pub sampled: bool,
}

impl TraceParent {
    /// Reads a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`); `None`
    /// for anything else, as W3C Trace Context says to ignore it.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        let trace_id: [u8; 16] = hex(trace)?.try_into().ok()?;
        let span_id: [u8; 8] = hex(span)?.try_into().ok()?;
        let flags = *hex(flags)?.first()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }
}

/// Lowercase hex digits to bytes; `None` for anything else.
fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string.
    Text(String),
    /// An integer.
    Int(i64),
    /// A list of strings.
    Texts(Vec<String>),
}

/// What a span stands for, as OTLP's `SpanKind` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Work inside muster (a check, a load).
    Internal,
    /// muster answering a request.
    Server,
    /// muster calling a server.
    Client,
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The trace it belongs to.
    pub trace_id: [u8; 16],
    /// Its own id.
    pub span_id: [u8; 8],
    /// Its parent's id, when it has one.
    pub parent: Option<[u8; 8]>,
    /// Its name.
    pub name: String,
    /// What it stands for.
    pub kind: Kind,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// Its attributes, in order.
    pub attributes: Vec<(&'static str, Value)>,
    /// Whether it ended in an error.
    pub error: bool,
}

/// Where spans go, made once from the environment.
struct Exporter {
    queue: mpsc::SyncSender<Msg>,
}

enum Msg {
    Span(Box<Span>),
    Flush(mpsc::SyncSender<()>),
}

static EXPORTER: OnceLock<Option<Exporter>> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);

fn exporter() -> Option<&'static Exporter> {
    EXPORTER
        .get_or_init(|| {
            let config = otlp::Config::from_env(|k| std::env::var(k).ok())?;
            let (queue, spans) = mpsc::sync_channel(MAX_QUEUED);
            std::thread::Builder::new()
                .name("muster-otlp".into())
                .spawn(move || otlp::run(config, spans))
                .ok()?;
            Some(Exporter { queue })
        })
        .as_ref()
}

/// Whether spans are sent anywhere.
pub fn enabled() -> bool {
    exporter().is_some()
}

/// How many spans were dropped because the queue was full.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Queues `span` for export; drops it when tracing is off or the queue is
/// full.
pub fn record(span: Span) {
    if let Some(exporter) = exporter()
        && exporter
            .queue
            .try_send(Msg::Span(Box::new(bounded(span))))
            .is_err()
    {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Characters of a span's name and of each text attribute kept (OpenTelemetry's attribute
/// value length limit): names, ids and tools come from callers and servers, and a queue of
/// spans holding 450 KB each took a gigabyte (a hostile probe). The rest is cut, with `…`.
pub const MAX_ATTRIBUTE_CHARS: usize = 256;

/// Items of a list attribute kept; the rest are left out.
pub const MAX_ATTRIBUTE_ITEMS: usize = 64;

/// `span` with its name and attributes cut to [`MAX_ATTRIBUTE_CHARS`] and
/// [`MAX_ATTRIBUTE_ITEMS`].
fn bounded(mut span: Span) -> Span {
    let cut = |text: &mut String| {
        if let Some((at, _)) = text.char_indices().nth(MAX_ATTRIBUTE_CHARS) {
            text.truncate(at);
            text.push('…');
        }
    };
    cut(&mut span.name);
    for (_, value) in &mut span.attributes {
        match value {
            Value::Text(text) => cut(text),
            Value::Texts(texts) => {
                texts.truncate(MAX_ATTRIBUTE_ITEMS);
                texts.iter_mut().for_each(cut);
            }
            Value::Int(_) => {}
        }
    }
    span
}

/// Sends every queued span now and waits (at most `wait`) for it to be
/// sent: what a process does before it exits.
pub fn flush(wait: Duration) {
    if let Some(exporter) = exporter() {
        let (done, sent) = mpsc::sync_channel(1);
        if exporter.queue.try_send(Msg::Flush(done)).is_ok() {
            let _ = sent.recv_timeout(wait);
        }
    }
}

/// A fresh random id of `N` bytes, never all zero.
pub fn new_id<const N: usize>() -> [u8; N] {
    let mut id = [0u8; N];
    while id == [0u8; N] {
        if getrandom::fill(&mut id).is_err() {
            // No randomness: a counter still tells spans apart.
            static NEXT: AtomicU64 = AtomicU64::new(1);
            let n = NEXT.fetch_add(1, Ordering::Relaxed).to_be_bytes();
            for (i, b) in id.iter_mut().enumerate() {
                *b = n[i % 8] ^ (i as u8);
            }
        }
    }
    id
}

/// Now, in nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spans_name_and_attributes_are_cut_to_the_limits() {
        let long = "é".repeat(450_000);
        let span = bounded(Span {
            trace_id: [1; 16],
            span_id: [1; 8],
            parent: None,
            name: long.clone(),
            kind: Kind::Internal,
            start_ns: 0,
            end_ns: 0,
            attributes: vec![
                ("a", Value::Text(long.clone())),
                ("b", Value::Texts(vec![long; 1_000])),
            ],
            error: false,
        });
        assert_eq!(span.name.chars().count(), MAX_ATTRIBUTE_CHARS + 1);
        let Value::Text(a) = &span.attributes[0].1 else {
            panic!()
        };
        assert!(a.ends_with('…') && a.chars().count() == MAX_ATTRIBUTE_CHARS + 1);
        let Value::Texts(b) = &span.attributes[1].1 else {
            panic!()
        };
        assert_eq!(b.len(), MAX_ATTRIBUTE_ITEMS);
    }

    #[test]
    fn traceparent_is_read_as_w3c_says() {
        let p =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(p.trace_id[0], 0x4b);
        assert_eq!(p.span_id[7], 0xb7);
        assert!(p.sampled);
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }
}
