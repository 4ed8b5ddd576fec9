//! One discovery session with an MCP server: start it (the one client's
//! spawn, [`crate::mcp_client`]) or connect to its `url`, run the handshake,
//! hand it to [`list`] to read its tools and notes, close it. A failure is
//! told as what the server did ([`Watch`]).
//!
//! The handshake and requests here still run on rmcp, over a stdout that
//! passes through [`Tap`]: the tap keeps each response exactly as the
//! server sent it (rmcp's typed `Tool` drops fields it does not model, and
//! a non-object `inputSchema` makes rmcp discard the whole page, losing
//! which tool was at fault) and notices lines that are not JSON, which rmcp
//! skips silently. `muster call` and the gateway already speak through
//! [`crate::mcp_client`] alone; discovery is the last to move (issue 34).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::ClientRequest;
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

mod list;
mod tap;

pub(super) use list::run;
use tap::{
    ErrorLines, JSON_DEPTH_LIMIT, MAX_LINE_BYTES, STDERR_ERROR_LINES, STDERR_KEEP,
    STDERR_LINE_CHARS, Seen, Tap, names_an_error,
};

use super::{MAX_LISTING_BYTES, MAX_MESSAGE_BYTES, ServerSpec};
use crate::contract::FailureReason;
use crate::mcp_client::{Failure, ProcessGroup, Spawned, keep_stderr, spawn};
use crate::names::escape;
use crate::snapshot::{ListedTool, ServerNotes};

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
