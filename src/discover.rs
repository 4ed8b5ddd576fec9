//! Live discovery: start each configured MCP server, list every tool it
//! offers, and record the listing as a snapshot that planning reads, so a
//! plan never waits on a server.
//!
//! This module decides what counts as a good listing (see
//! [`ListedTool`]'s rules) and when a snapshot may be replaced: only after a
//! complete, valid listing, and only by an atomic rename, so a failed or
//! hung server leaves its old snapshot byte for byte. It must not print:
//! progress goes out as [`Event`]s and results as [`ServerOutcome`]s for
//! the binary to render. It does not narrow or plan.
//!
//! [`call_tool`] reuses the same session to run one `tools/call`, so a
//! checked call can be forwarded to the real server.

mod call;
mod policy;
mod session;

use std::path::PathBuf;

use serde_json::Value;

use crate::contract::FailureReason;
use crate::error::{Error, ErrorKind, Problem};

pub use crate::mcp_client::{
    MAX_ACCESS_TOKEN_BYTES, MAX_MESSAGE_BYTES, MAX_TOKEN_RESPONSE_BYTES, REFRESH_BEFORE,
    ServerSpec, TOKEN_TIMEOUT,
};
use crate::snapshot::read_snapshot_bytes;
pub use crate::snapshot::{
    ListedTool, MAX_INSTRUCTIONS_CHARS, MAX_NOTED, NotedArgument, NotedPrompt, NotedResource,
    ServerNotes, SnapshotDiff, ToolChange, diff_snapshots, read_snapshot, read_snapshot_notes,
    snapshot_bytes, snapshot_bytes_with,
};
pub use call::call_tool;
pub use policy::{discover_policy, lock_policy};

/// The most muster reads from one server's stdout in one session, every
/// tools/list page included: 128 MiB, the most any file muster reads may
/// hold, so the snapshot a listing becomes can be read back. Past it the
/// session ends at once as [`FailureReason::ListingTooLarge`].
pub const MAX_LISTING_BYTES: usize = crate::input::MAX_INPUT_BYTES as usize;
/// The most tools one server may list, across its pages: 100,000, the
/// largest catalog muster is measured at. More is
/// [`FailureReason::ListingTooLarge`].
pub const MAX_TOOLS: usize = 100_000;
/// The most tools/list pages muster reads from one server: 10,000. A
/// server still handing out a cursor after that is
/// [`FailureReason::ListingTooLarge`]; one that repeats a cursor is a
/// [`FailureReason::BadResponse`] at once.
pub const MAX_PAGES: usize = 10_000;

/// The most servers discovery reaches at once: 4. The rest wait their
/// turn (their `timeout` starts when they do); outcomes stay in declared
/// order whatever order the servers finish in.
pub const MAX_PARALLEL: usize = 4;

/// Progress of one server, sent as it happens; servers run concurrently so
/// events of different servers interleave.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The server process is being started.
    Starting {
        /// The block's name.
        server: String,
    },
    /// The MCP handshake completed.
    Initialized {
        /// The block's name.
        server: String,
        /// `serverInfo` from the initialize result (name, version, …).
        server_info: Option<Value>,
    },
    /// One page of tools/list arrived.
    Page {
        /// The block's name.
        server: String,
        /// 1-based page number.
        page: usize,
        /// Tools listed so far, across pages.
        tools_so_far: usize,
    },
    /// The server is done; its [`ServerOutcome`] says how it went.
    Finished {
        /// The block's name.
        server: String,
        /// Whether the listing succeeded and the snapshot was written.
        ok: bool,
    },
}

/// A successful discovery of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// Every tool, in listed order.
    pub tools: Vec<ListedTool>,
    /// How many tools/list pages were read.
    pub pages: usize,
    /// `serverInfo` from the initialize result.
    pub server_info: Option<Value>,
    /// Its instructions, resources and prompts, as recorded beside `tools`.
    pub notes: ServerNotes,
    /// The snapshot file now holding `tools`.
    pub snapshot: PathBuf,
    /// Whether the written bytes differ from the file that was there.
    pub snapshot_changed: bool,
    /// Against the previous snapshot; everything is `added` when there was none.
    pub diff: SnapshotDiff,
    /// The previous snapshot existed but could not be read; it was replaced.
    pub previous_unreadable: Option<Error>,
}

/// How discovery of one server went.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOutcome {
    /// The block's name.
    pub server: String,
    /// The listing, or why it failed. On failure the old snapshot is
    /// untouched.
    pub result: Result<Discovered, Failed>,
}

/// A server whose discovery failed: what kind of failure, and the error
/// (of kind [`ErrorKind::Mcp`] naming the server, and the tool where one is
/// at fault; or [`ErrorKind::Io`] when the snapshot could not be read or
/// written). Derefs to the error.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// What kind of failure.
    pub reason: FailureReason,
    /// Every problem.
    pub error: Error,
}

impl Failed {
    fn new(reason: FailureReason, error: Error) -> Self {
        Self { reason, error }
    }
}

impl std::ops::Deref for Failed {
    type Target = Error;
    fn deref(&self) -> &Error {
        &self.error
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Discovers every server, at most [`MAX_PARALLEL`] at once, and returns
/// one outcome per server in the order given. Never panics on server misbehaviour; one server's
/// failure does not stop the others.
///
/// Builds its own tokio runtime, so call it from synchronous code (not from
/// inside a runtime). `on_event` runs on the calling thread.
///
/// SIGINT, SIGTERM or SIGHUP while it runs stop it: every server still
/// running is killed with its whole process group (and whatever it started
/// that left the group) and fails as stopped, its snapshot untouched; the
/// outcomes are returned as usual. Once such a signal has been listened
/// for, the process no longer dies of it by default (tokio keeps its
/// handler), so a caller that wants to end on one checks the outcomes.
pub fn discover(servers: &[ServerSpec], mut on_event: impl FnMut(Event)) -> Vec<ServerOutcome> {
    let fail_all = |message: String| {
        let err = Failed::new(
            FailureReason::Internal,
            Error::new(ErrorKind::Mcp, Problem::new(message)),
        );
        servers
            .iter()
            .map(|s| ServerOutcome {
                server: s.name.clone(),
                result: Err(err.clone()),
            })
            .collect()
    };
    // block_on inside a runtime would panic; say what is wrong instead.
    if tokio::runtime::Handle::try_current().is_ok() {
        return fail_all("discover was called from inside an async runtime".into());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail_all(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let turns = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_PARALLEL));
        let handles: Vec<_> = servers
            .iter()
            .cloned()
            .map(|spec| {
                let tx = tx.clone();
                let turns = turns.clone();
                tokio::spawn(async move {
                    // Never closed, so a permit always comes.
                    let _turn = turns.acquire_owned().await;
                    let _ = tx.send(Event::Starting {
                        server: spec.name.clone(),
                    });
                    let result = discover_one(&spec, &tx).await;
                    let _ = tx.send(Event::Finished {
                        server: spec.name.clone(),
                        ok: result.is_ok(),
                    });
                    result
                })
            })
            .collect();
        drop(tx);
        let events = async {
            while let Some(event) = rx.recv().await {
                on_event(event);
            }
        };
        let stopped_by = tokio::select! {
            () = events => None,
            signal = interrupted() => Some(signal),
        };
        if stopped_by.is_some() {
            // Dropping each server's task kills its process group.
            handles.iter().for_each(tokio::task::JoinHandle::abort);
        }
        let mut outcomes = Vec::with_capacity(servers.len());
        for (spec, handle) in servers.iter().zip(handles) {
            let result = handle.await.unwrap_or_else(|e| {
                Err(match stopped_by {
                    Some(signal) if e.is_cancelled() => Failed::new(
                        FailureReason::Stopped,
                        mcp_error(
                            &spec.name,
                            format!("discovery was stopped by {signal}; the server was killed"),
                            Some(
                                "its snapshot is left as it was; run `muster discover` again"
                                    .into(),
                            ),
                        ),
                    ),
                    _ => Failed::new(
                        FailureReason::Internal,
                        mcp_error(
                            &spec.name,
                            format!("discovery stopped unexpectedly: {e}"),
                            None,
                        ),
                    ),
                })
            });
            outcomes.push(ServerOutcome {
                server: spec.name.clone(),
                result,
            });
        }
        outcomes
    })
}

/// Which of SIGINT, SIGTERM or SIGHUP arrived first; never, where they
/// cannot be listened for.
async fn interrupted() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            return tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
                _ = hup.recv() => "SIGHUP",
            };
        }
    }
    std::future::pending().await
}

fn mcp_error(server: &str, message: String, help: Option<String>) -> Error {
    let mut p = Problem::new(format!("mcp server `{server}`: {message}"));
    if let Some(h) = help {
        p = p.help(h);
    }
    Error::new(ErrorKind::Mcp, p)
}

/// The error for a session that ran past `spec.timeout`: what it was doing,
/// how many pages it had read, what the server printed; and the tool, for a
/// call.
fn timed_out(spec: &ServerSpec, watch: &session::Watch, tool: Option<&str>) -> Error {
    let (phase, pages) = {
        let p = watch.progress.lock().unwrap_or_else(|e| e.into_inner());
        (p.phase, p.pages)
    };
    let after = if pages > 0 {
        format!(" after {pages} page(s)")
    } else {
        String::new()
    };
    let tool = tool.map(|t| format!("tool `{t}`: ")).unwrap_or_default();
    mcp_error(
        &spec.name,
        watch.redact(&format!(
            "{tool}timed out after {:?} while {phase}{after}{}",
            spec.timeout,
            watch.evidence()
        )),
        Some("check that `command` starts an MCP server on stdio, or raise its timeout".into()),
    )
}

/// The error for a session that failed: one problem naming the server, or
/// one per tool at fault when that is the failure.
fn failed(spec: &ServerSpec, watch: &session::Watch, f: crate::mcp_client::Failure) -> Error {
    if f.tools.is_empty() {
        let err = mcp_error(
            &spec.name,
            watch.redact(&format!("{}{}", f.message, watch.evidence())),
            f.help,
        );
        return if f.code.is_empty() {
            err
        } else {
            let problems = err
                .problems()
                .iter()
                .cloned()
                .map(|p| p.with_code(f.code))
                .collect();
            Error::many(ErrorKind::Mcp, problems)
        };
    }
    let problems = f
        .tools
        .into_iter()
        .map(|t| {
            let p = Problem::new(format!("mcp server `{}`: {}", spec.name, watch.redact(&t)));
            match &f.help {
                Some(h) => p.help(h.clone()),
                None => p,
            }
        })
        .collect();
    Error::many(ErrorKind::Mcp, problems)
}

/// Refuses a snapshot of `len` bytes that planning could not read back:
/// writing it would leave every later plan failing on the file.
fn snapshot_fits(server: &str, len: usize) -> Result<(), Error> {
    let limit = crate::input::MAX_INPUT_BYTES;
    if u64::try_from(len).is_ok_and(|len| len <= limit) {
        return Ok(());
    }
    Err(mcp_error(
        server,
        format!(
            "its listing would make a snapshot of {} MiB, more than the {} MiB muster reads",
            len.div_ceil(1 << 20),
            limit >> 20
        ),
        Some(
            "trim the server's schemas and descriptions, or split its tools across servers".into(),
        ),
    ))
}

async fn discover_one(
    spec: &ServerSpec,
    events: &tokio::sync::mpsc::UnboundedSender<Event>,
) -> Result<Discovered, Failed> {
    let watch = session::Watch::default();
    let listing = match tokio::time::timeout(spec.timeout, session::run(spec, &watch, events)).await
    {
        Ok(Ok(listing)) => listing,
        Ok(Err(f)) => {
            let reason = f.reason;
            return Err(Failed::new(reason, failed(spec, &watch, f)));
        }
        Err(_) => {
            return Err(Failed::new(
                FailureReason::TimedOut,
                timed_out(spec, &watch, None),
            ));
        }
    };

    // Read, compared and replaced under the directory's lock, so the diff
    // is against the snapshot this write replaces, even with another
    // `muster discover` of the same server running.
    let path = spec.snapshot.clone();
    let bytes = crate::snapshot::snapshot_bytes_with(&listing.tools, &listing.notes);
    snapshot_fits(&spec.name, bytes.len())
        .map_err(|e| Failed::new(FailureReason::ListingTooLarge, e))?;
    let recorded = tokio::task::spawn_blocking(move || {
        let mut recorded = Recorded::default();
        crate::atomic::update(&path, |previous| {
            recorded.changed = previous != Some(bytes.as_slice());
            if previous.is_some() {
                match read_snapshot_bytes(previous.unwrap_or_default(), &path) {
                    Ok(tools) => recorded.old_tools = tools,
                    Err(e) => recorded.previous_unreadable = Some(e),
                }
            }
            Ok(recorded.changed.then_some(bytes))
        })
        .map(|()| recorded)
    })
    .await
    .unwrap_or_else(|e| {
        Err(mcp_error(
            &spec.name,
            format!("snapshot write stopped: {e}"),
            None,
        ))
    })
    .map_err(|e| Failed::new(FailureReason::SnapshotIo, e))?;
    Ok(Discovered {
        diff: diff_snapshots(&recorded.old_tools, &listing.tools),
        tools: listing.tools,
        pages: listing.pages,
        server_info: listing.server_info,
        notes: listing.notes,
        snapshot: spec.snapshot.clone(),
        snapshot_changed: recorded.changed,
        previous_unreadable: recorded.previous_unreadable,
    })
}

/// What replacing a snapshot found: the listing it replaced, or why that
/// could not be read, and whether the bytes changed.
#[derive(Default)]
struct Recorded {
    old_tools: Vec<ListedTool>,
    previous_unreadable: Option<Error>,
    changed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_a_runtime_it_reports_instead_of_panicking() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let spec = ServerSpec::new("x", vec!["true".into()], "unused.json".into());
        let out = rt.block_on(async { discover(&[spec], |_| {}) });
        let err = out[0].result.as_ref().unwrap_err();
        assert!(err.to_string().contains("inside an async runtime"), "{err}");
    }

    #[test]
    fn a_snapshot_larger_than_planning_reads_is_refused() {
        let limit = usize::try_from(crate::input::MAX_INPUT_BYTES).unwrap();
        assert!(snapshot_fits("s", limit).is_ok());
        let err = snapshot_fits("s", limit + 1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        assert!(err.to_string().contains("129 MiB"), "{err}");
    }

    #[test]
    fn an_empty_server_list_gives_no_outcomes() {
        assert!(discover(&[], |_| {}).is_empty());
    }
}
