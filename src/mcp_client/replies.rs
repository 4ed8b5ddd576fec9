//! What a server sends back, read: its stdout line by line (each line at
//! most one message's bytes), and each message routed to the call waiting
//! for it. It decides what counts as an answer, an error or a broken
//! response, and marks the listing stale when the server says its tools
//! changed; it never starts, stops or retries a server.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::MAX_MESSAGE_BYTES;
use super::{Conn, UpstreamError};
use crate::names::escape;

/// One message from a server, as much of it as muster routes by.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// Reads the server's stdout line by line and routes each answer to the
/// call waiting for it, until the server closes stdout.
pub(super) async fn read_replies<R>(
    conn: Arc<Conn>,
    stdout: R,
    stderr_reader: tokio::task::JoinHandle<()>,
) where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => {
                // A server that exits writes its last words to stderr as it
                // goes: read them to the end (briefly) so the failure quotes them.
                let _ = tokio::time::timeout(Duration::from_millis(500), stderr_reader).await;
                break "exited (closed its stdout)".to_string();
            }
            Err(e) => break format!("could not be read ({e})"),
            Ok(_) if line.len() > MAX_MESSAGE_BYTES => {
                // Not a server that went away but one that answered what
                // muster cannot read: its calls in flight say so.
                let message = format!("a message over {MAX_MESSAGE_BYTES} bytes");
                for (_, tx) in conn.lock_pending().drain() {
                    let _ = tx.send(Err(UpstreamError::BadResponse {
                        message: message.clone(),
                    }));
                }
                break format!("sent {message}");
            }
            Ok(_) => {
                if let Some(reply) = route(&conn, &line) {
                    let _ = conn.send(&reply).await;
                }
            }
        }
    };
    let why = format!("{why}{}", conn.stderr_tail());
    conn.end(why);
}

/// A response under an id muster never gave: during the handshake, with
/// one request waiting, that request was answered under the wrong id, and
/// fails at once saying so (instead of waiting out its timeout). Later it
/// is a late answer to a request given up, and dropped.
fn stray(conn: &Conn, id: &serde_json::Number) {
    if !conn.negotiating.load(Ordering::Acquire) {
        return;
    }
    let mut pending = conn.lock_pending();
    if pending.len() != 1 {
        return;
    }
    let Some(&waiting) = pending.keys().next() else {
        return;
    };
    if let Some(tx) = pending.remove(&waiting) {
        let _ = tx.send(Err(UpstreamError::BadResponse {
            message: format!(
                "an answer under id {}, not the request's id {waiting}",
                escape(&id.to_string())
            ),
        }));
    }
}

/// Hands a `notifications/progress`'s params to the watcher of the request
/// whose token they name: a token muster gave is a request's id, a whole
/// number; any other token names nothing muster asked about.
fn progress(conn: &Conn, params: &RawValue) {
    #[derive(Deserialize)]
    struct Token {
        #[serde(rename = "progressToken")]
        token: Value,
    }
    let Some(token) = serde_json::from_str::<Token>(params.get())
        .ok()
        .and_then(|t| t.token.as_u64())
    else {
        return;
    };
    let sink = conn.lock_progress().get(&token).cloned();
    if let Some(sink) = sink {
        let _ = sink.try_send(params.to_owned());
    }
}

/// Routes one line: a response to the call waiting for it; a
/// `notifications/tools/list_changed` marks the listing stale; a
/// `notifications/progress` goes to the watcher of the request its token
/// names (dropped when none watches it, or the watcher is behind); a request of
/// a kind the connection declared goes to the call relaying it (see
/// `asks`); any other request of the server's own is answered (returned,
/// for the caller to send): a `ping` with an empty result, anything else
/// with "method not found". Anything else (other notifications,
/// logs, progress) is dropped.
pub(super) fn route(conn: &Conn, line: &[u8]) -> Option<String> {
    let msg = serde_json::from_slice::<Incoming<'_>>(line).ok()?;
    if msg.id.is_none() && msg.method.as_deref() == Some("notifications/progress") {
        if let Some(params) = msg.params {
            progress(conn, params);
        }
        return None;
    }
    if msg.id.is_none() && msg.method.as_deref() == Some("notifications/tools/list_changed") {
        conn.tools_changed.store(true, Ordering::Release);
        return None;
    }
    if let (Some(method), Some(theirs)) = (&msg.method, &msg.id) {
        let theirs = serde_json::to_string(theirs).ok()?;
        if let Ok(id) = RawValue::from_string(theirs.clone())
            && conn.ask(&id, method, msg.params)
        {
            return None;
        }
        return Some(if method == "ping" {
            format!(r#"{{"jsonrpc":"2.0","id":{theirs},"result":{{}}}}"#)
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{theirs},"error":{{"code":-32601,"message":"muster does not serve this method"}}}}"#
            )
        });
    }
    let (None, Some(Value::Number(id))) = (&msg.method, &msg.id) else {
        return None;
    };
    let tx = match id.as_u64().and_then(|id| conn.lock_pending().remove(&id)) {
        Some(tx) => tx,
        None => {
            stray(conn, id);
            return None;
        }
    };
    let reply = match (msg.result, msg.error) {
        // JSON-RPC 2.0: a response holds one of the two, never both.
        (Some(_), Some(_)) => Err(UpstreamError::BadResponse {
            message: "a response with both result and error, which is not JSON-RPC".into(),
        }),
        (Some(result), None) => Ok(result.to_owned()),
        (None, Some(error)) => Err(UpstreamError::Rpc {
            code: error.code,
            // Its line breaks are read as written (issue 31 item 9).
            message: crate::names::escape_lines(&error.message),
        }),
        (None, None) => Err(UpstreamError::BadResponse {
            message: "a response with neither result nor error".into(),
        }),
    };
    let _ = tx.send(reply);
    None
}
