//! Decides whether a request may reach the service's `/v1/*` routes (and
//! `/healthz`, `/metrics`, ...) at all, before anything reads its body:
//! a browser page on another site (an `Origin` that is not this machine's),
//! a request sent by a name this machine does not answer for while the
//! service is bound to loopback (DNS rebinding: `Host` must be a loopback
//! name or address with the bound port), and a POST body that is not
//! `application/json` (a `text/plain` or form body is what a page on
//! another site may send without asking first). `/mcp` applies the same
//! Origin rule ([`origin_allowed`]) with JSON-RPC errors of its own. It
//! decides nothing about what a request asks for.

use super::problem::ApiError;
use crate::error::{Problem, code};
use crate::loopback;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// Where the service listens: what `Host` must name when that is loopback.
#[derive(Debug, Clone, Copy)]
pub(super) struct Guard {
    bound: SocketAddr,
}

impl Guard {
    /// The rule for a service bound to `bound` (port 0: any port, as in a
    /// router made before its socket is bound).
    pub(super) fn new(bound: SocketAddr) -> Self {
        Self { bound }
    }
}

/// `Ok` when the request carries no `Origin` or a loopback one; else the
/// origin as sent (escaped), for the refusal to name. `null` (a sandboxed
/// page, a file) is refused.
pub(super) fn origin_allowed(headers: &HeaderMap) -> Result<(), String> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let text = origin.to_str().unwrap_or_default();
    let authority = text
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    match loopback::split_authority(authority) {
        Some((host, _)) if loopback::host(host) => Ok(()),
        _ => Err(crate::names::escape(text)),
    }
}

/// The middleware: the Origin, Host and Content-Type rules, in that order.
pub(super) async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Err(origin) = origin_allowed(request.headers()) {
        return refuse(
            StatusCode::FORBIDDEN,
            code::ORIGIN_REFUSED,
            "requests from another site are refused",
            Problem::coded(
                code::ORIGIN_REFUSED,
                format!("requests from origin {origin:?} are refused: only pages served from this machine (a loopback origin) may call the service from a browser"),
            )
            .in_file("origin")
            .help("call the service from a program (no Origin header) or from a page served by localhost"),
        );
    }
    if let Some(refused) = host_refused(guard, &request) {
        return refused;
    }
    if request.method() == Method::POST
        && has_body(request.headers())
        && !TAKES_NO_BODY.contains(&request.uri().path())
    {
        let kind = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| crate::names::escape(v.to_str().unwrap_or("?")));
        if !kind.as_deref().is_some_and(is_json) {
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                code::UNSUPPORTED_MEDIA_TYPE,
                "the request body is not JSON",
                Problem::coded(
                    code::UNSUPPORTED_MEDIA_TYPE,
                    match kind {
                        Some(kind) => format!("the body is sent as {kind:?}; the service reads only `application/json` bodies"),
                        None => "the body is sent without a Content-Type; the service reads only `application/json` bodies".to_string(),
                    },
                )
                .in_file("content-type")
                .help("send the header `Content-Type: application/json` (curl: -H 'content-type: application/json')"),
            );
        }
    }
    next.run(request).await
}

fn refuse(
    status: StatusCode,
    code: &'static str,
    title: &'static str,
    problem: Problem,
) -> Response {
    ApiError::http(status, code, title, problem).into_response()
}

/// `Ok` when the service is bound beyond loopback (it cannot know the
/// names it is reached by; it warns at start), when the request names no
/// host, or when the host is a loopback name with the bound port; else the
/// host as sent (escaped).
fn host_allowed(guard: Guard, request: &Request) -> Result<(), String> {
    if !loopback::ip(guard.bound.ip()) {
        return Ok(());
    }
    let sent = match request.headers().get(header::HOST) {
        Some(value) => value.to_str().unwrap_or("?").to_string(),
        None => match request.uri().authority() {
            Some(authority) => authority.as_str().to_string(),
            None => return Ok(()),
        },
    };
    let fits = loopback::split_authority(&sent).is_some_and(|(host, port)| {
        loopback::host(host)
            && (guard.bound.port() == 0 || port.unwrap_or(80) == guard.bound.port())
    });
    if fits {
        Ok(())
    } else {
        Err(crate::names::escape(&sent))
    }
}

/// POST routes that read no body: any body they get is refused by the
/// route itself (after its token check), whatever its type.
const TAKES_NO_BODY: [&str; 1] = ["/v1/admin/reload"];

/// Whether the request declares a body: a `Content-Length` other than 0,
/// or any `Transfer-Encoding`.
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0")
}

/// Whether a Content-Type is `application/json` (any case, parameters such
/// as `charset=utf-8` allowed).
fn is_json(kind: &str) -> bool {
    kind.split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Logs a warning when the service listens beyond loopback without
/// `[auth]`: then anyone who reaches the address may call `/mcp` and
/// `/v1/call` (which run MCP servers' tools), and the Host check is off.
/// With `[auth]` (`authenticated`) every such call needs a caller's token.
pub(super) fn warn_if_open(addr: SocketAddr, authenticated: bool) {
    if !authenticated && !loopback::ip(addr.ip()) {
        tracing::warn!(
            target: super::LOG_TARGET,
            event = "open-beyond-loopback",
            addr = %addr,
            "listening beyond loopback on {addr}: anyone who reaches it may call /mcp and /v1/call, which run the policy's MCP servers; put an authenticating proxy in front or bind 127.0.0.1"
        );
    }
}

/// The DNS-rebinding rule alone, for `/mcp` (which keeps its own Origin
/// answer and reads JSON-RPC bodies itself): a loopback service answers
/// only requests sent to a loopback name with its port.
pub(super) async fn host_check(
    State(guard): State<Guard>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = host_refused(guard, &request) {
        return refused;
    }
    next.run(request).await
}

/// The 421 for a request whose `Host` a loopback service does not answer.
fn host_refused(guard: Guard, request: &Request) -> Option<Response> {
    let host = host_allowed(guard, request).err()?;
    Some(refuse(
            StatusCode::MISDIRECTED_REQUEST,
            code::HOST_REFUSED,
            "the request names a host this service does not answer for",
            Problem::coded(
                code::HOST_REFUSED,
                format!("the request was sent to host {host:?}, but the service listens on loopback {} and answers only requests sent to a loopback name with that port (a page on another site reaches loopback by rebinding its own name)", guard.bound),
            )
            .in_file("host")
            .help(format!("send the request to http://{}/ or http://localhost:{}/ (behind a proxy: have it send that Host)", guard.bound, guard.bound.port())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(value: &str) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, value.parse().unwrap());
        origin_allowed(&headers)
    }

    #[test]
    fn loopback_origins_pass_and_others_are_refused() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "http://[::ffff:127.0.0.1]:8080",
        ] {
            assert_eq!(origin(ok), Ok(()), "{ok}");
        }
        for no in [
            "http://evil.example",
            "null",
            "http://127.0.0.1.nip.io",
            "http://localhost.evil.example:80",
            "http://user@evil",
        ] {
            assert!(origin(no).is_err(), "{no}");
        }
    }

    #[test]
    fn json_content_types() {
        for ok in ["application/json", "Application/JSON; charset=utf-8"] {
            assert!(is_json(ok), "{ok}");
        }
        for no in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/jsonx",
            "",
        ] {
            assert!(!is_json(no), "{no}");
        }
    }
}
