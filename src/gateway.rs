//! muster as an MCP server: one gateway any MCP client connects to, in
//! front of the policy's MCP servers.
//!
//! Each chat is an agent session (see [`crate::session`]) kept in a
//! [`SessionStore`] under the chat's id. `tools/list` answers the chat's
//! pinned roster in its pinned order, definitions as narrowed and names as
//! providers accept them, then the tools loaded into it; the control tool
//! loads deferred tools into that chat's list, and the client is told the
//! list changed. `tools/call` checks the call with the same code as
//! `muster check` against what that chat was offered and, when it fits,
//! forwards the arguments the check forwards (fixed values in, unlisted
//! arguments out) to the owning server, returning the server's result as
//! it sent it. A refused call reaches no server: it is answered as a tool
//! error naming each problem, with the typed problems in `_meta`.
//!
//! The gateway plans MCP tools only ([`Selection::mcp_only`]): configured
//! tools have no server behind them, so they are cut as `left-to-host` and
//! the caps are spent on what the gateway offers; [`Gateway::left_to_host`]
//! names them for the start-up notice.
//!
//! The transports (stdio for `muster mcp`, Streamable HTTP for `muster
//! serve`'s `/mcp`) only move messages: [`Gateway::handle`] takes one
//! message and gives at most one answer, and says whether the chat's list
//! changed.

mod call;
mod chats;
mod drift;
mod follow;
mod forward;
mod handshake;
pub mod listen;
pub(crate) mod own_meta;
pub mod passthrough;
pub mod progress;
pub mod relay;
pub mod rpc;
mod shape;
mod spans;
mod stateless;
pub mod stdio;
pub mod upstream;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::catalog::{Catalog, Selection, Source};
use crate::check::{self, Call, CheckOptions, OfferedPlan, Turn};
use crate::contract::{CallProblem, LoadStatus, NameSpelling};
use crate::discover::ServerSpec;
use crate::error::{Error, ErrorKind, Problem};
use crate::lock::Lock;
use crate::policy::Inputs;
use crate::session::{self, LoadRequest, NewSession, Opened, SessionKeys};
use crate::store::{SessionStore, Stored, Swapped};
use crate::tokens::TokenCache;
use follow::{Followed, Opening};
use handshake::{complete, supported_versions};
use own_meta::{tool_error, tool_result};
use rpc::{Failure, Message};
use upstream::{UpstreamError, Upstreams};

/// The revisions muster answers `initialize` with, newest first; a client
/// asking for another is answered with the newest.
pub const DOWNSTREAM_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The stateless revision: no handshake, each request names it in
/// `_meta`, list changes go to `subscriptions/listen` streams only.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Where a 2026-07-28 request names its revision.
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// Most views (a chat's offer, ready to check against) kept per policy
/// generation; chats with the same pins and loads share one.
pub const MAX_VIEWS: usize = 4096;
/// Most stored documents per policy generation whose view is known by the
/// document's digest (a chat's document changes only with its loads).
pub const MAX_DOCUMENTS: usize = 65_536;
pub use drift::Drift;
pub use own_meta::{META_KEY, UPSTREAM_META_KEY};

/// How the gateway plans, signs and checks.
#[derive(Debug, Clone)]
pub struct Options {
    /// Agent, version, flags; planned MCP tools only whatever is given.
    pub selection: Selection,
    /// Signs and verifies the chats' session documents.
    pub keys: SessionKeys,
    /// How long a chat is kept after its last change.
    pub ttl: Duration,
    /// How calls are checked.
    pub check: CheckOptions,
    /// Whether the call log holds the arguments forwarded (off: ids, tool,
    /// verdict, codes and times only).
    pub log_arguments: bool,
}

/// One policy generation and what is derived from it.
struct Generation {
    inputs: Inputs,
    number: u64,
    cache: Mutex<TokenCache>,
    views: Mutex<HashMap<String, Arc<View>>>,
    /// Each stored document's view, by the digest of its text: a request
    /// of a chat whose document is unchanged looks its view up here.
    documents: Mutex<HashMap<[u8; 32], Arc<View>>>,
    /// The `initialize` instructions, made at the first `initialize`.
    instructions: std::sync::OnceLock<String>,
    /// Every server's planned tools as a lock (what chats were offered),
    /// made at the first forwarded call: live listings are compared with it.
    planned: std::sync::OnceLock<Lock>,
}

/// What one chat is offered, ready to list and check against.
struct View {
    offered: OfferedPlan,
    /// The `tools/list` result's `tools` value.
    tools: String,
    /// The control tool's provider name, when the chat has one.
    control: Option<String>,
}

/// What one `tools/call` came to, for the call log and metrics.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// The chat.
    pub chat: String,
    /// The JSON-RPC id, as sent.
    pub id: String,
    /// The tool name the client called.
    pub tool: String,
    /// The server it was forwarded to, when it was.
    pub server: Option<String>,
    /// `forwarded`, `refused`, `loaded`, `load-refused`, `upstream-failed`,
    /// `drifted` (the server changed the tool since the chat was offered
    /// it, and `lock.on_mismatch` is `cut`) or `invalid`.
    pub verdict: &'static str,
    /// Problem, note or failure codes.
    pub codes: Vec<String>,
    /// Milliseconds the server took, for a forwarded call.
    pub upstream_ms: Option<f64>,
    /// Milliseconds from the message to the answer.
    pub total_ms: f64,
    /// Tokens of the result's content the client got, for a forwarded call
    /// (docs/results.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_tokens: Option<u64>,
    /// The arguments forwarded, when `log_arguments` is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Box<RawValue>>,
    /// The call's spans as they are made, when tracing is on; never
    /// logged.
    #[serde(skip)]
    spans: Option<Box<spans::CallSpans>>,
}

/// The answer to one message.
#[derive(Debug, Default)]
pub struct Reply {
    /// The response's JSON text; none for a notification.
    pub response: Option<String>,
    /// The chat's tool list changed: send `notifications/tools/list_changed`.
    pub list_changed: bool,
    /// The negotiated revision, when the message was `initialize`.
    pub version: Option<&'static str>,
    /// The request named 2026-07-28 in its `_meta`: the client is told of
    /// list changes only on the subscriptions it opened, never unasked.
    pub modern: bool,
    /// A `subscriptions/listen` request (2026-07-28): its id and whether
    /// it asked for tool list changes. The transport acknowledges it and
    /// keeps it open; `response` is `None`.
    pub listen: Option<(Box<RawValue>, bool)>,
    /// A `notifications/cancelled`: the request id it names (JSON text).
    pub cancelled: Option<String>,
}

/// How one `tools/call` came: when, in what kind of chat, under whose
/// trace.
struct CallContext {
    started: Instant,
    stateless: bool,
    parent: Option<crate::trace::Context>,
    /// Where the call's progress goes, when the transport can write to
    /// the client before the answer.
    outbox: Option<progress::Outbox>,
    /// The request named 2026-07-28.
    modern: bool,
}

/// Receives each call's record.
pub type Observer = Box<dyn Fn(&CallRecord) + Send + Sync>;

/// The gateway.
pub struct Gateway {
    current: ArcSwap<Generation>,
    options: Options,
    store: Box<dyn SessionStore>,
    upstreams: Arc<Upstreams>,
    /// Servers' requests relayed to chats' clients.
    relays: Arc<relay::Relays>,
    observer: Observer,
    /// Chats with a 2026-07-28 `subscriptions/listen` stream open in this
    /// process, told when a load changes their list.
    watchers: Arc<listen::Watchers>,
    /// Tools' `outputSchema`s compiled, kept across calls (docs/results.md).
    validators: Arc<crate::results::OutputValidators>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.upstreams)
            .finish_non_exhaustive()
    }
}

/// The servers a gateway forwards to: every `[[mcp]]` block with a
/// command or a url.
fn specs(inputs: &Inputs) -> Vec<ServerSpec> {
    inputs
        .policy
        .servers
        .iter()
        .filter(|s| s.command.is_some() || s.url.is_some())
        .map(|s| {
            let command = s.command.clone().unwrap_or_default();
            let mut spec = ServerSpec::new(s.name.clone(), command, Default::default());
            spec.url = s.url.clone();
            spec.headers = s.headers.clone();
            spec.oauth = s.oauth.clone();
            spec.timeout = s.timeout;
            spec.env = s.env.clone();
            spec.cwd = s.cwd.clone();
            // What the server may relay; the pool's shared connection
            // declares none of it (see `upstream`).
            spec.declare = crate::mcp_client::Declared::all_of(&s.relay);
            spec
        })
        .collect()
}

impl Gateway {
    /// A gateway over `inputs`, keeping chats in `store`; `observer` gets
    /// one record per `tools/call`.
    ///
    /// # Errors
    /// A usage error when the selection names an agent, version or flag
    /// profile the policy does not have.
    pub fn new(
        inputs: Inputs,
        mut options: Options,
        store: Box<dyn SessionStore>,
        observer: Observer,
    ) -> Result<Self, Error> {
        options.selection.mcp_only = true;
        Catalog::build(&inputs, &options.selection)?;
        let upstreams = Arc::new(Upstreams::new(specs(&inputs)));
        // What other replicas sharing the store announce reaches the
        // listen streams held here.
        let watchers: Arc<listen::Watchers> = Arc::default();
        let told = watchers.clone();
        store.hear(Box::new(move |chat| told.announce(chat)))?;
        Ok(Self {
            current: ArcSwap::from_pointee(generation(inputs, 1)),
            options,
            store,
            upstreams,
            relays: Arc::default(),
            observer,
            watchers,
            validators: Arc::default(),
        })
    }

    /// Serves `inputs` from now on. Chats keep their pins: the next request
    /// of a chat whose pinned tools changed is answered
    /// [`rpc::TOOL_PIN_MISMATCH`]. Servers already started are kept.
    pub fn reload(&self, inputs: Inputs) {
        let number = self.current.load().number + 1;
        self.current.store(Arc::new(generation(inputs, number)));
    }

    /// The configured tools the agent would be offered outside the
    /// gateway, which the gateway leaves to the host, in policy order.
    ///
    /// # Errors
    /// As [`Gateway::new`].
    pub fn left_to_host(&self) -> Result<Vec<String>, Error> {
        let g = self.current.load();
        let selection = Selection {
            mcp_only: false,
            ..self.options.selection.clone()
        };
        let catalog = Catalog::build(&g.inputs, &selection)?;
        Ok(catalog
            .candidates
            .iter()
            .filter(|c| matches!(c.source, Source::Configured) && c.exclusion.is_none())
            .map(|c| c.name.clone())
            .collect())
    }

    /// Stops every server the gateway started, and ends every
    /// subscription stream.
    pub async fn shutdown(&self) {
        self.watchers.stop();
        self.upstreams.shutdown().await;
    }

    /// The listen streams open in this process: opened (bounded) by the
    /// transport, told of loads, all ended by [`Gateway::shutdown`].
    pub fn listeners(&self) -> &Arc<listen::Watchers> {
        &self.watchers
    }

    fn expiry(&self) -> u64 {
        now().saturating_add(self.options.ttl.as_secs())
    }

    /// Answers one message of chat `chat`.
    pub async fn handle(&self, chat: &str, bytes: &[u8]) -> Reply {
        self.handle_in(chat, bytes, false, None, None).await
    }

    /// [`Gateway::handle_traced`] for a transport that can write to the
    /// client before the answer: a `tools/call` that asked for progress
    /// (`_meta.progressToken`) has its server's progress written to
    /// `outbox`, all of it before the call returns (the `progress` module).
    pub async fn handle_relayed(
        &self,
        chat: &str,
        bytes: &[u8],
        parent: Option<crate::trace::Context>,
        outbox: progress::Outbox,
    ) -> Reply {
        self.handle_in(chat, bytes, false, parent, Some(outbox))
            .await
    }

    /// [`Gateway::handle`] for a transport that carried a W3C
    /// W3C trace context (the `traceparent` and `tracestate` headers, read
    /// by [`crate::trace::Context::read`]): the call's span joins that trace.
    pub async fn handle_traced(
        &self,
        chat: &str,
        bytes: &[u8],
        parent: Option<crate::trace::Context>,
    ) -> Reply {
        self.handle_in(chat, bytes, false, parent, None).await
    }

    /// [`Gateway::handle`], in a chat made for this message only when
    /// `stateless` (the `stateless` module), under the caller's trace
    /// `parent` when the transport carried one.
    async fn handle_in(
        &self,
        chat: &str,
        bytes: &[u8],
        stateless: bool,
        parent: Option<crate::trace::Context>,
        outbox: Option<progress::Outbox>,
    ) -> Reply {
        let started = Instant::now();
        let (id, method, params) = match rpc::parse(bytes) {
            Ok(Message::Request { id, method, params }) => (id, method, params),
            Ok(Message::Notification { method, params }) => {
                let cancelled = (method == "notifications/cancelled")
                    .then(|| params.as_ref()?.get("requestId").map(Value::to_string))
                    .flatten();
                return Reply {
                    cancelled,
                    ..Reply::default()
                };
            }
            Ok(Message::Response { id, outcome }) => {
                self.relays.answered(&id, outcome);
                return Reply::default();
            }
            Err(failure) => {
                return Reply {
                    response: Some(failure.to_json()),
                    ..Reply::default()
                };
            }
        };
        let mut reply = Reply::default();
        let declared = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(VERSION_META));
        match declared {
            None => {}
            Some(Value::String(v)) if v == MODERN_VERSION => reply.modern = true,
            Some(Value::String(v)) if DOWNSTREAM_VERSIONS.contains(&v.as_str()) => {}
            Some(other) => {
                let mut f = Failure::new(
                    Some(id.clone()),
                    rpc::UNSUPPORTED_PROTOCOL_VERSION,
                    format!(
                        "muster's gateway does not speak protocol revision {}",
                        crate::names::escape(&other.to_string())
                    ),
                );
                f.data = Some(serde_json::json!({
                    "supported": supported_versions(),
                    "requested": other,
                }));
                reply.response = Some(f.to_json());
                return reply;
            }
        }
        if method == "subscriptions/listen" {
            match params.as_ref().and_then(|p| p.get("notifications")) {
                Some(Value::Object(asked)) => {
                    let tools = asked.get("toolsListChanged") == Some(&Value::Bool(true));
                    reply.listen = Some((id, tools));
                }
                _ => {
                    reply.response = Some(
                        Failure::new(
                            Some(id),
                            rpc::INVALID_PARAMS,
                            "subscriptions/listen needs params.notifications, an object such as {\"toolsListChanged\": true}",
                        )
                        .to_json(),
                    );
                }
            }
            return reply;
        }
        let answer = match method.as_str() {
            "initialize" => self
                .initialize(&id, params.as_ref())
                .inspect(|_| self.relays.remember(chat, params.as_ref()))
                .map(|(text, version)| {
                    reply.version = Some(version);
                    text
                }),
            "ping" => Ok("{}".to_string()),
            "server/discover" => Ok(self.discover()),
            "tools/list" => self.list(chat, &id, params.as_ref(), reply.modern),
            "tools/call" => {
                let cx = CallContext {
                    started,
                    stateless,
                    parent,
                    outbox,
                    modern: reply.modern,
                };
                self.call(chat, &id, params, cx, &mut reply.list_changed)
                    .await
            }
            m if passthrough::serves(m) => {
                self.passthrough(chat, &id, m, params.as_ref(), reply.modern)
                    .await
            }
            other => Err(Failure::new(
                Some(id.clone()),
                rpc::METHOD_NOT_FOUND,
                format!(
                    "muster's gateway does not serve {:?}: it serves initialize, server/discover, subscriptions/listen, ping, tools/list, tools/call, prompts/list, prompts/get, resources/list, resources/templates/list and resources/read",
                    crate::names::escape(other)
                ),
            )),
        };
        reply.response = Some(match answer {
            Ok(result) if reply.modern => rpc::result(&id, &complete(&result)),
            Ok(result) => rpc::result(&id, &result),
            Err(failure) => failure.to_json(),
        });
        reply
    }

    /// A 2026-07-28 (`modern`) list carries its cache hints: private to
    /// the chat, stale at once (a load changes it; listen streams say so).
    fn list(
        &self,
        chat: &str,
        id: &RawValue,
        params: Option<&Value>,
        modern: bool,
    ) -> Result<String, Failure> {
        if let Some(cursor) = params
            .and_then(|p| p.get("cursor"))
            .filter(|c| !c.is_null())
        {
            return Err(Failure::new(
                Some(id.to_owned()),
                rpc::INVALID_PARAMS,
                format!(
                    "cursor {} was never given out: muster lists a chat's tools in one page",
                    crate::names::escape(&cursor.to_string())
                ),
            ));
        }
        let (view, _, repinned) = self.view(chat, id)?;
        let meta = repinned.map_or_else(String::new, |report| {
            format!(
                r#","_meta":{{"{META_KEY}":{{"repinned":{}}}}}"#,
                serde_json::to_string(&report).unwrap_or_default()
            )
        });
        Ok(if modern {
            format!(
                r#"{{"tools":{},"ttlMs":0,"cacheScope":"private"{meta}}}"#,
                view.tools
            )
        } else {
            format!(r#"{{"tools":{}{meta}}}"#, view.tools)
        })
    }

    async fn call(
        &self,
        chat: &str,
        id: &RawValue,
        params: Option<Value>,
        cx: CallContext,
        list_changed: &mut bool,
    ) -> Result<String, Failure> {
        let CallContext {
            started,
            stateless,
            parent,
            outbox,
            modern,
        } = cx;
        let invalid =
            |message: String| Failure::new(Some(id.to_owned()), rpc::INVALID_PARAMS, message);
        let Some(Value::Object(mut params)) = params else {
            return Err(invalid(
                "tools/call needs params {\"name\": \"<tool>\", \"arguments\": {...}}".into(),
            ));
        };
        let Some(Value::String(name)) = params.remove("name") else {
            return Err(invalid(
                "tools/call needs params.name, the tool's name as tools/list gave it".into(),
            ));
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v,
            Some(other) => {
                return Err(invalid(format!(
                    "params.arguments must be an object, not {}",
                    json_kind(&other)
                )));
            }
        };
        let (view, _, repinned) = self.view(chat, id)?;
        let mut record = CallRecord {
            chat: chat.to_string(),
            id: id.get().to_string(),
            tool: name.clone(),
            server: None,
            verdict: "refused",
            codes: Vec::new(),
            upstream_ms: None,
            total_ms: 0.0,
            result_tokens: None,
            arguments: None,
            spans: spans::begin(parent, Some(&params), started),
        };
        if repinned.is_some() {
            record.codes.push("chat-repinned".into());
            *list_changed = true;
        }
        let view = if stateless {
            self.call_through(chat, id, view, &name, &mut record)?
        } else {
            view
        };
        let turn = Turn {
            calls: vec![Call::new("call", name.clone(), arguments)],
        };
        let check_start = spans::now(&record);
        let report = call::checked(&view, turn, &self.options.check, id).await?;
        let checked = &report.calls[0];
        record.codes = checked
            .problems
            .iter()
            .map(|p| p.problem.code().to_string())
            .chain(checked.notes.iter().map(|n| n.note.code().to_string()))
            .collect();
        spans::checked(&mut record, check_start, checked.status);
        let answer = if checked.status != check::Status::Ok {
            if let Some(CallProblem::UnknownTool { closest, .. }) =
                checked.problems.first().map(|p| &p.problem)
            {
                record.verdict = "invalid";
                self.observe(record, started);
                let mut f = invalid(format!(
                    "unknown tool {:?}: this chat offers no such tool",
                    crate::names::escape(&name)
                ));
                f.data = Some(serde_json::json!({"code": "unknown-tool", "closest": closest}));
                return Err(f);
            }
            let text: Vec<&str> = checked
                .problems
                .iter()
                .map(|p| p.message.as_str())
                .collect();
            let meta = serde_json::json!({"check": checked});
            Ok(tool_error(&text.join("\n"), &meta))
        } else if view.control.as_deref() == Some(name.as_str()) {
            let query = checked
                .arguments
                .as_deref()
                .and_then(|a| a.get("query"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            self.load(chat, id, &query, &mut record, list_changed)
        } else {
            let arguments = checked.arguments_text().unwrap_or_else(|| "{}".into());
            match checked.tool.as_ref().and_then(|t| t.mcp.as_ref()) {
                Some(target) => {
                    let to = forward::ToServer {
                        chat,
                        id,
                        name: &name,
                        target,
                        arguments,
                        params: &params,
                        stateless,
                        modern,
                        outbox,
                    };
                    self.forward(to, &mut record).await
                }
                None => {
                    // Only MCP tools and the control tool are offered; a
                    // configured tool is cut as left-to-host.
                    record.verdict = "invalid";
                    Err(invalid(format!(
                        "tool {:?} has no MCP server behind it: the host runs it",
                        crate::names::escape(&name)
                    )))
                }
            }
        };
        self.observe(record, started);
        answer
    }

    /// Loads what the control tool's `query` asks for into the chat: a
    /// compare-and-swap on the chat's revision, tried again when another
    /// load landed first.
    fn load(
        &self,
        chat: &str,
        id: &RawValue,
        query: &str,
        record: &mut CallRecord,
        list_changed: &mut bool,
    ) -> Result<String, Failure> {
        let failed = |code, message: String| Failure::new(Some(id.to_owned()), code, message);
        let start = spans::now(record);
        for _ in 0..8 {
            let (stored, doc) = self.stored(chat, id)?;
            let g = self.current.load();
            let Opening {
                mut live,
                stored,
                repinned,
            } = self.live(&g, chat, stored, doc, id)?;
            if repinned.is_some() {
                *list_changed = true;
            }
            let answer = live.load(&LoadRequest::Query(query.to_string()));
            record.codes.extend(answer.notes.iter().filter_map(|n| {
                let note = serde_json::to_value(n).ok()?;
                Some(note.get("code")?.as_str()?.to_string())
            }));
            let meta = serde_json::json!({"load": answer});
            if answer.status != LoadStatus::Loaded {
                record.verdict = "load-refused";
                spans::loaded(record, start, &answer);
                return Ok(match answer.status {
                    LoadStatus::Refused => tool_error(&answer.answer, &meta),
                    _ => tool_result(&answer.answer, &meta),
                });
            }
            let doc = live.into_document();
            let next = Stored {
                document: session::to_json_string(&doc),
                revision: doc.revision,
            };
            match self
                .store
                .swap(chat, stored.revision, &next, now(), self.expiry())
                .map_err(|e| failed(rpc::INTERNAL_ERROR, e.to_string()))?
            {
                Swapped::Done => {
                    record.verdict = "loaded";
                    spans::loaded(record, start, &answer);
                    *list_changed = true;
                    self.announce(chat);
                    return Ok(tool_result(&answer.answer, &meta));
                }
                Swapped::Stale { .. } => continue,
                Swapped::Missing => {
                    return Err(failed(
                        rpc::CHAT_NOT_FOUND,
                        format!("no chat {chat:?} is kept"),
                    ));
                }
            }
        }
        Err(failed(
            rpc::INTERNAL_ERROR,
            "other loads into this chat kept landing first; call the control tool again".into(),
        ))
    }

    fn observe(&self, mut record: CallRecord, started: Instant) {
        record.total_ms = started.elapsed().as_secs_f64() * 1000.0;
        (self.observer)(&record);
        spans::of_call(&record);
    }
}

fn generation(inputs: Inputs, number: u64) -> Generation {
    Generation {
        inputs,
        number,
        cache: Mutex::new(TokenCache::in_memory()),
        views: Mutex::new(HashMap::new()),
        documents: Mutex::new(HashMap::new()),
        instructions: std::sync::OnceLock::new(),
        planned: std::sync::OnceLock::new(),
    }
}

/// What kind of JSON value `v` is, for a message.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
