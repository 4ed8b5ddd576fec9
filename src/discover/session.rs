//! One discovery session with an MCP server: start it (the one client's
//! spawn, [`crate::mcp_client`]) or connect to its `url`, run the handshake,
//! hand it to [`list`] to read its tools and notes, close it. A failure is
//! told as what the server did ([`Watch`]).
//!
//! The handshake and requests run on the one client
//! ([`crate::mcp_client`]), which hands back each result as the text the
//! server sent. A stdio server's stdout passes through [`Tap`] on its way
//! to the client: the tap notices lines that are not JSON (which the client
//! skips), a line nested deeper than muster reads (naming the tool at
//! fault) and a listing past its bytes, and ends the stream at once when
//! reading must stop, so the failure says what the server did.

use std::sync::{Arc, Mutex};

use serde_json::Value;

mod list;
mod tap;

pub(super) use list::run;
use tap::{
    ErrorLines, JSON_DEPTH_LIMIT, STDERR_ERROR_LINES, STDERR_KEEP, STDERR_LINE_CHARS, Seen, Tap,
    names_an_error,
};

use super::{MAX_LISTING_BYTES, MAX_MESSAGE_BYTES, ServerSpec};
use crate::contract::FailureReason;
use crate::mcp_client::{
    self, Conn, Failure, ProcessGroup, Refusal, Spawned, Stderr, UpstreamError, keep_stderr, spawn,
};
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
/// tools, then ends with [`Open::close`].
pub(super) struct Open {
    conn: Arc<Conn>,
    /// The block's name, for the client's sentences.
    name: String,
    /// Longest one request may wait (the session's own deadline is the
    /// caller's).
    timeout: std::time::Duration,
    /// The server's process, for a stdio server; `None` over HTTP.
    process: Option<Process>,
    /// `serverInfo` from the handshake's result.
    pub server_info: Option<Value>,
    /// `instructions` from the handshake's result.
    pub(super) instructions: Option<String>,
    /// Whether it offers resources, and prompts (its capabilities).
    pub(super) offers: (bool, bool),
}

/// `serverInfo`, `instructions` and whether resources and prompts are
/// offered, from the handshake's result (`initialize`'s, or
/// `server/discover`'s: both carry these three).
fn peer_facts(conn: &Conn) -> (Option<Value>, Option<String>, (bool, bool)) {
    #[derive(serde::Deserialize)]
    struct Facts {
        #[serde(rename = "serverInfo")]
        server_info: Option<Value>,
        instructions: Option<Value>,
        #[serde(default)]
        capabilities: Option<Value>,
    }
    let Some(facts) = conn
        .handshake_result()
        .and_then(|raw| serde_json::from_str::<Facts>(raw.get()).ok())
    else {
        return (None, None, (false, false));
    };
    let offers = |what: &str| {
        facts
            .capabilities
            .as_ref()
            .and_then(|c| c.get(what))
            .is_some_and(|v| !v.is_null())
    };
    (
        facts.server_info.clone(),
        match &facts.instructions {
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        },
        (offers("resources"), offers("prompts")),
    )
}

/// A stdio server's process.
struct Process {
    child: tokio::process::Child,
    /// Copies the server's stderr into the watch until the server closes
    /// it; the client's reader holds it until stdout ends, so this is only
    /// a signal that it has.
    stderr_done: Arc<tokio::sync::Notify>,
    /// Kills the server's whole process group when the session ends.
    _group: ProcessGroup,
}

impl Open {
    /// Stops the server: closing stdin is how a stdio server is told to
    /// stop; a kill (and the process group) is the backstop for one that
    /// ignores it. Over HTTP the session is ended at the server (a DELETE).
    pub async fn close(mut self, watch: &Watch) {
        watch.set_phase("closing");
        self.conn.close_stdin().await;
        self.conn.close("closed by muster").await;
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

    /// Sends `method` with `params` (JSON text) and returns its result
    /// exactly as the server sent it. `what` names the request in failures
    /// (`tools/list page 2`).
    ///
    /// A JSON-RPC error answer, a connection that ended (told as what the
    /// server did: sent more than muster reads, or exited, with its status)
    /// or an answer muster cannot read ends here.
    pub async fn request(
        &mut self,
        watch: &Watch,
        method: &str,
        params: &str,
        what: &str,
    ) -> Result<Value, Failure> {
        let raw = match self.conn.request(method, params, self.timeout).await {
            Ok(raw) => raw,
            Err(e) => return Err(self.failed(watch, e, what).await),
        };
        if self.process.is_none() {
            // Over HTTP there is no byte stream to tap: the listing's bytes
            // are counted here.
            let mut seen = watch.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.total = seen.total.saturating_add(raw.get().len());
            if seen.total > MAX_LISTING_BYTES {
                seen.too_much = true;
                drop(seen);
                return Err(watch
                    .stopped_reading()
                    .unwrap_or_else(|| Failure::new("sent too much")));
            }
        }
        serde_json::from_str(raw.get()).map_err(|e| {
            Failure::new(format!(
                "answered {what} with what muster cannot read ({e})"
            ))
        })
    }

    /// Why a request failed with `e`; `what` names the request.
    async fn failed(&mut self, watch: &Watch, e: UpstreamError, what: &str) -> Failure {
        if let Some(f) = watch.stopped_reading() {
            return f;
        }
        let phase = watch.phase();
        match (e, self.process.as_mut()) {
            (UpstreamError::Exited { .. }, Some(process)) => {
                match exit_status(&mut process.child, &process.stderr_done).await {
                    Some(status) => Failure {
                        reason: FailureReason::Exited,
                        ..Failure::new(format!("exited while {phase} ({status})"))
                    },
                    None => Failure::new(format!(
                        "closed its stdout while {phase} but has not exited"
                    )),
                }
            }
            (UpstreamError::Rpc { code, message }, _) => Failure::new(format!(
                "{what} failed: error {code}: {}",
                watch.redact(&message)
            )),
            (UpstreamError::BadResponse { message }, _) => {
                Failure::new(format!("answered {what} with {}", watch.redact(&message)))
            }
            (e, _) => Failure::new(format!(
                "{what} failed while {phase}: {}",
                watch.redact(&e.sentence(&self.name))
            )),
        }
    }
}

/// The server's exit status, once it has exited and its stderr has been
/// read to the end (so a failure can quote it); `None` when it is still
/// running half a second on.
async fn exit_status(
    child: &mut tokio::process::Child,
    stderr_done: &tokio::sync::Notify,
) -> Option<std::process::ExitStatus> {
    let wait = std::time::Duration::from_millis(500);
    let status = tokio::time::timeout(wait, child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    let _ = tokio::time::timeout(wait, stderr_done.notified()).await;
    status
}

/// Starts the server in `spec` (or, with a `url`, connects to it) and
/// completes the MCP handshake.
pub(super) async fn open(spec: &ServerSpec, watch: &Watch) -> Result<Open, Failure> {
    if spec.url.is_some() {
        return open_http(spec, watch).await;
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
    let stderr_done = Arc::new(tokio::sync::Notify::new());
    let reader = {
        let done = stderr_done.clone();
        let kept = keep_stderr(stderr, watch.stderr.clone(), STDERR_KEEP, move |chunk| {
            stderr_errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(chunk);
        });
        tokio::spawn(async move {
            let _ = kept.await;
            done.notify_one();
        })
    };
    let tap = Tap {
        inner: stdout,
        seen: watch.seen.clone(),
    };
    let conn = mcp_client::attach(
        stdin,
        tap,
        Stderr {
            kept: watch.stderr.clone(),
            reader,
        },
        None,
    );
    watch.set_phase("initializing");
    if let Err(refusal) = mcp_client::handshake(spec, &conn).await {
        if let Some(f) = watch.stopped_reading() {
            conn.close("failed").await;
            return Err(f);
        }
        let message = match refusal {
            Refusal::Upstream(UpstreamError::Exited { .. }) => {
                match exit_status(&mut child, &stderr_done).await {
                    Some(s) => format!("exited during initialize ({s})"),
                    None => "closed its stdout during initialize but has not exited".into(),
                }
            }
            Refusal::Upstream(UpstreamError::BadResponse { message }) => {
                format!("answered initialize with {message}")
            }
            Refusal::Upstream(e) => format!(
                "failed to initialize: {}",
                watch.redact(&e.sentence(&spec.name))
            ),
            Refusal::Answer(what) => watch.redact(&what),
        };
        conn.close("failed").await;
        return Err(Failure {
            reason: FailureReason::HandshakeFailed,
            ..Failure::new(message)
        });
    }
    let (server_info, instructions, offers) = peer_facts(&conn);
    Ok(Open {
        conn,
        name: spec.name.clone(),
        timeout: spec.timeout,
        instructions,
        offers,
        process: Some(Process {
            child,
            stderr_done,
            _group: group,
        }),
        server_info,
    })
}

/// Connects to the Streamable HTTP server at `url` with the one client and
/// completes the MCP handshake. Header values are filled from `${VAR}` by
/// the client and go nowhere but the request; every filled value is kept
/// here too, so a failure that quotes one shows `[redacted]`. Redirects are
/// not followed, so headers reach no other host; no one message past
/// [`MAX_MESSAGE_BYTES`] is read.
async fn open_http(spec: &ServerSpec, watch: &Watch) -> Result<Open, Failure> {
    watch.set_phase("connecting");
    for (name, value) in &spec.headers {
        watch.expand(spec, &format!("headers.{name}"), value)?;
    }
    if let Some(oauth) = &spec.oauth {
        watch.expand(spec, "oauth.client_secret", &oauth.client_secret)?;
    }
    let conn = mcp_client::open(spec).map_err(|why| Failure {
        reason: FailureReason::CannotStart,
        help: Some("fix the block's `url` or `headers`".into()),
        ..Failure::new(watch.redact(&why))
    })?;
    watch.set_phase("initializing");
    if let Err(refusal) = mcp_client::handshake(spec, &conn).await {
        let what = match refusal {
            Refusal::Upstream(e) => e.sentence(&spec.name),
            Refusal::Answer(what) => what,
        };
        conn.close("failed").await;
        return Err(Failure {
            reason: FailureReason::HandshakeFailed,
            help: Some("check that `url` is the server's Streamable HTTP endpoint, that it is running, and its headers".into()),
            ..Failure::new(format!(
                "failed to initialize over HTTP: {}",
                watch.redact(&what)
            ))
        });
    }
    let (server_info, instructions, offers) = peer_facts(&conn);
    Ok(Open {
        conn,
        name: spec.name.clone(),
        timeout: spec.timeout,
        instructions,
        offers,
        process: None,
        server_info,
    })
}
