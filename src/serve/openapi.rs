//! `GET /openapi.json`: the OpenAPI 3.1 document generated from every
//! route's request and response types.

use super::api::{self, JSON};
use super::call;
use super::problem::ProblemDocument;
use super::request::{
    CheckRequest, CountRequest, GateRequest, LoadRequestBody, NewSessionRequest, PlanRequest,
    Ready, ReloadReport, RosterRequest, SearchRequest, SessionRequest, WhyRequest,
};
use super::sessions;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;

/// This document.
#[utoipa::path(get, path = "/openapi.json", responses((status = 200, description = "OpenAPI 3.1", body = Object)))]
pub async fn openapi() -> Response {
    let mut response = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_default()
        .into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// The OpenAPI document of every route.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "muster",
        description = "Plans which tools an LLM agent is offered; the same answers as the muster CLI's --format json. See docs/serve.md."
    ),
    paths(
        api::plan,
        api::why,
        api::count,
        api::gate,
        api::check,
        call::call,
        sessions::session_new,
        sessions::session_get,
        sessions::session_delete,
        sessions::session_search,
        sessions::session_load,
        sessions::session_roster,
        sessions::session_resume,
        api::reload,
        api::healthz,
        api::readyz,
        api::metrics,
        openapi
    ),
    components(schemas(
        ProblemDocument,
        PlanRequest,
        WhyRequest,
        GateRequest,
        CheckRequest,
        CountRequest,
        SessionRequest,
        NewSessionRequest,
        RosterRequest,
        SearchRequest,
        LoadRequestBody,
        ReloadReport,
        Ready
    ))
)]
pub struct ApiDoc;
