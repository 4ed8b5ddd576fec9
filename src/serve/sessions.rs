//! The session routes. A request names its session by the document the
//! host carries (`session`) or, when the service keeps sessions
//! (`--sessions`), by its id (`session_id`); either way the session is
//! opened (signature, pin, loads re-checked) against one policy generation.
//! A load through a kept session is a compare-and-swap on its revision: it
//! lands, or it is answered 409 `stale-revision` and changes nothing.

use super::api::{JSON, answered, respond, stopped, until, with_generation, with_generation_stop};
use super::named::{Kept, conflict, fetch, missing, named};
use super::problem::{ApiError, Conflict};
use super::request::{
    LoadRequestBody, NewSessionRequest, RosterRequest, SearchRequest, SessionRequest, tools_format,
    usage,
};
use super::{Generation, Shared};
use crate::answer::{self, Answer, Outcome};
use crate::contract::SessionDocument;
use crate::error::code;
use crate::session::{self, Live, LoadRequest};
use crate::store::{Stored, Swapped};
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use std::path::Path;
use std::sync::Arc;

/// Most queries one `/v1/sessions/search` may carry: work per request is
/// bounded, not only its bytes.
pub const MAX_QUERIES: usize = 1000;

/// Opens the named session against `g`: the live session, or the 409
/// every session route answers when its pin no longer holds.
fn open(
    shared: &Shared,
    g: &Generation,
    document: Option<&RawValue>,
    id: Option<&str>,
    endpoint: &'static str,
) -> Result<(Live, Option<Kept>), ApiError> {
    let (doc, kept) = named(shared, document, id)?;
    let keys = &shared.keys;
    // The basis of the session's selection is built once per generation,
    // and only for a document whose signature holds.
    keys.verify(&doc, Path::new("session"))?;
    let key = session::Basis::key(&doc);
    let basis = match g.bases.get(&key) {
        Some(basis) => basis,
        None => match session::Basis::build(&g.inputs, &doc, &mut g.cache())? {
            Some(basis) => {
                let basis = Arc::new(basis);
                g.bases.insert(&key, basis.clone(), basis.cost());
                basis
            }
            None => {
                let report = session::agent_removed(&doc);
                return Err(conflict(shared, endpoint, Conflict::Resume(report)));
            }
        },
    };
    match session::open_on(basis, doc, keys, Path::new("session"))? {
        session::Opened::Live(live) => Ok((*live, kept)),
        session::Opened::Mismatch(report) => {
            Err(conflict(shared, endpoint, Conflict::Resume(report)))
        }
    }
}

/// Plans and pins a new session: the document `muster session new --format
/// json` prints. With `--sessions` it is also kept, under the `id` it holds.
#[utoipa::path(post, path = "/v1/sessions", request_body = NewSessionRequest,
    responses((status = 200, description = "The session document (docs/session.md); with --sessions it holds its `id`", body = crate::contract::SessionDocument),
              (status = "4XX", description = "Bad input", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_new(
    State(shared): State<Arc<Shared>>,
    super::request::Body(req): super::request::Body<NewSessionRequest>,
) -> Response {
    with_generation(shared, move |shared, g| {
        let (select, options) = req.options()?;
        let mut options = options;
        options.id = match &shared.store {
            Some(_) => Some(crate::store::new_id()?),
            None => None,
        };
        let mut doc = session::new(
            &g.inputs,
            &select.selection,
            &options,
            &shared.keys,
            &mut g.cache(),
        )?;
        // With `[auth]`, the session is its caller's, as a chat on `/mcp` is.
        if let Some(caller) = super::named::asking() {
            doc.owner = Some(caller);
            shared.keys.sign(&mut doc);
        }
        let text = session::to_json_string(&doc);
        if let (Some(store), Some(id)) = (&shared.store, &doc.id) {
            store.insert(
                id,
                &Stored {
                    document: text.clone(),
                    revision: doc.revision,
                },
                shared.expires_at(),
            )?;
        }
        shared.metrics.answer("/v1/sessions", Outcome::Done);
        Ok(respond(StatusCode::OK, JSON, text, g.number))
    })
    .await
}

/// 128 random bits as 32 hex digits.
/// A kept session's document: what `POST /v1/sessions` (or the last load)
/// answered.
#[utoipa::path(get, path = "/v1/sessions/{id}",
    params(("id" = String, Path, description = "The session's id")),
    responses((status = 200, description = "The session document", body = crate::contract::SessionDocument),
              (status = 404, description = "No such session (never created, deleted or expired)", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_get(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    with_generation(shared, move |shared, g| {
        let stored = fetch(shared, &id)?;
        shared.metrics.answer("/v1/sessions/{id}", Outcome::Done);
        Ok(respond(StatusCode::OK, JSON, stored.document, g.number))
    })
    .await
}

/// Deletes a kept session: 204, or 404 when there was none.
#[utoipa::path(delete, path = "/v1/sessions/{id}",
    params(("id" = String, Path, description = "The session's id")),
    responses((status = 204, description = "Deleted"),
              (status = 404, description = "No such session", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_delete(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    with_generation(shared, move |shared, g| {
        fetch(shared, &id)?;
        let store = shared.store.as_ref().expect("fetch found a store");
        if !store.delete(&id)? {
            return Err(missing(&id));
        }
        shared.metrics.answer("/v1/sessions/{id}", Outcome::Done);
        let mut response = StatusCode::NO_CONTENT.into_response();
        response
            .headers_mut()
            .insert(super::GENERATION_HEADER, g.number.into());
        Ok(response)
    })
    .await
}

/// Searches the session's deferred tools: the body `muster session search
/// --format json` prints, or with `queries` the JSON lines `--queries`
/// prints.
#[utoipa::path(post, path = "/v1/sessions/search", request_body = SearchRequest,
    responses((status = 200, description = "Search results; for `queries`, one such object per line (application/x-ndjson)", body = crate::contract::SearchResults),
              (status = 409, description = "The session's pin no longer holds", body = super::ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_search(
    State(shared): State<Arc<Shared>>,
    super::request::Body(req): super::request::Body<SearchRequest>,
) -> Response {
    const ENDPOINT: &str = "/v1/sessions/search";
    with_generation_stop(shared, move |shared, g, stop| {
        if let Some(queries) = &req.queries
            && queries.len() > MAX_QUERIES
        {
            return Err(usage(
                code::OUT_OF_RANGE,
                "queries",
                &format!("queries holds {} queries", queries.len()),
                &format!("send at most {MAX_QUERIES} queries per request"),
            )
            .into());
        }
        let limit = match req.limit {
            None => 5,
            Some(n @ 1..=10) => n as usize,
            Some(n) => {
                return Err(usage(
                    code::OUT_OF_RANGE,
                    "limit",
                    &format!("limit is {n}"),
                    "give limit from 1 to 10, or leave it out for 5",
                )
                .into());
            }
        };
        if req.query.is_some() == req.queries.is_some() {
            return Err(usage(
                code::CONFLICT,
                "query",
                "give exactly one of query and queries",
                "send one query as `query`, or a list of them as `queries`",
            )
            .into());
        }
        let (live, _) = open(
            shared,
            g,
            req.session.as_deref(),
            req.session_id.as_deref(),
            ENDPOINT,
        )?;
        shared.metrics.answer(ENDPOINT, Outcome::Done);
        Ok(match (req.query, req.queries) {
            (Some(query), _) => respond(
                StatusCode::OK,
                JSON,
                answer::json_text(&live.search(&query, limit)),
                g.number,
            ),
            (None, queries) => respond(
                StatusCode::OK,
                "application/x-ndjson",
                answer::search_lines_until(
                    &live,
                    queries.iter().flatten().map(String::as_str),
                    limit,
                    &mut until(shared, ENDPOINT, stop),
                )
                .ok_or_else(stopped)?,
                g.number,
            ),
        })
    })
    .await
}

/// Loads deferred tools into the session, as the control tool does:
/// `{"answer": <what session load --format json prints>, "session": <the
/// document session load leaves>}` (200, also when the load is refused).
/// A kept session is written back only if its revision is still the one
/// read (or `revision`, when given): otherwise 409 `stale-revision`.
#[utoipa::path(post, path = "/v1/sessions/load", request_body = LoadRequestBody,
    responses((status = 200, description = "The load's answer and the session document it leaves", body = crate::answer::SessionLoad),
              (status = 409, description = "The session's pin no longer holds (`tool-pin-mismatch`), or its revision is not the one given (`stale-revision`)", body = super::ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_load(
    State(shared): State<Arc<Shared>>,
    super::request::Body(req): super::request::Body<LoadRequestBody>,
) -> Response {
    const ENDPOINT: &str = "/v1/sessions/load";
    with_generation(shared, move |shared, g| {
        let request = match (req.query, req.name.is_empty()) {
            (Some(query), true) => LoadRequest::Query(query),
            (None, false) => LoadRequest::Names(req.name),
            _ => {
                return Err(usage(
                    code::CONFLICT,
                    "query",
                    "give exactly one of query and name",
                    "send the control tool's query as `query`, or exact names as `name`",
                )
                .into());
            }
        };
        let (live, kept) = open(
            shared,
            g,
            req.session.as_deref(),
            req.session_id.as_deref(),
            ENDPOINT,
        )?;
        let read = kept
            .as_ref()
            .map_or(live.document().revision, |k| k.revision);
        if let Some(expected) = req.revision
            && expected != read
        {
            return Err(stale(
                &kept,
                live.document(),
                expected,
                read,
                shared,
                ENDPOINT,
            ));
        }
        let load = answer::load(live, &request);
        if let (Some(kept), crate::contract::LoadStatus::Loaded) = (&kept, load.answer.status) {
            let store = shared.store.as_ref().expect("a kept session has a store");
            let stored = Stored {
                document: session::to_json_string(&load.session),
                revision: load.session.revision,
            };
            match store.swap(
                &kept.id,
                kept.revision,
                &stored,
                shared.now(),
                shared.expires_at(),
            )? {
                Swapped::Done => {}
                Swapped::Stale { current } => {
                    let kept = Some(kept.clone());
                    return Err(stale(&kept, &load.session, read, current, shared, ENDPOINT));
                }
                Swapped::Missing => return Err(missing(&kept.id)),
            }
        }
        shared
            .metrics
            .answer(ENDPOINT, Answer::of_load(&load.answer).outcome);
        Ok(respond(
            StatusCode::OK,
            JSON,
            answer::json_text(&load),
            g.number,
        ))
    })
    .await
}

/// The 409 for a load meant for `expected` on a session now at `current`.
fn stale(
    kept: &Option<Kept>,
    doc: &SessionDocument,
    expected: u64,
    current: u64,
    shared: &Shared,
    endpoint: &'static str,
) -> ApiError {
    conflict(
        shared,
        endpoint,
        Conflict::StaleRevision(crate::contract::StaleRevision {
            session_id: kept.as_ref().map(|k| k.id.clone()).or(doc.id.clone()),
            expected,
            current,
        }),
    )
}

/// What the model is offered now: the body `muster session roster --format
/// json` prints.
#[utoipa::path(post, path = "/v1/sessions/roster", request_body = RosterRequest,
    responses((status = 200, description = "The session's roster in the plan JSON's roster shape; with `format` a provider's `tools` value instead", body = crate::session::SessionRoster),
              (status = 409, description = "The session's pin no longer holds", body = super::ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_roster(
    State(shared): State<Arc<Shared>>,
    super::request::Body(req): super::request::Body<RosterRequest>,
) -> Response {
    const ENDPOINT: &str = "/v1/sessions/roster";
    with_generation(shared, move |shared, g| {
        let format = tools_format(req.format.as_deref())?;
        let (live, _) = open(
            shared,
            g,
            req.session.as_deref(),
            req.session_id.as_deref(),
            ENDPOINT,
        )?;
        let answer = Answer {
            json: match format {
                None => live.roster_json(),
                Some(format) => live.provider_tools(format),
            },
            outcome: Outcome::Done,
        };
        Ok(answered(shared, ENDPOINT, answer, g.number))
    })
    .await
}

/// Compares the session's pin with the current policies: the body `muster
/// session resume --format json` prints (200 ok; 409 with the report in
/// the problem's `resume` when the pin no longer holds).
#[utoipa::path(post, path = "/v1/sessions/resume", request_body = SessionRequest,
    responses((status = 200, description = "The resume report, status ok", body = crate::contract::ResumeReport),
              (status = 409, description = "The pin no longer holds: `tool-pin-mismatch`, the report in `resume`", body = super::ProblemDocument, content_type = "application/problem+json"),
              (status = "4XX", description = "Bad input", body = super::ProblemDocument, content_type = "application/problem+json")))]
pub async fn session_resume(
    State(shared): State<Arc<Shared>>,
    super::request::Body(req): super::request::Body<SessionRequest>,
) -> Response {
    const ENDPOINT: &str = "/v1/sessions/resume";
    with_generation(shared, move |shared, g| {
        let (doc, _) = named(shared, req.session.as_deref(), req.session_id.as_deref())?;
        let report = session::resume(
            &g.inputs,
            &doc,
            &shared.keys,
            Path::new("session"),
            &mut g.cache(),
        )?;
        if report.status == crate::contract::ResumeStatus::Ok {
            Ok(answered(
                shared,
                ENDPOINT,
                Answer::of_resume(&report),
                g.number,
            ))
        } else {
            Err(conflict(shared, ENDPOINT, Conflict::Resume(report)))
        }
    })
    .await
}
