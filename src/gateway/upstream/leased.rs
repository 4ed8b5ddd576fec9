//! A server's connections that declare client capabilities: the ones a
//! call relaying the server's requests (elicitation, sampling, roots) to
//! its chat's client goes over. Each carries one call at a time (it is
//! leased to that call), so every request the server sends on it belongs
//! to that call's client and never reaches another chat's. A connection is
//! made per set of declared capabilities (a server offers some tools only
//! to clients that declare some), started when no idle one of that set is
//! left, and kept idle after its call for the next (at most
//! [`MAX_IDLE_LEASED`] per server). They share the server's slots with its
//! shared connection; a failed one is closed, not backed off.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::{Listing, Server, UpstreamError, Upstreams, answer, list_tools};
use crate::mcp_client::{AskSink, Conn, Declared, ProgressSink, Reply, start};
use crate::policy::Relayed;

/// The most idle leased connections kept per server (each a process, for
/// a stdio server); one more is closed when its call ends.
pub const MAX_IDLE_LEASED: usize = 4;

/// A listing and the connection it was listed on.
type Listed = (Weak<Conn>, Arc<Listing>);

/// A server's leased connections.
#[derive(Default)]
pub(super) struct Leased {
    /// Idle connections, with what they declared.
    idle: Mutex<Vec<(Declared, Arc<Conn>)>>,
    /// The tools listed to a client declaring each set, and the connection
    /// they were listed on.
    listings: tokio::sync::Mutex<HashMap<Declared, Listed>>,
}

/// A connection leased to one call; dropped, it stops relaying and goes
/// back to the idle ones (or is closed).
struct Lease<'a> {
    server: &'a Server,
    declared: Declared,
    conn: Arc<Conn>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.conn.set_asks(None);
        if !self.conn.is_alive() {
            return;
        }
        let mut idle = self
            .server
            .leased
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE_LEASED {
            idle.push((self.declared.clone(), self.conn.clone()));
        } else {
            let conn = self.conn.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { conn.close("more idle connections than kept").await });
            }
        }
    }
}

impl Server {
    /// A connection declaring `declared`, idle or started now, leased.
    async fn lease(&self, declared: &Declared) -> Result<Lease<'_>, UpstreamError> {
        let found = {
            let mut idle = self.leased.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.retain(|(_, c)| c.is_alive());
            idle.iter()
                .position(|(d, _)| d == declared)
                .map(|i| idle.swap_remove(i).1)
        };
        let conn = match found {
            Some(conn) => conn,
            None => {
                let mut spec = self.spec.clone();
                spec.declare = declared.clone();
                match tokio::time::timeout(spec.timeout, start(&spec)).await {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(message)) => return Err(UpstreamError::CannotStart { message }),
                    Err(_) => {
                        return Err(UpstreamError::CannotStart {
                            message: format!("did not initialize within {:?}", spec.timeout),
                        });
                    }
                }
            }
        };
        Ok(Lease {
            server: self,
            declared: declared.clone(),
            conn,
        })
    }
}

impl Upstreams {
    /// What `server` may relay to a chat's client (`relay` in its block).
    pub fn relayed(&self, server: &str) -> Vec<Relayed> {
        self.servers
            .get(server)
            .map(|s| s.relay.clone())
            .unwrap_or_default()
    }

    /// Everything some server may relay.
    pub fn relaying(&self) -> Vec<Relayed> {
        let mut all: Vec<Relayed> = self
            .servers
            .values()
            .flat_map(|s| s.relay.iter().copied())
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// `server`'s timeout (30 s for a server the policy does not have).
    pub fn timeout(&self, server: &str) -> std::time::Duration {
        self.servers
            .get(server)
            .map_or(std::time::Duration::from_secs(30), |s| s.spec.timeout)
    }

    /// Closes the idle leased connections.
    pub(super) async fn close_leased(&self) {
        for server in self.servers.values() {
            let idle: Vec<_> =
                std::mem::take(&mut *server.leased.idle.lock().unwrap_or_else(|e| e.into_inner()));
            for (_, conn) in idle {
                conn.close("stopped with the gateway").await;
            }
        }
    }

    /// [`Upstreams::call_with`] over a connection declaring `declared`, leased
    /// to this call: each request of a declared kind the server sends
    /// before answering goes to `asks`, to be answered with
    /// [`crate::mcp_client::ServerAsk::answer`].
    pub async fn call_relayed(
        &self,
        server: &str,
        call: (&str, &str, &str),
        progress: Option<ProgressSink>,
        declared: &Declared,
        asks: AskSink,
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
        let lease = server.lease(declared).await?;
        let conn = lease.conn.clone();
        conn.set_asks(Some(asks));
        server
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = serde_json::to_string(tool).unwrap_or_default();
        let params = format!(r#"{{"name":{name},"arguments":{arguments}{extra}}}"#);
        let left = timeout.saturating_sub(started.elapsed());
        let reply = conn
            .request_watched("tools/call", &params, left, progress)
            .await;
        drop(lease);
        answer::of_call(reply, &server.spec, &conn.tokens())
    }

    /// The tools `server` lists to a client declaring `declared` (see
    /// [`Upstreams::listing`] for when it is listed again).
    pub async fn listing_declared(
        &self,
        server: &str,
        declared: &Declared,
    ) -> Result<Arc<Listing>, UpstreamError> {
        let Some(server) = self.servers.get(server) else {
            return Err(UpstreamError::CannotStart {
                message: "no such server in the policy".into(),
            });
        };
        let mut held = server.leased.listings.lock().await;
        if let Some((listed_on, listing)) = held.get(declared)
            && listed_on
                .upgrade()
                .is_some_and(|c| c.is_alive() && !c.tools_changed())
        {
            return Ok(listing.clone());
        }
        let lease = server.lease(declared).await?;
        lease.conn.clear_tools_changed();
        let listed = list_tools(&lease.conn, server.spec.timeout)
            .await
            .map_err(|e| e.redacted(&server.spec))?;
        let listing = Arc::new(listed);
        server
            .listings
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        held.insert(
            declared.clone(),
            (Arc::downgrade(&lease.conn), listing.clone()),
        );
        Ok(listing)
    }
}
