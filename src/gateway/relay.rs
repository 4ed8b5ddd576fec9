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
        let asked = progress::token(f.params).zip(f.outbox.clone());
        if declared.is_empty() {
            let reply = progress::forwarded(upstreams, f.server, f.tool, f.arguments, asked).await;
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
            let (server, tool, arguments) = (
                f.server.to_string(),
                f.tool.to_string(),
                f.arguments.to_string(),
            );
            tokio::spawn(async move {
                let call = (tool.as_str(), arguments.as_str());
                upstreams
                    .call_relayed(&server, call, sink, &declared, ask_sink)
                    .await
            })
        };
        let leg = Leg {
            task: AbortOnDrop(task),
            asks,
            heard,
            last: None,
            timeout: upstreams.timeout(f.server),
        };
        self.run(leg, &f).await
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
                        self.ask_client(ask, f.outbox.as_ref(), leg.timeout).await;
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

    /// Sends `ask` to an older client on the call's stream, and its answer
    /// (within `timeout`) to the server; without a stream, or a secret to
    /// send it under, the server gets an error at once.
    async fn ask_client(
        self: &Arc<Self>,
        ask: ServerAsk,
        outbox: Option<&Outbox>,
        timeout: Duration,
    ) {
        let (Some(outbox), Some(id)) = (outbox, secret()) else {
            refuse(
                ask,
                "muster cannot send this chat's client a request now: the call has no stream open to it",
            );
            return;
        };
        let id = serde_json::to_string(&id).unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), tx);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{}}}"#,
            ask.kind.method(),
            ask.params.get()
        );
        if outbox.send(line).await.is_err() {
            self.waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            refuse(ask, "the chat's client is gone");
            return;
        }
        let relays = self.clone();
        tokio::spawn(async move {
            let outcome = tokio::time::timeout(timeout, rx).await;
            relays
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            match outcome {
                Ok(Ok(Ok(result))) => ask.answer(Ok(&result)).await,
                Ok(Ok(Err((code, message)))) => ask.answer(Err((code, &message))).await,
                _ => {
                    let message = "the chat's client did not answer in time";
                    ask.answer(Err((super::rpc::INTERNAL_ERROR, message))).await;
                }
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
