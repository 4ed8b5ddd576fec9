//! Traces of the service's HTTP requests ([`crate::trace`]): each `/v1/*`
//! request leaves a server span `<METHOD> <route>` with OpenTelemetry's
//! HTTP attributes (`http.request.method`, `http.route`,
//! `http.response.status_code`), the policy generation that answered, and
//! for a problem+json answer its type as `error.type` and its problems'
//! codes. Its parent is the caller's `traceparent` header; the work the
//! request does runs under its span (the turn's `check` of `/v1/check` and
//! `/v1/call`, the calls of a `/v1/call` turn are its children). With
//! tracing off there is no layer.

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

use crate::trace::{self, Context, Kind, Span, Value};

/// What a problem+json answer said, for its request's span: the problem
/// type's code and each problem's.
#[derive(Debug, Clone)]
pub(super) struct Answered {
    pub(super) kind: &'static str,
    pub(super) codes: Vec<&'static str>,
}

/// The W3C trace context the request's `traceparent` and `tracestate`
/// headers carry, when tracing is on and they carry a valid one.
pub(super) fn context(headers: &HeaderMap) -> Option<Context> {
    if !trace::enabled() {
        return None;
    }
    let parent = headers.get("traceparent").and_then(|v| v.to_str().ok());
    // Several `tracestate` lines are one list (W3C); bounded when read.
    let state: Vec<&str> = headers
        .get_all("tracestate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    Context::read(parent, Some(&state.join(",")))
}

/// `routes` with [`v1`] around them when tracing is on; as they are
/// (nothing added to a request's path) when it is off.
pub(super) fn layer<S: Clone + Send + Sync + 'static>(routes: Router<S>) -> Router<S> {
    if trace::enabled() {
        routes.layer(axum::middleware::from_fn(v1))
    } else {
        routes
    }
}

/// The layer: a span for each `/v1/*` request. Outside the panic catcher,
/// so a request that panicked is traced with its 500.
async fn v1(request: Request, next: Next) -> Response {
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) if path.as_str().starts_with("/v1/") => path.as_str().to_string(),
        _ => return next.run(request).await,
    };
    let method = request.method().as_str().to_string();
    let caller = context(request.headers()).unwrap_or_else(Context::root);
    let span_id = trace::new_id();
    let start_ns = trace::now_ns();
    let response = trace::within(Some(caller.child(span_id)), next.run(request)).await;
    if !caller.parent.sampled {
        return response;
    }
    let status = response.status().as_u16();
    let mut attributes = vec![
        ("http.request.method", Value::Text(method.clone())),
        ("http.route", Value::Text(route.clone())),
        ("http.response.status_code", Value::Int(i64::from(status))),
    ];
    if let Some(generation) = response
        .headers()
        .get(super::GENERATION_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<i64>().ok())
    {
        attributes.push(("muster.generation", Value::Int(generation)));
    }
    if let Some(answered) = response.extensions().get::<Answered>() {
        attributes.push(("error.type", Value::Text(answered.kind.into())));
        let codes = answered.codes.iter().map(|c| (*c).to_string()).collect();
        attributes.push(("muster.codes", Value::Texts(codes)));
    }
    trace::record(Span {
        trace_id: caller.parent.trace_id,
        span_id,
        parent: caller.parent_span(),
        name: format!("{method} {route}"),
        kind: Kind::Server,
        start_ns,
        end_ns: trace::now_ns(),
        attributes,
        // OpenTelemetry's HTTP conventions: a server span is an error for
        // a 5xx only (a 4xx is the caller's).
        error: status >= 500,
    });
    response
}
