//! Which session a request names: the document the host carries
//! (`session`) or, when the service keeps sessions, its id (`session_id`),
//! read and checked whole; and the 409 every route answers when a
//! session's pin no longer holds. Used by the session routes and by the
//! check and call routes alike; decides nothing about what a session may
//! load.

use super::Shared;
use super::problem::{ApiError, Conflict};
use super::request::usage;
use crate::answer::Outcome;
use crate::contract::SessionDocument;
use crate::error::Problem;
use crate::error::code;
use crate::session;
use crate::store::Stored;
use axum::http::StatusCode;
use serde_json::value::RawValue;
use std::path::Path;

thread_local! {
    /// The caller whose request this thread's work answers (`[auth]` only): see [`Asking`].
    static ASKING: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The caller a blocking thread works for while the value lives: a kept session whose
/// document names an `owner` (a chat started on `/mcp` by a token's `sub`, or a session
/// `POST /v1/sessions` made for one) is reached by that caller only ([`fetch`]).
pub(super) struct Asking;

impl Asking {
    pub(super) fn set(caller: Option<String>) -> Self {
        ASKING.with(|asking| *asking.borrow_mut() = caller);
        Asking
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        ASKING.with(|asking| *asking.borrow_mut() = None);
    }
}

/// The caller the current work answers, when `[auth]` admitted one.
pub(super) fn asking() -> Option<String> {
    ASKING.with(|asking| asking.borrow().clone())
}

/// Where a session came from: a kept one is written back by revision.
#[derive(Debug, Clone)]
pub(super) struct Kept {
    pub id: String,
    pub revision: u64,
}

/// The session document a request names, read and checked whole, with
/// where it is kept when the store holds it.
pub(super) fn named(
    shared: &Shared,
    document: Option<&RawValue>,
    id: Option<&str>,
) -> Result<(SessionDocument, Option<Kept>), ApiError> {
    match (document, id) {
        (Some(doc), None) => Ok((session::read(doc.get(), Path::new("session"))?, None)),
        (None, Some(id)) => {
            let stored = fetch(shared, id)?;
            let doc = session::read(&stored.document, Path::new("session_id"))?;
            Ok((
                doc,
                Some(Kept {
                    id: id.to_string(),
                    revision: stored.revision,
                }),
            ))
        }
        _ => Err(usage(
            code::CONFLICT,
            "session",
            "give exactly one of session and session_id",
            "send the session document as `session`, or the id of a session this service keeps as `session_id`",
        )
        .into()),
    }
}

/// The stored session `id`: 404 when there is none (never created,
/// deleted or expired), 422 when the service keeps no sessions.
pub(super) fn fetch(shared: &Shared, id: &str) -> Result<Stored, ApiError> {
    let store = shared.store.as_ref().ok_or_else(|| {
        ApiError::from(usage(
            code::UNKNOWN_NAME,
            "session_id",
            "this service keeps no sessions, so a session_id names nothing",
            "send the session document as `session`, or start the service with --sessions sqlite:PATH or postgres://…",
        ))
    })?;
    if !session::is_session_id(id) {
        return Err(usage(
            code::INVALID_SESSION_ID,
            "session_id",
            &format!("session_id {id:?} is not a session id"),
            "give the `id` that POST /v1/sessions answered",
        )
        .into());
    }
    let stored = store.get(id, shared.now())?.ok_or_else(|| missing(id))?;
    // Another caller's session is answered as one that is not kept: an id confirms nothing.
    if let Some(caller) = asking() {
        #[derive(serde::Deserialize)]
        struct Owner {
            owner: Option<String>,
        }
        let owner = serde_json::from_str::<Owner>(&stored.document)
            .map_err(|_| missing(id))?
            .owner;
        if owner.is_some_and(|owner| owner != caller) {
            return Err(missing(id));
        }
    }
    Ok(stored)
}

pub(super) fn missing(id: &str) -> ApiError {
    ApiError::http(
        StatusCode::NOT_FOUND,
        "session-not-found",
        "no such session",
        Problem::coded(
            code::SESSION_NOT_FOUND,
            format!("no session {id:?} is kept: never created, deleted, or expired"),
        )
        .in_file("session_id")
        .help("start a new session with POST /v1/sessions"),
    )
}

/// A 409 problem, counted as a pin mismatch.
pub(super) fn conflict(shared: &Shared, endpoint: &str, conflict: Conflict) -> ApiError {
    shared.metrics.answer(endpoint, Outcome::PinMismatch);
    conflict.into_problem()
}
