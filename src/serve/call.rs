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
    axum::Router::new()
        .route("/v1/call", axum::routing::post(call))
        .layer(axum::extract::DefaultBodyLimit::max(config.body_limit))
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            config.concurrency,
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
        ))
        .with_state(shared)
}

/// Checks a turn and, when every call passes, forwards its MCP calls to
/// their servers: the body `muster call --format json` prints (200 whether
/// the turn ran, was refused or had calls fail upstream; 409 as for
/// `/v1/check`).
#[utoipa::path(post, path = "/v1/call", request_body = CheckRequest,
    responses((status = 200, description = "The turn checked and its calls' results (docs/call.md)", body = crate::contract::CallAnswer, content_type = "application/json"),
              (status = 409, description = "The session's pin no longer holds (`tool-pin-mismatch`), or the plan a fingerprint names is not the one this generation makes (`plan-changed`)", body = ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = ProblemDocument, content_type = "application/problem+json")))]
pub async fn call(State(shared): State<Arc<Shared>>, RawBody(body): RawBody) -> Response {
    let generation = shared.current.load_full();
    let number = generation.number;
    let work = shared.clone();
    let checked = tokio::task::spawn_blocking(move || checked(&work, &generation, &body)).await;
    let (report, chat) = match checked {
        Ok(Ok(checked)) => checked,
        Ok(Err(err)) => return err.generation(number).into_response(),
        Err(_) => return api::internal(number),
    };
    let ran = shared.gateway.call_turn(&report, &chat).await;
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
) -> Result<(Report<'static>, String), super::problem::ApiError> {
    let req: CheckRequest<'_> = parse(body)?;
    let offered = api::offered_for(shared, g, &req, "/v1/call")?;
    let options = CheckOptions {
        positional: req.positional,
    };
    let report = answer::check(&offered, req.turn.get(), Path::new("turn"), &options)?;
    Ok((report, req.session_id.clone().unwrap_or_default()))
}
