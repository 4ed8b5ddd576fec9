//! One request to a server and the wait for its answer: sent on the
//! server's stdin (or POSTed to its url), routed back by id, failed at the
//! server's timeout (which muster tells the server, with
//! `notifications/cancelled`) or when the connection ends. It decides what
//! a request gets back; it never starts, stops or retries a server.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

use super::{Conn, ProgressSink, Reply, UpstreamError, Wire, http, with_meta};

impl Conn {
    /// Sends `method` with `params` (JSON text) and waits for the answer.
    ///
    /// When the caller stops waiting (its future is dropped: the client
    /// cancelled the call), the server is told with
    /// `notifications/cancelled` naming the id muster gave the request.
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: &str,
        timeout: Duration,
    ) -> Reply {
        self.request_watched(method, params, timeout, None).await
    }

    /// [`Conn::request`], with the request's progress watched when
    /// `progress` is given: the request carries a `progressToken` (its
    /// id), and each `notifications/progress` the server sends for it, up
    /// to the answer, goes to `progress`.
    pub(crate) async fn request_watched(
        self: &Arc<Self>,
        method: &str,
        params: &str,
        timeout: Duration,
        progress: Option<ProgressSink>,
    ) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(id, tx);
        let watched = progress.is_some();
        if let Some(sink) = progress {
            self.lock_progress().insert(id, sink);
        }
        let mut waiting = Waiting {
            conn: self.clone(),
            id,
            armed: true,
        };
        let reply = self.answer(id, method, params, rx, timeout, watched).await;
        waiting.armed = false;
        reply
    }

    /// Sends request `id` and waits for the answer `rx` receives.
    async fn answer(
        &self,
        id: u64,
        method: &str,
        params: &str,
        rx: oneshot::Receiver<Reply>,
        timeout: Duration,
        watched: bool,
    ) -> Reply {
        let version = *self.version.lock().unwrap_or_else(|e| e.into_inner());
        let capabilities = self.declared().json();
        // A forwarded call carries the trace context of its span (set by
        // the gateway only when tracing is on).
        let trace = (method == "tools/call")
            .then(crate::trace::outgoing)
            .flatten();
        let progress = watched.then_some(id);
        let params = with_meta(params, version, progress, &capabilities, trace.as_ref());
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        if let Wire::Http(endpoint) = &self.wire {
            let sent = (endpoint, trace.as_ref());
            return self.exchange(sent, id, method, line, rx, timeout).await;
        }
        if let Err(e) = self.send(&line).await {
            // A server that exited has its stdout ended too: its reader,
            // a moment later, ends the connection quoting its stderr,
            // which says more than the broken pipe.
            let ended = tokio::time::timeout(Duration::from_millis(500), rx).await;
            self.lock_pending().remove(&id);
            return match ended {
                Ok(Ok(reply)) => reply,
                _ => Err(UpstreamError::Exited {
                    message: format!("closed its stdin ({e})"),
                }),
            };
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(UpstreamError::Exited {
                message: self.ended_text(),
            }),
            Err(_) => {
                self.lock_pending().remove(&id);
                let _ = self.send(&cancelled(id, "timed out")).await;
                Err(UpstreamError::TimedOut { after: timeout })
            }
        }
    }

    /// [`Conn::request`] over HTTP: the POST's answer is read (and each
    /// message in it routed) until the response to `id` arrives.
    pub(super) async fn exchange(
        &self,
        (endpoint, trace): (&http::Endpoint, Option<&crate::trace::Outgoing>),
        id: u64,
        method: &str,
        body: String,
        mut rx: oneshot::Receiver<Reply>,
        timeout: Duration,
    ) -> Reply {
        let version = *self.version.lock().unwrap_or_else(|e| e.into_inner());
        let exchange = async {
            let post = endpoint.post(self, (method, trace), version, body);
            tokio::pin!(post);
            tokio::select! {
                biased;
                reply = &mut rx => reply.unwrap_or_else(|_| Err(UpstreamError::Exited {
                    message: self.ended_text(),
                })),
                posted = &mut post => {
                    if let Err(e) = posted {
                        self.lock_pending().remove(&id);
                        return Err(e);
                    }
                    match rx.try_recv() {
                        Ok(reply) => reply,
                        Err(_) => {
                            self.lock_pending().remove(&id);
                            Err(UpstreamError::BadResponse {
                                message: "an answer to the POST without a response to it".into(),
                            })
                        }
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(reply) => reply,
            Err(_) => {
                self.lock_pending().remove(&id);
                let _ = self.send(&cancelled(id, "timed out")).await;
                Err(UpstreamError::TimedOut { after: timeout })
            }
        }
    }

    /// Sends one message that gets no answer (a notification).
    pub(super) async fn send(&self, line: &str) -> std::io::Result<()> {
        match &self.wire {
            Wire::Stdio(stdin) => {
                let mut stdin = stdin.lock().await;
                let Some(stdin) = stdin.as_mut() else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::BrokenPipe,
                        "muster closed it",
                    ));
                };
                stdin.write_all(line.as_bytes()).await?;
                stdin.write_all(b"\n").await?;
                stdin.flush().await
            }
            Wire::Http(endpoint) => {
                let version = *self.version.lock().unwrap_or_else(|e| e.into_inner());
                let post = endpoint.post(self, ("notification", None), version, line.to_string());
                tokio::time::timeout(Duration::from_secs(5), post)
                    .await
                    .map_err(|_| std::io::Error::other("timed out"))?
                    .map_err(|e| std::io::Error::other(e.code()))
            }
        }
    }

    pub(super) fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock_progress(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ProgressSink>> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn ended_text(&self) -> String {
        self.ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| "stopped".into())
    }

    /// Marks the connection down with `why` and fails every call in flight.
    pub(super) fn end(&self, why: String) {
        self.alive.store(false, Ordering::Release);
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if ended.is_none() {
            *ended = Some(why.clone());
        }
        drop(ended);
        self.stopped.notify_waiters();
        for (_, tx) in self.lock_pending().drain() {
            let _ = tx.send(Err(UpstreamError::Exited {
                message: why.clone(),
            }));
        }
    }
}

/// The `notifications/cancelled` for request `id`.
fn cancelled(id: u64, reason: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"{reason}"}}}}"#
    )
}

/// A request whose answer is awaited. Dropped, it stops watching the
/// request's progress (no progress is relayed past its answer); dropped
/// while still armed (the wait given up before an answer came), it also
/// takes the request out of the pending ones and tells the server it is
/// cancelled.
struct Waiting {
    conn: Arc<Conn>,
    id: u64,
    armed: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.conn.lock_progress().remove(&self.id);
        if !self.armed || self.conn.lock_pending().remove(&self.id).is_none() {
            return;
        }
        let (conn, id) = (self.conn.clone(), self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = conn.send(&cancelled(id, "cancelled by the client")).await;
            });
        }
    }
}
