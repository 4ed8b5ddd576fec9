//! The one MCP client muster speaks to the policy's MCP servers with: it
//! starts a stdio server (in its own process group, tied to muster, see
//! `process`) or connects to a Streamable HTTP `url` (see `http`), runs
//! the one handshake and protocol-version policy ([`UPSTREAM_VERSIONS`]:
//! 2026-07-28 through `server/discover`, else `initialize` at 2025-11-25
//! or an older revision the server answers), and sends JSON-RPC requests on one connection, many in
//! flight. Arguments are sent as text, byte for byte (integers as the model
//! wrote them, not as doubles), and results come back as the raw text the
//! server sent, fields muster does not model included.
//!
//! It decides the one rule for a server that dies: a server that exits,
//! closes its stdout or answers what muster cannot read ends its
//! connection, and every call in flight fails at once with a typed
//! [`UpstreamError`]. It keeps no pool and never starts a server again:
//! discovery, lock and `muster call` use one connection and close it; the
//! gateway keeps a pool on top (slots, backoff, restart, listing cache).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

mod asks;
pub use asks::{ASKS_BUFFERED, AskSink, Declared, MAX_CAPABILITY_BYTES, ServerAsk};
mod failure;
mod http;
mod oauth;
pub use oauth::{MAX_ACCESS_TOKEN_BYTES, MAX_TOKEN_RESPONSE_BYTES, REFRESH_BEFORE, TOKEN_TIMEOUT};
mod process;
mod replies;
mod request;

use crate::names::escape;
pub(crate) use failure::Failure;
pub(crate) use process::{ProcessGroup, ProcessGroupHandle, Spawned, keep_stderr, spawn};
use replies::{read_replies, route};

/// The longest JSON-RPC message (one line on the server's stdout) muster
/// reads: 16 MiB, the limit rmcp's transports keep by default. A longer
/// one ends the session at once as [`crate::contract::FailureReason::ListingTooLarge`];
/// rmcp is given the same limit, so it never drops a line muster would
/// read (it used to, silently, and the session waited for its timeout).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// How to reach one MCP server (a stdio command, or a Streamable HTTP
/// `url`) and where its snapshot lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The block's `name`; tools become `mcp.<name>.<tool>`.
    pub name: String,
    /// Program and arguments; started directly, not through a shell.
    /// Empty when the server is reached by `url`.
    pub command: Vec<String>,
    /// The Streamable HTTP endpoint; when set, `command` is not used.
    pub url: Option<String>,
    /// Headers sent to `url`, values as written: `${VAR}` is filled by
    /// [`crate::policy::expand_vars`] as the connection is made.
    pub headers: BTreeMap<String, String>,
    /// OAuth client credentials `url`'s access token is got with.
    pub oauth: Option<crate::policy::UpstreamOAuth>,
    /// The snapshot file written on success.
    pub snapshot: PathBuf,
    /// Longest the whole session (start, initialize, list, close) may take.
    pub timeout: Duration,
    /// Extra environment variables for the server, on top of muster's own;
    /// values as written (`${VAR}` filled as the server starts).
    pub env: BTreeMap<String, String>,
    /// Working directory for the server; muster's own when `None`.
    pub cwd: Option<PathBuf>,
    /// The client capabilities declared at the handshake (what muster
    /// relays to this connection's client); none by default.
    pub declare: Declared,
}

impl ServerSpec {
    /// A spec with no extra environment, muster's working directory and a
    /// 30 s timeout.
    pub fn new(name: impl Into<String>, command: Vec<String>, snapshot: PathBuf) -> Self {
        Self {
            name: name.into(),
            command,
            url: None,
            headers: BTreeMap::new(),
            oauth: None,
            snapshot,
            timeout: Duration::from_secs(30),
            env: BTreeMap::new(),
            cwd: None,
            declare: Declared::default(),
        }
    }
}

impl ServerSpec {
    /// The values as written that muster fills from its environment into
    /// what it sends the server (`env`, `headers`, `oauth.client_secret`):
    /// what [`crate::secrets::Secrets::of_written`] hides.
    pub fn written_secrets(&self) -> impl Iterator<Item = &str> {
        self.env
            .values()
            .chain(self.headers.values())
            .chain(self.oauth.iter().map(|o| &o.client_secret))
            .map(String::as_str)
    }
}

/// Most calls one server has in flight through the gateway's pool; more
/// wait for a slot ([`UpstreamError::Busy`] names it).
pub const MAX_IN_FLIGHT: usize = 16;
/// How much of a server's stderr a connection keeps to quote when it fails.
const STDERR_KEEP: usize = 4096;

/// The protocol revisions muster speaks to a server, newest first. The
/// newest (2026-07-28) is asked for with `server/discover`; the others
/// with the `initialize` handshake, which asks for 2025-11-25 and takes
/// any older one listed. 2025-03-26 and 2024-11-05 are still what many
/// published servers answer (the archived reference servers: GitHub,
/// GitLab, Slack, Brave Search, Google Maps, Postgres, Puppeteer); every
/// message muster sends them (`tools/list`, `tools/call`, progress,
/// cancellation, `ping`, resources and prompts) has the same shape at
/// those revisions. Over HTTP muster speaks Streamable HTTP only, not
/// 2024-11-05's HTTP+SSE transport.
pub const UPSTREAM_VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

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
                // What it said on stderr, when quoted, comes last.
                let (how, quoted) = match message.split_once("; its stderr") {
                    Some((how, rest)) => (how, format!("; its stderr{rest}")),
                    None => (message.as_str(), String::new()),
                };
                format!("MCP server `{server}` {how} before answering{quoted}")
            }
            UpstreamError::TimedOut { after } => format!(
                "MCP server `{server}` did not answer within {}",
                crate::names::duration_text(*after)
            ),
            UpstreamError::Busy { after } => format!(
                "MCP server `{server}` had {MAX_IN_FLIGHT} calls in flight for {}; try again",
                crate::names::duration_text(*after)
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
pub(crate) type Reply = Result<Box<RawValue>, UpstreamError>;

/// Where a watched request's progress goes: the params of each
/// `notifications/progress` the server sends for it, as sent. Bounded: a
/// server that floods progress loses what the reader cannot take.
pub type ProgressSink = tokio::sync::mpsc::Sender<Box<RawValue>>;

/// How messages reach a server.
enum Wire {
    /// Lines on a started process's stdin; answers come from its stdout.
    /// `None` once muster closed it ([`Conn::close_stdin`]).
    Stdio(tokio::sync::Mutex<Option<tokio::process::ChildStdin>>),
    /// One POST per message to a Streamable HTTP endpoint; answers come
    /// in each POST's body (JSON or an event stream).
    Http(http::Endpoint),
}

/// A live connection to one started server.
pub(crate) struct Conn {
    /// Itself, for what must answer on it later (a relayed ask).
    me: std::sync::Weak<Conn>,
    wire: Wire,
    /// Woken when the connection ends, for tasks that wait on it.
    stopped: tokio::sync::Notify,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// Requests whose progress is watched, by the token muster gave them
    /// (their id): where the server's `notifications/progress` go.
    progress: Mutex<HashMap<u64, ProgressSink>>,
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
    process: Mutex<Option<ProcessGroupHandle>>,
    /// Set when the server announces `notifications/tools/list_changed`:
    /// a listing taken before it is stale.
    tools_changed: AtomicBool,
    /// The result of the handshake as the server sent it: `initialize`'s
    /// (serverInfo, capabilities, instructions), or `server/discover`'s.
    handshake: Mutex<Option<Box<RawValue>>>,
    /// Set until the handshake is done: a response under an id muster
    /// never sent then fails the one request waiting, as the server
    /// answered it under the wrong id ([`replies::route`]).
    negotiating: AtomicBool,
    /// The client capabilities declared at the handshake.
    declared: Mutex<Declared>,
    /// Where the server's requests of a declared kind go, while a call
    /// that relays them is in flight ([`asks`]).
    asks: Mutex<Option<AskSink>>,
}

/// `params` with a request `_meta` added: the 2026-07-28 members when that
/// revision was negotiated (every request carries its version then), and
/// `progressToken` when the request's progress is watched (the token is
/// the request's own id, unique among the connection's requests in flight);
/// `capabilities` is the `capabilities` object the connection declares;
/// `trace`'s `traceparent` and `tracestate`, under the `_meta` keys the
/// 2026-07-28 revision reserves for them, when the request is traced.
fn with_meta(
    params: &str,
    version: &str,
    progress: Option<u64>,
    capabilities: &str,
    trace: Option<&crate::trace::Outgoing>,
) -> String {
    let mut members = Vec::new();
    if let Some(token) = progress {
        members.push(format!(r#""progressToken":{token}"#));
    }
    if let Some(trace) = trace {
        let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
        members.push(format!(r#""traceparent":{}"#, text(&trace.traceparent)));
        if let Some(state) = &trace.tracestate {
            members.push(format!(r#""tracestate":{}"#, text(state)));
        }
    }
    if version == UPSTREAM_VERSIONS[0] {
        members.push(format!(
            r#""io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientCapabilities":{capabilities},"io.modelcontextprotocol/clientInfo":{{"name":"muster","version":"{}"}}"#,
            env!("CARGO_PKG_VERSION")
        ));
    }
    if members.is_empty() {
        return params.to_string();
    }
    let meta = format!(r#""_meta":{{{}}}"#, members.join(","));
    match params.trim_start().strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => format!("{{{meta}}}"),
        Some(rest) => format!("{{{meta},{rest}"),
        None => params.to_string(),
    }
}

pub(crate) fn short(text: &str) -> String {
    escape(&text.chars().take(200).collect::<String>())
}

/// Starts the server and negotiates a revision: `server/discover` for
/// 2026-07-28, else the `initialize` handshake at the newest revision the
/// server answers with.
pub(crate) async fn start(spec: &ServerSpec) -> Result<Arc<Conn>, String> {
    let conn = open(spec)?;
    negotiate(spec, conn).await
}

/// Starts the server (or makes the endpoint for its `url`) without the
/// handshake; [`negotiate`] comes next. A caller that holds the connection
/// through the handshake can close it when its own deadline passes.
pub(crate) fn open(spec: &ServerSpec) -> Result<Arc<Conn>, String> {
    Ok(match &spec.url {
        Some(url) => {
            let endpoint = http::Endpoint::new(spec, url)?;
            Arc::new_cyclic(|me| Conn::new(Wire::Http(endpoint), None, Arc::default(), me.clone()))
        }
        None => start_process(spec)?,
    })
}

/// Starts the server's process and the task reading its stdout.
fn start_process(spec: &ServerSpec) -> Result<Arc<Conn>, String> {
    let spawned = spawn(spec).map_err(|f| f.message)?;
    let Spawned {
        child,
        stdin,
        stdout,
        stderr,
        group,
    } = spawned;
    let stderr_buf = Arc::new(Mutex::new(Vec::new()));
    let stderr_reader = keep_stderr(stderr, stderr_buf.clone(), STDERR_KEEP, |_| {});
    Ok(attach(
        stdin,
        stdout,
        Stderr {
            kept: stderr_buf,
            reader: stderr_reader,
        },
        Some(ProcessGroupHandle::new(group, child)),
    ))
}

/// A started server's stderr as a connection quotes it: the bytes kept so
/// far, and the task reading the rest.
pub(crate) struct Stderr {
    /// The last bytes read, shared with the reader.
    pub kept: Arc<Mutex<Vec<u8>>>,
    /// The task reading it to its end.
    pub reader: tokio::task::JoinHandle<()>,
}

/// A connection over a started server's `stdin` and `stdout` (which may
/// pass through a reader of the caller's own, as discovery's tap does),
/// without the handshake; [`negotiate`] comes next. With `process`, the
/// connection owns the server: closing it kills the process group.
pub(crate) fn attach<R>(
    stdin: tokio::process::ChildStdin,
    stdout: R,
    stderr: Stderr,
    process: Option<ProcessGroupHandle>,
) -> Arc<Conn>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let conn = Arc::new_cyclic(|me| {
        Conn::new(
            Wire::Stdio(tokio::sync::Mutex::new(Some(stdin))),
            process,
            stderr.kept,
            me.clone(),
        )
    });
    tokio::spawn(read_replies(conn.clone(), stdout, stderr.reader));
    conn
}

impl Conn {
    fn new(
        wire: Wire,
        process: Option<ProcessGroupHandle>,
        stderr: Arc<Mutex<Vec<u8>>>,
        me: std::sync::Weak<Conn>,
    ) -> Self {
        Conn {
            me,
            wire,
            stopped: tokio::sync::Notify::new(),
            pending: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: AtomicBool::new(true),
            ended: Mutex::new(None),
            version: Mutex::new(UPSTREAM_VERSIONS[1]),
            stderr,
            process: Mutex::new(process),
            tools_changed: AtomicBool::new(false),
            handshake: Mutex::new(None),
            negotiating: AtomicBool::new(true),
            declared: Mutex::new(Declared::default()),
            asks: Mutex::new(None),
        }
    }
}

/// Negotiates a revision on a new connection: `server/discover` for
/// 2026-07-28, else the `initialize` handshake at the newest revision the
/// server answers with. A failure ends the connection and says what the
/// server did, naming it, with the end of its stderr.
pub(crate) async fn negotiate(spec: &ServerSpec, conn: Arc<Conn>) -> Result<Arc<Conn>, String> {
    match handshake(spec, &conn).await {
        Ok(()) => Ok(conn),
        Err(refusal) => {
            let what = match refusal {
                Refusal::Upstream(e) => e.sentence(&spec.name),
                Refusal::Answer(what) => what,
            };
            // A connection that ended has quoted the stderr already.
            let tail = if conn.is_alive() {
                conn.stderr_tail()
            } else {
                String::new()
            };
            conn.end(what.clone());
            Err(format!("{what}{tail}"))
        }
    }
}

/// Why a handshake failed.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// A handshake request got no usable answer (the server exited, timed
    /// out, answered with an error or under the wrong id).
    Upstream(UpstreamError),
    /// The server answered, but not with a handshake muster accepts; what
    /// it did, as a phrase with the server as its subject
    /// ("answered initialize with protocol revision …").
    Answer(String),
}

/// The handshake of [`negotiate`], leaving the connection as it is when it
/// fails, for a caller that tells the failure its own way (discovery).
pub(crate) async fn handshake(spec: &ServerSpec, conn: &Arc<Conn>) -> Result<(), Refusal> {
    let done = handshake_steps(spec, conn).await;
    conn.negotiating.store(false, Ordering::Release);
    done
}

async fn handshake_steps(spec: &ServerSpec, conn: &Arc<Conn>) -> Result<(), Refusal> {
    let timeout = spec.timeout;
    *conn.declared.lock().unwrap_or_else(|e| e.into_inner()) = spec.declare.clone();
    let capabilities = spec.declare.json();
    // 2026-07-28 first: a server that does not know server/discover
    // answers with an error (or an empty result) and is asked to
    // initialize instead.
    let discover = format!(
        r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}}}"#
    );
    let modern = match conn.request("server/discover", &discover, timeout).await {
        Ok(raw) => {
            let modern = supports_modern(raw.get());
            if modern {
                conn.keep_handshake(raw);
            }
            modern
        }
        // An HTTP server of an older revision may refuse the unknown
        // method with an HTTP error instead of a JSON-RPC one.
        Err(UpstreamError::Rpc { .. }) => false,
        Err(UpstreamError::BadResponse { .. }) if spec.url.is_some() => false,
        Err(e) => return Err(Refusal::Upstream(e)),
    };
    if modern {
        *conn.version.lock().unwrap_or_else(|e| e.into_inner()) = UPSTREAM_VERSIONS[0];
        return Ok(());
    }
    let init = format!(
        r#"{{"protocolVersion":"{}","capabilities":{capabilities},"clientInfo":{{"name":"muster","version":"{}"}}}}"#,
        UPSTREAM_VERSIONS[1],
        env!("CARGO_PKG_VERSION")
    );
    let answer = conn
        .request("initialize", &init, timeout)
        .await
        .map_err(Refusal::Upstream)?;
    #[derive(Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let read = serde_json::from_str::<Init>(answer.get());
    conn.keep_handshake(answer);
    let version = read
        .map_err(|e| {
            Refusal::Answer(format!(
                "answered initialize without a protocolVersion ({e})"
            ))
        })?
        .protocol_version;
    let Some(&known) = UPSTREAM_VERSIONS[1..].iter().find(|v| **v == version) else {
        return Err(Refusal::Answer(format!(
            "answered initialize with protocol revision {:?}; muster speaks {}",
            short(&version),
            UPSTREAM_VERSIONS.join(", ")
        )));
    };
    *conn.version.lock().unwrap_or_else(|e| e.into_inner()) = known;
    if let Err(e) = conn
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await
    {
        return Err(Refusal::Answer(format!(
            "refused notifications/initialized ({e})"
        )));
    }
    if let Wire::Http(_) = &conn.wire {
        tokio::spawn(http::listen(conn.clone()));
    }
    Ok(())
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

impl Conn {
    /// The access tokens an HTTP connection with `[mcp.oauth]` got: values
    /// to redact from what the server sends back, as filled secrets are.
    pub(crate) fn tokens(&self) -> Vec<String> {
        match &self.wire {
            Wire::Http(endpoint) => endpoint.tokens(),
            Wire::Stdio(_) => Vec::new(),
        }
    }

    /// Whether the connection is still up.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Whether the server announced `notifications/tools/list_changed`
    /// since [`Conn::clear_tools_changed`] last cleared it.
    pub(crate) fn tools_changed(&self) -> bool {
        self.tools_changed.load(Ordering::Acquire)
    }

    /// Clears the tools-changed mark (before a listing is read, so a change
    /// announced while it is read marks it stale again).
    pub(crate) fn clear_tools_changed(&self) {
        self.tools_changed.store(false, Ordering::Release);
    }

    /// The handshake's result as the server sent it (`initialize`'s, or
    /// `server/discover`'s for 2026-07-28), once negotiated.
    pub(crate) fn handshake_result(&self) -> Option<Box<RawValue>> {
        self.handshake
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn keep_handshake(&self, raw: Box<RawValue>) {
        *self.handshake.lock().unwrap_or_else(|e| e.into_inner()) = Some(raw);
    }

    /// The last lines of the server's stderr, escaped, as a failure quotes
    /// them (`; its stderr ends with: …`), or nothing.
    pub(crate) fn stderr_evidence(&self) -> String {
        self.stderr_tail()
    }

    /// Closes a stdio server's stdin, which is how it is told to stop;
    /// nothing more can be sent. Over HTTP, nothing happens.
    pub(crate) async fn close_stdin(&self) {
        if let Wire::Stdio(stdin) = &self.wire {
            stdin.lock().await.take();
        }
    }

    /// Ends the connection: an HTTP session is ended at the server, calls
    /// in flight fail with `why`, and a stdio server's process group is
    /// killed.
    pub(crate) async fn close(&self, why: &str) {
        if let Wire::Http(endpoint) = &self.wire {
            endpoint.close().await;
        }
        self.end(why.into());
        drop(
            self.process
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn meta_is_added_only_for_the_newest_revision() {
        assert_eq!(with_meta("{}", "2025-11-25", None, "{}", None), "{}");
        let with = with_meta(r#"{"name":"t"}"#, "2026-07-28", None, "{}", None);
        let v: Value = serde_json::from_str(&with).unwrap();
        assert_eq!(v["name"], "t");
        assert_eq!(
            v["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let empty: Value =
            serde_json::from_str(&with_meta("{}", "2026-07-28", None, "{}", None)).unwrap();
        assert!(empty["_meta"].is_object());
    }

    #[test]
    fn a_watched_request_carries_its_progress_token_beside_the_revision() {
        let old: Value = serde_json::from_str(&with_meta(
            r#"{"name":"t"}"#,
            "2025-11-25",
            Some(7),
            "{}",
            None,
        ))
        .unwrap();
        assert_eq!(old["_meta"], serde_json::json!({"progressToken": 7}));
        assert_eq!(old["name"], "t");
        let new: Value =
            serde_json::from_str(&with_meta("{}", "2026-07-28", Some(9), "{}", None)).unwrap();
        assert_eq!(new["_meta"]["progressToken"], 9);
        assert_eq!(
            new["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }

    #[test]
    fn a_traced_request_carries_its_trace_context_in_meta() {
        let trace = crate::trace::Outgoing {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: Some("a=\"b\"".into()),
        };
        let v: Value = serde_json::from_str(&with_meta(
            r#"{"name":"t"}"#,
            "2025-11-25",
            Some(3),
            "{}",
            Some(&trace),
        ))
        .unwrap();
        assert_eq!(
            v["_meta"],
            serde_json::json!({"progressToken": 3, "traceparent": trace.traceparent, "tracestate": "a=\"b\""})
        );
        assert_eq!(v["name"], "t");
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
