//! One live session with a stdio MCP server: start it, initialize with
//! rmcp, list every tool page by page (or, for [`super::call`], call one
//! tool), close it.
//!
//! The child is spawned here rather than through rmcp's `TokioChildProcess`
//! so its stdout can pass through [`Tap`] on the way to rmcp's stdio
//! transport. The tap keeps each response exactly as the server sent it
//! (rmcp's typed `Tool` drops fields it does not model, and a non-object
//! `inputSchema` makes rmcp discard the whole page, losing which tool was
//! at fault) and notices lines that are not JSON, which rmcp skips
//! silently. rmcp still runs the protocol: handshake, ids, framing.

use std::collections::{BTreeSet, HashMap};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::model::{
    ClientRequest, ListPromptsRequest, ListResourcesRequest, ListToolsRequest,
    PaginatedRequestParams,
};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use super::{Event, MAX_LISTING_BYTES, MAX_MESSAGE_BYTES, MAX_PAGES, MAX_TOOLS, ServerSpec};
use crate::contract::FailureReason;
use crate::mcp_client::{Failure, ProcessGroup, Spawned, keep_stderr, spawn};
use crate::names::escape;
use crate::snapshot::{Checker, ListedTool, MAX_INSTRUCTIONS_CHARS, MAX_NOTED, ServerNotes};

const STDERR_KEEP: usize = 2048;
/// The most stderr lines that hold an error a failure quotes (besides the
/// last 3 lines), each cut to [`STDERR_LINE_CHARS`].
pub const STDERR_ERROR_LINES: usize = 8;
/// The longest stderr line a failure quotes, in characters.
pub const STDERR_LINE_CHARS: usize = 300;
/// The longest stdout line muster holds: a response larger than this is
/// refused, not buffered until memory runs out.
const MAX_LINE_BYTES: usize = MAX_MESSAGE_BYTES;
/// How many responses the tap holds for requests not yet collected. Muster
/// has one request out at a time, so only a server sending responses to
/// requests never made fills it.
const RESPONSES_KEEP: usize = 64;
/// How deep serde_json reads JSON before it refuses: its recursion limit.
const JSON_DEPTH_LIMIT: usize = 128;

/// A stdout line nested deeper than [`JSON_DEPTH_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct DeepLine {
    /// The tool whose object nests too deep, when the line was a
    /// tools/list page and the tool has a name.
    tool: Option<String>,
}

impl DeepLine {
    /// Finds the tool at fault: the page is read again with each tool kept
    /// as raw text (serde_json skips raw text without recursing), and the
    /// first tool that will not read as JSON is named.
    fn of(line: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            result: Option<Tools<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Tools<'a> {
            #[serde(borrow, default)]
            tools: Vec<&'a serde_json::value::RawValue>,
        }
        #[derive(serde::Deserialize)]
        struct Named {
            name: Option<String>,
        }
        let tool = serde_json::from_slice::<Page<'_>>(line)
            .ok()
            .and_then(|page| page.result)
            .and_then(|result| {
                result
                    .tools
                    .into_iter()
                    .find(|raw| serde_json::from_str::<Value>(raw.get()).is_err())
            })
            .and_then(|raw| serde_json::from_str::<Named>(raw.get()).ok()?.name);
        Self { tool }
    }
}

/// What the tap saw on the server's stdout.
#[derive(Default)]
struct Seen {
    partial: Vec<u8>,
    /// Responses by their JSON-encoded id.
    responses: HashMap<String, Value>,
    /// The first line that was not JSON, shortened.
    garbage: Option<String>,
    /// A line was JSON nested deeper than serde_json reads; reading stopped.
    too_deep: Option<DeepLine>,
    /// A line grew past [`MAX_LINE_BYTES`]; reading stopped.
    too_long: bool,
    /// Bytes read from stdout so far.
    total: usize,
    /// More than [`MAX_LISTING_BYTES`] came on stdout; reading stopped.
    too_much: bool,
}

impl Seen {
    /// Adds bytes read from stdout and handles every line they complete.
    /// Only the new bytes are searched for a newline, so a long line read in
    /// many small pieces costs time linear in its length.
    fn take(&mut self, fresh: &[u8]) {
        self.total = self.total.saturating_add(fresh.len());
        if self.total > MAX_LISTING_BYTES {
            self.too_much = true;
            self.partial = Vec::new();
            return;
        }
        let mut partial = std::mem::take(&mut self.partial);
        let mut start = 0;
        let mut from = partial.len();
        partial.extend_from_slice(fresh);
        while let Some(at) = partial[from..].iter().position(|&b| b == b'\n') {
            let nl = from + at;
            self.line(&partial[start..nl]);
            start = nl + 1;
            from = start;
        }
        partial.drain(..start);
        if partial.len() > MAX_LINE_BYTES {
            self.too_long = true;
            partial = Vec::new();
        }
        self.partial = partial;
    }

    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(msg)) => {
                if !msg.contains_key("method")
                    && let Some(id) = msg.get("id")
                {
                    if self.responses.len() >= RESPONSES_KEEP {
                        self.responses.clear();
                    }
                    self.responses.insert(id.to_string(), Value::Object(msg));
                }
            }
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                if self.too_deep.is_none() {
                    self.too_deep = Some(DeepLine::of(line));
                }
            }
            Ok(_) | Err(_) => {
                if self.garbage.is_none() {
                    let text = String::from_utf8_lossy(line);
                    self.garbage = Some(text.chars().take(120).collect());
                }
            }
        }
    }
}

/// The stderr lines that say what went wrong: the first
/// [`STDERR_ERROR_LINES`] that name an error, an exception, a traceback, a
/// fatal condition or a panic (a stack trace's `at ...` lines after one
/// would push it out of the last 3).
#[derive(Default)]
struct ErrorLines {
    partial: Vec<u8>,
    lines: Vec<String>,
}

impl ErrorLines {
    fn take(&mut self, fresh: &[u8]) {
        for &b in fresh {
            if b == b'\n' {
                let line = std::mem::take(&mut self.partial);
                self.line(&String::from_utf8_lossy(&line));
            } else if self.partial.len() < 4 * STDERR_LINE_CHARS {
                self.partial.push(b);
            }
        }
    }

    fn line(&mut self, line: &str) {
        let line = line.trim();
        if self.lines.len() >= STDERR_ERROR_LINES || !names_an_error(line) {
            return;
        }
        self.lines
            .push(line.chars().take(STDERR_LINE_CHARS).collect());
    }
}

/// Whether a stderr line reports an error.
fn names_an_error(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["error", "exception", "traceback", "fatal", "panic"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Passes the server's stdout through unchanged, recording what it saw.
struct Tap<R> {
    inner: R,
    seen: Arc<Mutex<Seen>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = poll {
            let fresh = &buf.filled()[before..];
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.take(fresh);
            if seen.too_long || seen.too_much {
                // rmcp buffers the line too: end the stream for both, so
                // the failure is reported at once.
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the server sent more than muster reads",
                )));
            }
            if seen.too_deep.is_some() {
                // rmcp cannot read the line either and would wait for a
                // response that never comes: end the stream, so the
                // failure is reported at once instead of at the timeout.
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a stdout line is nested deeper than muster reads",
                )));
            }
        }
        poll
    }
}

/// Shared with the caller so a timeout can say what the session was doing
/// and what the server printed.
#[derive(Default)]
pub(super) struct Progress {
    pub phase: &'static str,
    pub pages: usize,
}

pub(super) struct Listing {
    pub tools: Vec<ListedTool>,
    pub pages: usize,
    pub server_info: Option<Value>,
    pub notes: ServerNotes,
}

/// Handles the caller keeps so it can explain a failure after the session
/// future is dropped by a timeout.
#[derive(Clone, Default)]
pub(super) struct Watch {
    pub progress: Arc<Mutex<Progress>>,
    seen: Arc<Mutex<Seen>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The first stderr lines that hold an error, whatever follows them.
    stderr_errors: Arc<Mutex<ErrorLines>>,
    /// Values filled in from `${VAR}` (and whole header values holding
    /// one): never quoted, whatever the server echoes.
    secrets: Arc<Mutex<crate::secrets::Secrets>>,
}

impl Watch {
    /// Remembers `value` as a secret [`Self::redact`] hides.
    fn keep_secret(&self, value: &str) {
        let mut s = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
        s.keep(value);
    }

    /// `text` with every secret replaced by `[redacted]` ([`crate::secrets`]).
    pub fn redact(&self, text: &str) -> String {
        let secrets = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
        secrets.redact(text).into_owned()
    }

    /// `value` (the block's `key`) with `${VAR}` filled, every filled
    /// variable and the whole value kept as secrets.
    fn expand(&self, spec: &ServerSpec, key: &str, value: &str) -> Result<String, Failure> {
        let filled = crate::policy::expand_vars(value, &spec.name, key)
            .map_err(|e| Failure::unexpanded(&spec.name, &e))?;
        let vars = crate::policy::vars_named(value);
        for var in &vars {
            if let Ok(v) = std::env::var(var) {
                self.keep_secret(&v);
            }
        }
        if !vars.is_empty() {
            self.keep_secret(&filled);
        }
        Ok(filled)
    }

    /// Records what the session is doing, for a timeout to report.
    pub fn set_phase(&self, phase: &'static str) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .phase = phase;
    }

    /// What the session is doing.
    pub fn phase(&self) -> &'static str {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .phase
    }

    /// The failure for a server whose stdout the tap stopped reading: a
    /// line longer than [`MAX_MESSAGE_BYTES`], more than
    /// [`MAX_LISTING_BYTES`] in all, or a line nested deeper than muster
    /// reads (naming the tool when one is at fault). `None` when reading
    /// did not stop. The transport fails when the tap stops, so this is
    /// what happened rather than what the transport made of it.
    pub fn stopped_reading(&self) -> Option<Failure> {
        let (phase, pages) = {
            let p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
            (p.phase, p.pages)
        };
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let listing = phase == LISTING;
        let reason = if listing {
            FailureReason::ListingTooLarge
        } else {
            FailureReason::BadResponse
        };
        let page = if listing {
            format!(" (tools/list page {})", pages + 1)
        } else {
            String::new()
        };
        if seen.too_long {
            return Some(Failure {
                reason,
                help: Some(format!(
                    "make the server paginate tools/list so each page stays under {} MiB, or trim its tools' schemas and descriptions",
                    MAX_MESSAGE_BYTES >> 20
                )),
                ..Failure::new(format!(
                    "sent a JSON-RPC message longer than {} MiB while {phase}{page}; muster reads messages of at most {} MiB",
                    MAX_MESSAGE_BYTES >> 20,
                    MAX_MESSAGE_BYTES >> 20
                ))
            });
        }
        if seen.too_much {
            return Some(Failure {
                reason,
                help: Some(format!(
                    "a listing must fit in {} MiB, as its snapshot must: trim the server's schemas and descriptions, or split its tools across servers",
                    MAX_LISTING_BYTES >> 20
                )),
                ..Failure::new(format!(
                    "sent more than {} MiB on stdout while {phase}{page}; muster reads at most {} MiB from a server",
                    MAX_LISTING_BYTES >> 20,
                    MAX_LISTING_BYTES >> 20
                ))
            });
        }
        let deep = seen.too_deep.as_ref()?;
        let help = Some(format!(
            "fix the server so no tool's definition nests more than {JSON_DEPTH_LIMIT} levels deep (flatten the schema or use $ref definitions)"
        ));
        Some(match &deep.tool {
            Some(tool) => Failure {
                reason: FailureReason::InvalidListing,
                help,
                tools: vec![format!(
                    "tool `{}` is nested more than {JSON_DEPTH_LIMIT} levels deep, deeper than muster reads JSON",
                    escape(tool)
                )],
                ..Failure::new(format!("listed tool `{}` nested too deep", escape(tool)))
            },
            // The evidence says what was too deep.
            None => Failure {
                help,
                ..Failure::new("stopped being read")
            },
        })
    }

    /// Facts to append to a failure: non-JSON output and the tail of stderr.
    pub fn evidence(&self) -> String {
        let mut out = String::new();
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.too_deep.is_some() {
            out.push_str(&format!(
                "; it sent a JSON-RPC message nested more than {JSON_DEPTH_LIMIT} levels deep, which muster cannot read"
            ));
        }
        if let Some(g) = &seen.garbage {
            out.push_str(&format!(
                "; it printed a line that is not JSON-RPC on stdout: `{}`",
                escape(g)
            ));
        }
        drop(seen);
        let err = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let tail = String::from_utf8_lossy(&err);
        let tail = tail.trim();
        let last: Vec<String> = {
            let last: Vec<&str> = tail.lines().rev().take(3).collect();
            last.into_iter()
                .rev()
                .map(|l| l.trim().chars().take(STDERR_LINE_CHARS).collect())
                .collect()
        };
        drop(err);
        let mut errors = self
            .stderr_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lines
            .clone();
        // The last line, still without its newline, may name the error too.
        if let Some(line) = last.last()
            && errors.len() < STDERR_ERROR_LINES
            && names_an_error(line)
            && !errors.contains(line)
        {
            errors.push(line.clone());
        }
        let errors: Vec<&String> = errors.iter().filter(|l| !last.contains(l)).collect();
        if !errors.is_empty() {
            let errors: Vec<&str> = errors.iter().map(|l| l.as_str()).collect();
            out.push_str(&format!(
                "; its stderr reports: {}",
                escape(&errors.join(" | "))
            ));
        }
        if !last.is_empty() {
            out.push_str(&format!(
                "; its stderr ends with: {}",
                escape(&last.join(" | "))
            ));
        }
        out
    }
}

/// The phase in which tools/list pages are read.
pub(super) const LISTING: &str = "listing tools";

/// A started server that completed the MCP handshake. Discovery lists its
/// tools and [`super::call`] calls one; both end with [`Open::close`].
pub(super) struct Open {
    pub client: RunningService<RoleClient, ()>,
    /// The server's process, for a stdio server; `None` over HTTP.
    process: Option<Process>,
    /// `serverInfo` from the initialize result.
    pub server_info: Option<Value>,
    /// `instructions` from the initialize result.
    instructions: Option<String>,
    /// Whether it offers resources, and prompts (its capabilities).
    offers: (bool, bool),
}

/// `serverInfo`, `instructions` and whether resources and prompts are
/// offered, from the initialize result.
fn peer_facts(
    client: &RunningService<RoleClient, ()>,
) -> (Option<Value>, Option<String>, (bool, bool)) {
    let Some(info) = client.peer_info() else {
        return (None, None, (false, false));
    };
    (
        serde_json::to_value(&info.server_info).ok(),
        info.instructions.clone(),
        (
            info.capabilities.resources.is_some(),
            info.capabilities.prompts.is_some(),
        ),
    )
}

/// A stdio server's process.
struct Process {
    child: tokio::process::Child,
    /// Copies the server's stderr into the watch until the server closes it.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    /// Kills the server's whole process group when the session ends.
    _group: ProcessGroup,
}

impl Open {
    /// Stops the server: closing stdin is how a stdio server is told to
    /// stop; a kill (and kill_on_drop) is the backstop for one that ignores
    /// it. Over HTTP, rmcp ends the session (a DELETE) as it closes.
    pub async fn close(mut self, watch: &Watch) {
        watch.set_phase("closing");
        let _ = self.client.cancel().await;
        let Some(process) = self.process.as_mut() else {
            return;
        };
        if tokio::time::timeout(std::time::Duration::from_secs(2), process.child.wait())
            .await
            .is_err()
        {
            let _ = process.child.kill().await;
        }
    }

    /// Sends one request and returns the server's response exactly as it
    /// sent it (`result` or `error` included), read from the tap. `what`
    /// names the request in failures (`tools/list page 2`).
    ///
    /// rmcp may fail to type a response muster can still read, so only a
    /// transport or protocol error, or a JSON-RPC error response, ends here.
    /// A transport that closed is told as what the server did: sent more
    /// than muster reads, or exited (with its status).
    pub async fn request(
        &mut self,
        watch: &Watch,
        request: ClientRequest,
        what: &str,
    ) -> Result<Value, Failure> {
        let handle = match self
            .client
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.failed(watch, e, &format!("cannot send {what}")).await),
        };
        let id = serde_json::to_value(&handle.id)
            .map(|v| v.to_string())
            .unwrap_or_default();
        if self.process.is_none() {
            // Over HTTP there is no byte stream to tap: the typed response,
            // written back as JSON, is what the server sent as rmcp models
            // it (a result rmcp cannot type comes whole, as a custom one).
            return match handle.await_response().await {
                Ok(result) => {
                    let response = serde_json::json!({ "result": result });
                    let len = response.to_string().len();
                    let mut seen = watch.seen.lock().unwrap_or_else(|e| e.into_inner());
                    seen.total = seen.total.saturating_add(len);
                    if seen.total > MAX_LISTING_BYTES {
                        seen.too_much = true;
                        drop(seen);
                        return Err(watch
                            .stopped_reading()
                            .unwrap_or_else(|| Failure::new("sent too much")));
                    }
                    Ok(response)
                }
                Err(e) => Err(self.failed(watch, e, &format!("{what} failed")).await),
            };
        }
        match handle.await_response().await {
            Ok(_) | Err(ServiceError::UnexpectedResponse) => {}
            Err(e) => return Err(self.failed(watch, e, &format!("{what} failed")).await),
        }
        let response = watch
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .responses
            .remove(&id);
        response.ok_or_else(|| Failure::new(format!("gave no readable response to {what}")))
    }

    /// Why a request failed with `e`; `doing` says what muster was doing.
    async fn failed(&mut self, watch: &Watch, e: ServiceError, doing: &str) -> Failure {
        if let Some(f) = watch.stopped_reading() {
            return f;
        }
        let Some(process) = self.process.as_mut() else {
            let phase = watch.phase();
            return Failure::new(format!(
                "{doing} while {phase}: {}",
                escape(&watch.redact(&e.to_string()))
            ));
        };
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let status = exit_status(&mut process.child, process.stderr_reader.take()).await;
                let phase = watch.phase();
                match status {
                    Some(status) => Failure {
                        reason: FailureReason::Exited,
                        ..Failure::new(format!("exited while {phase} ({status})"))
                    },
                    None => Failure::new(format!(
                        "closed its stdout while {phase} but has not exited"
                    )),
                }
            }
            e => Failure::new(format!("{doing}: {}", escape(&e.to_string()))),
        }
    }
}

/// The server's exit status, once it has exited and its stderr has been
/// read to the end (so a failure can quote it); `None` when it is still
/// running half a second on.
async fn exit_status(
    child: &mut tokio::process::Child,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
) -> Option<std::process::ExitStatus> {
    let wait = std::time::Duration::from_millis(500);
    let status = tokio::time::timeout(wait, child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    if let Some(reader) = stderr_reader {
        let _ = tokio::time::timeout(wait, reader).await;
    }
    status
}

/// Starts the server in `spec` (or, with a `url`, connects to it) and
/// completes the MCP handshake.
pub(super) async fn open(spec: &ServerSpec, watch: &Watch) -> Result<Open, Failure> {
    if let Some(url) = &spec.url {
        return open_http(spec, url, watch).await;
    }
    watch.set_phase("starting");
    for (key, value) in &spec.env {
        watch.expand(spec, &format!("env.{key}"), value)?;
    }
    let Spawned {
        mut child,
        stdin,
        stdout,
        stderr,
        group,
    } = spawn(spec)?;
    let stderr_errors = watch.stderr_errors.clone();
    let stderr_reader = keep_stderr(stderr, watch.stderr.clone(), STDERR_KEEP, move |chunk| {
        stderr_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(chunk);
    });

    let tap = Tap {
        inner: stdout,
        seen: watch.seen.clone(),
    };
    // The tap refuses a line past MAX_LINE_BYTES; rmcp, given room for the
    // line's `\r\n`, never drops one the tap lets through.
    let transport =
        AsyncRwTransport::new_client(tap, stdin).with_max_line_length(MAX_LINE_BYTES + 2);
    watch.set_phase("initializing");
    let client = match ().serve(transport).await {
        Ok(c) => c,
        Err(e) => {
            if let Some(f) = watch.stopped_reading() {
                return Err(f);
            }
            let message = match e {
                ClientInitializeError::ConnectionClosed(_)
                | ClientInitializeError::TransportError { .. } => {
                    match exit_status(&mut child, Some(stderr_reader)).await {
                        Some(s) => format!("exited during initialize ({s})"),
                        None => "closed its stdout during initialize but has not exited".into(),
                    }
                }
                ClientInitializeError::ConflictInitResponseId(sent, got) => format!(
                    "answered initialize under id {}, not the request's id {sent}",
                    escape(&got.to_string())
                ),
                e => format!("failed to initialize: {}", escape(&e.to_string())),
            };
            return Err(Failure {
                reason: FailureReason::HandshakeFailed,
                ..Failure::new(message)
            });
        }
    };
    let (server_info, instructions, offers) = peer_facts(&client);
    Ok(Open {
        client,
        instructions,
        offers,
        process: Some(Process {
            child,
            stderr_reader: Some(stderr_reader),
            _group: group,
        }),
        server_info,
    })
}

/// Connects to the Streamable HTTP server at `url` with rmcp's client and
/// completes the MCP handshake. Header values are filled from `${VAR}` here
/// and go nowhere but the request: they are marked sensitive, and every
/// filled value is redacted from what a failure quotes. Redirects are not
/// followed, so headers reach no other host. rmcp refuses any one message
/// past [`MAX_MESSAGE_BYTES`].
async fn open_http(spec: &ServerSpec, url: &str, watch: &Watch) -> Result<Open, Failure> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    watch.set_phase("connecting");
    let mut headers = HashMap::new();
    for (name, value) in &spec.headers {
        let key = format!("headers.{name}");
        let filled = watch.expand(spec, &key, value)?;
        let cannot = |why: &str| Failure {
            reason: FailureReason::CannotStart,
            help: Some("fix the block's `headers`".into()),
            ..Failure::new(format!("{key} {why}"))
        };
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| cannot("is not an HTTP header name"))?;
        let mut value = http::HeaderValue::from_str(&filled).map_err(|_| {
            cannot("is, once filled, not an HTTP header value (a line break or control character)")
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    // Whoever installs a provider first wins; ring is muster's.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Failure {
            reason: FailureReason::CannotStart,
            ..Failure::new(format!(
                "cannot make an HTTP client: {}",
                escape(&e.to_string())
            ))
        })?;
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(headers)
        .max_json_response_size(MAX_MESSAGE_BYTES)
        .max_sse_event_size(MAX_MESSAGE_BYTES);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    watch.set_phase("initializing");
    let client = ().serve(transport).await.map_err(|e| Failure {
        reason: FailureReason::HandshakeFailed,
        help: Some("check that `url` is the server's Streamable HTTP endpoint, that it is running, and its headers".into()),
        ..Failure::new(format!(
            "failed to initialize over HTTP: {}",
            escape(&watch.redact(&e.to_string()))
        ))
    })?;
    let (server_info, instructions, offers) = peer_facts(&client);
    Ok(Open {
        client,
        instructions,
        offers,
        process: None,
        server_info,
    })
}

pub(super) async fn run(
    spec: &ServerSpec,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<Listing, Failure> {
    let mut open = open(spec, watch).await?;
    let _ = events.send(Event::Initialized {
        server: spec.name.clone(),
        server_info: open.server_info.clone(),
    });
    watch.set_phase(LISTING);
    let result = list_all(spec, &mut open, watch, events).await;
    let notes = match &result {
        Ok(_) => noted(&mut open, watch).await,
        Err(_) => ServerNotes::default(),
    };
    let server_info = open.server_info.clone();
    open.close(watch).await;
    let (tools, pages) = result?;
    Ok(Listing {
        tools,
        pages,
        server_info,
        notes,
    })
}

/// The server's instructions, resources and prompts ([`ServerNotes`]):
/// each list read when the server offers it, page by page up to
/// [`MAX_PAGES`] and [`MAX_NOTED`] entries. A list that fails is left out
/// and said so in `left_out`; the tools are recorded all the same.
async fn noted(open: &mut Open, watch: &Watch) -> ServerNotes {
    let mut notes = ServerNotes {
        instructions: open
            .instructions
            .as_ref()
            .filter(|i| !i.trim().is_empty())
            .map(|i| i.chars().take(MAX_INSTRUCTIONS_CHARS).collect()),
        ..ServerNotes::default()
    };
    if open.offers.0 {
        watch.set_phase("listing resources");
        match list_pages(open, watch, "resources", |cursor| {
            ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(
                PaginatedRequestParams::default().with_cursor(cursor),
            ))
        })
        .await
        {
            Ok(items) => {
                let (kept, past) = noted_items(items, |v| serde_json::from_value(v).ok());
                notes.resources = kept;
                if past > 0 {
                    notes
                        .left_out
                        .push(format!("resources: {past} past {MAX_NOTED}"));
                }
            }
            Err(why) => notes
                .left_out
                .push(format!("resources: {}", watch.redact(&why))),
        }
    }
    if open.offers.1 {
        watch.set_phase("listing prompts");
        match list_pages(open, watch, "prompts", |cursor| {
            ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(
                PaginatedRequestParams::default().with_cursor(cursor),
            ))
        })
        .await
        {
            Ok(items) => {
                let (kept, past) = noted_items(items, |v| serde_json::from_value(v).ok());
                notes.prompts = kept;
                if past > 0 {
                    notes
                        .left_out
                        .push(format!("prompts: {past} past {MAX_NOTED}"));
                }
            }
            Err(why) => notes
                .left_out
                .push(format!("prompts: {}", watch.redact(&why))),
        }
    }
    notes
}

/// The first [`MAX_NOTED`] items `read` makes something of, and how many
/// more there were.
fn noted_items<T>(items: Vec<Value>, read: impl Fn(Value) -> Option<T>) -> (Vec<T>, usize) {
    let total = items.len();
    let kept: Vec<T> = items.into_iter().filter_map(read).take(MAX_NOTED).collect();
    let past = total.saturating_sub(MAX_NOTED);
    (kept, past)
}

/// Every item of the paginated list `key` (`resources`, `prompts`), or
/// why it could not be read.
async fn list_pages(
    open: &mut Open,
    watch: &Watch,
    key: &str,
    request: impl Fn(Option<String>) -> ClientRequest,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor = None;
    let mut cursors = BTreeSet::new();
    for page in 1..=MAX_PAGES {
        let mut response = open
            .request(
                watch,
                request(cursor.clone()),
                &format!("{key}/list page {page}"),
            )
            .await
            .map_err(|f| f.message)?;
        let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else {
            return Err(format!("{key}/list page {page} has no result"));
        };
        if let Some(Value::Array(list)) = result.remove(key) {
            items.extend(list);
        }
        if items.len() > MAX_NOTED {
            break;
        }
        cursor = match result.get("nextCursor") {
            Some(Value::String(c)) if cursors.insert(c.clone()) => Some(c.clone()),
            Some(Value::String(_)) => return Err(format!("{key}/list repeats a cursor")),
            _ => return Ok(items),
        };
    }
    Ok(items)
}

/// A failure for breaking one of the listing's limits.
fn too_large(message: String, help: &str) -> Failure {
    Failure {
        reason: FailureReason::ListingTooLarge,
        help: Some(help.into()),
        ..Failure::new(message)
    }
}

async fn list_all(
    spec: &ServerSpec,
    open: &mut Open,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<(Vec<ListedTool>, usize), Failure> {
    let mut listed = Checker::default();
    let mut cursor: Option<String> = None;
    let mut cursors = BTreeSet::new();
    let mut pages = 0;
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let mut response = open
            .request(watch, request, &format!("tools/list page {}", pages + 1))
            .await?;
        let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else {
            return Err(Failure::new(format!(
                "answered tools/list page {} without a result object: {}",
                pages + 1,
                escape(&response.get("error").unwrap_or(&response).to_string())
            )));
        };
        let Some(Value::Array(tools)) = result.remove("tools") else {
            return Err(Failure::new(format!(
                "answered tools/list page {} without a `tools` array",
                pages + 1
            )));
        };
        pages += 1;
        if listed.len() + tools.len() > MAX_TOOLS {
            return Err(too_large(
                format!(
                    "listed more than {} tools (tools/list page {pages}); muster reads at most {} tools from a server",
                    group_digits(MAX_TOOLS),
                    group_digits(MAX_TOOLS)
                ),
                "split the server's tools across servers",
            ));
        }
        tools.into_iter().for_each(|tool| listed.push(tool));
        watch
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pages = pages;
        let _ = events.send(Event::Page {
            server: spec.name.clone(),
            page: pages,
            tools_so_far: listed.len(),
        });
        cursor = match result.get("nextCursor") {
            None | Some(Value::Null) => break,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                return Err(Failure::new(format!(
                    "gave a nextCursor that is not a string: {}",
                    escape(&other.to_string())
                )));
            }
        };
        let c = cursor.clone().unwrap_or_default();
        if pages >= MAX_PAGES {
            return Err(too_large(
                format!(
                    "still paginating after {} pages; muster reads at most {} tools/list pages from a server",
                    group_digits(MAX_PAGES),
                    group_digits(MAX_PAGES)
                ),
                "have the server return more tools per page",
            ));
        }
        if !cursors.insert(c.clone()) {
            return Err(Failure::new(format!(
                "keeps paginating (cursor `{}` repeated after {pages} pages)",
                escape(&c)
            )));
        }
    }
    let tools = listed.finish().map_err(|problems| Failure {
        reason: FailureReason::InvalidListing,
        message: problems.join("; "),
        help: Some("fix the server, or pin a version that lists valid tools".into()),
        tools: problems,
        code: "",
    })?;
    Ok((tools, pages))
}

/// `n` with a comma between each group of three digits, as the docs write
/// the limits.
fn group_digits(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_reads_are_each_seen_once() {
        let long = "d".repeat(2 << 20);
        let text = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"d\":\"{long}\"}}}}\r\n\n  \nnot json\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}}}\n{{\"id\":3"
        );
        let mut seen = Seen::default();
        for chunk in text.as_bytes().chunks(8192) {
            seen.take(chunk);
        }
        assert_eq!(seen.responses.len(), 2);
        assert_eq!(
            seen.responses["1"]["result"]["d"].as_str().unwrap().len(),
            long.len()
        );
        assert!(seen.responses.contains_key("2"));
        assert_eq!(seen.garbage.as_deref(), Some("not json"));
        assert_eq!(seen.partial, b"{\"id\":3");
        seen.take(b"}\n");
        assert!(seen.responses.contains_key("3") && seen.partial.is_empty());
    }

    #[test]
    fn a_deep_line_is_told_apart_from_one_that_is_not_json() {
        let mut seen = Seen::default();
        let deep = format!("{}{}\n", "[".repeat(200), "]".repeat(200));
        seen.take(deep.as_bytes());
        assert_eq!(seen.too_deep, Some(DeepLine { tool: None }));
        assert!(seen.garbage.is_none());
    }

    #[test]
    fn a_deep_tools_list_page_names_the_tool_at_fault() {
        let deep = format!("{}\"x\"{}", "[".repeat(200), "]".repeat(200));
        let page = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[{{\"name\":\"fine\",\"inputSchema\":{{}}}},{{\"inputSchema\":{{\"default\":{deep}}},\"name\":\"sunk\"}}]}}}}\n"
        );
        let mut seen = Seen::default();
        seen.take(page.as_bytes());
        assert_eq!(
            seen.too_deep,
            Some(DeepLine {
                tool: Some("sunk".into())
            })
        );
        assert!(seen.responses.is_empty() && seen.garbage.is_none());
    }

    #[test]
    fn reading_stops_past_the_listing_bytes() {
        let mut seen = Seen {
            total: MAX_LISTING_BYTES - 3,
            ..Seen::default()
        };
        seen.take(b"{}\n");
        assert!(!seen.too_much);
        seen.take(b"{\"id\":1,\"result\":{}}\n");
        assert!(seen.too_much && seen.responses.is_empty());
    }

    #[test]
    fn responses_to_requests_never_made_cannot_pile_up() {
        let mut seen = Seen::default();
        for id in 0..1000 {
            seen.take(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n").as_bytes());
            assert!(seen.responses.len() <= RESPONSES_KEEP);
        }
        assert!(seen.responses.contains_key("999"), "the latest is kept");
    }

    #[test]
    fn a_line_past_the_cap_is_dropped_and_marked() {
        let mut seen = Seen::default();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(MAX_LINE_BYTES >> 20) {
            seen.take(&chunk);
        }
        assert!(seen.too_long);
        assert!(seen.partial.len() <= MAX_LINE_BYTES);
    }
}
