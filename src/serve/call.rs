//! `POST /v1/call`: a turn checked as `/v1/check` checks it, then run
//! through the gateway's connections to the policy's MCP servers
//! (docs/call.md). The check runs on the blocking pool; the forwarding on
//! the async runtime, so a slow server holds no thread.

use super::api::{self, JSON};
use super::problem::ProblemDocument;
use super::request::{CheckRequest, RawBody, parse};
use super::{Generation, Shared};
use crate::answer::{self, Outcome};
use crate::check::{CheckOptions, Report};
use crate::contract::TurnOutcome;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::path::Path;
use std::sync::Arc;

/// The `/v1/call` route with its own layers: it waits on MCP servers, so
/// each forwarded call is bounded by its server's `timeout_secs` (a typed
/// per-call failure), not by the request timeout, as for `/mcp`.
pub(super) fn routes(shared: Arc<Shared>, config: &super::Config) -> axum::Router {
    use axum::middleware::from_fn_with_state;
    let routes = axum::Router::new()
        .route("/v1/call", axum::routing::post(call))
        .layer(axum::extract::DefaultBodyLimit::max(config.body_limit))
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            config.concurrency,
        ))
        .layer(from_fn_with_state(
            super::request::BodyDeadline {
                within: config.request_timeout,
                limit: config.body_limit,
            },
            super::request::whole_body,
        ))
        .layer(from_fn_with_state(
            config.body_limit,
            super::declared_too_large,
        ))
        .layer(from_fn_with_state(shared.clone(), super::auth::require))
        .layer(from_fn_with_state(
            super::guard::Guard::new(config.addr),
            super::guard::check,
        ))
        .layer(from_fn_with_state(shared.clone(), super::count))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            super::panicked,
        ));
    super::traced::layer(routes).with_state(shared)
}

/// Checks a turn and, when every call passes, forwards its MCP calls to
/// their servers: the body `muster call --format json` prints (200 whether
/// the turn ran, was refused or had calls fail upstream; 409 as for
/// `/v1/check`).
#[utoipa::path(post, path = "/v1/call", request_body = CheckRequest,
    responses((status = 200, description = "The turn checked and its calls' results (docs/call.md)", body = crate::contract::CallAnswer, content_type = "application/json"),
              (status = 409, description = "The session's pin no longer holds (`tool-pin-mismatch`), or the plan a fingerprint names is not the one this generation makes (`plan-changed`)", body = ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn call(
    State(shared): State<Arc<Shared>>,
    who: Option<axum::Extension<super::auth::Admitted>>,
    RawBody(body): RawBody,
) -> Response {
    let generation = shared.current.load_full();
    let number = generation.number;
    let work = shared.clone();
    let who = who.map(|w| w.0);
    let agents = who.as_ref().map(|w| w.caller.agents.clone());
    let under = crate::trace::current();
    let caller = super::auth::CALLER.try_with(Clone::clone).ok();
    let checked = tokio::task::spawn_blocking(move || {
        // A session named by id is reached by its owner only (super::named).
        let _asking = super::named::Asking::set(caller);
        checked(&work, &generation, &body, agents.as_deref(), under.as_ref())
    })
    .await;
    let (report, chat, agent) = match checked {
        Ok(Ok(checked)) => checked,
        Ok(Err(err)) => return err.generation(number).into_response(),
        Err(_) => return api::internal(number),
    };
    // Each call of the turn is a call of its caller to its tool, as in a chat: the request
    // took one from the caller's bucket, and a turn of 50 calls ran 50 (a hostile probe).
    // Past a limit nothing of the turn runs.
    if let Some(who) = &who {
        for call in &report.calls {
            if let Some(tool) = &call.tool
                && let Err(over) = who.tool_call(&tool.name)
            {
                return super::auth::too_many(&over);
            }
        }
    }
    let audit = who.map(|w| w.audit(agent.unwrap_or_default()));
    let ran = super::auth::audited_by(audit, shared.gateway.call_turn(&report, &chat)).await;
    let outcome = match ran.outcome {
        TurnOutcome::Ran => Outcome::Done,
        TurnOutcome::Refused => {
            shared.metrics.turn_refused();
            Outcome::Failed
        }
        TurnOutcome::Failed => Outcome::Failed,
    };
    shared.metrics.answer("/v1/call", outcome);
    api::respond(
        axum::http::StatusCode::OK,
        JSON,
        answer::json_text(&ran),
        number,
    )
}

/// The request's turn checked, and the kept session it names (for the
/// call log).
fn checked(
    shared: &Shared,
    g: &Generation,
    body: &[u8],
    agents: Option<&[String]>,
    under: Option<&crate::trace::Context>,
) -> Result<(Report<'static>, String, Option<String>), super::problem::ApiError> {
    let req: CheckRequest<'_> = parse(body)?;
    let mut checked_agent = None;
    if let Some(agents) = agents {
        let agent = agent_of(shared, g, &req)?;
        if !agents.contains(&agent) {
            return Err(super::problem::ApiError::http(
                axum::http::StatusCode::FORBIDDEN,
                crate::error::code::INSUFFICIENT_SCOPE,
                "the token's grants do not open this agent",
                crate::error::Problem::coded(
                    crate::error::code::INSUFFICIENT_SCOPE,
                    format!(
                        "the turn was offered by agent {:?}; the caller may use [{}]",
                        crate::names::escape(&agent),
                        agents.join(", ")
                    ),
                )
                .in_file("agent")
                .help("send a turn of a plan or session of one of the caller's agents"),
            ));
        }
        checked_agent = Some(agent);
    }
    let offered = api::offered_for(shared, g, &req, "/v1/call")?;
    let options = CheckOptions {
        positional: req.positional,
    };
    let started = crate::gateway::spans::turn_start(under);
    let report = answer::check(&offered, req.turn.get(), Path::new("turn"), &options)?;
    crate::gateway::spans::turn_checked(under, started, &report);
    Ok((
        report,
        req.session_id.clone().unwrap_or_default(),
        checked_agent,
    ))
}

/// The agent whose roster a `/v1/call` body names: its plan's or session
/// document's `agent.name` (a kept session's, read from the store), else
/// `agent` (with a fingerprint), else the policy's default.
fn agent_of(
    shared: &Shared,
    g: &Generation,
    req: &CheckRequest<'_>,
) -> Result<String, super::problem::ApiError> {
    #[derive(serde::Deserialize)]
    struct Named {
        agent: Agent,
    }
    #[derive(serde::Deserialize)]
    struct Agent {
        name: String,
    }
    let named = |raw: &serde_json::value::RawValue| {
        serde_json::from_str::<Named>(raw.get())
            .map(|n| n.agent.name)
            .unwrap_or_default()
    };
    if let Some(plan) = req.plan {
        return Ok(named(plan));
    }
    if req.session.is_some() || req.session_id.is_some() {
        let (doc, _) = super::named::named(shared, req.session, req.session_id.as_deref())?;
        return Ok(doc.agent.name);
    }
    Ok(req
        .agent
        .clone()
        .or_else(|| g.inputs.policy.agent(None, None).map(|a| a.name.clone()))
        .unwrap_or_default())
}
