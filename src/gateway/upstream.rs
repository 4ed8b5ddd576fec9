//! Live connections to the policy's MCP servers, shared by every chat the
//! gateway serves.
//!
//! Each server is started (a stdio command) or connected to (a Streamable
//! HTTP `url`, see the `http` module) once, on its first call, and kept: one
//! process or session, one JSON-RPC connection, many calls in flight (at most
//! [`MAX_IN_FLIGHT`] per server; more wait for a slot within the call's
//! timeout). The client is muster's own rather than rmcp's so a call's
//! arguments reach the server as the check wrote them (integers as the
//! model wrote them, not as doubles) and its result comes back as the
//! server sent it, fields muster does not model included.
//!
//! A server that exits, closes its stdout or answers what muster cannot
//! read is marked down: its calls in flight fail at once, new calls fail
//! fast naming it until a backoff has passed (1 s, doubling to 30 s), and
//! the next call after that starts it again. A server that hangs fails
//! only its own calls, each at its timeout. Other servers go on. Processes
//! are started in their own process group, tied to muster, and killed with
//! it (see `discover`'s spawn), so none is orphaned.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, oneshot};

mod answer;
mod http;
mod replies;
mod request;

use crate::discover::{self, MAX_PAGES, MAX_TOOLS, ServerSpec};
use crate::names::escape;
use crate::snapshot::{Checker, ListedTool};
use replies::{read_replies, route};

/// Most calls one server has in flight; more wait for a slot.
pub const MAX_IN_FLIGHT: usize = 16;
/// First wait before a down server is started again; it doubles per
/// failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait before a down server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How much of a server's stderr is kept to quote when it fails.
const STDERR_KEEP: usize = 4096;

/// The protocol revisions muster speaks to a server, newest first. The
/// newest (2026-07-28) is asked for with `server/discover`; the others
/// with the `initialize` handshake.
pub const UPSTREAM_VERSIONS: [&str; 3] = ["2026-07-28", "2025-11-25", "2025-06-18"];

/// Why a forwarded call got no result from its server. Each kind has a
/// stable code ([`UpstreamError::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamError {
    /// The server could not be started or initialized; it is marked down.
    CannotStart {
        /// What happened, with the server's own words where it gave any.
        message: String,
    },
    /// The server is down after a failure, waiting out its backoff.
    Down {
        /// The failure that put it down.
        message: String,
        /// Seconds until it is started again.
        retry_in_secs: u64,
    },
    /// The server exited or closed its stdout with the call in flight.
    Exited {
        /// How it ended.
        message: String,
    },
    /// No answer within the server's timeout.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// Every slot was busy for the whole timeout.
    Busy {
        /// The timeout.
        after: Duration,
    },
    /// The server answered with a JSON-RPC error.
    Rpc {
        /// The error's code.
        code: i64,
        /// The error's message, escaped.
        message: String,
    },
    /// The server answered with something that is not a result object.
    BadResponse {
        /// What came.
        message: String,
    },
}

impl UpstreamError {
    /// The stable kebab-case code.
    pub fn code(&self) -> &'static str {
        match self {
            UpstreamError::CannotStart { .. } => "upstream-cannot-start",
            UpstreamError::Down { .. } => "upstream-down",
            UpstreamError::Exited { .. } => "upstream-exited",
            UpstreamError::TimedOut { .. } => "upstream-timed-out",
            UpstreamError::Busy { .. } => "upstream-busy",
            UpstreamError::Rpc { .. } => "upstream-error",
            UpstreamError::BadResponse { .. } => "upstream-bad-response",
        }
    }

    /// One sentence naming `server`.
    pub fn sentence(&self, server: &str) -> String {
        match self {
            UpstreamError::CannotStart { message } => {
                format!("MCP server `{server}` could not be started: {message}")
            }
            UpstreamError::Down {
                message,
                retry_in_secs,
            } => format!(
                "MCP server `{server}` is down ({message}); muster starts it again in {retry_in_secs} s"
            ),
            UpstreamError::Exited { message } => {
                format!("MCP server `{server}` {message} before answering")
            }
            UpstreamError::TimedOut { after } => {
                format!("MCP server `{server}` did not answer within {after:?}")
            }
            UpstreamError::Busy { after } => format!(
                "MCP server `{server}` had {MAX_IN_FLIGHT} calls in flight for {after:?}; try again"
            ),
            UpstreamError::Rpc { code, message } => {
                format!("MCP server `{server}` answered with error {code}: {message}")
            }
            UpstreamError::BadResponse { message } => {
                format!("MCP server `{server}` answered what muster cannot read: {message}")
            }
        }
    }
}

/// What a request got back.
type Reply = Result<Box<RawValue>, UpstreamError>;

/// How messages reach a server.
enum Wire {
    /// Lines on a started process's stdin; answers come from its stdout.
    Stdio(tokio::sync::Mutex<tokio::process::ChildStdin>),
    /// One POST per message to a Streamable HTTP endpoint; answers come
    /// in each POST's body (JSON or an event stream).
    Http(http::Endpoint),
}

/// A live connection to one started server.
struct Conn {
    wire: Wire,
    /// Woken when the connection ends, for tasks that wait on it.
    stopped: tokio::sync::Notify,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
    alive: AtomicBool,
    /// Why it went down, once it has.
    ended: Mutex<Option<String>>,
    /// The negotiated revision.
    version: Mutex<&'static str>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The server's process and group; taking it out kills them (the
    /// reader task holds the connection until the server's stdout ends, so
    /// dropping the last other handle is not enough).
    process: Mutex<Option<discover::ProcessGroupHandle>>,
    /// Set when the server announces `notifications/tools/list_changed`:
    /// `listing` is listed again before the next call is forwarded.
    tools_changed: AtomicBool,
    /// The server's tools as last listed on this connection (a new
    /// connection lists again, so a restarted server is compared afresh).
    listing: tokio::sync::Mutex<Option<Arc<Listing>>>,
}

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

/// `params` with the 2026-07-28 request `_meta` added when that revision
/// was negotiated (every request carries its version then).
fn with_meta(params: &str, version: &str) -> String {
    if version != UPSTREAM_VERSIONS[0] {
        return params.to_string();
    }
    let meta = format!(
        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"muster","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    );
    match params.trim_start().strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => format!("{{{meta}}}"),
        Some(rest) => format!("{{{meta},{rest}"),
        None => params.to_string(),
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
            .map(|spec| {
                (
                    spec.name.clone(),
                    Arc::new(Server {
                        spec,
                        state: tokio::sync::Mutex::new(State::Idle),
                        slots: Semaphore::new(MAX_IN_FLIGHT),
                        calls: AtomicU64::new(0),
                        listings: AtomicU64::new(0),
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
    ///
    /// # Errors
    /// An [`UpstreamError`]; a result with `isError` is not one (the model
    /// reads it).
    pub async fn call(&self, server: &str, tool: &str, arguments: &str) -> Reply {
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
        let params = format!(r#"{{"name":{name},"arguments":{arguments}}}"#);
        let left = timeout.saturating_sub(started.elapsed());
        let reply = conn.request("tools/call", &params, left).await;
        if !conn.alive.load(Ordering::Acquire) {
            server.went_down(&conn).await;
        }
        answer::of_call(reply, &server.spec)
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
        let mut held = conn.listing.lock().await;
        if let Some(listing) = &*held
            && !conn.tools_changed.load(Ordering::Acquire)
        {
            return Ok(listing.clone());
        }
        // Cleared before listing: a change announced while the list is
        // read marks it stale again.
        conn.tools_changed.store(false, Ordering::Release);
        let listed = list_tools(&conn, server.spec.timeout).await;
        if !conn.alive.load(Ordering::Acquire) {
            server.went_down(&conn).await;
        }
        let listing = Arc::new(listed.map_err(|e| e.redacted(&server.spec))?);
        server.listings.fetch_add(1, Ordering::Relaxed);
        *held = Some(listing.clone());
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
        for server in self.servers.values() {
            let mut state = server.state.lock().await;
            if let State::Up(conn) = std::mem::replace(&mut *state, State::Idle) {
                if let Wire::Http(endpoint) = &conn.wire {
                    endpoint.close().await;
                }
                conn.end("stopped with the gateway".into());
                drop(
                    conn.process
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take(),
                );
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
            State::Up(conn) if conn.alive.load(Ordering::Acquire) => return Ok(conn.clone()),
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
                *state = down(failures, message.clone());
                Err(UpstreamError::CannotStart { message })
            }
            Err(_) => {
                let message = format!("did not initialize within {:?}", self.spec.timeout);
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

fn short(text: &str) -> String {
    escape(&text.chars().take(200).collect::<String>())
}

/// Starts the server and negotiates a revision: `server/discover` for
/// 2026-07-28, else the `initialize` handshake at the newest revision the
/// server answers with.
async fn start(spec: &ServerSpec) -> Result<Arc<Conn>, String> {
    let conn = match &spec.url {
        Some(url) => {
            let endpoint = http::Endpoint::new(spec, url)?;
            Arc::new(Conn::new(Wire::Http(endpoint), None, Arc::default()))
        }
        None => start_process(spec)?,
    };
    negotiate(spec, conn).await
}

/// Starts the server's process and the task reading its stdout.
fn start_process(spec: &ServerSpec) -> Result<Arc<Conn>, String> {
    let spawned = discover::spawn(spec).map_err(|f| f.message)?;
    let discover::Spawned {
        child,
        stdin,
        stdout,
        stderr,
        group,
    } = spawned;
    let stderr_buf = Arc::new(Mutex::new(Vec::new()));
    discover::keep_stderr(stderr, stderr_buf.clone(), STDERR_KEEP, |_| {});
    let conn = Arc::new(Conn::new(
        Wire::Stdio(tokio::sync::Mutex::new(stdin)),
        Some(discover::ProcessGroupHandle::new(group, child)),
        stderr_buf,
    ));
    tokio::spawn(read_replies(conn.clone(), stdout));
    Ok(conn)
}

impl Conn {
    fn new(
        wire: Wire,
        process: Option<discover::ProcessGroupHandle>,
        stderr: Arc<Mutex<Vec<u8>>>,
    ) -> Self {
        Conn {
            wire,
            stopped: tokio::sync::Notify::new(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: AtomicBool::new(true),
            ended: Mutex::new(None),
            version: Mutex::new(UPSTREAM_VERSIONS[1]),
            stderr,
            process: Mutex::new(process),
            tools_changed: AtomicBool::new(false),
            listing: tokio::sync::Mutex::new(None),
        }
    }
}

/// Negotiates a revision on a new connection: `server/discover` for
/// 2026-07-28, else the `initialize` handshake at the newest revision the
/// server answers with.
async fn negotiate(spec: &ServerSpec, conn: Arc<Conn>) -> Result<Arc<Conn>, String> {
    let timeout = spec.timeout;
    let fail = |conn: &Conn, what: String| {
        let tail = conn.stderr_tail();
        conn.end(what.clone());
        format!("{what}{tail}")
    };
    // 2026-07-28 first: a server that does not know server/discover
    // answers with an error (or an empty result) and is asked to
    // initialize instead.
    let discover = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    let modern = match conn.request("server/discover", discover, timeout).await {
        Ok(raw) => supports_modern(raw.get()),
        // An HTTP server of an older revision may refuse the unknown
        // method with an HTTP error instead of a JSON-RPC one.
        Err(UpstreamError::Rpc { .. }) => false,
        Err(UpstreamError::BadResponse { .. }) if spec.url.is_some() => false,
        Err(e) => return Err(fail(&conn, e.sentence(&spec.name))),
    };
    if modern {
        *conn.version.lock().unwrap_or_else(|e| e.into_inner()) = UPSTREAM_VERSIONS[0];
        return Ok(conn);
    }
    let init = format!(
        r#"{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"muster","version":"{}"}}}}"#,
        UPSTREAM_VERSIONS[1],
        env!("CARGO_PKG_VERSION")
    );
    let answer = match conn.request("initialize", &init, timeout).await {
        Ok(raw) => raw,
        Err(e) => return Err(fail(&conn, e.sentence(&spec.name))),
    };
    #[derive(Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let version = match serde_json::from_str::<Init>(answer.get()) {
        Ok(init) => init.protocol_version,
        Err(e) => {
            return Err(fail(
                &conn,
                format!("answered initialize without a protocolVersion ({e})"),
            ));
        }
    };
    let Some(&known) = UPSTREAM_VERSIONS[1..].iter().find(|v| **v == version) else {
        return Err(fail(
            &conn,
            format!(
                "answered initialize with protocol revision {:?}; muster speaks {}",
                short(&version),
                UPSTREAM_VERSIONS.join(", ")
            ),
        ));
    };
    *conn.version.lock().unwrap_or_else(|e| e.into_inner()) = known;
    if let Err(e) = conn
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await
    {
        return Err(fail(
            &conn,
            format!("refused notifications/initialized ({e})"),
        ));
    }
    if let Wire::Http(_) = &conn.wire {
        tokio::spawn(http::listen(conn.clone()));
    }
    Ok(conn)
}

/// Whether a `server/discover` result lists 2026-07-28.
fn supports_modern(result: &str) -> bool {
    #[derive(Deserialize)]
    struct Discovered {
        #[serde(rename = "supportedVersions", default)]
        supported: Vec<String>,
    }
    serde_json::from_str::<Discovered>(result)
        .is_ok_and(|d| d.supported.iter().any(|v| v == UPSTREAM_VERSIONS[0]))
}

impl Conn {
    /// The last lines of the server's stderr, escaped, for a failure.
    fn stderr_tail(&self) -> String {
        let err = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&err);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        let last = &lines[lines.len().saturating_sub(3)..];
        format!("; its stderr ends with: {}", escape(&last.join(" | ")))
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
    fn meta_is_added_only_for_the_newest_revision() {
        assert_eq!(with_meta("{}", "2025-11-25"), "{}");
        let with = with_meta(r#"{"name":"t"}"#, "2026-07-28");
        let v: Value = serde_json::from_str(&with).unwrap();
        assert_eq!(v["name"], "t");
        assert_eq!(
            v["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let empty: Value = serde_json::from_str(&with_meta("{}", "2026-07-28")).unwrap();
        assert!(empty["_meta"].is_object());
    }

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

    #[test]
    fn discover_results_are_read_for_the_newest_revision() {
        assert!(supports_modern(
            r#"{"supportedVersions":["2025-11-25","2026-07-28"]}"#
        ));
        assert!(!supports_modern(r#"{"supportedVersions":["2025-11-25"]}"#));
        assert!(!supports_modern("{}"));
    }
}
