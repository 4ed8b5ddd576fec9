//! `muster serve`: the CLI's verbs over HTTP/JSON, for platforms that ask
//! at every agent-session plan, control-tool call and turn.
//!
//! Every route calls the same [`crate::answer`] function the CLI calls, so
//! a body is the bytes `--format json` prints. The service keeps no
//! per-session state: session documents come in with each request and go
//! out with each answer that changes them. Policies are one immutable
//! generation behind an [`ArcSwap`]: a request takes one generation at its
//! start and answers from it whole; a reload (`POST /v1/admin/reload` or
//! SIGHUP) swaps in the next only when it validates.
//!
//! It decides nothing the library below it decides; it maps answers to
//! statuses, errors to problem+json, and bounds every request.

mod admin;
mod api;
mod auth;
mod call;
mod guard;
pub mod inflight;
mod log;
mod mcp;
mod memo;
mod metrics;
mod named;
mod openapi;
mod problem;
mod request;
mod run;
mod sessions;
mod streamed;
mod traced;

pub use admin::{AdminToken, MAX_TOKEN_BYTES, MIN_TOKEN_BYTES};
pub use api::GENERATION_HEADER;
pub use openapi::ApiDoc;
pub use problem::{CONFLICT_CODES, HTTP_CODES, ProblemDocument, TYPE_PREFIX};
pub use run::{run, serve};
pub use sessions::MAX_QUERIES;

use crate::check::OfferedPlan;
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::policy::Inputs;
use crate::tokens::TokenCache;
use arc_swap::ArcSwap;
use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use memo::Memo;
use metrics::Metrics;
use problem::ApiError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceBuilder;

/// How the service runs; every limit has a default a single host can take.
#[derive(Debug, Clone)]
pub struct Config {
    /// The policy directory.
    pub policies: PathBuf,
    /// The directory `/v1/gate` reads gates from.
    pub gates: PathBuf,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Largest request body, in bytes (413 above it).
    pub body_limit: usize,
    /// Longest a request may take (503 problem after it).
    pub request_timeout: Duration,
    /// Most requests answered at once; the rest wait their turn.
    pub concurrency: usize,
    /// Longest a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// Most entries each memo of a generation keeps (`/v1/plan` answers,
    /// plans `/v1/check` compiled): distinct request bodies past it evict
    /// older ones, so a client sending endless distinct bodies costs work,
    /// never memory.
    pub memo_entries: usize,
    /// Most bytes each memo of a generation holds, keys and values.
    pub memo_bytes: usize,
    /// The keys session documents are signed and verified with.
    pub session_keys: crate::session::SessionKeys,
    /// Where sessions are kept by id; `None`: hosts carry documents.
    pub sessions: Option<crate::store::StoreUrl>,
    /// How long a kept session lives after its last change.
    pub session_ttl: Duration,
    /// Longest the service waits, after SIGTERM or SIGINT, for the requests
    /// in flight to finish; past it, it logs `drain-timeout` and stops
    /// with them unanswered.
    pub drain_timeout: Duration,
    /// The token `/v1/admin/reload` requires as `Authorization: Bearer`.
    /// Without one the admin route is open on a loopback address and off
    /// (403) on any other.
    pub admin_token: Option<AdminToken>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            policies: "policies".into(),
            gates: "gates".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit: 1024 * 1024,
            request_timeout: Duration::from_secs(10),
            concurrency: 256,
            header_read_timeout: Duration::from_secs(5),
            memo_entries: 256,
            memo_bytes: 16 * 1024 * 1024,
            session_keys: crate::session::SessionKeys::none(),
            sessions: None,
            session_ttl: Duration::from_secs(7 * 24 * 3600),
            drain_timeout: Duration::from_secs(30),
            admin_token: None,
        }
    }
}

/// One whole, validated reading of the policy directory (the policy, its
/// snapshots and its lock, read together): what every request answers from.
#[derive(Debug)]
pub struct Generation {
    /// 1 for the policies loaded at start, then +1 per successful reload.
    pub number: u64,
    /// The policy, what its servers list and the lock.
    pub inputs: Inputs,
    /// Token counts of this generation's definitions, kept between
    /// requests so only a definition never seen is counted. A pool, not one
    /// locked cache: a request takes one for the time it answers and no
    /// request waits for another's answer.
    caches: std::sync::Mutex<Vec<TokenCache>>,
    /// The fullest cache given back so far: a request that finds the pool
    /// empty starts from a copy of it, not from nothing.
    seed: std::sync::Mutex<TokenCache>,
    /// `/v1/plan` answers by request body.
    plans: Memo<Answered>,
    /// Plans `/v1/check` was given, read and compiled, by their bytes.
    offered: Memo<OfferedPlan>,
    /// Session bases (catalog, plan digests, search index) by pinned
    /// selection: a session request opens on one, built once per generation.
    pub(crate) bases: Memo<crate::session::Basis>,
}

/// An answer kept for the bytes it answered: its body and outcome.
#[derive(Debug)]
pub struct Answered {
    /// The body.
    pub body: axum::body::Bytes,
    /// What it means.
    pub outcome: crate::answer::Outcome,
}

impl Generation {
    /// A generation of `inputs`, its token counts warmed by planning the
    /// default roster (a policy whose default cannot be planned starts
    /// cold; its requests answer the problem).
    fn new(number: u64, inputs: Inputs, limits: MemoLimits) -> Self {
        let mut seed = TokenCache::in_memory();
        let _ = crate::answer::plan(&inputs, &crate::answer::Select::default(), &mut seed);
        Self {
            number,
            inputs,
            caches: std::sync::Mutex::new(Vec::new()),
            seed: std::sync::Mutex::new(seed),
            plans: Memo::new(limits.entries, limits.bytes),
            offered: Memo::new(limits.entries, limits.bytes),
            bases: Memo::new(limits.entries, limits.bytes),
        }
    }

    /// Token counts of this generation, lent to one request until the
    /// lease drops. The pool's lock is held only to take and give back.
    pub fn cache(&self) -> CacheLease<'_> {
        let cache = self.pool().pop().unwrap_or_else(|| self.seed().clone());
        CacheLease {
            generation: self,
            cache,
        }
    }

    /// How full each memo is, by the name `/metrics` gives it.
    fn memo_fills(&self) -> [(&'static str, memo::Fill); 3] {
        [
            ("plans", self.plans.fill()),
            ("offered", self.offered.fill()),
            ("sessions", self.bases.fill()),
        ]
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Vec<TokenCache>> {
        // The pool holds whole caches whatever panicked: take it as it is.
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn seed(&self) -> std::sync::MutexGuard<'_, TokenCache> {
        self.seed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A [`TokenCache`] lent by a [`Generation`]; given back on drop.
#[derive(Debug)]
pub struct CacheLease<'g> {
    generation: &'g Generation,
    cache: TokenCache,
}

impl std::ops::Deref for CacheLease<'_> {
    type Target = TokenCache;
    fn deref(&self) -> &TokenCache {
        &self.cache
    }
}

impl std::ops::DerefMut for CacheLease<'_> {
    fn deref_mut(&mut self) -> &mut TokenCache {
        &mut self.cache
    }
}

impl Drop for CacheLease<'_> {
    fn drop(&mut self) {
        let cache = std::mem::take(&mut self.cache);
        {
            let mut seed = self.generation.seed();
            if cache.len() > seed.len() {
                *seed = cache.clone();
            }
        }
        self.generation.pool().push(cache);
    }
}

/// The bound of each memo a generation keeps.
#[derive(Debug, Clone, Copy)]
struct MemoLimits {
    entries: usize,
    bytes: usize,
}

/// What every handler shares.
#[derive(Debug)]
pub struct Shared {
    policies: PathBuf,
    gates: PathBuf,
    memo: MemoLimits,
    current: ArcSwap<Generation>,
    metrics: Metrics,
    /// Who may call `/v1/admin/reload`.
    admin: admin::Admin,
    /// Serializes reloads, so generation numbers follow load order.
    reloading: tokio::sync::Mutex<()>,
    /// Signs and verifies session documents.
    keys: crate::session::SessionKeys,
    /// Where sessions are kept, when they are.
    store: Option<Box<dyn crate::store::SessionStore>>,
    /// How long a kept session lives after its last change.
    session_ttl: Duration,
    /// The MCP gateway at `/mcp`.
    gateway: Arc<crate::gateway::Gateway>,
    /// `[auth]` in force: none when the policy has none.
    auth: arc_swap::ArcSwapOption<auth::AuthState>,
}

impl Shared {
    /// Whether the admin routes are guarded by an admin token of their own.
    pub(crate) fn admin_guards_itself(&self) -> bool {
        matches!(self.admin, admin::Admin::Token(_))
    }

    /// Loads the policies in `config` as generation 1.
    ///
    /// # Errors
    /// The policies' problems, when they fail validation.
    pub fn load(config: &Config) -> Result<Arc<Self>, Error> {
        let inputs = Inputs::load(&config.policies)?;
        let store = match &config.sessions {
            Some(url) => Some(url.open()?),
            None => None,
        };
        let metrics = Metrics::default();
        metrics.loaded(1, false);
        let memo = MemoLimits {
            entries: config.memo_entries,
            bytes: config.memo_bytes,
        };
        let gateway = gateway(config, inputs.clone(), &metrics)?;
        let auth = auth::AuthState::new(inputs.policy.auth.as_ref(), None)?;
        Ok(Arc::new(Self {
            auth: arc_swap::ArcSwapOption::new(auth),
            policies: config.policies.clone(),
            gates: config.gates.clone(),
            memo,
            current: ArcSwap::from_pointee(Generation::new(1, inputs, memo)),
            metrics,
            admin: admin::Admin::new(config.addr, config.admin_token.clone()),
            reloading: tokio::sync::Mutex::new(()),
            keys: config.session_keys.clone(),
            store,
            session_ttl: config.session_ttl,
            gateway: Arc::new(gateway),
        }))
    }

    /// Seconds since the Unix epoch: what the store's expiry is kept in.
    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    /// When a session changed now expires.
    fn expires_at(&self) -> u64 {
        self.now().saturating_add(self.session_ttl.as_secs())
    }

    /// The generation serving now.
    pub fn generation(&self) -> u64 {
        self.current.load().number
    }
}

/// What asked for a reload: its log line's `trigger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// `POST /v1/admin/reload`.
    Http,
    /// SIGHUP.
    Hangup,
}

impl Trigger {
    fn code(self) -> &'static str {
        match self {
            Trigger::Http => "http",
            Trigger::Hangup => "sighup",
        }
    }
}

/// The target of the service's own log lines (start, reload, shutdown);
/// requests log under `muster::request`.
const LOG_TARGET: &str = "muster::serve";

/// Re-reads the policy directory: the new generation's number, or the
/// number still serving and why the policies were refused. Logs one JSON
/// line on stderr either way (event `reload` or `reload-failed`).
async fn reload(shared: &Arc<Shared>, trigger: Trigger) -> Result<u64, (u64, Error)> {
    let _one_at_a_time = shared.reloading.lock().await;
    let dir = shared.policies.clone();
    let loaded = tokio::task::spawn_blocking(move || Inputs::load(&dir))
        .await
        .unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Policy,
                Problem::coded(
                    code::INTERNAL,
                    "reading the policies panicked; this is a bug in muster",
                ),
            ))
        });
    let serving = shared.current.load().number;
    let policies = shared.policies.display().to_string();
    let loaded = loaded.and_then(|inputs| {
        let previous = shared.auth.load_full();
        let auth = auth::AuthState::new(inputs.policy.auth.as_ref(), previous.as_deref())?;
        Ok((inputs, auth))
    });
    match loaded {
        Ok((inputs, auth)) => {
            shared.auth.store(auth);
            let number = serving + 1;
            shared.gateway.reload(inputs.clone());
            shared
                .current
                .store(Arc::new(Generation::new(number, inputs, shared.memo)));
            shared.metrics.loaded(number, true);
            tracing::info!(
                target: LOG_TARGET,
                event = "reload",
                trigger = trigger.code(),
                generation = number,
                previous = serving,
                policies = policies.as_str(),
                "reloaded the policies: generation {number} serving"
            );
            Ok(number)
        }
        Err(err) => {
            shared.metrics.reload_failed();
            let problems: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
            tracing::warn!(
                target: LOG_TARGET,
                event = "reload-failed",
                trigger = trigger.code(),
                generation = serving,
                policies = policies.as_str(),
                error_code = err.kind().code(),
                problems = problems.len(),
                error = problems.join("; ").replace('\n', " ").as_str(),
                "the policies failed validation: generation {serving} keeps serving"
            );
            Err((serving, err))
        }
    }
}

/// The routes with every layer: the service, ready to serve.
pub fn router(shared: Arc<Shared>, config: &Config) -> Router {
    let gateway = mcp::routes(shared.gateway.clone(), config.body_limit)
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            config.concurrency,
        ))
        .layer(middleware::from_fn_with_state(
            request::BodyDeadline {
                within: config.request_timeout,
                limit: mcp::body_limit(config.body_limit),
            },
            request::whole_body,
        ))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            auth::require,
        ))
        .layer(middleware::from_fn_with_state(
            guard::Guard::new(config.addr),
            guard::host_check,
        ))
        .layer(middleware::from_fn_with_state(
            config.body_limit,
            declared_too_large,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), count))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked));
    let call = call::routes(shared.clone(), config);
    let routes = Router::new()
        .route("/v1/plan", post(api::plan))
        .route("/v1/why", post(api::why))
        .route("/v1/count", post(api::count))
        .route("/v1/gate", post(api::gate))
        .route("/v1/check", post(api::check))
        .route("/v1/sessions", post(sessions::session_new))
        .route(
            "/v1/sessions/{id}",
            get(sessions::session_get).delete(sessions::session_delete),
        )
        .route("/v1/sessions/search", post(sessions::session_search))
        .route("/v1/sessions/load", post(sessions::session_load))
        .route("/v1/sessions/roster", post(sessions::session_roster))
        .route("/v1/sessions/resume", post(sessions::session_resume))
        .route("/v1/admin/reload", post(api::reload))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", get(api::metrics))
        .route("/openapi.json", get(openapi::openapi))
        .route(auth::METADATA_PATH, get(auth::metadata))
        .route(
            "/.well-known/oauth-protected-resource/{*resource}",
            get(auth::metadata),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(overloaded))
                .timeout(config.request_timeout)
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
                    config.concurrency,
                )),
        )
        .layer(middleware::from_fn_with_state(
            config.body_limit,
            declared_too_large,
        ))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            auth::require,
        ))
        .layer(middleware::from_fn_with_state(
            guard::Guard::new(config.addr),
            guard::check,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), count))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked));
    traced::layer(routes)
        .with_state(shared)
        .merge(gateway)
        .merge(call)
}

/// The gateway `/mcp` serves: the policy's default agent, chats kept in
/// the `--sessions` store when there is one (so replicas share them), in
/// memory otherwise; each call logged and counted.
fn gateway(
    config: &Config,
    inputs: Inputs,
    metrics: &Metrics,
) -> Result<crate::gateway::Gateway, Error> {
    let store: Box<dyn crate::store::SessionStore> = match &config.sessions {
        Some(url) => url.open()?,
        None => Box::new(crate::store::MemoryStore::default()),
    };
    let options = crate::gateway::Options {
        selection: crate::catalog::Selection::default(),
        keys: config.session_keys.clone(),
        ttl: config.session_ttl,
        check: crate::check::CheckOptions::default(),
        log_arguments: false,
    };
    let count = metrics.gateway_observer();
    let observer = Box::new(move |record: &crate::gateway::CallRecord| {
        count(record);
        let who = auth::audited().unwrap_or_default();
        // The record as `muster mcp` logs it; the service's log format
        // writes its members at the top level (serve/log.rs).
        let line = serde_json::to_string(record).unwrap_or_default();
        tracing::info!(
            target: log::CALL_TARGET,
            caller = who.sub.as_str(),
            client_id = who.client_id.as_str(),
            agent = who.agent.as_str(),
            record = line.as_str(),
            "tools/call"
        );
    });
    crate::gateway::Gateway::new(inputs, options, store, observer)
}

async fn not_found(request: Request) -> ApiError {
    ApiError::http(
        StatusCode::NOT_FOUND,
        "not-found",
        "no such endpoint",
        Problem::coded(
            code::NOT_FOUND,
            format!(
                "{} is not an endpoint of muster serve",
                request.uri().path()
            ),
        )
        .in_file("path")
        .help("see GET /openapi.json for every endpoint"),
    )
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::http(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "the endpoint does not take this method",
        Problem::coded(code::METHOD_NOT_ALLOWED, format!(
            "{} does not take {}",
            request.uri().path(),
            request.method()
        ))
        .in_file("method")
        .help("verbs are POST with a JSON body; /healthz, /readyz, /metrics and /openapi.json are GET"),
    )
}

async fn overloaded(err: tower::BoxError) -> ApiError {
    if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::http(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            "the request took longer than the service allows",
            Problem::coded(
                code::TIMEOUT,
                "the answer was not ready within the request timeout",
            )
            .help("retry, or start the service with a longer --request-timeout-ms"),
        )
    } else {
        ApiError::http(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "the service cannot take the request now",
            Problem::coded(code::OVERLOADED, err.to_string()).help("retry later"),
        )
    }
}

/// Answers 413 at once for a body whose declared `Content-Length` is over
/// the limit, before anything waits for its bytes (a chunked body over the
/// limit is refused as it is read).
async fn declared_too_large(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => {
            let mut response = request::too_large(format!(
                "the body declares {length} bytes (Content-Length); the limit is {limit}"
            ))
            .into_response();
            // The body is left unread: the connection cannot carry another request.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            response
        }
        _ => next.run(request).await,
    }
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal().into_response()
}

/// Counts every request by route and status, with its latency, and logs
/// it: one structured line per request (target `muster::request`) naming
/// the endpoint, the status, the latency in microseconds and the policy
/// generation that answered.
async fn count(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let endpoint = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let method = request.method().clone();
    let start = Instant::now();
    let response = next.run(request).await;
    let elapsed = start.elapsed();
    let status = response.status().as_u16();
    shared
        .metrics
        .request(&endpoint, status, elapsed.as_secs_f64());
    // The generation that answered, when a verb says; else the one serving.
    let generation = response
        .headers()
        .get(GENERATION_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or_else(|| shared.generation());
    tracing::info!(
        target: "muster::request",
        method = method.as_str(),
        endpoint = endpoint.as_str(),
        status,
        latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        generation,
        "request"
    );
    response
}

/// Logs events as JSON lines on stderr: one object per event, its fields
/// at the top level. A subscriber already set (by a host embedding the
/// service) is kept.
fn log_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .json()
        .event_format(log::Lines::new())
        .with_writer(std::io::stderr)
        .try_init();
}
