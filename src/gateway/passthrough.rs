//! `resources/*` and `prompts/*` through the gateway, namespaced like
//! tools. A chat reaches the resources and prompts of its servers: the
//! policy's `[[mcp]]` blocks with a `command` or `url` that its agent uses
//! ([`crate::policy::Agent::uses`]), whose `when` flag is on in the flags
//! the chat was pinned with, and whose `resources` / `prompts` switch is
//! on; no other server is asked anything. Of those, a server is asked only
//! for what its handshake declares (`capabilities.prompts`,
//! `capabilities.resources`).
//!
//! Lists gather every page of every such server into one page, by server
//! name and then as each listed them (discovery's bounds: at most
//! [`MAX_PAGES`](crate::discover::MAX_PAGES) pages and the first
//! [`MAX_NOTED`] prompts or resources of a server, as a snapshot keeps
//! them, or [`MAX_TEMPLATES`] templates; a list cut there says so); each item keeps what the server wrote but its
//! `name`, which becomes `mcp.<server>.<name>` spelt as the chat spells
//! tool names. A server that fails is named in `_meta` with its code and
//! the rest are listed; an item muster will not pass on (a name or URI
//! with hidden characters or over its bound, a template it cannot read, a
//! prompt name an earlier one has) is named there too. `prompts/get` is
//! routed by the namespaced name and sends the server its own; a
//! `resources/read` goes to the one server that lists the URI, else the
//! one whose template matches it (the `templates` module); none, or more
//! than one, is `-32602` with a typed code. Both results are held to the
//! server's result budget as a tool result is (the `budget` module).

mod budget;
mod templates;

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, json};

use super::*;
use crate::policy::ServerDef;
use crate::provider::NamePolicy;
use budget::Body;

pub use crate::snapshot::MAX_NOTED;
/// The most resource templates of one server passed on (the rest are
/// not read); each is a pattern a `resources/read` may be matched against.
pub const MAX_TEMPLATES: usize = 256;
/// The longest URI or URI template muster passes on or reads, in bytes.
pub const MAX_URI_BYTES: usize = 8_192;

/// The methods passed through.
pub(super) fn serves(method: &str) -> bool {
    matches!(
        method,
        "prompts/list"
            | "prompts/get"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// Why something a server listed is not passed on, or a request is
/// refused: a stable kebab-case code, in `data.code` of a refusal and in
/// `_meta["dev.muster/gateway"].skipped[].code` of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// A name with a hidden character, or over [`crate::names::MAX_NAME_BYTES`].
    InvalidName,
    /// A URI or template with a hidden character or over [`MAX_URI_BYTES`],
    /// or a template muster cannot read.
    InvalidUri,
    /// A prompt whose namespaced name an earlier prompt has.
    NameCollision,
    /// `prompts/get` names no prompt of the chat's servers.
    UnknownPrompt,
    /// `resources/read` of a URI no server of the chat lists and no
    /// template matches.
    UnknownResource,
    /// `resources/read` of a URI more than one server lists (or, listed by
    /// none, whose templates match).
    AmbiguousResource,
    /// A server listed more than [`MAX_NOTED`] (or [`MAX_TEMPLATES`]):
    /// the first are passed on, the rest not read.
    ListCut,
}

impl Code {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidName => "invalid-name",
            Code::InvalidUri => "invalid-uri",
            Code::NameCollision => "name-collision",
            Code::UnknownPrompt => "unknown-prompt",
            Code::UnknownResource => "unknown-resource",
            Code::AmbiguousResource => "ambiguous-resource",
            Code::ListCut => "list-cut",
        }
    }
}

/// What is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompts,
    Resources,
    Templates,
}

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts/list",
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
        }
    }

    /// The result's list member.
    fn key(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts",
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
        }
    }

    /// The capability a server declares it with.
    fn capability(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts",
            Kind::Resources | Kind::Templates => "resources",
        }
    }

    /// The member that locates an item, besides its name.
    fn locator(self) -> Option<&'static str> {
        match self {
            Kind::Prompts => None,
            Kind::Resources => Some("uri"),
            Kind::Templates => Some("uriTemplate"),
        }
    }

    fn most(self) -> usize {
        match self {
            Kind::Templates => MAX_TEMPLATES,
            _ => MAX_NOTED,
        }
    }

    /// Whether the block's switch lets it through.
    fn on(self, server: &ServerDef) -> bool {
        match self {
            Kind::Prompts => server.prompts,
            Kind::Resources | Kind::Templates => server.resources,
        }
    }
}

/// How a chat spells names: `mcp.<server>.<name>` as its tools are.
struct Naming {
    spelling: NameSpelling,
    policy: NamePolicy,
}

impl Naming {
    fn name(&self, server: &str, name: &str) -> String {
        let full = crate::policy::mcp_name(server, name);
        match self.spelling {
            NameSpelling::Provider => crate::provider::spell(&full, &self.policy).name,
            NameSpelling::Muster => full,
        }
    }
}

/// One server's list, and whether it was cut at [`Kind::most`].
type Listed = (Vec<Map<String, Value>>, bool);

/// What a chat's servers listed of one kind.
#[derive(Default)]
struct Gathered {
    /// Server, the item as it listed it, and the item's namespaced name.
    items: Vec<(String, Map<String, Value>, String)>,
    /// Items not passed on: `{server, name, code}`.
    skipped: Vec<Value>,
    /// Servers that failed: `{server, code, message}`.
    unavailable: Vec<Value>,
    /// Servers whose list was cut: `{server, code, kept}`.
    cut: Vec<Value>,
}

impl Gathered {
    /// What muster says about the list in `_meta`, when anything.
    fn meta(&self) -> Option<Value> {
        let mut own = Map::new();
        if !self.skipped.is_empty() {
            own.insert("skipped".into(), Value::Array(self.skipped.clone()));
        }
        if !self.unavailable.is_empty() {
            own.insert("unavailable".into(), Value::Array(self.unavailable.clone()));
        }
        if !self.cut.is_empty() {
            own.insert("cut".into(), Value::Array(self.cut.clone()));
        }
        (!own.is_empty()).then_some(Value::Object(own))
    }
}

/// A server's text as a message or `_meta` quotes it: escaped and cut.
fn quoted(text: &str) -> String {
    crate::names::shown(&crate::names::escape(text))
}

impl Gateway {
    /// The capabilities `initialize` and `server/discover` declare: tools,
    /// and `prompts` / `resources` when a server the gateway reaches has
    /// its switch on (whether it offers any is known only once it is
    /// asked; a chat whose servers offer none lists none).
    pub(super) fn capabilities(&self) -> Value {
        let g = self.current.load();
        let reached = || {
            g.inputs
                .policy
                .servers
                .iter()
                .filter(|s| self.upstreams.has(&s.name))
        };
        let mut capabilities = json!({"tools": {"listChanged": true}});
        if reached().any(|s| s.prompts) {
            capabilities["prompts"] = json!({});
        }
        if reached().any(|s| s.resources) {
            capabilities["resources"] = json!({});
        }
        capabilities
    }

    /// Answers a `resources/*` or `prompts/*` request of chat `chat`.
    pub(super) async fn passthrough(
        &self,
        chat: &str,
        id: &RawValue,
        method: &str,
        params: Option<&Value>,
        modern: bool,
    ) -> Result<String, Failure> {
        let invalid = |code: Option<Code>, message: String| {
            let mut f = Failure::new(Some(id.to_owned()), rpc::INVALID_PARAMS, message);
            f.data = code.map(|c| json!({"code": c.as_str()}));
            f
        };
        let param = |name: &str| params.and_then(|p| p.get(name)).filter(|v| !v.is_null());
        let kind = match method {
            "prompts/list" => Kind::Prompts,
            "resources/list" => Kind::Resources,
            "resources/templates/list" => Kind::Templates,
            "prompts/get" => {
                let Some(Value::String(name)) = param("name") else {
                    return Err(invalid(
                        None,
                        "prompts/get needs params.name, the prompt's name as prompts/list gave it"
                            .into(),
                    ));
                };
                let arguments = match param("arguments") {
                    None => None,
                    Some(v @ Value::Object(_)) => Some(v),
                    Some(other) => {
                        return Err(invalid(
                            None,
                            format!(
                                "params.arguments must be an object, not {}",
                                json_kind(other)
                            ),
                        ));
                    }
                };
                return self.prompt(chat, id, name, arguments).await;
            }
            _ => {
                let Some(Value::String(uri)) = param("uri") else {
                    return Err(invalid(None, "resources/read needs params.uri, a resource's uri as resources/list gave it or one made from a template".into()));
                };
                if uri.len() > MAX_URI_BYTES {
                    return Err(invalid(
                        Some(Code::InvalidUri),
                        format!(
                            "params.uri is {} bytes long, over the limit of {MAX_URI_BYTES} bytes",
                            uri.len()
                        ),
                    ));
                }
                return self.read(chat, id, uri, modern).await;
            }
        };
        if let Some(cursor) = param("cursor") {
            return Err(invalid(
                None,
                format!(
                    "cursor {} was never given out: muster lists a chat's {} in one page",
                    quoted(&cursor.to_string()),
                    kind.key()
                ),
            ));
        }
        let (servers, naming) = self.chat_servers(chat, id, kind)?;
        let gathered = self.gathered(&servers, &naming, kind).await;
        let mut result = Map::new();
        let meta = gathered.meta();
        let items = gathered
            .items
            .into_iter()
            .map(|(_, mut item, name)| {
                item.insert("name".into(), Value::String(name));
                Value::Object(item)
            })
            .collect();
        result.insert(kind.key().into(), Value::Array(items));
        if modern {
            result.insert("ttlMs".into(), 0.into());
            result.insert("cacheScope".into(), "private".into());
        }
        if let Some(meta) = meta {
            result.insert("_meta".into(), json!({META_KEY: meta}));
        }
        Ok(Value::Object(result).to_string())
    }

    /// The names of the servers whose `kind` chat `chat` reaches, sorted,
    /// and how the chat spells names.
    fn chat_servers(
        &self,
        chat: &str,
        id: &RawValue,
        kind: Kind,
    ) -> Result<(Vec<String>, Naming), Failure> {
        let failed =
            |message: String| Failure::new(Some(id.to_owned()), rpc::INTERNAL_ERROR, message);
        let (_, stored, _) = self.view(chat, id)?;
        let doc = session::read(&stored.document, Path::new("chat"))
            .map_err(|e| failed(e.to_string()))?;
        let g = self.current.load();
        let policy = &g.inputs.policy;
        let agent = policy
            .agent(Some(&doc.agent.name), Some(doc.agent.version))
            .ok_or_else(|| {
                failed(format!(
                    "the chat's agent {:?} version {} is not in the policy",
                    doc.agent.name, doc.agent.version
                ))
            })?;
        let mut servers: Vec<String> = policy
            .servers
            .iter()
            .filter(|s| self.upstreams.has(&s.name) && kind.on(s) && agent.uses(&s.name))
            .filter(|s| {
                s.when
                    .as_ref()
                    .is_none_or(|flag| doc.selection.flags.contains(flag))
            })
            .map(|s| s.name.clone())
            .collect();
        servers.sort();
        let naming = Naming {
            spelling: doc.names,
            policy: policy.names.clone(),
        };
        Ok((servers, naming))
    }

    /// Every server's `kind`, asked at once, gathered in `servers`' order.
    async fn gathered(&self, servers: &[String], naming: &Naming, kind: Kind) -> Gathered {
        type Listing<'a> = Pin<Box<dyn Future<Output = Result<Listed, UpstreamError>> + Send + 'a>>;
        let asked: Vec<Listing<'_>> = servers
            .iter()
            .map(|s| Box::pin(self.listed(s, kind)) as Listing<'_>)
            .collect();
        let mut gathered = Gathered::default();
        let mut names = std::collections::HashSet::new();
        for (server, listed) in servers.iter().zip(all(asked).await) {
            let items = match listed {
                Ok((items, cut)) => {
                    if cut {
                        gathered.cut.push(json!({
                            "server": server,
                            "code": Code::ListCut.as_str(),
                            "kept": items.len(),
                        }));
                    }
                    items
                }
                Err(e) => {
                    gathered.unavailable.push(json!({
                        "server": server,
                        "code": e.code(),
                        "message": e.sentence(server),
                    }));
                    continue;
                }
            };
            for item in items {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                let located = kind
                    .locator()
                    .map(|key| item.get(key).and_then(Value::as_str));
                let code = if name.is_empty()
                    || crate::names::first_hidden(name).is_some()
                    || crate::names::too_long(name).is_some()
                {
                    Some(Code::InvalidName)
                } else if located.is_some_and(|uri| {
                    uri.is_none_or(|uri| {
                        uri.len() > MAX_URI_BYTES
                            || crate::names::first_hidden(uri).is_some()
                            || (kind == Kind::Templates && templates::pattern(uri).is_none())
                    })
                }) {
                    Some(Code::InvalidUri)
                } else {
                    None
                };
                let spelt = naming.name(server, name);
                // Prompts are asked for by name; resources by URI, so two
                // may share a name.
                let code = code.or_else(|| {
                    (kind == Kind::Prompts && !names.insert(spelt.clone()))
                        .then_some(Code::NameCollision)
                });
                match code {
                    Some(code) => gathered.skipped.push(json!({
                        "server": server,
                        "name": quoted(name),
                        "code": code.as_str(),
                    })),
                    None => gathered.items.push((server.clone(), item, spelt)),
                }
            }
        }
        gathered
    }

    /// Every page of `server`'s `kind`, when its handshake declares the
    /// capability (else none), within its timeout and discovery's bounds;
    /// whether the list was cut at [`Kind::most`].
    async fn listed(&self, server: &str, kind: Kind) -> Result<Listed, UpstreamError> {
        let since = Instant::now();
        let declared = self.upstreams.handshake(server).await?.is_some_and(|raw| {
            serde_json::from_str::<Value>(raw.get()).is_ok_and(|h| {
                h.get("capabilities")
                    .and_then(|c| c.get(kind.capability()))
                    .is_some_and(Value::is_object)
            })
        });
        if !declared {
            return Ok((Vec::new(), false));
        }
        let method = kind.method();
        let bad = |what: String| UpstreamError::BadResponse {
            message: format!("a {method} {what}"),
        };
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..crate::discover::MAX_PAGES {
            let params = cursor
                .as_ref()
                .map_or_else(|| "{}".to_string(), |c| json!({"cursor": c}).to_string());
            let raw = self
                .upstreams
                .request(server, method, &params, since)
                .await?;
            let mut page: Value = serde_json::from_str(raw.get())
                .map_err(|e| bad(format!("result muster cannot read ({e})")))?;
            let Some(Value::Array(list)) = page.get_mut(kind.key()).map(Value::take) else {
                return Err(bad(format!("result without a {} list", kind.key())));
            };
            for item in list {
                if items.len() == kind.most() {
                    return Ok((items, true));
                }
                match item {
                    Value::Object(item) => items.push(item),
                    other => return Err(bad(format!("entry that is {}", json_kind(&other)))),
                }
            }
            match page.get("nextCursor") {
                None | Some(Value::Null) => return Ok((items, false)),
                Some(Value::String(next)) if !seen.insert(next.clone()) => {
                    return Err(bad(format!("cursor given twice ({})", quoted(next))));
                }
                Some(Value::String(next)) => cursor = Some(next.clone()),
                Some(other) => return Err(bad(format!("nextCursor that is {}", json_kind(other)))),
            }
        }
        Err(bad(format!("over {} pages", crate::discover::MAX_PAGES)))
    }

    /// `prompts/get` of `name` (as `prompts/list` spelt it) with `arguments`.
    async fn prompt(
        &self,
        chat: &str,
        id: &RawValue,
        name: &str,
        arguments: Option<&Value>,
    ) -> Result<String, Failure> {
        let (servers, naming) = self.chat_servers(chat, id, Kind::Prompts)?;
        let gathered = self.gathered(&servers, &naming, Kind::Prompts).await;
        let Some((server, item, _)) = gathered.items.iter().find(|(_, _, spelt)| spelt == name)
        else {
            let mut f = Failure::new(
                Some(id.to_owned()),
                rpc::INVALID_PARAMS,
                format!(
                    "unknown prompt {:?}: no server of this chat lists it",
                    quoted(name)
                ),
            );
            f.data = Some(
                json!({"code": Code::UnknownPrompt.as_str(), "name": quoted(name), "unavailable": gathered.unavailable}),
            );
            return Err(f);
        };
        let mut params = json!({"name": item.get("name")});
        if let Some(arguments) = arguments {
            params["arguments"] = arguments.clone();
        }
        let raw = self
            .upstreams
            .request(server, "prompts/get", &params.to_string(), Instant::now())
            .await
            .map_err(|e| upstream_failure(id, server, e))?;
        Ok(self.budgeted(server, name, Body::Prompt, raw).await)
    }

    /// `resources/read` of `uri`: to the one server that lists it, else the
    /// one whose template matches it.
    async fn read(
        &self,
        chat: &str,
        id: &RawValue,
        uri: &str,
        modern: bool,
    ) -> Result<String, Failure> {
        let (servers, naming) = self.chat_servers(chat, id, Kind::Resources)?;
        let listed = self.gathered(&servers, &naming, Kind::Resources).await;
        let mut unavailable = listed.unavailable;
        let mut owners: Vec<String> = listed
            .items
            .into_iter()
            .filter(|(_, item, _)| item.get("uri").and_then(Value::as_str) == Some(uri))
            .map(|(server, _, _)| server)
            .collect();
        if owners.is_empty() {
            let templates = self.gathered(&servers, &naming, Kind::Templates).await;
            owners = templates
                .items
                .into_iter()
                .filter(|(_, item, _)| {
                    item.get("uriTemplate")
                        .and_then(Value::as_str)
                        .and_then(templates::pattern)
                        .is_some_and(|p| p.is_match(uri))
                })
                .map(|(server, _, _)| server)
                .collect();
            unavailable.extend(templates.unavailable);
        }
        owners.dedup();
        let server = match owners.as_slice() {
            [server] => server,
            [] | [_, _, ..] => {
                let code = if owners.is_empty() {
                    Code::UnknownResource
                } else {
                    Code::AmbiguousResource
                };
                let message = if owners.is_empty() {
                    format!(
                        "unknown resource {:?}: no server of this chat lists it or has a template it matches",
                        quoted(uri)
                    )
                } else {
                    format!(
                        "resource {:?} is listed (or matched by a template) by more than one server of this chat: {}",
                        quoted(uri),
                        owners.join(", ")
                    )
                };
                let mut f = Failure::new(Some(id.to_owned()), rpc::INVALID_PARAMS, message);
                f.data = Some(
                    json!({"code": code.as_str(), "uri": quoted(uri), "servers": owners, "unavailable": unavailable}),
                );
                return Err(f);
            }
        };
        let params = json!({"uri": uri}).to_string();
        let raw = self
            .upstreams
            .request(server, "resources/read", &params, Instant::now())
            .await
            .map_err(|e| upstream_failure(id, server, e))?;
        let body = Body::Read {
            uri: uri.to_string(),
        };
        let text = self.budgeted(server, uri, body, raw).await;
        Ok(if modern {
            with_cache_hints(&text)
        } else {
            text
        })
    }

    /// `raw` held to `server`'s result budget, when it has one.
    async fn budgeted(&self, server: &str, called: &str, body: Body, raw: Box<RawValue>) -> String {
        let Some(budget) = self.call_budget(server) else {
            return raw.get().to_string();
        };
        let (encoding, provider) = self.counted_by();
        let called = called.to_string();
        let work = move || {
            let how = crate::results::Shaping {
                tool: &called,
                encoding,
                provider,
                budget: Some(budget),
                paging: &[],
            };
            budget::shaped(raw.get(), &body, &how)
        };
        match super::call::off_worker(work).await {
            Ok(text) => text,
            // Nothing cancels this work; a panic stays a panic.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// A failed upstream request as the client is answered: a server's
/// JSON-RPC error under its own code, any other failure `-32603`; the
/// message names the server, `data` holds the code and the server.
fn upstream_failure(id: &RawValue, server: &str, e: UpstreamError) -> Failure {
    let code = match e {
        UpstreamError::Rpc { code, .. } => code,
        _ => rpc::INTERNAL_ERROR,
    };
    let mut f = Failure::new(Some(id.to_owned()), code, e.sentence(server));
    f.data = Some(json!({"code": e.code(), "server": server}));
    f
}

/// A 2026-07-28 `resources/read` result with its cache hints: the
/// server's own when it gave them, else stale at once and private.
fn with_cache_hints(result: &str) -> String {
    let Ok(Value::Object(mut top)) = serde_json::from_str::<Value>(result) else {
        return result.to_string();
    };
    top.entry("ttlMs").or_insert(0.into());
    top.entry("cacheScope").or_insert("private".into());
    Value::Object(top).to_string()
}

/// Every future in `futures`, run at once, their outputs in their order.
async fn all<T>(futures: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> Vec<T> {
    let mut futures = futures;
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, out) in futures.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}
