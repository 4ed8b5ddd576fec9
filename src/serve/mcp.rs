//! `/mcp`: the gateway over Streamable HTTP (docs/gateway.md).
//!
//! A chat is addressed two ways, and what a client addresses stays stable:
//! - `/mcp/chats/{id}`: the chat is the path. The first message to a new id
//!   starts it; every later one, from any connection or replica sharing
//!   the session store, sees the same list.
//! - `/mcp`: the chat is the `Mcp-Session-Id` header, as 2025 clients keep
//!   it: `initialize` without one starts a chat and answers its id in the
//!   header; a request without one is refused; DELETE ends the chat.
//!
//! Either way `?agent=NAME` picks the agent a new chat is planned for.
//! Each POST carries one JSON-RPC message. A request is answered with
//! `application/json`, or, when it changed the chat's tool list and the
//! client accepts `text/event-stream`, with a stream holding
//! `notifications/tools/list_changed` and then the answer; a `tools/call`
//! that asked for progress, from a client that accepts a stream, is
//! answered with one carrying its progress and then the answer
//! (`streamed`). Notifications
//! and responses get 202. There is no GET stream (405): for a 2025 client
//! the only notification the gateway sends rides on the POST that caused
//! it. A 2026-07-28 client (its requests name the revision in `_meta`) is
//! told nothing unasked: its `subscriptions/listen` POST is answered with
//! a stream that stays open, acknowledges, and carries a tagged
//! `notifications/tools/list_changed` each time a load in this process
//! changes the chat's list. `server/discover` needs no chat.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, Path, State};
use axum::http::Uri;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use serde_json::value::RawValue;

use super::auth::{Audit, audited_by};
use super::inflight::InFlight;
use super::streamed::{self, CANCELLED_ANSWER, unasked_notification};
use crate::gateway::{Gateway, Reply, listen, rpc};

/// The header a 2025 client keeps its chat in.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The agent `?agent=NAME` picks for a new chat.
fn agent(uri: &Uri) -> Option<String> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("agent="))
        .map(str::to_string)
}

/// What the auth layer let in, when `[auth]` is set.
type Who = Option<axum::Extension<super::auth::Admitted>>;

/// The agent a new chat is planned for: `?agent=` (the caller's default
/// when it names none); with `[auth]`, only an agent the caller's grants
/// open (else 403 `insufficient-scope`).
fn chat_agent(who: &Who, uri: &Uri) -> Result<Option<String>, Box<Response>> {
    let asked = agent(uri);
    let Some(who) = who else {
        return Ok(asked);
    };
    match who.caller.agent(asked.as_deref()) {
        Some(agent) => Ok(Some(agent.to_string())),
        None => Err(Box::new(super::auth::agent_refused(
            &who.caller,
            asked.as_deref().unwrap_or_default(),
        ))),
    }
}

/// Whether chat `chat` is live and the caller's (without `[auth]`: live):
/// with `[auth]`, what its calls are logged under. Another caller's chat
/// is answered as one that does not exist: 404, never confirming it does.
fn reach(
    gateway: &Gateway,
    who: &Who,
    chat: &str,
    body: &[u8],
) -> Result<Option<Option<Audit>>, Box<Response>> {
    let Some(who) = who else {
        return match gateway.has_chat(chat) {
            Ok(live) => Ok(live.then_some(None)),
            Err(e) => Err(Box::new(store_failed(request_id(body).as_deref(), &e))),
        };
    };
    match gateway.chat_owner(chat) {
        Ok(None) => Ok(None),
        Ok(Some((owner, agent))) if owner.as_deref() == Some(who.caller.sub.as_str()) => {
            Ok(Some(Some(who.audit(agent))))
        }
        Ok(Some(_)) => Err(Box::new(no_chat(request_id(body).as_deref(), chat))),
        Err(e) => Err(Box::new(store_failed(request_id(body).as_deref(), &e))),
    }
}

/// The 404 for a chat that is not kept (or not the caller's).
fn no_chat(id: Option<&RawValue>, chat: &str) -> Response {
    rpc_error_to(
        id,
        StatusCode::NOT_FOUND,
        rpc::CHAT_NOT_FOUND,
        format!(
            "no chat {:?} is kept (ended or expired): initialize again without Mcp-Session-Id",
            crate::names::escape(chat)
        ),
    )
}

/// With `[auth.limits]`, a `tools/call` takes one from the caller's
/// bucket and its (caller, tool) bucket; past either, a JSON-RPC error the
/// model can read (`-32013`, HTTP 200) with when to try again.
fn limited(who: &Who, body: &[u8]) -> Option<Response> {
    let who = who.as_ref()?;
    let Ok(rpc::Message::Request { id, method, params }) = rpc::parse(body) else {
        return None;
    };
    if method != "tools/call" {
        return None;
    }
    let tool = params.as_ref()?.get("name")?.as_str()?;
    let over = who.tool_call(tool).err()?;
    Some(rate_limited(Some(id), &over))
}

/// A new chat takes one from its caller's `calls_per_minute` bucket, as a call does: one
/// token opening chats by the thousand filled the store's chats, and every other caller's
/// `initialize` was 503 until they expired (a hostile probe: 89,976 chats in 110 s).
fn limited_chat(who: &Who, body: &[u8]) -> Option<Response> {
    let over = who.as_ref()?.new_chat().err()?;
    Some(rate_limited(request_id(body), &over))
}

/// The JSON-RPC answer for a limit a message is over.
fn rate_limited(id: Option<Box<RawValue>>, over: &crate::auth::Limited) -> Response {
    let mut failure = rpc::Failure::new(
        id,
        rpc::RATE_LIMITED,
        format!(
            "rate limited: more than {} {} per minute; try again in {} s",
            over.per_minute,
            if over.scope == "tool" {
                "calls to this tool"
            } else {
                "calls"
            },
            over.retry_after_secs
        ),
    );
    failure.data = Some(serde_json::json!({
        "code": crate::error::code::RATE_LIMITED,
        "scope": over.scope,
        "per_minute": over.per_minute,
        "retry_after_secs": over.retry_after_secs,
    }));
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        failure.to_json(),
    )
        .into_response()
}

/// The `/mcp` routes, with their own body limit and no request timeout:
/// a forwarded call takes as long as its server's `timeout_secs` allows.
pub fn routes(gateway: Arc<Gateway>, body_limit: usize) -> Router {
    Router::new()
        .route("/mcp", post(post_root).delete(delete_root).get(no_stream))
        .route(
            "/mcp/chats/{chat}",
            post(post_chat).delete(delete_chat).get(no_stream),
        )
        .layer(DefaultBodyLimit::max(self::body_limit(body_limit)))
        .layer(Extension(Arc::new(InFlight::default())))
        .with_state(gateway)
}

/// The most a `/mcp` body may hold: `--body-limit`, and never more than
/// one JSON-RPC message may be.
pub fn body_limit(body_limit: usize) -> usize {
    body_limit.min(rpc::MAX_MESSAGE_BYTES)
}

/// A JSON-RPC error as an HTTP answer with `status`.
fn rpc_error(status: StatusCode, code: i64, message: String) -> Response {
    rpc_error_to(None, status, code, message)
}

/// [`rpc_error`] answering the request `id`, when the message's id is known.
fn rpc_error_to(id: Option<&RawValue>, status: StatusCode, code: i64, message: String) -> Response {
    let body = rpc::Failure::new(id.map(ToOwned::to_owned), code, message).to_json();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Refuses a browser page on another site (DNS rebinding): a request that
/// carries an `Origin` must come from a loopback origin. The refusal
/// answers the request's id, when `body` is one.
fn origin_ok(headers: &HeaderMap, body: &[u8]) -> Result<(), Box<Response>> {
    super::guard::origin_allowed(headers).map_err(|origin| {
        Box::new(rpc_error_to(
            request_id(body).as_deref(),
            StatusCode::FORBIDDEN,
            rpc::INVALID_REQUEST,
            format!(
                "requests from origin {origin:?} are refused: only loopback origins may call /mcp from a browser"
            ),
        ))
    })
}

/// The id of the request in `body`, when it is one: what an error about
/// it answers to, as JSON-RPC asks.
fn request_id(body: &[u8]) -> Option<Box<RawValue>> {
    match rpc::parse(body) {
        Ok(rpc::Message::Request { id, .. }) => Some(id),
        _ => None,
    }
}

/// Whether a message speaks 2026-07-28: its `MCP-Protocol-Version`
/// header, else its `_meta`, names the revision.
fn modern(headers: &HeaderMap, body: &[u8]) -> bool {
    if let Some(value) = headers.get(VERSION_HEADER) {
        return value.as_bytes() == crate::gateway::MODERN_VERSION.as_bytes();
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, rename = "_meta")]
        meta: Option<std::collections::HashMap<std::borrow::Cow<'a, str>, serde_json::Value>>,
    }
    serde_json::from_slice::<Message<'_>>(body)
        .ok()
        .and_then(|m| m.params?.meta)
        .and_then(|meta| {
            meta.get("io.modelcontextprotocol/protocolVersion")
                .map(|v| v == crate::gateway::MODERN_VERSION)
        })
        .unwrap_or(false)
}

/// The header a client names its protocol revision in.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Refuses a request whose `MCP-Protocol-Version` header names a revision
/// muster does not speak (or is not a revision at all): `400`, as the
/// transport requires, with `-32022` and the revisions muster speaks. A
/// request without the header is served. The refusal answers the
/// request's id, when `body` is one.
fn version_ok(headers: &HeaderMap, body: &[u8]) -> Result<(), Box<Response>> {
    let Some(value) = headers.get(VERSION_HEADER) else {
        return Ok(());
    };
    let supported: Vec<&str> = std::iter::once(crate::gateway::MODERN_VERSION)
        .chain(crate::gateway::DOWNSTREAM_VERSIONS)
        .collect();
    let text = value.to_str().unwrap_or_default();
    if supported.contains(&text) {
        return Ok(());
    }
    let shown = String::from_utf8_lossy(value.as_bytes());
    let mut failure = rpc::Failure::new(
        request_id(body),
        rpc::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "the MCP-Protocol-Version header names {:?}, a revision muster does not speak: send one of {}",
            crate::names::escape(&shown),
            supported.join(", ")
        ),
    );
    failure.data = Some(serde_json::json!({"supported": supported, "requested": shown}));
    Err(Box::new(
        (
            StatusCode::BAD_REQUEST,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            failure.to_json(),
        )
            .into_response(),
    ))
}

fn store_failed(id: Option<&RawValue>, e: &crate::Error) -> Response {
    rpc_error_to(
        id,
        StatusCode::SERVICE_UNAVAILABLE,
        rpc::INTERNAL_ERROR,
        e.to_string(),
    )
}

async fn post_root(
    State(gateway): State<Arc<Gateway>>,
    Extension(calls): Extension<Arc<InFlight>>,
    who: Who,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = origin_ok(&headers, &body).and_then(|()| version_ok(&headers, &body)) {
        return *refused;
    }
    let given = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let (chat, audit) = match given {
        Some(chat) => match reach(&gateway, &who, &chat, &body) {
            Ok(Some(audit)) => (chat, audit),
            Ok(None) => return no_chat(request_id(&body).as_deref(), &chat),
            Err(refused) => return *refused,
        },
        None => {
            let method = match rpc::parse(&body) {
                Ok(rpc::Message::Request { method, .. }) => Some(method),
                // Not JSON at all: a parse error, whether or not a chat is named.
                Err(failure) if failure.code == rpc::PARSE_ERROR => {
                    return rpc_error(StatusCode::BAD_REQUEST, failure.code, failure.message);
                }
                _ => None,
            };
            if matches!(method.as_deref(), Some("server/discover" | "ping")) {
                let reply = gateway.handle("", &body).await;
                return answer(reply, &headers, None);
            }
            let agent = match chat_agent(&who, &uri) {
                Ok(agent) => agent,
                Err(refused) => return *refused,
            };
            if method.is_some()
                && method.as_deref() != Some("initialize")
                && modern(&headers, &body)
            {
                if let Some(limited) = limited(&who, &body) {
                    return limited;
                }
                // A 2026-07-28 client keeps no chat: each message is its own.
                let audit = who
                    .as_ref()
                    .map(|w| w.audit(agent.clone().unwrap_or_default()));
                let parent = super::traced::context(&headers);
                if streamed::asks_progress(&headers, &body) {
                    let id = rpc::call_id(&body).unwrap_or_else(|| "null".into());
                    return streamed::answer(None, id, |outbox| async move {
                        let relayed =
                            gateway.handle_stateless(agent.as_deref(), &body, parent, Some(outbox));
                        audited_by(audit, relayed).await
                    });
                }
                let mut reply = audited_by(
                    audit,
                    gateway.handle_stateless(agent.as_deref(), &body, parent, None),
                )
                .await;
                if let Some((id, tools)) = reply.listen.take() {
                    return listen(&gateway, "", id, tools);
                }
                return answer(reply, &headers, None);
            }
            if method.as_deref() != Some("initialize") {
                return rpc_error_to(
                    request_id(&body).as_deref(),
                    StatusCode::BAD_REQUEST,
                    rpc::INVALID_REQUEST,
                    "no Mcp-Session-Id header: send initialize first and keep the id it answers, or address a chat by path at /mcp/chats/{id}".into(),
                );
            }
            if let Some(limited) = limited_chat(&who, &body) {
                return limited;
            }
            let owner = who.as_ref().map(|w| w.caller.sub.as_str());
            let audit = who
                .as_ref()
                .map(|w| w.audit(agent.clone().unwrap_or_default()));
            match gateway.open_chat_for(None, agent.as_deref(), owner) {
                Ok(chat) => (chat, audit),
                Err(e) if e.kind() == crate::ErrorKind::Usage => {
                    return rpc_error_to(
                        request_id(&body).as_deref(),
                        StatusCode::BAD_REQUEST,
                        rpc::INVALID_PARAMS,
                        e.to_string(),
                    );
                }
                Err(e) => return store_failed(request_id(&body).as_deref(), &e),
            }
        }
    };
    if let Some(limited) = limited(&who, &body) {
        return limited;
    }
    handled(&gateway, &calls, chat, audit, body, &headers, true).await
}

async fn post_chat(
    State(gateway): State<Arc<Gateway>>,
    Extension(calls): Extension<Arc<InFlight>>,
    who: Who,
    Path(chat): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = origin_ok(&headers, &body).and_then(|()| version_ok(&headers, &body)) {
        return *refused;
    }
    let audit = match reach(&gateway, &who, &chat, &body) {
        Ok(Some(audit)) => audit,
        Ok(None) => {
            let agent = match chat_agent(&who, &uri) {
                Ok(agent) => agent,
                Err(refused) => return *refused,
            };
            if let Some(limited) = limited_chat(&who, &body) {
                return limited;
            }
            let owner = who.as_ref().map(|w| w.caller.sub.as_str());
            match gateway.open_chat_for(Some(chat.clone()), agent.as_deref(), owner) {
                Ok(_) => {}
                Err(e) if e.kind() == crate::ErrorKind::Usage => {
                    return rpc_error_to(
                        request_id(&body).as_deref(),
                        StatusCode::BAD_REQUEST,
                        rpc::INVALID_PARAMS,
                        e.to_string(),
                    );
                }
                // Another request started it first.
                Err(_) if gateway.has_chat(&chat).unwrap_or(false) => {}
                Err(e) => return store_failed(request_id(&body).as_deref(), &e),
            }
            // Whoever started it, it must be this caller's.
            match reach(&gateway, &who, &chat, &body) {
                Ok(Some(audit)) => audit,
                Ok(None) => return no_chat(request_id(&body).as_deref(), &chat),
                Err(refused) => return *refused,
            }
        }
        Err(refused) => return *refused,
    };
    if let Some(limited) = limited(&who, &body) {
        return limited;
    }
    handled(&gateway, &calls, chat, audit, body, &headers, false).await
}

/// Answers one message of a kept chat: a `tools/call` runs cancellable by
/// the client's `notifications/cancelled` ([`InFlight`]), which this also
/// acts on; the answer names the chat in `Mcp-Session-Id` when `session`.
async fn handled(
    gateway: &Arc<Gateway>,
    calls: &Arc<InFlight>,
    chat: String,
    audit: Option<Audit>,
    body: Bytes,
    headers: &HeaderMap,
    session: bool,
) -> Response {
    let parent = super::traced::context(headers);
    // A call whose server may send its client requests is answered with a
    // stream too, for them to go on (gateway::relay).
    let relays = || {
        streamed::reads_stream(headers) && rpc::call_id(&body).is_some() && gateway.may_relay(&chat)
    };
    if streamed::asks_progress(headers, &body) || relays() {
        let id = rpc::call_id(&body).unwrap_or_else(|| "null".into());
        let (gateway, owned) = (gateway.clone(), chat.clone());
        let kept = Some((calls.clone(), chat.clone()));
        let mut out = streamed::answer(kept, id, |outbox| async move {
            let relayed = gateway.handle_relayed(&owned, &body, parent, outbox);
            audited_by(audit, relayed).await
        });
        if let Some(id) = session.then(|| HeaderValue::from_str(&chat).ok()).flatten() {
            out.headers_mut().insert(SESSION_HEADER, id);
        }
        return out;
    }
    let mut reply = match rpc::call_id(&body) {
        Some(id) => {
            let (gateway, owned) = (gateway.clone(), chat.clone());
            let work = async move {
                audited_by(audit, gateway.handle_traced(&owned, &body, parent)).await
            };
            match calls.run(&chat, id.clone(), work).await {
                Some(reply) => reply,
                None => {
                    let id = RawValue::from_string(id).ok();
                    return rpc_error_to(
                        id.as_deref(),
                        StatusCode::OK,
                        rpc::REQUEST_CANCELLED,
                        CANCELLED_ANSWER.into(),
                    );
                }
            }
        }
        None => audited_by(audit, gateway.handle_traced(&chat, &body, parent)).await,
    };
    if let Some(cancelled) = &reply.cancelled {
        calls.cancel(&chat, cancelled);
    }
    if let Some((id, tools)) = reply.listen.take() {
        return listen(gateway, &chat, id, tools);
    }
    answer(reply, headers, session.then_some(chat.as_str()))
}

/// The stream answering a `subscriptions/listen` request `id` of `chat`:
/// the acknowledgement, then, when `tools` was asked for, a tagged
/// `notifications/tools/list_changed` per load that changed the chat's
/// list, and a keep-alive comment every [`listen::KEEPALIVE`], whose failed
/// write ends the stream of a client that went away. When the gateway
/// stops, the listen request is answered and the stream ends. Past the
/// bounds on open streams it is refused with 429.
fn listen(gateway: &Gateway, chat: &str, id: Box<RawValue>, tools: bool) -> Response {
    use futures_util::StreamExt as _;
    let stream = match gateway.listeners().open(chat) {
        Ok(stream) => stream,
        Err(full) => {
            let mut failure = rpc::Failure::new(Some(id), rpc::TOO_MANY_STREAMS, full.sentence());
            failure.data = Some(serde_json::json!({
                "code": listen::Full::CODE,
                "scope": full.scope,
                "limit": full.limit,
            }));
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                failure.to_json(),
            )
                .into_response();
        }
    };
    let event = |message: String| {
        Ok::<_, std::convert::Infallible>(Bytes::from(format!(
            "event: message\ndata: {message}\n\n"
        )))
    };
    let asked = if tools {
        r#"{"toolsListChanged":true}"#
    } else {
        "{}"
    };
    let ack = rpc::tagged(
        "notifications/subscriptions/acknowledged",
        &id,
        &format!(r#"{{"notifications":{asked}}}"#),
    );
    let first = futures_util::stream::once(std::future::ready(event(ack)));
    let changes = futures_util::stream::unfold(Some((stream, id)), move |state| async move {
        let (mut stream, id) = state?;
        loop {
            match stream.next().await {
                listen::Next::Stopped => return Some((event(rpc::listen_ended(&id)), None)),
                listen::Next::Changed if tools => {
                    let message = rpc::tagged("notifications/tools/list_changed", &id, "{}");
                    return Some((event(message), Some((stream, id))));
                }
                listen::Next::Changed => {}
                listen::Next::Beat => {
                    let alive = Ok(Bytes::from_static(b": keep-alive\n\n"));
                    return Some((alive, Some((stream, id))));
                }
            }
        }
    });
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        axum::body::Body::from_stream(first.chain(changes)),
    )
        .into_response()
}

/// The HTTP answer for `reply`.
fn answer(reply: Reply, headers: &HeaderMap, session: Option<&str>) -> Response {
    let unasked = unasked_notification(&reply);
    let Some(response) = reply.response else {
        return StatusCode::ACCEPTED.into_response();
    };
    let streams = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    let mut out = if let Some(notification) = unasked.filter(|_| streams) {
        let body =
            format!("event: message\ndata: {notification}\n\nevent: message\ndata: {response}\n\n");
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            body,
        )
            .into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            response,
        )
            .into_response()
    };
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        out.headers_mut().insert(SESSION_HEADER, id);
    }
    out
}

async fn delete_root(
    State(gateway): State<Arc<Gateway>>,
    who: Who,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = origin_ok(&headers, b"") {
        return *refused;
    }
    let Some(chat) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            rpc::INVALID_REQUEST,
            "DELETE /mcp ends the chat its Mcp-Session-Id header names; there is none".into(),
        );
    };
    end(&gateway, &who, chat)
}

async fn delete_chat(
    State(gateway): State<Arc<Gateway>>,
    who: Who,
    headers: HeaderMap,
    Path(chat): Path<String>,
) -> Response {
    // A foreign page must not end a chat any more than post to it (docs/gateway.md).
    if let Err(refused) = origin_ok(&headers, b"") {
        return *refused;
    }
    end(&gateway, &who, &chat)
}

fn end(gateway: &Gateway, who: &Who, chat: &str) -> Response {
    if who.is_some() {
        match reach(gateway, who, chat, b"") {
            Ok(Some(_)) => {}
            Ok(None) => return no_chat(None, chat),
            Err(refused) => return *refused,
        }
    }
    match gateway.close_chat(chat) {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => rpc_error(
            StatusCode::NOT_FOUND,
            rpc::CHAT_NOT_FOUND,
            format!("no chat {:?} is kept", crate::names::escape(chat)),
        ),
        Err(e) => store_failed(None, &e),
    }
}

async fn no_stream() -> Response {
    let mut out = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        rpc::INVALID_REQUEST,
        "muster's gateway opens no GET stream: its one notification, tools/list_changed, rides on the POST of the load that caused it".into(),
    );
    out.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    out
}
