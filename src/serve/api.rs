//! The routes: each handler calls the same [`answer`] function the CLI
//! calls against one whole policy generation and maps the answer to a
//! status (request types in `request.rs`, the OpenAPI document in
//! `openapi.rs`).

use super::problem::{ApiError, Conflict, ProblemDocument};
use super::request::{
    Body, CheckRequest, CountRequest, GateRequest, PlanRequest, RawBody, Ready, ReloadReport,
    WhyRequest, body_bytes, cap, parse, tools_format, usage,
};
use super::{Answered, Generation, Shared, named};
use crate::answer::{self, Answer, Offer, Outcome};
use crate::check::{CheckOptions, OfferedPlan};
use crate::contract::{PlanChanged, ResumeReport};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use crate::gate;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The header naming the policy generation that answered.
pub const GENERATION_HEADER: &str = "muster-policy-generation";

/// A response with `body` as `content_type`, naming the generation.
pub(super) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<axum::body::Body>,
    generation: u64,
) -> Response {
    let mut response = (status, body.into()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(GENERATION_HEADER, HeaderValue::from(generation));
    response
}

pub(super) const JSON: &str = "application/json";

/// An answer as a response: 409 for a pin mismatch, 200 otherwise (a
/// refused turn, a failed gate and a refused load are answers too).
pub(super) fn answered(
    shared: &Shared,
    endpoint: &str,
    answer: Answer,
    generation: u64,
) -> Response {
    shared.metrics.answer(endpoint, answer.outcome);
    let status = match answer.outcome {
        Outcome::PinMismatch => StatusCode::CONFLICT,
        Outcome::Done | Outcome::Failed => StatusCode::OK,
    };
    respond(status, JSON, answer.json, generation)
}

/// Runs `work` against one whole policy generation on the blocking pool:
/// planning is CPU work, and a panic there becomes a 500 problem, not a
/// dead worker.
pub(super) async fn with_generation<F>(shared: Arc<Shared>, work: F) -> Response
where
    F: FnOnce(&Shared, &Generation) -> Result<Response, ApiError> + Send + 'static,
{
    let generation = shared.current.load_full();
    with(shared, generation, work).await
}

/// [`with_generation`] with the generation already taken.
async fn with<F>(shared: Arc<Shared>, generation: Arc<Generation>, work: F) -> Response
where
    F: FnOnce(&Shared, &Generation) -> Result<Response, ApiError> + Send + 'static,
{
    with_stop(shared, generation, move |shared, g, _| work(shared, g)).await
}

/// [`with_generation`] for work of many steps: `stop` is set once the
/// request no longer waits for the answer (the timeout answered 503, the
/// client went away), and the work checks it between steps, so no thread
/// keeps working for a request already answered.
pub(super) async fn with_generation_stop<F>(shared: Arc<Shared>, work: F) -> Response
where
    F: FnOnce(&Shared, &Generation, &AtomicBool) -> Result<Response, ApiError> + Send + 'static,
{
    let generation = shared.current.load_full();
    with_stop(shared, generation, work).await
}

/// [`with_generation_stop`] with the generation already taken.
async fn with_stop<F>(shared: Arc<Shared>, generation: Arc<Generation>, work: F) -> Response
where
    F: FnOnce(&Shared, &Generation, &AtomicBool) -> Result<Response, ApiError> + Send + 'static,
{
    let number = generation.number;
    let stop = Arc::new(AtomicBool::new(false));
    // Dropped with this future: when it completes, and when the timeout
    // (or hyper, for a client gone) drops it mid-await.
    let _stop_on_drop = StopOnDrop(stop.clone());
    let caller = super::auth::CALLER.try_with(Clone::clone).ok();
    let joined = tokio::task::spawn_blocking(move || {
        let _asking = super::named::Asking::set(caller);
        work(&shared, &generation, &stop)
    })
    .await;
    match joined {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => err.generation(number).into_response(),
        Err(_) => internal(number),
    }
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The question per-item work asks before each item (a call, a query, a
/// gate): whether `stop` is set; when not, the item is counted in
/// `muster_work_items`, and when it is, the request in
/// `muster_work_stopped`.
pub(super) fn until<'a>(
    shared: &'a Shared,
    endpoint: &'static str,
    stop: &'a AtomicBool,
) -> impl FnMut() -> bool + 'a {
    move || {
        if stop.load(Ordering::Relaxed) {
            shared.metrics.work_stopped(endpoint);
            true
        } else {
            shared.metrics.work_item(endpoint);
            false
        }
    }
}

/// What work that saw its stop flag returns: nobody reads it, as the
/// request was already answered or dropped.
pub(super) fn stopped() -> ApiError {
    ApiError::http(
        StatusCode::SERVICE_UNAVAILABLE,
        "timeout",
        "the request took longer than the service allows",
        Problem::coded(
            code::STOPPED,
            "the work stopped: its request was answered or dropped",
        ),
    )
}

/// The 500 for an answer that panicked, naming the generation.
pub(super) fn internal(generation: u64) -> Response {
    ApiError::internal().generation(generation).into_response()
}

/// Counts a chat request's input tokens: the body `muster count --format
/// json` prints.
#[utoipa::path(post, path = "/v1/count", request_body = CountRequest,
    responses((status = 200, description = "The count report (docs/count.md)", body = crate::contract::CountReport),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn count(State(shared): State<Arc<Shared>>, Body(req): Body<CountRequest>) -> Response {
    with_generation(shared, move |shared, g| {
        let provider = match req.provider.as_deref() {
            None => None,
            Some(name) => Some(crate::contract::Provider::from_name(name).ok_or_else(|| {
                usage(
                    code::NOT_A_CHOICE,
                    "provider",
                    &format!("provider {name:?} is not supported"),
                    "use \"openai\" or \"anthropic\", or leave it out",
                )
            })?),
        };
        let options = crate::count::CountOptions {
            provider,
            model: req.model,
        };
        let report = crate::count::count_text(req.request.get(), Path::new("request"), &options)?;
        Ok(answered(
            shared,
            "/v1/count",
            Answer::of_count(&report),
            g.number,
        ))
    })
    .await
}

/// Plans the roster: the body `muster plan --format json` prints.
#[utoipa::path(post, path = "/v1/plan", request_body = PlanRequest,
    responses((status = 200, description = "The plan JSON (docs/plan-json.md); with `format` a provider's `tools` value instead (docs/providers.md)", body = crate::plan::PlanJson),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn plan(State(shared): State<Arc<Shared>>, RawBody(body): RawBody) -> Response {
    const ENDPOINT: &str = "/v1/plan";
    // The same bytes against the same generation are the same answer: the
    // one kept for them, if any, without parsing or planning again.
    let generation = shared.current.load_full();
    if let Some(kept) = generation.plans.get(&body) {
        shared.metrics.answer(ENDPOINT, kept.outcome);
        return respond(StatusCode::OK, JSON, kept.body.clone(), generation.number);
    }
    with(shared, generation, move |shared, g| {
        let req: PlanRequest = parse(&body)?;
        let format = tools_format(req.format.as_deref())?;
        let model = req.model.clone();
        let select = req.select()?;
        let answer = match format {
            None => answer::plan_for_model(&g.inputs, &select, model.as_deref(), &mut g.cache())?,
            Some(format) => answer::plan_tools(&g.inputs, &select, format, &mut g.cache())?,
        };
        let kept = Answered {
            body: Bytes::from(answer.json),
            outcome: answer.outcome,
        };
        let cost = kept.body.len();
        let kept = Arc::new(kept);
        g.plans.insert(&body, kept.clone(), cost);
        shared.metrics.answer(ENDPOINT, kept.outcome);
        Ok(respond(StatusCode::OK, JSON, kept.body.clone(), g.number))
    })
    .await
}

/// Explains one tool's decision: the body `muster why --format json` prints.
#[utoipa::path(post, path = "/v1/why", request_body = WhyRequest,
    responses((status = 200, description = "The explanation (an unknown name is answered with status `unknown` and the closest names)", body = crate::contract::Explanation),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn why(State(shared): State<Arc<Shared>>, Body(req): Body<WhyRequest>) -> Response {
    with_generation(shared, move |shared, g| {
        let tool = req.tool.clone();
        let select = PlanRequest {
            agent: req.agent,
            agent_version: req.agent_version,
            flags: req.flags,
            flag: req.flag,
            item_cap: req.item_cap,
            token_cap: req.token_cap,
            provider: None,
            format: None,
            model: None,
        }
        .select()?;
        let answer = answer::why(&g.inputs, &select, &tool, &mut g.cache())?;
        Ok(answered(shared, "/v1/why", answer, g.number))
    })
    .await
}

/// Runs gates from the service's gate directory: the body `muster gate
/// --format json` prints (200 whether or not they pass; `passed` says).
#[utoipa::path(post, path = "/v1/gate", request_body = GateRequest,
    responses((status = 200, description = "The gate results", body = Vec<crate::contract::GateResult>),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn gate(State(shared): State<Arc<Shared>>, Body(req): Body<GateRequest>) -> Response {
    with_generation_stop(shared, move |shared, g, stop| {
        let caps = (
            cap(req.item_cap, "item_cap")?,
            cap(req.token_cap, "token_cap")?,
        );
        let paths = gate_paths(&shared.gates, &req.gates)?;
        let gates = gate::load(&paths)?;
        let results = answer::gates_until(
            &g.inputs,
            &gates,
            caps,
            &mut g.cache(),
            &mut until(shared, "/v1/gate", stop),
        )?
        .ok_or_else(stopped)?;
        Ok(answered(
            shared,
            "/v1/gate",
            Answer::of_gates(&results),
            g.number,
        ))
    })
    .await
}

/// The gate files `names` name in `dir` (every file when empty), refusing
/// names that are not plain file stems of existing gates.
fn gate_paths(dir: &Path, names: &[String]) -> Result<Vec<std::path::PathBuf>, Error> {
    if names.is_empty() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let known: Vec<String> = std::fs::read_dir(dir)
        .map_err(|err| Error::io(dir, &err))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let mut problems = Vec::new();
    for name in names {
        if !known.contains(name) {
            let near = crate::names::closest(name, known.iter().map(String::as_str), 1);
            problems.push(
                Problem::coded(
                    code::UNKNOWN_NAME,
                    format!("gates names {name:?}, which is not a gate of this service"),
                )
                .in_file("gates")
                .help(match near.first() {
                    Some(best) => format!("did you mean {best:?}?"),
                    None => format!("name a file of {} without .toml", dir.display()),
                }),
            );
        }
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Usage, problems));
    }
    Ok(names
        .iter()
        .map(|n| dir.join(format!("{n}.toml")))
        .collect())
}

/// Checks a turn against a plan or a session: the body `muster check
/// --format json` prints (200 for `run` and `refused`; 409 with the resume
/// report when the session's pin no longer holds).
#[utoipa::path(post, path = "/v1/check", request_body = CheckRequest,
    responses((status = 200, description = "The check report (docs/check.md)", body = crate::check::Report),
              (status = 409, description = "The session's pin no longer holds (`tool-pin-mismatch`), or the plan a fingerprint names is not the one this generation makes (`plan-changed`)", body = ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn check(State(shared): State<Arc<Shared>>, RawBody(body): RawBody) -> Response {
    // Every check runs on the blocking pool, however small its body: a turn's work is bounded
    // (references by `check::MAX_SCHEMA_EXPANSION`, backtracking patterns by
    // `check::MAX_CHECK_STEPS`), but even bounded work on an async worker is work the runtime
    // cannot spend on `/healthz`, signals and the drain, and many small bodies add up.
    let under = crate::trace::current();
    with_generation_stop(shared, move |shared, g, stop| {
        check_body(shared, g, &body, stop, under.as_ref())
    })
    .await
}

/// `/v1/check`'s answer, on the blocking pool; `stop` is looked at before each call of the
/// turn.
fn check_body(
    shared: &Shared,
    g: &Generation,
    body: &[u8],
    stop: &AtomicBool,
    under: Option<&crate::trace::Context>,
) -> Result<Response, ApiError> {
    let req: CheckRequest<'_> = parse(body)?;
    let offered = offered_for(shared, g, &req, "/v1/check")?;
    let options = CheckOptions {
        positional: req.positional,
    };
    let started = crate::gateway::spans::turn_start(under);
    let report = answer::check_until(
        &offered,
        req.turn.get(),
        Path::new("turn"),
        &options,
        &mut until(shared, "/v1/check", stop),
    )?
    .ok_or_else(stopped)?;
    crate::gateway::spans::turn_checked(under, started, &report);
    let answer = Answer::of_check(&report);
    if answer.outcome == Outcome::Failed {
        shared.metrics.turn_refused();
    }
    Ok(answered(shared, "/v1/check", answer, g.number))
}

/// What the turn of a `/v1/check` or `/v1/call` request (`endpoint`) is
/// checked against: the plan, session or fingerprint it names. Runs on the
/// blocking pool (reading a plan or a session may compile schemas).
pub(super) fn offered_for(
    shared: &Shared,
    g: &Generation,
    req: &CheckRequest<'_>,
    endpoint: &'static str,
) -> Result<Arc<OfferedPlan>, ApiError> {
    let select = req.select()?;
    if select != answer::Select::default() && req.fingerprint.is_none() {
        return Err(usage(
            code::CONFLICT,
            "fingerprint",
            "agent, agent_version, flags, flag, item_cap and token_cap choose the plan a fingerprint names",
            "with plan or session the roster is already chosen: leave them out, or send the plan's fingerprint",
        )
        .into());
    }
    let by_session = req.session.is_some() || req.session_id.is_some();
    Ok(match (&req.plan, by_session, &req.fingerprint) {
        (None, false, Some(fingerprint)) => match offered_now(g, req, &select, fingerprint)? {
            Ok(offered) => offered,
            Err(changed) => {
                return Err(named::conflict(
                    shared,
                    endpoint,
                    Conflict::PlanChanged(changed),
                ));
            }
        },
        // `/v1/call` runs what passes: the plan sent only names the plan,
        // and the one the policy makes is what the turn is checked against.
        (Some(plan), false, None) if endpoint == "/v1/call" => {
            match offered_from_policy(g, plan.get())? {
                Ok(offered) => offered,
                Err(changed) => {
                    return Err(named::conflict(
                        shared,
                        endpoint,
                        Conflict::PlanChanged(changed),
                    ));
                }
            }
        }
        (Some(plan), false, None) => offered_plan(g, plan.get())?,
        (None, true, None) => {
            match offered_session(shared, g, req.session, req.session_id.as_deref())? {
                Ok(offered) => offered,
                Err(report) => {
                    return Err(named::conflict(shared, endpoint, Conflict::Resume(report)));
                }
            }
        }
        _ => {
            return Err(usage(
                code::CONFLICT,
                "plan",
                "give exactly one of plan, session (or session_id) and fingerprint",
                "send the plan the model was offered as `plan`, its session document as `session`, or the plan's `fingerprint` with the selection it was made for",
            )
            .into());
        }
    })
}

/// The plan the policy makes for the plan `text` names, checked against
/// the text (`plan-not-from-policy` when edited), kept once per generation
/// for the same bytes; [`PlanChanged`](crate::contract::PlanChanged) when
/// the policy makes another plan now (never kept).
fn offered_from_policy(
    g: &Generation,
    text: &str,
) -> Result<Result<Arc<OfferedPlan>, crate::contract::PlanChanged>, crate::error::Error> {
    // Apart from the plans `/v1/check` reads as sent: those were never
    // compared with the policy.
    let mut key = b"policy\0".to_vec();
    key.extend_from_slice(text.as_bytes());
    if let Some(kept) = g.offered.get(&key) {
        return Ok(Ok(kept));
    }
    Ok(
        match answer::offered_from_policy(&g.inputs, text, Path::new("plan"), &mut g.cache())? {
            Ok(offered) => {
                let offered = Arc::new(offered);
                g.offered.insert(&key, offered.clone(), text.len() * 4);
                Ok(offered)
            }
            Err(changed) => Err(changed),
        },
    )
}

/// The plan `text` describes, read and compiled once per generation for
/// the same bytes: a platform checks every turn of a session against the
/// one plan it was offered.
fn offered_plan(g: &Generation, text: &str) -> Result<Arc<OfferedPlan>, Error> {
    if let Some(kept) = g.offered.get(text.as_bytes()) {
        return Ok(kept);
    }
    let offered = Arc::new(answer::offered(Offer::Plan {
        text,
        file: Path::new("plan"),
    })?);
    // Compiled schemas take a few times the text's bytes.
    g.offered
        .insert(text.as_bytes(), offered.clone(), text.len() * 4);
    Ok(offered)
}

/// The offer of the session a check names, compiled once per generation
/// for the same document: a chat checks every turn against one roster
/// until a load changes it. A document that opened once against this
/// generation opens alike again (its signature and pin were checked, and
/// the generation never changes), so its bytes are the key; a kept
/// session's document is read from the store first, so a load that landed
/// on another replica is seen at once.
fn offered_session(
    shared: &Shared,
    g: &Generation,
    document: Option<&RawValue>,
    id: Option<&str>,
) -> Result<Result<Arc<OfferedPlan>, ResumeReport>, ApiError> {
    let (text, doc) = match (document, id) {
        (Some(raw), None) => (raw.get().to_string(), None),
        _ => {
            let (doc, _) = named::named(shared, document, id)?;
            (crate::session::to_json_string(&doc), Some(doc))
        }
    };
    let mut key = b"session\0".to_vec();
    key.extend_from_slice(text.as_bytes());
    if let Some(kept) = g.offered.get(&key) {
        return Ok(Ok(kept));
    }
    let doc = match doc {
        Some(doc) => doc,
        None => crate::session::read(&text, Path::new("session"))?,
    };
    match answer::open(
        &g.inputs,
        doc,
        &shared.keys,
        Path::new("session"),
        &mut g.cache(),
    )? {
        Ok(live) => {
            let offered = Arc::new(answer::offered(Offer::Session {
                live: &live,
                file: Path::new("session"),
            })?);
            g.offered.insert(&key, offered.clone(), 64 * 1024);
            Ok(Ok(offered))
        }
        Err(report) => Ok(Err(report)),
    }
}

/// The plan this generation makes for the request's selection, compiled
/// once per generation for the same selection and fingerprint; or
/// [`PlanChanged`] when its fingerprint is not the one the caller was
/// offered (never kept, so a reload that brings the plan back answers at
/// once).
fn offered_now(
    g: &Generation,
    req: &CheckRequest<'_>,
    select: &answer::Select,
    fingerprint: &str,
) -> Result<Result<Arc<OfferedPlan>, PlanChanged>, Error> {
    // Plan texts are JSON and so never start with `now`: the two kinds of
    // key cannot meet in the one store.
    let mut key = b"now\0".to_vec();
    serde_json::to_writer(
        &mut key,
        &(
            &req.agent,
            req.agent_version,
            &req.flags,
            &req.flag,
            req.item_cap,
            req.token_cap,
            fingerprint,
        ),
    )
    .map_err(|err| {
        Error::new(
            ErrorKind::Input,
            Problem::coded(code::INTERNAL, err.to_string()),
        )
    })?;
    if let Some(kept) = g.offered.get(&key) {
        return Ok(Ok(kept));
    }
    Ok(
        match answer::offered_now(&g.inputs, select, fingerprint, &mut g.cache())? {
            Ok(offered) => {
                let offered = Arc::new(offered);
                // About what the same plan sent as text costs.
                g.offered.insert(&key, offered.clone(), 64 * 1024);
                Ok(offered)
            }
            Err(changed) => Err(changed),
        },
    )
}

/// Re-reads the policy directory. A policy that fails validation (or a
/// directory that cannot be read) leaves the previous generation serving:
/// 422 problem+json naming every problem and the generation still serving.
/// Takes no body, and the admin token when the service has one.
#[utoipa::path(post, path = "/v1/admin/reload",
    responses((status = 200, description = "Reloaded", body = ReloadReport),
              (status = 401, description = "The service has an admin token and the request did not send it as `Authorization: Bearer`", body = ProblemDocument, content_type = "application/problem+json"),
              (status = 403, description = "The service listens beyond loopback without an admin token: the admin route is off", body = ProblemDocument, content_type = "application/problem+json"),
              (status = 422, description = "The policies failed validation or could not be read (the previous generation keeps serving), or the request had a body", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn reload(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    if let Some(refused) = shared.admin.refusal(request.headers()) {
        return refused;
    }
    match body_bytes(request, &()).await {
        Ok(body) if body.is_empty() => {}
        Ok(body) => {
            return ApiError::from(usage(
                code::INVALID_BODY,
                "body",
                &format!("the reload request has a body of {} bytes", body.len()),
                "send POST /v1/admin/reload with an empty body",
            ))
            .into_response();
        }
        Err(err) => return err.into_response(),
    }
    match super::reload(&shared, super::Trigger::Http).await {
        Ok(generation) => respond(
            StatusCode::OK,
            JSON,
            answer::json_text(&ReloadReport {
                status: "reloaded",
                generation,
            }),
            generation,
        ),
        // Whatever kept the policies from loading (a validation problem,
        // a directory gone or unreadable) is the operator's to fix, not a
        // bug: 422 with the error's own code, the old generation serving.
        Err((generation, err)) => ApiError::with_status(err, StatusCode::UNPROCESSABLE_ENTITY)
            .generation(generation)
            .into_response(),
    }
}

/// Alive: the process answers.
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "Alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready: a policy generation is loaded and serving.
#[utoipa::path(get, path = "/readyz", responses((status = 200, description = "Ready", body = Ready)))]
pub async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let g = shared.current.load();
    respond(
        StatusCode::OK,
        JSON,
        answer::json_text(&Ready {
            status: "ready",
            generation: g.number,
            policies: shared.policies.display().to_string(),
        }),
        g.number,
    )
}

/// Prometheus text exposition of the service's metrics.
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain; version=0.0.4")))]
pub async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    shared.metrics.memos(&shared.current.load().memo_fills());
    shared
        .metrics
        .listen_streams(shared.gateway.listeners().count());
    let mut response = shared.metrics.encode().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::{Config, router};
    use std::sync::mpsc::channel;
    use tower::ServiceExt;

    fn shared(addr: &str) -> (Arc<Shared>, Config) {
        let config = Config {
            policies: concat!(env!("CARGO_MANIFEST_DIR"), "/policies").into(),
            addr: addr.parse().unwrap(),
            ..Config::default()
        };
        (Shared::load(&config).expect("the bundled policies"), config)
    }

    /// Defect 2 of issue 24: the timeout answered 503 and the work went on.
    /// Dropping a request's future (as the timeout does) sets the flag its
    /// blocking work checks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn dropping_a_request_stops_its_work() {
        let (shared, _) = shared("127.0.0.1:0");
        let (started, has_started) = channel();
        let (stopped_tx, has_stopped) = channel();
        let request = tokio::spawn(with_generation_stop(shared, move |_, _, stop| {
            started.send(()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(std::time::Duration::from_millis(1));
            }
            stopped_tx.send(()).unwrap();
            Err(stopped())
        }));
        tokio::task::spawn_blocking(move || has_started.recv().unwrap())
            .await
            .unwrap();
        request.abort();
        tokio::task::spawn_blocking(move || has_stopped.recv().unwrap())
            .await
            .unwrap();
    }

    /// Defect 8 of issue 24: bound beyond loopback without a token, the
    /// reload route is off (no socket is opened here).
    #[tokio::test]
    async fn beyond_loopback_without_a_token_reload_is_403() {
        for (addr, status) in [("0.0.0.0:8080", 403), ("127.0.0.1:8080", 200)] {
            let (shared, config) = shared(addr);
            let response = router(shared, &config)
                .oneshot(
                    axum::http::Request::post("/v1/admin/reload")
                        .body(axum::body::Body::empty())
                        .unwrap(),
                )
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), status, "{addr}");
        }
    }
}
