//! `GET /openapi.json`: the OpenAPI 3.1 document generated from every
//! route's request and response types.
//!
//! The document is generated here ([`ApiDoc::document`]) and kept in the
//! repository as `docs/openapi.json`, which the service serves as it is: the
//! binary carries the text (about 90 KB) instead of the code that builds it
//! (1.3 MB of schema-composing functions, docs/build.md). The test below
//! fails when the two differ; `MUSTER_TEST_BLESS=1 cargo test --lib serve::openapi`
//! writes the file again.

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
    let mut response = DOCUMENT.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// What `GET /openapi.json` answers: [`ApiDoc::document`] as it was when
/// the repository was last blessed.
const DOCUMENT: &str = include_str!("../../docs/openapi.json");

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

impl ApiDoc {
    /// The document as `docs/openapi.json` holds it: pretty JSON and a
    /// final line break.
    #[must_use]
    pub fn document() -> String {
        let mut text = Self::openapi().to_pretty_json().unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiDoc, DOCUMENT};

    /// docs/openapi.json is what the route and schema declarations make;
    /// with `MUSTER_TEST_BLESS=1` it is written again.
    #[test]
    fn the_served_document_is_the_generated_one() {
        let generated = ApiDoc::document();
        if std::env::var_os("MUSTER_TEST_BLESS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");
            std::fs::write(path, &generated).expect("write docs/openapi.json");
            return;
        }
        assert!(
            generated == DOCUMENT,
            "docs/openapi.json is not what the code declares; run \
             `MUSTER_TEST_BLESS=1 cargo test --lib serve::openapi` and commit the file"
        );
        assert_eq!(
            generated,
            ApiDoc::document(),
            "the generation is deterministic"
        );
    }
}
