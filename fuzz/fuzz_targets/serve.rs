//! A request body answered by `muster serve`'s router, without a socket:
//! the extractors, the request types, every verb's handler and the
//! problem+json rendering, over the bundled policy with deferral on.
//!
//! Byte 0 picks the route (its value mod the route count) and whether the
//! rest is the whole body or follows `{"session": <a live session>,` (so
//! the session verbs get past reading the document). Beyond no panic (a
//! caught panic is a 500, refused here too), every answer must be one the
//! docs list, a problem+json must list at most 100 problems, and a body
//! with a UTF-8 byte-order mark before it must be answered as without.
#![no_main]

use axum::body::Body;
use axum::http::{Request, header};
use libfuzzer_sys::fuzz_target;
use muster::catalog::Selection;
use muster::policy::Inputs;
use muster::serve::{Config, Shared, router};
use muster::tokens::TokenCache;
use muster_fuzz::{bundled_dir, scratch};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tower::ServiceExt;

const ROUTES: [&str; 10] = [
    "/v1/plan",
    "/v1/why",
    "/v1/count",
    "/v1/gate",
    "/v1/check",
    "/v1/sessions",
    "/v1/sessions/search",
    "/v1/sessions/load",
    "/v1/sessions/roster",
    "/v1/sessions/resume",
];

struct Service {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    /// `{"session": <document>,` : a prefix for the session verbs.
    session_prefix: Vec<u8>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let root = scratch().join("serve");
        let policies: PathBuf = root.join("policies");
        copy_dir(&bundled_dir(), &policies);
        let toml = policies.join("muster.toml");
        let text = std::fs::read_to_string(&toml).expect("muster.toml");
        let deferred = text.replacen(
            "[deferral]\nenabled = false",
            "[deferral]\nenabled = true",
            1,
        );
        std::fs::write(&toml, deferred).expect("muster.toml");
        let config = Config {
            policies: policies.clone(),
            gates: bundled_dir().join("../gates"),
            ..Config::default()
        };
        let shared = Shared::load(&config).expect("the bundled policies load");
        let inputs = Inputs::load(&policies).expect("the bundled policies load");
        let doc = muster::session::new(
            &inputs,
            &Selection::default(),
            &Default::default(),
            &muster::session::SessionKeys::none(),
            &mut TokenCache::in_memory(),
        )
        .expect("a session");
        let mut session_prefix = b"{\"session\": ".to_vec();
        session_prefix.extend_from_slice(muster::session::to_json_string(&doc).as_bytes());
        session_prefix.push(b',');
        Service {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            router: router(shared, &config),
            session_prefix,
        }
    })
}

/// The status, content type and body the router answers `body` on `path`.
fn answer(service: &Service, path: &str, body: Vec<u8>) -> (u16, String, Vec<u8>) {
    let request = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, body.len())
        .body(Body::from(body))
        .expect("a request");
    service.runtime.block_on(async {
        let response = service
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the body");
        (status, content_type, body.to_vec())
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let service = service();
    let path = ROUTES[usize::from(pick) % ROUTES.len()];
    let mut body = Vec::with_capacity(rest.len() + service.session_prefix.len());
    if usize::from(pick) / ROUTES.len() % 2 == 1 {
        body.extend_from_slice(&service.session_prefix);
    }
    body.extend_from_slice(rest);

    let (status, content_type, answered) = answer(service, path, body.clone());
    match status {
        200 | 409 => assert!(
            content_type == "application/json" || content_type == "application/x-ndjson",
            "{path} {status}: {content_type}"
        ),
        400 | 413 | 422 => {
            assert_eq!(content_type, "application/problem+json", "{path} {status}");
            let problem: serde_json::Value =
                serde_json::from_slice(&answered).expect("problem+json is JSON");
            let kind = problem["type"].as_str().expect("a type");
            assert!(kind.starts_with("urn:muster:problem:"), "{kind}");
            assert_eq!(problem["status"], status);
            let listed = problem["problems"].as_array().expect("problems").len();
            assert!((1..=100).contains(&listed), "{listed} problems listed");
        }
        other => panic!(
            "{path} answered {other}: {}",
            String::from_utf8_lossy(&answered)
        ),
    }

    // A byte-order mark first changes nothing.
    if !body.starts_with(b"\xEF\xBB\xBF") {
        let mut marked = b"\xEF\xBB\xBF".to_vec();
        marked.extend_from_slice(&body);
        let again = answer(service, path, marked);
        assert_eq!(again.0, status, "{path}: a BOM changed the status");
        if status == 200 {
            assert_eq!(again.2, answered, "{path}: a BOM changed the answer");
        }
    }
});
