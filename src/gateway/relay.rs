//! Requests a server sends its client in the middle of a forwarded call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`), relayed
//! to the chat's client and answered back.
//!
//! Only what the policy lets the server send (`relay` in its block) and the
//! chat's client declared is relayed, and the server is told only that
//! (the call goes over a connection leased to it that declares exactly
//! that, `upstream::leased`). The client's capabilities are read from a
//! 2026-07-28 request's `_meta`, or kept from its `initialize` (at most
//! [`MAX_CLIENTS`] chats in this process; a restarted process relays for a
//! chat again once it initializes again).
//!
//! How a client is asked depends on its revision:
//! - a 2026-07-28 client gets the call's answer early, as an
//!   `input_required` result carrying the server's requests and a
//!   `requestState` of muster's; the upstream call waits (at most
//!   [`MAX_PARKED`] of them, each until its server's timeout), and the
//!   client's retry of the same call with its `inputResponses` answers the
//!   server and goes on waiting for the call's result (or its next asks);
//! - an older client is sent each request on the call's own stream (stdio,
//!   or the POST's event stream) under an id of muster's, and its answer,
//!   sent back as a JSON-RPC response, goes to the server.
//!
//! Every state and id muster hands out is 128 random bits: holding one is
//! what lets a retry or an answer through, so one chat cannot answer
//! another's. A request muster cannot relay (no stream to send it on, too
//! many calls waiting) is answered to the server with an error at once.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::progress::{self, Outbox};
use super::upstream::{ServerAsk, UpstreamError, Upstreams};
use crate::mcp_client::{ASKS_BUFFERED, Declared, Reply};

/// The most calls waiting for a 2026-07-28 client's retry at once.
pub const MAX_PARKED: usize = 64;
/// The most chats whose `initialize` capabilities are kept.
pub const MAX_CLIENTS: usize = 4096;
/// The most rounds of a 2026-07-28 server's `input_required` muster
/// drives for an older client (the SDKs' own default).
pub const MAX_INPUT_ROUNDS: usize = 10;
/// Where a 2026-07-28 request declares its client's capabilities.
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// How muster's `requestState`s and relayed request ids begin.
const PREFIX: &str = "muster-";

/// A client's answer: its `result`, or its error's code and message.
pub(super) type Outcome = Result<Box<RawValue>, (i64, String)>;

/// The relays of one gateway.
#[derive(Default)]
pub(super) struct Relays {
    parked: Mutex<HashMap<String, Parked>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    clients: Mutex<Clients>,
}

/// What each chat's client declared at `initialize`, oldest first.
#[derive(Default)]
struct Clients {
    by_chat: HashMap<String, Value>,
    order: VecDeque<String>,
}

/// A spawned task's output, the task stopped when this is dropped (the
/// upstream call with it: its server is told it is cancelled).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A relaying call in flight.
struct Leg {
    task: AbortOnDrop<Reply>,
    asks: mpsc::Receiver<ServerAsk>,
    heard: Option<mpsc::Receiver<Box<RawValue>>>,
    last: Option<f64>,
    timeout: Duration,
}

/// Which call a `requestState` continues.
#[derive(PartialEq, Eq)]
struct Binding {
    chat: Option<String>,
    server: String,
    tool: String,
    arguments: String,
}

/// A call waiting for a 2026-07-28 client's retry.
struct Parked {
    bound: Binding,
    leg: Leg,
    asked: Vec<(String, ServerAsk)>,
    expires: Instant,
}

/// One call to forward.
pub(super) struct Forward<'a> {
    pub chat: &'a str,
    pub stateless: bool,
    pub server: &'a str,
    pub tool: &'a str,
    pub arguments: &'a str,
    pub params: &'a Map<String, Value>,
    pub modern: bool,
    pub outbox: Option<Outbox>,
}

/// The params members a 2026-07-28 retry carries for its server (its
/// `inputResponses` and a `requestState` that is not muster's), as JSON
/// text to put after `arguments`; empty when it carries none.
fn retry_members(params: &Map<String, Value>) -> String {
    let mut out = String::new();
    if let Some(state) = params.get("requestState").filter(|s| s.is_string()) {
        out.push_str(&format!(r#","requestState":{state}"#));
    }
    if let Some(responses) = params.get("inputResponses").filter(|r| r.is_object()) {
        out.push_str(&format!(r#","inputResponses":{responses}"#));
    }
    out
}

/// A 2026-07-28 server's `input_required` result, read: its requests (each
/// method and params) by key, and its state.
#[derive(serde::Deserialize)]
struct InputRequired {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(rename = "inputRequests", default)]
    requests: std::collections::BTreeMap<String, Request>,
    #[serde(rename = "requestState", default)]
    state: Option<Value>,
}

#[derive(serde::Deserialize)]
struct Request {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// `raw` read as an `input_required` result, when it is one.
fn input_required(raw: &RawValue) -> Option<InputRequired> {
    if !raw.get().contains("input_required") {
        return None;
    }
    serde_json::from_str::<InputRequired>(raw.get())
        .ok()
        .filter(|r| r.result_type == "input_required")
}

impl Forward<'_> {
    fn binding(&self) -> Binding {
        Binding {
            chat: (!self.stateless).then(|| self.chat.to_string()),
            server: self.server.to_string(),
            tool: self.tool.to_string(),
            arguments: self.arguments.to_string(),
        }
    }
}

/// What a forwarded call came to.
pub(super) enum Forwarded {
    /// The server's answer.
    Reply(Reply),
    /// A 2026-07-28 client is to answer the server's requests and call
    /// again: the result to send it.
    InputRequired(String),
    /// A retry muster cannot continue: its code and what to do.
    Refused(&'static str, String),
}

/// 16 random bytes as hex after [`PREFIX`]; `None` without randomness
/// (then nothing is relayed: a guessable state would let anyone answer).
fn secret() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("{PREFIX}{hex}"))
}

impl Relays {
    /// Keeps what `chat`'s client declared in its `initialize`.
    pub(super) fn remember(&self, chat: &str, params: Option<&Value>) {
        let Some(caps) = params.and_then(|p| p.get("capabilities")).cloned() else {
            return;
        };
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.by_chat.insert(chat.to_string(), caps).is_none() {
            clients.order.push_back(chat.to_string());
        }
        while clients.order.len() > MAX_CLIENTS {
            if let Some(old) = clients.order.pop_front() {
                clients.by_chat.remove(&old);
            }
        }
    }

    /// Whether `chat`'s client declared anything at `initialize` that a
    /// server may relay to it.
    pub(super) fn may_relay(&self, chat: &str, upstreams: &Upstreams) -> bool {
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .by_chat
            .get(chat)
            .is_some_and(|caps| !Declared::of_client(&upstreams.relaying(), Some(caps)).is_empty())
    }

    /// What the call's connection declares: what its server may relay and
    /// its client declared.
    pub(super) fn declared(&self, upstreams: &Upstreams, f: &Forward<'_>) -> Declared {
        let relay = upstreams.relayed(f.server);
        if relay.is_empty() {
            return Declared::default();
        }
        if f.modern {
            let caps = f.params.get("_meta").and_then(|m| m.get(CAPABILITIES_META));
            return Declared::of_client(&relay, caps);
        }
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        Declared::of_client(&relay, clients.by_chat.get(f.chat))
    }

    /// A client's answer to a request muster relayed to it; `false` when
    /// `id` names none waiting.
    pub(super) fn answered(&self, id: &RawValue, outcome: Outcome) -> bool {
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id.get());
        waiting.is_some_and(|tx| tx.send(outcome).is_ok())
    }

    /// Forwards the call over a connection declaring `declared` (the
    /// shared one when it declares nothing), or continues the call a
    /// 2026-07-28 retry's `requestState` names.
    pub(super) async fn forward(
        self: &Arc<Self>,
        upstreams: &Arc<Upstreams>,
        f: Forward<'_>,
        declared: Declared,
    ) -> Forwarded {
        if let Some(state) = f.params.get("requestState").and_then(Value::as_str)
            && state.starts_with(PREFIX)
        {
            return self.resume(state, f).await;
        }
        let extra = retry_members(f.params);
        let first = self.first_leg(upstreams, &f, &declared, &extra).await;
        let Forwarded::Reply(Ok(raw)) = &first else {
            return first;
        };
        match input_required(raw) {
            None => first,
            // A 2026-07-28 server asks a 2026-07-28 client itself.
            Some(_) if f.modern => Forwarded::InputRequired(raw.get().to_string()),
            Some(asked) => Forwarded::Reply(self.drive(upstreams, &f, &declared, asked).await),
        }
    }

    /// The call sent: over the shared connection when `declared` is empty,
    /// else over one leased to it, relaying what its server asks.
    async fn first_leg(
        self: &Arc<Self>,
        upstreams: &Arc<Upstreams>,
        f: &Forward<'_>,
        declared: &Declared,
        extra: &str,
    ) -> Forwarded {
        let asked = progress::token(f.params).zip(f.outbox.clone());
        if declared.is_empty() {
            let call = (f.tool, f.arguments, extra);
            let reply = progress::forwarded(upstreams, f.server, call, asked).await;
            return Forwarded::Reply(reply);
        }
        let (ask_sink, asks) = mpsc::channel(ASKS_BUFFERED);
        let (sink, heard) = match asked {
            Some(_) => {
                let (sink, heard) = mpsc::channel(progress::BUFFERED);
                (Some(sink), Some(heard))
            }
            None => (None, None),
        };
        let task = {
            let upstreams = upstreams.clone();
            let declared = declared.clone();
            let (server, tool, arguments, extra) = (
                f.server.to_string(),
                f.tool.to_string(),
                f.arguments.to_string(),
                extra.to_string(),
            );
            // A task of its own: the call's trace context goes with it.
            let outgoing = crate::trace::outgoing();
            tokio::spawn(crate::trace::carrying(outgoing, async move {
                let call = (tool.as_str(), arguments.as_str(), extra.as_str());
                upstreams
                    .call_relayed(&server, call, sink, &declared, ask_sink)
                    .await
            }))
        };
        let leg = Leg {
            task: AbortOnDrop(task),
            asks,
            heard,
            last: None,
            timeout: upstreams.timeout(f.server),
        };
        self.run(leg, f).await
    }

    /// A 2026-07-28 server's `input_required` driven for an older client:
    /// each request sent to the client on the call's stream, and the call
    /// made again with its answers, for at most [`MAX_INPUT_ROUNDS`] rounds.
    async fn drive(
        self: &Arc<Self>,
        upstreams: &Arc<Upstreams>,
        f: &Forward<'_>,
        declared: &Declared,
        mut asked: InputRequired,
    ) -> Reply {
        let timeout = upstreams.timeout(f.server);
        let refused = |message: String| UpstreamError::BadResponse { message };
        for _ in 0..MAX_INPUT_ROUNDS {
            if asked.requests.len() > ASKS_BUFFERED {
                return Err(refused(format!(
                    "an input_required result with over {ASKS_BUFFERED} requests"
                )));
            }
            let mut responses = Map::new();
            for (key, request) in &asked.requests {
                let kind =
                    crate::policy::Relayed::of_method(&request.method).filter(|k| declared.has(*k));
                let Some(kind) = kind else {
                    return Err(refused(format!(
                        "asked its client for {:?}, which muster does not relay to this chat",
                        crate::names::escape(&request.method)
                    )));
                };
                let params = request.params.as_deref().map_or("{}", RawValue::get);
                match self
                    .ask_inline(kind, params, f.outbox.as_ref(), timeout)
                    .await
                {
                    Ok(result) => {
                        let value = serde_json::from_str(result.get()).unwrap_or_default();
                        responses.insert(key.clone(), value);
                    }
                    Err((code, message)) => {
                        return Err(UpstreamError::Rpc {
                            code,
                            message: crate::names::escape(&format!(
                                "the chat's client refused the server's {}: {message}",
                                kind.method()
                            )),
                        });
                    }
                }
            }
            let mut members = format!(r#","inputResponses":{}"#, Value::Object(responses));
            if let Some(state) = asked.state.as_ref().filter(|s| s.is_string()) {
                members.push_str(&format!(r#","requestState":{state}"#));
            }
            let call = (f.tool, f.arguments, members.as_str());
            let (ask_sink, _asks) = mpsc::channel(1);
            let raw = if declared.is_empty() {
                upstreams.call_with(f.server, call, None).await?
            } else {
                upstreams
                    .call_relayed(f.server, call, None, declared, ask_sink)
                    .await?
            };
            match input_required(&raw) {
                Some(next) => asked = next,
                None => return Ok(raw),
            }
        }
        Err(refused(format!(
            "asked for input over {MAX_INPUT_ROUNDS} rounds"
        )))
    }

    /// The parked call `state` names, its server's requests answered with
    /// the retry's `inputResponses`, waited for again.
    async fn resume(self: &Arc<Self>, state: &str, f: Forward<'_>) -> Forwarded {
        let parked = {
            let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
            parked.retain(|_, p| p.expires > Instant::now());
            match parked.remove(state) {
                Some(p) if p.bound == f.binding() => p,
                Some(p) => {
                    parked.insert(state.to_string(), p);
                    return Forwarded::Refused(
                        "request-state-mismatch",
                        "requestState names a call of another tool, arguments or chat: retry the call it was given for, as it was".into(),
                    );
                }
                None => {
                    return Forwarded::Refused(
                        "unknown-request-state",
                        "requestState names no call waiting in this gateway (it ended, timed out or was answered): call the tool again without it".into(),
                    );
                }
            }
        };
        let responses = f.params.get("inputResponses").and_then(Value::as_object);
        for (key, ask) in &parked.asked {
            let answer = responses
                .and_then(|r| r.get(key))
                .filter(|v| v.is_object())
                .and_then(|v| RawValue::from_string(v.to_string()).ok());
            match answer {
                Some(result) => ask.answer(Ok(&result)).await,
                None => {
                    ask.answer(Err((
                        super::rpc::INTERNAL_ERROR,
                        "the client gave no answer to this request",
                    )))
                    .await;
                }
            }
        }
        self.run(parked.leg, &f).await
    }

    /// Waits for the call's answer, relaying its progress and its server's
    /// requests as they come.
    async fn run(self: &Arc<Self>, mut leg: Leg, f: &Forward<'_>) -> Forwarded {
        let token = progress::token(f.params);
        loop {
            tokio::select! {
                biased;
                done = &mut leg.task.0 => {
                    if let (Some(heard), Some(token), Some(outbox)) = (&mut leg.heard, &token, &f.outbox) {
                        while let Ok(params) = heard.try_recv() {
                            if let Some(line) = progress::notification(&params, token, &mut leg.last) {
                                let _ = outbox.send(line).await;
                            }
                        }
                    }
                    return Forwarded::Reply(done.unwrap_or_else(|e| Err(UpstreamError::Exited {
                        message: format!("stopped relaying ({e})"),
                    })));
                }
                Some(params) = recv(&mut leg.heard) => {
                    if let (Some(token), Some(outbox)) = (&token, &f.outbox)
                        && let Some(line) = progress::notification(&params, token, &mut leg.last)
                    {
                        let _ = outbox.send(line).await;
                    }
                }
                Some(ask) = leg.asks.recv() => {
                    if f.modern {
                        let mut asked = vec![ask];
                        while let Ok(more) = leg.asks.try_recv() {
                            asked.push(more);
                        }
                        match self.park(leg, f, asked) {
                            Ok(result) => return Forwarded::InputRequired(result),
                            Err(back) => leg = back,
                        }
                    } else {
                        self.ask_client(ask, f.outbox.as_ref(), leg.timeout);
                    }
                }
            }
        }
    }

    /// Parks the call until the client's retry and returns the
    /// `input_required` result to send it; the leg back when no more calls
    /// may wait (its asks then answered with an error).
    fn park(&self, leg: Leg, f: &Forward<'_>, asked: Vec<ServerAsk>) -> Result<String, Leg> {
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        parked.retain(|_, p| p.expires > Instant::now());
        let state = secret();
        let (true, Some(state)) = (parked.len() < MAX_PARKED, state) else {
            drop(parked);
            for ask in asked {
                refuse(
                    ask,
                    "muster holds too many calls waiting for their client's input",
                );
            }
            return Err(leg);
        };
        let mut requests = Map::new();
        let mut keyed = Vec::new();
        for (n, ask) in asked.into_iter().enumerate() {
            let key = format!("{}-{}", ask.kind.key(), n + 1);
            let params: Value = serde_json::from_str(ask.params.get()).unwrap_or_default();
            requests.insert(
                key.clone(),
                serde_json::json!({"method": ask.kind.method(), "params": params}),
            );
            keyed.push((key, ask));
        }
        let result = serde_json::json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        });
        let expires = Instant::now() + leg.timeout;
        parked.insert(
            state,
            Parked {
                bound: f.binding(),
                leg,
                asked: keyed,
                expires,
            },
        );
        Ok(result.to_string())
    }

    /// Sends an older client request `kind` with `params` on the call's
    /// stream under an id of muster's, and waits (within `timeout`) for its
    /// answer.
    async fn ask_inline(
        &self,
        kind: crate::policy::Relayed,
        params: &str,
        outbox: Option<&Outbox>,
        timeout: Duration,
    ) -> Outcome {
        let fail = |why: &str| Err((super::rpc::INTERNAL_ERROR, why.to_string()));
        let (Some(outbox), Some(id)) = (outbox, secret()) else {
            return fail(
                "muster cannot send this chat's client a request now: the call has no stream open to it",
            );
        };
        let id = serde_json::to_string(&id).unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), tx);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{params}}}"#,
            kind.method(),
        );
        let outcome = if outbox.send(line).await.is_err() {
            fail("the chat's client is gone")
        } else {
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(outcome)) => outcome,
                _ => fail("the chat's client did not answer in time"),
            }
        };
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        outcome
    }

    /// Relays `ask` to an older client (see [`Relays::ask_inline`]) and
    /// its answer to the server, without holding up the call's wait.
    fn ask_client(self: &Arc<Self>, ask: ServerAsk, outbox: Option<&Outbox>, timeout: Duration) {
        let relays = self.clone();
        let outbox = outbox.cloned();
        tokio::spawn(async move {
            let params = ask.params.get().to_string();
            let outcome = relays
                .ask_inline(ask.kind, &params, outbox.as_ref(), timeout)
                .await;
            match outcome {
                Ok(result) => ask.answer(Ok(&result)).await,
                Err((code, message)) => ask.answer(Err((code, &message))).await,
            }
        });
    }
}

impl super::Gateway {
    /// Whether a `tools/call` of `chat` may bring its server's requests to
    /// its client (its `initialize` declared what some server may relay):
    /// an HTTP transport then answers it with a stream they can go on.
    pub fn may_relay(&self, chat: &str) -> bool {
        self.relays.may_relay(chat, &self.upstreams)
    }
}

/// Answers `ask` with an error, without waiting.
fn refuse(ask: ServerAsk, why: &'static str) {
    tokio::spawn(async move { ask.answer(Err((super::rpc::INTERNAL_ERROR, why))).await });
}

/// The next of `heard`, or never when there is none.
async fn recv(heard: &mut Option<mpsc::Receiver<Box<RawValue>>>) -> Option<Box<RawValue>> {
    match heard {
        Some(heard) => heard.recv().await,
        None => std::future::pending().await,
    }
}
