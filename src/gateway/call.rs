//! A checked turn run through the gateway's connections, for hosts that do
//! not speak MCP (`POST /v1/call`, `muster call`; docs/call.md).
//!
//! A turn is all or nothing, as the check decides it: when any call is
//! refused no call runs and nothing reaches a server. When every call
//! passes, each MCP call is forwarded with the arguments the check forwards
//! (fixed values in, unlisted arguments out) over the gateway's one shared
//! connection per server, and its result comes back as the server sent it.
//! Calls to one server go one after another in the turn's order, so a turn
//! that writes and then reads sees its own write; calls to different
//! servers go at the same time. A server that fails fails only its own
//! calls, each with a typed [`UpstreamFailure`]. Calls with no server
//! behind them (configured tools, the control tool) come back checked, for
//! the host to run. Each call is logged and counted through the gateway's
//! observer, as a `tools/call` is.
//!
//! It decides nothing the check decides and must not re-check a call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::value::RawValue;

use super::rpc::{self, Failure};
use super::upstream::UpstreamError;
use super::{CallRecord, Drift, Gateway, View};
use crate::check::{self, CheckOptions, Report, Status, Turn, Verdict};
use crate::contract::{
    CALL_FORMAT_VERSION, CallAnswer, CallResult, ResultStatus, TurnOutcome, UpstreamCode,
    UpstreamFailure,
};

/// One MCP call to forward: its place in the turn, its tool there and its
/// arguments' text.
struct Job {
    index: usize,
    tool: String,
    arguments: String,
    /// What its request carries, when traced.
    outgoing: Option<crate::trace::Outgoing>,
}

/// What one forwarded call got (with how the server changed the tool under
/// `lock.on_mismatch = "warn"`), and how long its server took.
struct Forwarded {
    index: usize,
    reply: Result<(Box<RawValue>, Option<Drift>), Refused>,
    ms: f64,
    /// When the server's part ran, when traced.
    window: Option<(u64, u64)>,
}

/// Why a forwarded call got no result.
enum Refused {
    /// The server failed.
    Upstream(UpstreamError),
    /// The server changed the tool and `lock.on_mismatch` is `cut`.
    Drift(Box<Drift>),
}

/// `work` on the runtime's blocking pool, so a long check never holds an async worker that
/// `/healthz` and every other chat's requests share.
pub(super) async fn off_worker<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    tokio::task::spawn_blocking(work).await
}

/// A `tools/call`'s turn checked against `view` on the blocking pool (as `/v1/check` is): a
/// tool with a 1,101-value enum and a megabyte of arguments took seconds of an async worker.
/// A check that panicked or was dropped at shutdown is an internal error of request `id`.
pub(super) async fn checked(
    view: &Arc<View>,
    turn: Turn,
    options: &CheckOptions,
    id: &RawValue,
) -> Result<Report<'static>, Failure> {
    let (view, options) = (view.clone(), *options);
    off_worker(move || check::check_turn(&view.offered, &turn, &options).into_owned())
        .await
        .map_err(|e| {
            let message = format!("the call's check did not finish: {e}");
            Failure::new(Some(id.to_owned()), rpc::INTERNAL_ERROR, message)
        })
}

impl Gateway {
    /// Runs the turn `report` checked: nothing when it was refused, else
    /// every MCP call forwarded to its server. `chat` names the session the
    /// turn belongs to in the call log (empty when none).
    pub async fn call_turn(self: &Arc<Self>, report: &Report<'_>, chat: &str) -> CallAnswer {
        let started = Instant::now();
        // Pretty and indented one level, where it sits in the pretty
        // answer, so the answer reads as one document (JSON strings hold no
        // raw newline, so only whitespace between tokens changes).
        let check = serde_json::to_string_pretty(report)
            .map(|text| text.replace('\n', "\n  "))
            .ok()
            .and_then(|text| RawValue::from_string(text).ok())
            .unwrap_or_else(empty_object);
        let mut results: Vec<CallResult> = report
            .calls
            .iter()
            .map(|c| CallResult {
                id: c.id.to_string(),
                status: ResultStatus::NotRun,
                server: None,
                tool: None,
                arguments: None,
                result: None,
                error: None,
            })
            .collect();
        let mut records: Vec<CallRecord> = report
            .calls
            .iter()
            .map(|c| CallRecord {
                chat: chat.to_string(),
                id: serde_json::to_string(&c.id).unwrap_or_default(),
                tool: c
                    .tool
                    .as_ref()
                    .and_then(|t| t.provider_name.clone())
                    .unwrap_or_else(|| c.tool.as_ref().map_or("", |t| &t.name).to_string()),
                server: None,
                verdict: match c.status {
                    Status::Refused => "refused",
                    Status::NotRun | Status::Ok => "not-run",
                },
                codes: c
                    .problems
                    .iter()
                    .map(|p| p.problem.code().to_string())
                    .chain(c.notes.iter().map(|n| n.note.code().to_string()))
                    .collect(),
                upstream_ms: None,
                total_ms: 0.0,
                result_tokens: None,
                arguments: None,
                spans: super::spans::begin(None, None, started),
            })
            .collect();
        let outcome = if report.verdict == Verdict::Refused {
            TurnOutcome::Refused
        } else {
            let mut warned: Vec<Option<Drift>> = vec![None; results.len()];
            let failed = self
                .run(report, &mut results, &mut records, &mut warned)
                .await;
            self.shape_turn(&mut results, &mut records, warned).await;
            if failed {
                TurnOutcome::Failed
            } else {
                TurnOutcome::Ran
            }
        };
        for record in records {
            self.observe(record, started);
        }
        CallAnswer {
            format_version: CALL_FORMAT_VERSION,
            outcome,
            check,
            results,
        }
    }

    /// Forwards the MCP calls of a turn that may run, one lane per server,
    /// and fills in each call's result and record, and `warned` with the
    /// drift a forwarded call was let through with; whether any failed.
    async fn run(
        self: &Arc<Self>,
        report: &Report<'_>,
        results: &mut [CallResult],
        records: &mut [CallRecord],
        warned: &mut [Option<Drift>],
    ) -> bool {
        let mut lanes: BTreeMap<String, Vec<Job>> = BTreeMap::new();
        for (index, call) in report.calls.iter().enumerate() {
            let arguments = call.arguments_text().unwrap_or_else(|| "{}".into());
            match call.tool.as_ref().and_then(|t| t.mcp.as_ref()) {
                Some(target) => {
                    results[index].server = Some(target.server.clone());
                    results[index].tool = Some(target.tool.clone());
                    records[index].server = Some(target.server.clone());
                    if self.options.log_arguments {
                        records[index].arguments = RawValue::from_string(arguments.clone()).ok();
                    }
                    lanes.entry(target.server.clone()).or_default().push(Job {
                        index,
                        tool: target.tool.clone(),
                        arguments,
                        outgoing: super::spans::outgoing(&records[index]),
                    });
                }
                None => {
                    results[index].status = ResultStatus::Host;
                    records[index].verdict = "host";
                    if self.options.log_arguments {
                        records[index].arguments = RawValue::from_string(arguments.clone()).ok();
                    }
                    results[index].arguments = RawValue::from_string(arguments).ok();
                }
            }
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (server, jobs) in lanes {
            let gateway = self.clone();
            tasks.spawn(async move {
                let mut done = Vec::with_capacity(jobs.len());
                for job in jobs {
                    let sent = Instant::now();
                    let start = job.outgoing.as_ref().map(|_| crate::trace::now_ns());
                    // Drift is looked at per call, as `tools/call` does: an
                    // earlier call of the lane may have changed the listing.
                    let reply = match gateway.drift(&server, &job.tool, &Default::default()).await {
                        Err(e) => Err(Refused::Upstream(e)),
                        Ok(Some(drift)) if drift.refused => Err(Refused::Drift(Box::new(drift))),
                        Ok(drift) => {
                            let call =
                                gateway
                                    .upstreams
                                    .call(&server, &job.tool, &job.arguments, None);
                            crate::trace::carrying(job.outgoing, call)
                                .await
                                .map(|raw| (raw, drift))
                                .map_err(Refused::Upstream)
                        }
                    };
                    done.push(Forwarded {
                        index: job.index,
                        reply,
                        ms: sent.elapsed().as_secs_f64() * 1000.0,
                        window: start.map(|start| (start, crate::trace::now_ns())),
                    });
                }
                done
            });
        }
        let mut failed = false;
        while let Some(joined) = tasks.join_next().await {
            let done = match joined {
                Ok(done) => done,
                // Nothing cancels these tasks; a panic stays a panic.
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            };
            for Forwarded {
                index,
                reply,
                ms,
                window,
            } in done
            {
                let (result, record) = (&mut results[index], &mut records[index]);
                record.upstream_ms = Some(ms);
                super::spans::ran(record, window);
                match reply {
                    Ok((raw, drift)) => {
                        if drift.is_some() {
                            record.codes.push("upstream-changed".into());
                        }
                        warned[index] = drift;
                        result.status = ResultStatus::Forwarded;
                        result.result = Some(raw);
                        record.verdict = "forwarded";
                    }
                    Err(Refused::Upstream(e)) => {
                        failed = true;
                        let server = result.server.clone().unwrap_or_default();
                        record.verdict = "upstream-failed";
                        record.codes.push(e.code().to_string());
                        result.status = ResultStatus::Failed;
                        result.error = Some(failure(&e, server));
                    }
                    Err(Refused::Drift(drift)) => {
                        let drift = *drift;
                        failed = true;
                        record.verdict = "drifted";
                        record.codes.push("upstream-changed".into());
                        record.upstream_ms = None;
                        result.status = ResultStatus::Failed;
                        result.error = Some(UpstreamFailure {
                            code: UpstreamCode::UpstreamChanged,
                            message: drift.sentence(),
                            server: drift.server,
                            rpc_code: None,
                            changes: drift.changes,
                            details: drift.details,
                        });
                    }
                }
            }
        }
        failed
    }
}

/// `e` as the typed failure `/v1/call` answers.
fn failure(e: &UpstreamError, server: String) -> UpstreamFailure {
    let (code, rpc_code) = match e {
        UpstreamError::CannotStart { .. } => (UpstreamCode::UpstreamCannotStart, None),
        UpstreamError::Down { .. } => (UpstreamCode::UpstreamDown, None),
        UpstreamError::Exited { .. } => (UpstreamCode::UpstreamExited, None),
        UpstreamError::TimedOut { .. } => (UpstreamCode::UpstreamTimedOut, None),
        UpstreamError::Busy { .. } => (UpstreamCode::UpstreamBusy, None),
        UpstreamError::Rpc { code, .. } => (UpstreamCode::UpstreamError, Some(*code)),
        UpstreamError::BadResponse { .. } => (UpstreamCode::UpstreamBadResponse, None),
    };
    UpstreamFailure {
        code,
        rpc_code,
        changes: Vec::new(),
        details: None,
        message: e.sentence(&server),
        server,
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".into()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30, item 4: the gateway checked each `tools/call` on the async worker. With one
    /// worker, work sent off it waits for a task that only that worker can run: inline, it
    /// would wait forever (the generous timeout makes that a failure, not a hang).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_check_leaves_the_async_worker_free() {
        let (send, receive) = std::sync::mpsc::channel::<()>();
        let (started, has_started) = tokio::sync::oneshot::channel::<()>();
        // On the one worker: the work starts, then waits for `other`.
        let blocked = tokio::spawn(off_worker(move || {
            let _ = started.send(());
            receive.recv_timeout(Duration::from_secs(60))
        }));
        has_started.await.expect("the work started");
        let other = tokio::spawn(async move { send.send(()) });
        let waited = blocked.await.expect("joined").expect("joined");
        assert_eq!(waited, Ok(()), "the worker was held by the work");
        other.await.expect("joined").expect("sent");
    }
    use std::time::Duration;

    #[test]
    fn each_failure_keeps_the_upstream_code() {
        let errors = [
            UpstreamError::CannotStart {
                message: "m".into(),
            },
            UpstreamError::Down {
                message: "m".into(),
                retry_in_secs: 1,
            },
            UpstreamError::Exited {
                message: "m".into(),
            },
            UpstreamError::TimedOut {
                after: Duration::from_secs(1),
            },
            UpstreamError::Busy {
                after: Duration::from_secs(1),
            },
            UpstreamError::Rpc {
                code: -32602,
                message: "m".into(),
            },
            UpstreamError::BadResponse {
                message: "m".into(),
            },
        ];
        for e in &errors {
            let f = failure(e, "s".into());
            assert_eq!(f.code.as_str(), e.code());
            assert_eq!(f.message, e.sentence("s"));
        }
        assert_eq!(failure(&errors[5], "s".into()).rpc_code, Some(-32602));
    }
}
