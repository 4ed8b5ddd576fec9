//! A `tools/call` on `/mcp` that asked for progress (`_meta.progressToken`)
//! from a client that accepts `text/event-stream`: its POST is answered
//! with a stream at once, carrying each `notifications/progress` its server
//! sends (under the client's token, `gateway::progress`) as it comes, then
//! the answer, and ends. The call runs as any other kept chat's call does
//! ([`InFlight`]): a client's `notifications/cancelled` ends the stream
//! with `-32800`, and a client that goes away (the stream dropped) stops
//! the call, which tells its server. It decides only how such an answer
//! travels.

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::inflight::InFlight;
use crate::gateway::progress::{self, BUFFERED, Outbox};
use crate::gateway::{Reply, rpc};

/// Whether the client reads an event stream as an answer.
pub(super) fn reads_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}

/// Whether `body` is a `tools/call` asking for progress and the client
/// reads a stream.
pub(super) fn asks_progress(headers: &HeaderMap, body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        method: &'a str,
        params: Params,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Meta,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "progressToken")]
        token: serde_json::Value,
    }
    reads_stream(headers)
        && serde_json::from_slice::<Call<'_>>(body)
            .is_ok_and(|c| c.method == "tools/call" && progress::is_token(&c.params.meta.token))
}

/// What a client is told before a kept chat's call is answered: the
/// `notifications/tools/list_changed` a 2025 client hears unasked when
/// the message changed its list (a 2026-07-28 client hears it only on its
/// `subscriptions/listen` stream).
pub(super) fn unasked_notification(reply: &Reply) -> Option<String> {
    (reply.list_changed && !reply.modern)
        .then(|| rpc::notification("notifications/tools/list_changed"))
}

/// The answer to a call the client cancelled (`-32800`).
pub(super) const CANCELLED_ANSWER: &str = "the client cancelled this call; its server was told";

/// Stops the call's task when the stream is dropped before it ended.
struct StopOnDrop(JoinHandle<Option<Reply>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The stream answering call `id` (JSON text): `work`, given where the
/// call's progress goes, answers it. With `calls`, the call is the kept
/// chat's and can be cancelled by id ([`InFlight`]).
pub(super) fn answer<F, Fut>(
    calls: Option<(Arc<InFlight>, String)>,
    id: String,
    work: F,
) -> Response
where
    F: FnOnce(Outbox) -> Fut,
    Fut: Future<Output = Reply> + Send + 'static,
{
    use futures_util::StreamExt as _;
    let (outbox, heard) = mpsc::channel(BUFFERED);
    let work = work(outbox);
    let task = {
        let id = id.clone();
        tokio::spawn(async move {
            match calls {
                Some((calls, chat)) => calls.run(&chat, id, work).await,
                None => Some(work.await),
            }
        })
    };
    let event = |message: &str| {
        Ok::<_, std::convert::Infallible>(Bytes::from(format!(
            "event: message\ndata: {message}\n\n"
        )))
    };
    let progress = futures_util::stream::unfold(heard, |mut heard| async move {
        let line = heard.recv().await?;
        Some((line, heard))
    });
    // Made before the stream is read, so a stream dropped unread stops it.
    let mut stop = StopOnDrop(task);
    let last = futures_util::stream::once(async move {
        let mut messages = Vec::new();
        match (&mut stop.0).await {
            Ok(Some(reply)) => {
                messages.extend(unasked_notification(&reply));
                messages.extend(reply.response);
            }
            // Cancelled by the client; a panic was the task's own.
            _ => {
                let id = RawValue::from_string(id).ok();
                let failure = rpc::Failure::new(id, rpc::REQUEST_CANCELLED, CANCELLED_ANSWER);
                messages.push(failure.to_json());
            }
        }
        messages
    })
    .flat_map(futures_util::stream::iter);
    let body = progress.chain(last).map(move |m| event(&m));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}
