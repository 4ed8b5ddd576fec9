//! The gateway's pool of connections to the policy's MCP servers, shared
//! by every chat it serves. The connections themselves are the one MCP
//! client's ([`crate::mcp_client`]: start, handshake, versions, requests,
//! what a dying server does to calls in flight); this module decides only
//! what a pool adds on top.
//!
//! Each server is started (a stdio command) or connected to (a Streamable
//! HTTP `url`) once, on its first call, and kept: one process or session,
//! one connection, many calls in flight (at most [`MAX_IN_FLIGHT`] per
//! server; more wait for a slot within the call's timeout).
//!
//! A server whose connection ended (it exited, closed its stdout or
//! answered what muster cannot read: its calls in flight failed at once) is
//! marked down: new calls fail fast naming it until a backoff has passed
//! (1 s, doubling to 30 s), and the next call after that starts it again.
//! A server that hangs fails only its own calls, each at its timeout. Other
//! servers go on. Its tools' listing is cached per connection and read
//! again after `notifications/tools/list_changed`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;

mod answer;
mod leased;
pub use leased::MAX_IDLE_LEASED;

use crate::discover::{MAX_PAGES, MAX_TOOLS, ServerSpec};
pub use crate::mcp_client::{
    ASKS_BUFFERED, AskSink, MAX_CAPABILITY_BYTES, MAX_IN_FLIGHT, ProgressSink, ServerAsk,
    UPSTREAM_VERSIONS, UpstreamError,
};
use crate::mcp_client::{Conn, Declared, Reply, short, start};
use crate::snapshot::{Checker, ListedTool};

/// First wait before a down server is started again; it doubles per
/// failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait before a down server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A server's tools as it lists them now, by name, each with its
/// definition hash ([`crate::lock::definition_hash`]).
#[derive(Debug, Default)]
pub struct Listing {
    tools: HashMap<String, (ListedTool, String)>,
}

impl Listing {
    /// The tool named `name` and its definition hash, when listed.
    pub fn get(&self, name: &str) -> Option<(&ListedTool, &str)> {
        self.tools.get(name).map(|(t, h)| (t, h.as_str()))
    }
}

/// The state of one server's connection.
enum State {
    /// Not started yet, or stopped cleanly.
    Idle,
    /// Started and answering.
    Up(Arc<Conn>),
    /// Failed; not started again before `until`.
    Down {
        until: Instant,
        failures: u32,
        message: String,
    },
}

/// One server of the policy.
struct Server {
    spec: ServerSpec,
    state: tokio::sync::Mutex<State>,
    slots: Semaphore,
    /// Calls forwarded, for the log and metrics.
    calls: AtomicU64,
    /// Times its tools were listed.
    listings: AtomicU64,
    /// Its tools as last listed, and the connection they were listed on (a
    /// new connection lists again, so a restarted server is compared
    /// afresh).
    listing: tokio::sync::Mutex<Option<(std::sync::Weak<Conn>, Arc<Listing>)>>,
    /// What it may relay to a chat's client (`relay`); its shared
    /// connection declares none of it.
    relay: Vec<crate::policy::Relayed>,
    /// Its connections leased to calls that relay (see `leased`).
    leased: leased::Leased,
}

/// Every server a gateway forwards to, by the policy's server name.
pub struct Upstreams {
    servers: HashMap<String, Arc<Server>>,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.servers.keys().collect();
        names.sort();
        f.debug_struct("Upstreams")
            .field("servers", &names)
            .finish()
    }
}

impl Upstreams {
    /// Connections (none started yet) to `specs`.
    pub fn new(specs: Vec<ServerSpec>) -> Self {
        let servers = specs
            .into_iter()
            .map(|mut spec| {
                let relay = spec.declare.kinds();
                spec.declare = Declared::default();
                (
                    spec.name.clone(),
                    Arc::new(Server {
                        spec,
                        relay,
                        leased: leased::Leased::default(),
                        state: tokio::sync::Mutex::new(State::Idle),
                        slots: Semaphore::new(MAX_IN_FLIGHT),
                        calls: AtomicU64::new(0),
                        listings: AtomicU64::new(0),
                        listing: tokio::sync::Mutex::new(None),
                    }),
                )
            })
            .collect();
        Self { servers }
    }

    /// Whether `server` is one of them.
    pub fn has(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }

    /// Calls `tool` on `server` with `arguments` (a JSON object's text, sent
    /// byte for byte) and returns the call's `result` as the server sent it.
    /// With `progress`, the call's progress is watched and the server's
    /// `notifications/progress` for it go there (see [`crate::mcp_client::ProgressSink`]).
    ///
    /// # Errors
    /// An [`UpstreamError`]; a result with `isError` is not one (the model
    /// reads it).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        progress: Option<ProgressSink>,
    ) -> Reply {
        self.call_with(server, (tool, arguments, ""), progress)
            .await
    }

    /// [`Upstreams::call`] with `extra` params members after `arguments`
    /// (`,"inputResponses":…,"requestState":…` for a 2026-07-28 retry;
    /// JSON text, or empty).
    pub async fn call_with(
        &self,
        server: &str,
        call: (&str, &str, &str),
        progress: Option<ProgressSink>,
    ) -> Reply {
        let (tool, arguments, extra) = call;
        let Some(server) = self.servers.get(server) else {
            return Err(UpstreamError::CannotStart {
                message: "no such server in the policy".into(),
            });
        };
        let timeout = server.spec.timeout;
        let started = Instant::now();
        let Ok(Ok(_slot)) = tokio::time::timeout(timeout, server.slots.acquire()).await else {
            return Err(UpstreamError::Busy { after: timeout });
        };
        let conn = server.open().await?;
        server.calls.fetch_add(1, Ordering::Relaxed);
        let name = serde_json::to_string(tool).unwrap_or_default();
        let params = format!(r#"{{"name":{name},"arguments":{arguments}{extra}}}"#);
        let left = timeout.saturating_sub(started.elapsed());
        let reply = conn
            .request_watched("tools/call", &params, left, progress)
            .await;
        if !conn.is_alive() {
            server.went_down(&conn).await;
        }
        answer::of_call(reply, &server.spec, &conn.tokens())
    }

    /// Sends `method` with `params` (a JSON object's text) to `server` and
    /// returns its result as [`Upstreams::call`] does (an object, muster's
    /// own `_meta` keys moved, filled secrets redacted). The server's
    /// timeout counts from `since`, so the pages of one listing share it.
    /// What the gateway's passthrough of `resources/*` and `prompts/*`
    /// sends (the `passthrough` module).
    ///
    /// # Errors
    /// An [`UpstreamError`], as for a call.
    pub async fn request(&self, server: &str, method: &str, params: &str, since: Instant) -> Reply {
        let Some(server) = self.servers.get(server) else {
            return Err(UpstreamError::CannotStart {
                message: "no such server in the policy".into(),
            });
        };
        let timeout = server.spec.timeout;
        let left = || timeout.saturating_sub(since.elapsed());
        let Ok(Ok(_slot)) = tokio::time::timeout(left(), server.slots.acquire()).await else {
            return Err(UpstreamError::Busy { after: timeout });
        };
        let conn = server.open().await?;
        let reply = conn.request(method, params, left()).await;
        if !conn.is_alive() {
            server.went_down(&conn).await;
        }
        answer::of_call(reply, &server.spec, &conn.tokens())
    }

    /// What `server` answered its handshake with (`initialize`'s result,
    /// or `server/discover`'s), starting it when it is not up: where its
    /// capabilities are.
    ///
    /// # Errors
    /// An [`UpstreamError`] when the server cannot be reached.
    pub async fn handshake(
        &self,
        server: &str,
    ) -> Result<Option<Box<serde_json::value::RawValue>>, UpstreamError> {
        let Some(server) = self.servers.get(server) else {
            return Err(UpstreamError::CannotStart {
                message: "no such server in the policy".into(),
            });
        };
        Ok(server.open().await?.handshake_result())
    }

    /// The tools `server` lists now: listed once per connection (a server
    /// started again is listed again) and again after the server announced
    /// `notifications/tools/list_changed`, so a call is never compared
    /// with a listing the server said is stale.
    ///
    /// # Errors
    /// An [`UpstreamError`] when the server cannot be reached or its
    /// listing cannot be read (then no call of it is forwarded).
    pub async fn listing(&self, server: &str) -> Result<Arc<Listing>, UpstreamError> {
        let Some(server) = self.servers.get(server) else {
            return Err(UpstreamError::CannotStart {
                message: "no such server in the policy".into(),
            });
        };
        let conn = server.open().await?;
        let mut held = server.listing.lock().await;
        if let Some((listed_on, listing)) = &*held
            && std::sync::Weak::ptr_eq(listed_on, &Arc::downgrade(&conn))
            && !conn.tools_changed()
        {
            return Ok(listing.clone());
        }
        // Cleared before listing: a change announced while the list is
        // read marks it stale again.
        conn.clear_tools_changed();
        let listed = list_tools(&conn, server.spec.timeout).await;
        if !conn.is_alive() {
            server.went_down(&conn).await;
        }
        let listing = Arc::new(listed.map_err(|e| e.redacted(&server.spec))?);
        server.listings.fetch_add(1, Ordering::Relaxed);
        *held = Some((Arc::downgrade(&conn), listing.clone()));
        Ok(listing)
    }

    /// How many times each server's tools were listed, by server name.
    pub fn listings(&self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = self
            .servers
            .iter()
            .map(|(name, s)| (name.clone(), s.listings.load(Ordering::Relaxed)))
            .collect();
        out.sort();
        out
    }

    /// Stops every started server: its calls in flight fail, and its
    /// process group is killed.
    pub async fn shutdown(&self) {
        self.close_leased().await;
        for server in self.servers.values() {
            let mut state = server.state.lock().await;
            if let State::Up(conn) = std::mem::replace(&mut *state, State::Idle) {
                conn.close("stopped with the gateway").await;
            }
        }
    }
}

impl Server {
    /// The live connection, starting the server when it is not up and its
    /// backoff (if any) has passed.
    async fn connect(&self) -> Result<Arc<Conn>, UpstreamError> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Up(conn) if conn.is_alive() => return Ok(conn.clone()),
            State::Down { until, message, .. } if Instant::now() < *until => {
                return Err(UpstreamError::Down {
                    message: message.clone(),
                    retry_in_secs: until.saturating_duration_since(Instant::now()).as_secs() + 1,
                });
            }
            _ => {}
        }
        let failures = match &*state {
            State::Down { failures, .. } => *failures,
            State::Up(_) => 1,
            State::Idle => 0,
        };
        match tokio::time::timeout(self.spec.timeout, start(&self.spec)).await {
            Ok(Ok(conn)) => {
                *state = State::Up(conn.clone());
                Ok(conn)
            }
            Ok(Err(message)) => {
                // The handshake's failure names the server; the sentence
                // this goes into names it already (issue 31 item 9).
                let prefix = format!("MCP server `{}` ", self.spec.name);
                let message = match message.strip_prefix(&prefix) {
                    Some(rest) => rest.to_string(),
                    None => message,
                };
                *state = down(failures, message.clone());
                Err(UpstreamError::CannotStart { message })
            }
            Err(_) => {
                let message = format!(
                    "did not initialize within {}",
                    crate::names::duration_text(self.spec.timeout)
                );
                *state = down(failures, message.clone());
                Err(UpstreamError::CannotStart { message })
            }
        }
    }

    /// Marks the server down after `conn` ended, unless a newer connection
    /// replaced it already.
    async fn went_down(&self, conn: &Arc<Conn>) {
        let mut state = self.state.lock().await;
        if let State::Up(current) = &*state
            && Arc::ptr_eq(current, conn)
        {
            *state = down(0, conn.ended_text());
        }
    }
}

fn down(failures: u32, message: String) -> State {
    let wait = FIRST_BACKOFF
        .saturating_mul(1u32 << failures.min(5))
        .min(MAX_BACKOFF);
    State::Down {
        until: Instant::now() + wait,
        failures: failures.saturating_add(1),
        message,
    }
}

/// Reads every page of the server's `tools/list` within `timeout`, with
/// discovery's limits (pages, tools, a message's bytes) and its rules for
/// a listing (each tool an object with a name and an object schema, no
/// name twice).
async fn list_tools(conn: &Arc<Conn>, timeout: Duration) -> Result<Listing, UpstreamError> {
    #[derive(Deserialize)]
    struct Page {
        tools: Vec<Value>,
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    let bad = |message: String| UpstreamError::BadResponse { message };
    let started = Instant::now();
    let mut checker = Checker::default();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => serde_json::json!({ "cursor": c }).to_string(),
            None => "{}".to_string(),
        };
        let left = timeout.saturating_sub(started.elapsed());
        let raw = conn.request("tools/list", &params, left).await?;
        let page: Page = serde_json::from_str(raw.get())
            .map_err(|e| bad(format!("a tools/list result muster cannot read ({e})")))?;
        if checker.len() + page.tools.len() > MAX_TOOLS {
            return Err(bad(format!("a tools/list over {MAX_TOOLS} tools")));
        }
        for tool in page.tools {
            checker.push(tool);
        }
        match page.next_cursor {
            None => {
                let tools = checker.finish().map_err(|problems| {
                    bad(format!(
                        "a tools/list muster cannot accept: {}",
                        problems.join("; ")
                    ))
                })?;
                let tools = tools
                    .into_iter()
                    .map(|t| {
                        let hash = crate::lock::definition_hash(&t);
                        (t.name.clone(), (t, hash))
                    })
                    .collect();
                return Ok(Listing { tools });
            }
            Some(next) if !seen.insert(next.clone()) => {
                return Err(bad(format!(
                    "a tools/list cursor given twice ({})",
                    short(&next)
                )));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(bad(format!("a tools/list over {MAX_PAGES} pages")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap() {
        let wait = |failures| match down(failures, String::new()) {
            State::Down { until, .. } => until.saturating_duration_since(Instant::now()),
            _ => unreachable!(),
        };
        assert!(wait(0) <= FIRST_BACKOFF);
        assert!(wait(1) > FIRST_BACKOFF);
        assert!(wait(10) <= MAX_BACKOFF);
    }
}
