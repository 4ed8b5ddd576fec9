//! A forwarded call's progress, relayed to the client that asked for it.
//!
//! A client asks by putting a `progressToken` (a string or a whole number)
//! in a `tools/call`'s `_meta`. Its server is asked under a token of
//! muster's own (the upstream request's id, unique on that connection, so
//! two chats' tokens never meet), and each `notifications/progress` the
//! server sends for the call is written to the client under the client's
//! token, before the call's answer and never after it. What is relayed is
//! rebuilt from what muster reads (`progress`, `total`, `message`), not
//! copied: a notification whose `progress` is not a number, or does not
//! increase, is dropped, and a server that sends faster than the client
//! reads loses what does not fit in [`BUFFERED`]. It decides only what
//! reaches the client of a call's progress; the call itself is forwarded
//! as any other.

use std::future::Future;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::upstream::{ProgressSink, Upstreams};
use crate::mcp_client::Reply;

/// Messages for the client of one request, written before its answer (a
/// transport that can: stdio, or an HTTP answer that streams).
pub type Outbox = mpsc::Sender<String>;

/// Progress notifications of one call held for its client at once; past
/// it a server's further ones are dropped until the client catches up.
pub const BUFFERED: usize = 32;

/// The `progressToken` a client put in a request's `_meta`, when it is
/// one the protocol allows (a string or a whole number).
pub(super) fn token(params: &Map<String, Value>) -> Option<Value> {
    let token = params.get("_meta")?.get("progressToken")?;
    is_token(token).then(|| token.clone())
}

/// Whether `value` is a progress token the protocol allows: a string or a
/// whole number.
pub fn is_token(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Makes `call` (its tool, arguments and extra params members, as
/// [`Upstreams::call_with`] takes them) on `server`, relaying its progress
/// to `outbox` under the client's `token` when both are given.
pub(super) async fn forwarded(
    upstreams: &Upstreams,
    server: &str,
    call: (&str, &str, &str),
    asked: Option<(Value, Outbox)>,
) -> Reply {
    let Some((token, outbox)) = asked else {
        return upstreams.call_with(server, call, None).await;
    };
    let (sink, heard): (ProgressSink, _) = mpsc::channel(BUFFERED);
    relay(
        upstreams.call_with(server, call, Some(sink)),
        &token,
        heard,
        &outbox,
    )
    .await
}

/// Runs `work`, writing what `heard` receives to `outbox` (as the client's
/// `token`'s progress) until `work` ends, then what was heard before its
/// end; its output.
async fn relay<F: Future>(
    work: F,
    token: &Value,
    mut heard: mpsc::Receiver<Box<RawValue>>,
    outbox: &Outbox,
) -> F::Output {
    tokio::pin!(work);
    let mut last = None;
    let output = loop {
        tokio::select! {
            biased;
            output = &mut work => break output,
            Some(params) = heard.recv() => {
                if let Some(line) = notification(&params, token, &mut last) {
                    let _ = outbox.send(line).await;
                }
            }
        }
    };
    // What the server sent before its answer was routed before the answer:
    // it is all in `heard` now, and goes before the answer too.
    while let Ok(params) = heard.try_recv() {
        if let Some(line) = notification(&params, token, &mut last) {
            let _ = outbox.send(line).await;
        }
    }
    output
}

/// The client's `notifications/progress` for the server's `params`, or
/// nothing when they are not progress the protocol allows (after `last`).
pub(super) fn notification(
    params: &RawValue,
    token: &Value,
    last: &mut Option<f64>,
) -> Option<String> {
    let read: Map<String, Value> = serde_json::from_str(params.get()).ok()?;
    let progress = read.get("progress")?.as_f64()?;
    if last.is_some_and(|last| progress <= last) {
        return None;
    }
    *last = Some(progress);
    let mut out = Map::new();
    out.insert("progressToken".into(), token.clone());
    out.insert("progress".into(), read["progress"].clone());
    if let Some(total) = read.get("total").filter(|t| t.is_number()) {
        out.insert("total".into(), total.clone());
    }
    if let Some(message) = read.get("message").filter(|m| m.is_string()) {
        out.insert("message".into(), message.clone());
    }
    let message = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": out,
    });
    Some(message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    #[test]
    fn only_string_and_whole_number_tokens_are_asked_for() {
        let of = |meta: Value| token(json!({"_meta": meta}).as_object().unwrap());
        assert_eq!(of(json!({"progressToken": "a"})), Some(json!("a")));
        assert_eq!(of(json!({"progressToken": 7})), Some(json!(7)));
        assert_eq!(of(json!({"progressToken": 1.5})), None);
        assert_eq!(of(json!({"progressToken": {"x": 1}})), None);
        assert_eq!(of(json!({})), None);
        assert_eq!(token(json!({}).as_object().unwrap()), None);
    }

    #[test]
    fn progress_is_rebuilt_under_the_clients_token_and_must_increase() {
        let mut last = None;
        let token = json!("client-7");
        let sent = raw(json!({"progressToken": 3, "progress": 1, "total": 3,
            "message": "one", "extra": {"injected": true}}));
        let line = notification(&sent, &token, &mut last).unwrap();
        let read: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            read,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params":
                {"progressToken": "client-7", "progress": 1, "total": 3, "message": "one"}})
        );
        let again = raw(json!({"progressToken": 3, "progress": 1}));
        assert_eq!(
            notification(&again, &token, &mut last),
            None,
            "not increasing"
        );
        let text = raw(json!({"progressToken": 3, "progress": "2"}));
        assert_eq!(notification(&text, &token, &mut last), None, "not a number");
        let on = raw(json!({"progressToken": 3, "progress": 2.5, "total": "x"}));
        let read: Value =
            serde_json::from_str(&notification(&on, &token, &mut last).unwrap()).unwrap();
        assert_eq!(
            read["params"],
            json!({"progressToken": "client-7", "progress": 2.5})
        );
    }

    #[tokio::test]
    async fn what_was_heard_before_the_end_goes_before_the_answer() {
        let (sink, heard) = mpsc::channel(BUFFERED);
        let (outbox, mut out) = mpsc::channel(BUFFERED);
        let work = async move {
            for n in 1..=3 {
                sink.send(raw(json!({"progressToken": 1, "progress": n})))
                    .await
                    .unwrap();
            }
            "answer"
        };
        assert_eq!(relay(work, &json!(9), heard, &outbox).await, "answer");
        drop(outbox);
        let mut seen = Vec::new();
        while let Some(line) = out.recv().await {
            let read: Value = serde_json::from_str(&line).unwrap();
            seen.push(read["params"]["progress"].clone());
        }
        assert_eq!(seen, [json!(1), json!(2), json!(3)]);
    }
}
