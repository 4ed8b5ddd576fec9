//! The HTTP face of `[auth]` (docs/auth.md): the middleware that lets a
//! request in with its [`Caller`] or answers 401 / 403 / 429 / 503 as
//! problem+json with `WWW-Authenticate`, and the protected resource
//! metadata (RFC 9728) it points clients to. Which token passes and what
//! a caller may use is decided by [`crate::auth`]; which chat and roster a
//! caller gets by `mcp`.

use super::Shared;
use super::problem::ApiError;
use crate::auth::{Authenticator, Caller, Limited, Limiter, Refusal};
use crate::error::{Error, Problem, code};
use crate::policy::{AuthPolicy, GrantMatch, MetricsAccess};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

/// The well-known path of the protected resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// One `[auth]` in force: its checker and its buckets.
#[derive(Debug)]
pub(super) struct AuthState {
    check: Authenticator,
    limiter: Option<Arc<Limiter>>,
}

impl AuthState {
    /// The state for `policy` (none: no `[auth]`), keeping `previous`'s
    /// buckets when the limits did not change.
    ///
    /// # Errors
    /// A JWKS file that cannot be read.
    pub(super) fn new(
        policy: Option<&AuthPolicy>,
        previous: Option<&AuthState>,
    ) -> Result<Option<Arc<Self>>, Error> {
        let Some(policy) = policy else {
            return Ok(None);
        };
        let check = Authenticator::new(policy)?;
        let limiter = policy.limits.map(|limits| {
            previous
                .filter(|p| p.check.policy().limits == Some(limits))
                .and_then(|p| p.limiter.clone())
                .unwrap_or_else(|| Arc::new(Limiter::new(limits)))
        });
        Ok(Some(Arc::new(Self { check, limiter })))
    }
}

/// What a request let in carries to its handler.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    /// Who is asking.
    pub(crate) caller: Caller,
    limiter: Option<Arc<Limiter>>,
    shared: Arc<Shared>,
}

impl Admitted {
    /// Takes one call of the caller to `tool` (both its buckets), counting
    /// a refusal in the metrics.
    ///
    /// # Errors
    /// The limit it is over.
    pub(crate) fn tool_call(&self, tool: &str) -> Result<(), Limited> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let now = Instant::now();
        let taken = limiter
            .tool_call(&self.caller.sub, tool, now)
            .and_then(|()| limiter.request(&self.caller.sub, now));
        if let Err(limited) = &taken {
            self.shared
                .metrics
                .rate_limited(self.caller.agent(None).unwrap_or(""), limited.scope);
        }
        taken
    }

    /// Takes one from the caller's `calls_per_minute` bucket for a new chat, counting a
    /// refusal in the metrics.
    ///
    /// # Errors
    /// The limit it is over.
    pub(crate) fn new_chat(&self) -> Result<(), Limited> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let taken = limiter.request(&self.caller.sub, Instant::now());
        if let Err(limited) = &taken {
            self.shared
                .metrics
                .rate_limited(self.caller.agent(None).unwrap_or(""), limited.scope);
        }
        taken
    }
}

/// Whom a message's calls are logged for: the caller, its client and the
/// chat's agent (docs/auth.md, "Metrics and logs").
#[derive(Debug, Clone, Default)]
pub(crate) struct Audit {
    pub(crate) sub: String,
    pub(crate) client_id: String,
    pub(crate) agent: String,
}

tokio::task_local! {
    /// The audit of the message being answered, read by the call log.
    static AUDIT: Audit;
}

impl Admitted {
    /// The audit of this caller's calls in a chat of `agent`.
    pub(crate) fn audit(&self, agent: String) -> Audit {
        Audit {
            sub: self.caller.sub.clone(),
            client_id: self.caller.client_id.clone().unwrap_or_default(),
            agent,
        }
    }
}

/// Runs `work` with its calls logged under `audit`.
pub(crate) async fn audited_by<F: std::future::Future>(audit: Option<Audit>, work: F) -> F::Output {
    match audit {
        Some(audit) => AUDIT.scope(audit, work).await,
        None => work.await,
    }
}

/// The audit of the message being answered, when `[auth]` let it in.
pub(crate) fn audited() -> Option<Audit> {
    AUDIT.try_with(Clone::clone).ok()
}

/// Whether `path` is open whatever `[auth]` says.
fn open(path: &str, metrics: MetricsAccess) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/openapi.json")
        || path == METADATA_PATH
        || path.starts_with("/.well-known/")
        || (path == "/metrics" && metrics == MetricsAccess::Open)
}

/// The middleware: with `[auth]`, a request to anything but the open
/// routes needs a valid bearer token matching a grant; `/v1/*` requests
/// also take one from the caller's bucket (`/mcp` takes per tool call).
pub(super) async fn require(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(state) = shared.auth.load_full() else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    if open(path, state.check.policy().metrics) {
        return next.run(request).await;
    }
    // The admin routes are the operator's, not a caller's: with an admin
    // token their own guard (`admin.rs`) is the one rule, as the two cannot
    // share one `Authorization` header.
    if path.starts_with("/v1/admin/") && shared.admin_guards_itself() {
        return next.run(request).await;
    }
    let is_mcp = path == "/mcp" || path.starts_with("/mcp/");
    let mut given = request.headers().get_all(header::AUTHORIZATION).iter();
    let authorization = given.next().map(HeaderValue::as_bytes);
    // Two `Authorization` headers: which one a proxy in front read is unknown, so neither is
    // taken, and the request is refused as a malformed one (a hostile probe found the first
    // one won).
    let checked = match given.next() {
        Some(_) => Err(Refusal::Invalid(crate::auth::Invalid::Malformed)),
        None => state.check.authenticate(authorization).await,
    };
    let caller = match checked {
        Ok(caller) => caller,
        Err(refusal) => {
            let reason = match &refusal {
                Refusal::Invalid(why) => why.code(),
                other => other.code(),
            };
            shared.metrics.auth_refused(reason);
            return refused(&state, &refusal, request.headers(), is_mcp);
        }
    };
    if !is_mcp
        && let Some(limiter) = &state.limiter
        && let Err(limited) = limiter.request(&caller.sub, Instant::now())
    {
        shared
            .metrics
            .rate_limited(caller.agent(None).unwrap_or(""), limited.scope);
        return too_many(&limited);
    }
    let sub = caller.sub.clone();
    request.extensions_mut().insert(Admitted {
        caller,
        limiter: state.limiter.clone(),
        shared: shared.clone(),
    });
    CALLER.scope(sub, next.run(request)).await
}

tokio::task_local! {
    /// The admitted caller's `sub` while its request is answered, for the work that decides
    /// what it may reach by id ([`super::named`]); unset without `[auth]`.
    pub(super) static CALLER: String;
}

/// The 401 / 403 / 503 for `refusal`.
fn refused(state: &AuthState, refusal: &Refusal, headers: &HeaderMap, mcp: bool) -> Response {
    let policy = state.check.policy();
    // Without an issuer there is no metadata to point to: API keys only.
    let metadata = policy
        .issuer
        .as_ref()
        .map(|issuer| metadata_url(headers, mcp, &issuer.audience));
    let pointer = metadata
        .as_ref()
        .map(|url| format!("resource_metadata=\"{url}\""))
        .unwrap_or_else(|| "realm=\"muster\"".to_string());
    let (status, title, problem, challenge) = match refusal {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            "a bearer token is required",
            Problem::coded(code::TOKEN_MISSING, "the request carries no `Authorization: Bearer` token, and this service checks tokens ([auth])")
                .help(match &metadata {
                    Some(url) => format!("get an access token from the authorization server named at {url} and send it as `Authorization: Bearer <token>`"),
                    None => "send the API key you were given as `Authorization: Bearer mst_...`".to_string(),
                }),
            format!("Bearer {pointer}"),
        ),
        Refusal::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            "the bearer token is not accepted",
            Problem::coded(code::TOKEN_INVALID, format!("{} ({})", why.sentence(), why.code()))
                .in_file("authorization")
                .help("get a new access token for this resource from the authorization server and send it again"),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", {pointer}",
                why.code()
            ),
        ),
        Refusal::NoGrant { scopes } => {
            let wanted = grant_scopes(policy);
            (
                StatusCode::FORBIDDEN,
                "the token's scopes open no agent",
                Problem::coded(code::INSUFFICIENT_SCOPE, format!(
                    "the token carries scopes [{}], which match no [[auth.grant]]",
                    scopes.iter().map(|s| crate::names::escape(s)).collect::<Vec<_>>().join(" ")
                ))
                .in_file("authorization")
                .help(format!("ask for a token with one of the scopes: {}", wanted.join(" "))),
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\", {pointer}",
                    wanted.join(" ")
                ),
            )
        }
        Refusal::KeysUnavailable(why) => {
            return ApiError::http(
                StatusCode::SERVICE_UNAVAILABLE,
                code::JWKS_UNAVAILABLE,
                "the issuer's keys cannot be had",
                Problem::coded(code::JWKS_UNAVAILABLE, why.clone())
                    .help("try again; an operator should check that auth.jwks is reachable from the service"),
            )
            .into_response();
        }
    };
    let code = refusal.code();
    let mut response = ApiError::http(status, code, title, problem).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The 403 for a caller asking for an agent its grants do not open.
pub(crate) fn agent_refused(caller: &Caller, asked: &str) -> Response {
    let problem = Problem::coded(
        code::INSUFFICIENT_SCOPE,
        format!(
            "the caller may use the agents [{}], not {:?}",
            caller.agents.join(", "),
            crate::names::escape(asked)
        ),
    )
    .in_file("agent")
    .help("ask for one of the caller's agents, or leave the agent out for its default");
    let mut response = ApiError::http(
        StatusCode::FORBIDDEN,
        code::INSUFFICIENT_SCOPE,
        "the token's grants do not open this agent",
        problem,
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer error=\"insufficient_scope\""),
    );
    response
}

/// The 429 for a request over its limit.
pub(super) fn too_many(limited: &Limited) -> Response {
    let mut response = ApiError::http(
        StatusCode::TOO_MANY_REQUESTS,
        code::RATE_LIMITED,
        "too many requests",
        Problem::coded(
            code::RATE_LIMITED,
            format!(
                "the caller made more than {} {} per minute",
                limited.per_minute,
                if limited.scope == "tool" {
                    "calls to this tool"
                } else {
                    "requests"
                }
            ),
        )
        .help(format!(
            "wait {} s (Retry-After) and send it again",
            limited.retry_after_secs
        )),
    )
    .into_response();
    if let Ok(value) = HeaderValue::from_str(&limited.retry_after_secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// Every scope a grant names, sorted.
fn grant_scopes(policy: &AuthPolicy) -> Vec<String> {
    let mut scopes: Vec<String> = policy
        .grants
        .iter()
        .filter_map(|g| match &g.matches {
            GrantMatch::Scope(s) => Some(s.clone()),
            GrantMatch::Claim { .. } => None,
        })
        .collect();
    scopes.sort();
    scopes.dedup();
    scopes
}

/// Where the metadata is, as the client reached the service: its `Host`
/// (only letters, digits, `.`, `-`, `:`, `[` and `]`; else the audience's
/// origin) with `https` when a proxy says so (`X-Forwarded-Proto`), and
/// the `/mcp` suffix for the gateway (RFC 9728 §3.1).
fn metadata_url(headers: &HeaderMap, mcp: bool, audience: &str) -> String {
    let suffix = if mcp { "/mcp" } else { "" };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        });
    let origin = match host {
        Some(host) => {
            let https = headers
                .get("x-forwarded-proto")
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
            format!("{}://{host}", if https { "https" } else { "http" })
        }
        None => origin_of(audience).to_string(),
    };
    format!("{origin}{METADATA_PATH}{suffix}")
}

/// `scheme://authority` of a URL.
fn origin_of(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    match url[start..].find('/') {
        Some(end) => &url[..start + end],
        None => url,
    }
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the metadata when
/// `[auth]` is set, else 404.
pub(super) async fn metadata(State(shared): State<Arc<Shared>>) -> Response {
    let state = shared.auth.load_full();
    let issuer = state
        .as_ref()
        .and_then(|s| s.check.policy().issuer.as_ref());
    let Some(issuer) = issuer else {
        return ApiError::http(
            StatusCode::NOT_FOUND,
            "not-found",
            "no such endpoint",
            Problem::coded(
                code::NOT_FOUND,
                "the service takes no issuer's tokens: muster.toml has no [auth] issuer",
            )
            .help("add [auth] with issuer, audience and jwks to muster.toml (docs/auth.md)"),
        )
        .into_response();
    };
    let body = serde_json::json!({
        "resource": issuer.audience,
        "authorization_servers": issuer.authorization_servers,
        "bearer_methods_supported": ["header"],
        "scopes_supported": state.as_ref().map(|s| grant_scopes(s.check.policy())),
        "resource_name": "muster",
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_follows_the_host_and_never_echoes_odd_text() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert_eq!(
            metadata_url(&headers, true, "https://m.example/mcp"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        headers.insert(header::HOST, HeaderValue::from_static("a\"b"));
        assert_eq!(
            metadata_url(&headers, false, "https://m.example/mcp"),
            "https://m.example/.well-known/oauth-protected-resource"
        );
    }
}
