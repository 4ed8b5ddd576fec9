//! Running the service: binding, serving connections until a stop signal,
//! draining in-flight requests within the drain timeout, reloading on
//! SIGHUP and purging expired chats and sessions. It decides when the
//! service starts and stops, nothing about what a request is answered.

use super::{Config, LOG_TARGET, Shared, Trigger, log_to_stderr, reload, router};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves `router` on `listener` until `shutdown` resolves, then stops
/// accepting and lets every in-flight request finish, for at most
/// [`Config::drain_timeout`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: &Config,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        // A client may shut down its write side once its request is sent
        // (`nc -N`, scripts that close stdin): answer it rather than drop
        // the answer on the EOF (hyper's default).
        .half_close(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(err) => {
                        tracing::warn!(
                            target: LOG_TARGET,
                            event = "accept-failed",
                            error = %err,
                            "a connection could not be accepted"
                        );
                        // Out of descriptors: give in-flight requests a moment to free some.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = TowerToHyperService::new(router.clone());
                let connection = http.serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    // A client that goes away mid-request is not the service's error.
                    let _ = watched.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let connections = graceful.count();
    tracing::info!(
        target: LOG_TARGET,
        event = "shutdown",
        connections,
        "shutting down: draining {connections} connection(s)"
    );
    // A request that never finishes must not keep the service from
    // stopping: past the deadline its connection is dropped unanswered.
    if tokio::time::timeout(config.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        let limit_ms = u64::try_from(config.drain_timeout.as_millis()).unwrap_or(u64::MAX);
        tracing::warn!(
            target: LOG_TARGET,
            event = "drain-timeout",
            limit_ms,
            "requests still in flight after {limit_ms} ms: stopping without them"
        );
    }
    tracing::info!(target: LOG_TARGET, event = "stopped", "stopped");
}

/// Runs the service until SIGTERM or SIGINT: loads the policies, binds,
/// reloads on SIGHUP, drains on shutdown. Logs one JSON line on stderr
/// (target `muster::serve`, event `start`, message `listening on
/// http://ADDR`) once it accepts connections.
///
/// # Errors
/// The policies' problems at start, or an address that cannot be bound.
pub fn run(config: Config) -> Result<(), Error> {
    let shared = Shared::load(&config)?;
    log_to_stderr();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(answering_threads())
        .build()
        .map_err(|err| io_error("cannot start the runtime", &err))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(config.addr)
            .await
            .map_err(|err| io_error(&format!("cannot listen on {}", config.addr), &err))?;
        let addr = listener
            .local_addr()
            .map_err(|err| io_error("cannot read the bound address", &err))?;
        let hangups = shared.clone();
        let mut hangup = signal(tokio::signal::unix::SignalKind::hangup())?;
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                let _ = reload(&hangups, Trigger::Hangup).await;
            }
        });
        {
            // The gateway's chats expire too, kept in memory or not.
            let purging = shared.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_secs(60));
                loop {
                    every.tick().await;
                    let store = purging.clone();
                    let purged = tokio::task::spawn_blocking(move || {
                        let now = store.now();
                        let chats = store.gateway.purge().map(|_| ());
                        let sessions = store.store.as_ref().map_or(Ok(0), |s| s.purge(now));
                        Some(chats.and(sessions))
                    })
                    .await;
                    if let Ok(Some(Err(err))) = purged {
                        tracing::warn!(
                            target: LOG_TARGET,
                            event = "purge-failed",
                            error = %err,
                            "expired sessions could not be purged"
                        );
                    }
                }
            });
        }
        let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut interrupt = signal(tokio::signal::unix::SignalKind::interrupt())?;
        super::guard::warn_if_open(addr, shared.auth.load().is_some());
        tracing::info!(
            target: LOG_TARGET,
            event = "start",
            addr = %addr,
            policies = %config.policies.display(),
            generation = shared.generation(),
            sessions = config.sessions.as_ref().map_or_else(|| "carried by the host".to_string(), |u| u.redacted()).as_str(),
            signed = !config.session_keys.is_empty(),
            admin = shared.admin.code(),
            "listening on http://{addr}"
        );
        let gateway = shared.gateway.clone();
        // The guard checks `Host` against the port actually bound (`:0` picks one).
        let app = router(shared, &Config { addr, ..config.clone() });
        let stopping = gateway.clone();
        serve(listener, app, &config, async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            // Listen streams never finish on their own: each is answered
            // and ended now, so the drain waits only for real requests.
            stopping.listeners().stop();
        })
        .await;
        // The servers the gateway started are stopped with the service.
        gateway.shutdown().await;
        Ok::<(), Error>(())
    })?;
    // Work still running on the blocking pool after the drain (a request
    // dropped at the deadline) is not waited for.
    runtime.shutdown_background();
    // Spans of the last calls go out before the process does.
    crate::trace::flush(std::time::Duration::from_secs(2));
    Ok(())
}

/// Threads that compute answers: planning and checking are CPU work, so
/// more threads than a few per core only add stacks, token-cache leases and
/// allocator arenas; requests past them wait in the queue (still bounded by
/// the concurrency limit and the request timeout).
fn answering_threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 4)
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, Error> {
    tokio::signal::unix::signal(kind).map_err(|err| io_error("cannot handle signals", &err))
}

fn io_error(what: &str, err: &std::io::Error) -> Error {
    Error::new(
        ErrorKind::Io,
        Problem::coded(code::IO, format!("{what}: {err}")),
    )
}
