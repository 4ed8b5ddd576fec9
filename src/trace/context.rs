//! W3C trace context in and out: the caller's `traceparent` and
//! `tracestate` read (an HTTP header, or the MCP `_meta` keys of the same
//! names, which the 2026-07-28 revision reserves for it), the span a piece
//! of work runs under kept for the task, and what an upstream request
//! carries: muster's own `traceparent`, naming its client span, and the
//! caller's `tracestate`, cut to [`MAX_TRACESTATE_BYTES`] and
//! [`MAX_TRACESTATE_MEMBERS`]. Baggage is never passed on (it is the
//! caller's data, and a server is a third party).

use std::future::Future;

use super::TraceParent;

/// Most bytes of a `tracestate` muster passes on (W3C Trace Context: a
/// participant propagates at least 512 characters, and may cut past it).
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// Most list members of a `tracestate` muster passes on (W3C's own cap).
pub const MAX_TRACESTATE_MEMBERS: usize = 32;
/// Longest list member W3C lets a participant keep when cutting
/// (members past it go first).
const LONG_MEMBER: usize = 128;

/// A caller's trace context: the span muster's spans join, and the
/// `tracestate` that travels with it, already cut to bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The parent: trace id, span id, sampled flag.
    pub parent: TraceParent,
    /// The `tracestate` to pass on, when the caller sent a valid one.
    pub state: Option<String>,
}

impl Context {
    /// The context `traceparent` names (with `tracestate`, bounded); `None`
    /// when `traceparent` is absent or invalid (then `tracestate` is
    /// dropped too, as W3C says).
    pub fn read(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let parent = TraceParent::parse(traceparent?)?;
        Some(Self {
            parent,
            state: tracestate.and_then(bounded_tracestate),
        })
    }

    /// A new trace's context: no parent span, sampled (muster's spans are
    /// the trace's first).
    pub fn root() -> Self {
        Self {
            parent: TraceParent {
                trace_id: super::new_id(),
                span_id: [0; 8],
                sampled: true,
            },
            state: None,
        }
    }

    /// The caller's span, when there is one (a root has none).
    pub fn parent_span(&self) -> Option<[u8; 8]> {
        (self.parent.span_id != [0; 8]).then_some(self.parent.span_id)
    }

    /// This context with muster's span `span_id` as the parent of what
    /// runs under it.
    pub fn child(&self, span_id: [u8; 8]) -> Self {
        Self {
            parent: TraceParent {
                span_id,
                ..self.parent
            },
            state: self.state.clone(),
        }
    }

    /// The context a request to a server carries when muster's span
    /// `span_id` (in this context's trace) is the one it answers to.
    pub fn outgoing(&self, span_id: [u8; 8]) -> Outgoing {
        Outgoing {
            traceparent: traceparent_text(self.parent.trace_id, span_id, self.parent.sampled),
            tracestate: self.state.clone(),
        }
    }
}

/// What an upstream request carries: the `traceparent` naming muster's
/// client span, and the caller's bounded `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// `00-<trace>-<span>-<flags>`.
    pub traceparent: String,
    /// At most [`MAX_TRACESTATE_BYTES`], only valid list members.
    pub tracestate: Option<String>,
}

/// A `traceparent` header value.
pub fn traceparent_text(trace_id: [u8; 16], span_id: [u8; 8], sampled: bool) -> String {
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!(
        "00-{}-{}-{}",
        hex(&trace_id),
        hex(&span_id),
        if sampled { "01" } else { "00" }
    )
}

/// `text`'s valid list members, cut as W3C says a participant may cut:
/// members over 128 bytes go first, then members from the right, until at
/// most [`MAX_TRACESTATE_MEMBERS`] members and [`MAX_TRACESTATE_BYTES`]
/// bytes are left. A member that is not `key=value` in W3C's characters is
/// left out (what is passed on is always a valid header value). `None`
/// when nothing is left.
pub fn bounded_tracestate(text: &str) -> Option<String> {
    let mut members: Vec<&str> = text
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| valid_member(m))
        .collect();
    let size = |members: &[&str]| {
        members.iter().map(|m| m.len()).sum::<usize>() + members.len().saturating_sub(1)
    };
    if members.len() > MAX_TRACESTATE_MEMBERS || size(&members) > MAX_TRACESTATE_BYTES {
        members.retain(|m| m.len() <= LONG_MEMBER);
    }
    members.truncate(MAX_TRACESTATE_MEMBERS);
    while size(&members) > MAX_TRACESTATE_BYTES {
        members.pop();
    }
    (!members.is_empty()).then(|| members.join(","))
}

/// A W3C `tracestate` list member: `key=value`, the key lowercase letters,
/// digits and `_-*/` (with one `@` for a multi-tenant key), at most 256
/// bytes; the value 1–256 printable ASCII characters but `,` and `=`, not
/// ending in a space.
fn valid_member(member: &str) -> bool {
    let Some((key, value)) = member.split_once('=') else {
        return false;
    };
    let key_ok = !key.is_empty()
        && key.len() <= 256
        && key.bytes().filter(|b| *b == b'@').count() <= 1
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b))
        && key
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let value_ok = !value.is_empty()
        && value.len() <= 256
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
    key_ok && value_ok
}

tokio::task_local! {
    /// The span the task's work runs under (a `/v1` request's).
    static CURRENT: Context;
    /// What the task's upstream `tools/call` requests carry.
    static OUTGOING: Outgoing;
}

/// `work` run with `context` as the span it runs under; `work` as it is
/// when `context` is `None` (tracing off).
pub async fn within<F: Future>(context: Option<Context>, work: F) -> F::Output {
    match context {
        Some(context) => CURRENT.scope(context, work).await,
        None => work.await,
    }
}

/// The span the task's work runs under, when [`within`] set one.
pub fn current() -> Option<Context> {
    CURRENT.try_with(Clone::clone).ok()
}

/// `work` run with its upstream `tools/call` requests carrying `outgoing`;
/// `work` as it is when `outgoing` is `None` (tracing off).
pub async fn carrying<F: Future>(outgoing: Option<Outgoing>, work: F) -> F::Output {
    match outgoing {
        Some(outgoing) => OUTGOING.scope(outgoing, work).await,
        None => work.await,
    }
}

/// What the task's upstream `tools/call` requests carry, when [`carrying`]
/// set it.
pub fn outgoing() -> Option<Outgoing> {
    OUTGOING.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn tracestate_keeps_valid_members_within_bounds() {
        assert_eq!(
            bounded_tracestate("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7").as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        );
        // Bad members are left out; nothing valid, nothing passed on.
        assert_eq!(
            bounded_tracestate("Upper=x,ok=1,no-value=,x=a\u{7f}b,t@v@w=1,a=b=c").as_deref(),
            Some("ok=1")
        );
        assert_eq!(bounded_tracestate("\r\ninjected: yes"), None);
        assert_eq!(bounded_tracestate(""), None);
        // Over 32 members: the first 32.
        let many: Vec<String> = (0..40).map(|i| format!("k{i}=v")).collect();
        let kept = bounded_tracestate(&many.join(",")).unwrap();
        assert_eq!(kept.split(',').count(), MAX_TRACESTATE_MEMBERS);
        assert!(kept.starts_with("k0=v,") && kept.ends_with("k31=v"));
        // Over 512 bytes: long members go first, then from the right.
        let long = format!("long={}", "x".repeat(200));
        let eight: Vec<String> = (0..8)
            .map(|i| format!("m{i}={}", "y".repeat(100)))
            .collect();
        let text = format!("{long},{}", eight.join(","));
        let kept = bounded_tracestate(&text).unwrap();
        assert!(kept.len() <= MAX_TRACESTATE_BYTES, "{}", kept.len());
        assert!(kept.starts_with("m0=") && !kept.contains("long="), "{kept}");
        assert_eq!(kept.split(',').count(), 4);
    }

    #[test]
    fn a_context_needs_a_valid_traceparent() {
        assert_eq!(Context::read(None, Some("a=b")), None);
        assert_eq!(Context::read(Some("00-bad"), Some("a=b")), None);
        let c = Context::read(Some(PARENT), Some("a=b,BAD=1")).unwrap();
        assert_eq!(c.state.as_deref(), Some("a=b"));
        let out = c.outgoing([0xab; 8]);
        assert_eq!(
            out.traceparent,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-abababababababab-01"
        );
        assert_eq!(out.tracestate.as_deref(), Some("a=b"));
        assert_eq!(
            TraceParent::parse(&out.traceparent).unwrap().span_id,
            [0xab; 8]
        );
    }
}
