//! Drift: a tool whose live definition differs from the one a chat was
//! offered, and the sentence the model and the log read about it. Decides
//! nothing: the gateway refuses or forwards by `lock.on_mismatch`.

use super::{Gateway, UpstreamError};
use crate::lock::Lock;
use crate::mcp_client::Declared;
use crate::names::escape;
use crate::policy::{Inputs, LockMode};
use serde::Serialize;

/// A tool whose live definition differs from the one planned.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    /// The server.
    pub server: String,
    /// The tool, in the server's name.
    pub tool: String,
    /// The planned definition's hash.
    pub planned: Option<String>,
    /// The live definition's hash; `None` when the server no longer lists it.
    pub listed: Option<String>,
    /// What kind of change it is (empty when the tool is gone).
    pub changes: Vec<crate::contract::LockChange>,
    /// Whether the call was refused (`lock.on_mismatch = "cut"`) or
    /// forwarded with this warning (`"warn"`).
    pub refused: bool,
}

impl Drift {
    /// One sentence for the model and the log.
    pub fn sentence(&self) -> String {
        let what = if self.listed.is_none() {
            "no longer lists".to_string()
        } else {
            let kinds: Vec<String> = self
                .changes
                .iter()
                .filter_map(|c| serde_json::to_value(c).ok())
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            if kinds.is_empty() {
                "now lists a different definition of".to_string()
            } else {
                format!("changed ({}) its definition of", kinds.join(", "))
            }
        };
        let then = if self.refused {
            "muster forwards no call to it until the change is reviewed (`muster discover`, then `muster lock`)"
        } else {
            "the call was forwarded (lock.on_mismatch = \"warn\")"
        };
        format!(
            "MCP server `{}` {what} `{}` since this chat was offered it; {then}",
            self.server,
            escape(&self.tool)
        )
    }
}

impl Gateway {
    /// How `tool` as `server` lists it now differs from what chats were
    /// offered, if it does, and whether its calls are refused for it.
    ///
    /// # Errors
    /// The server's, when it cannot be listed: then nothing is forwarded.
    pub(super) async fn drift(
        &self,
        server: &str,
        tool: &str,
        declared: &Declared,
    ) -> Result<Option<Drift>, UpstreamError> {
        // A client that declares capabilities the server relays may be
        // offered tools others are not: compared with what it is listed.
        let listing = if declared.is_empty() {
            self.upstreams.listing(server).await?
        } else {
            self.upstreams.listing_declared(server, declared).await?
        };
        let g = self.current.load();
        let planned = g.planned.get_or_init(|| planned(&g.inputs));
        let listed = listing.get(tool);
        let locked = planned.get(server, tool);
        if let (Some((_, hash)), Some(locked)) = (listed, locked)
            && hash == locked
        {
            return Ok(None);
        }
        let mismatch = listed.and_then(|(t, _)| planned.check(server, t));
        Ok(Some(Drift {
            server: server.to_string(),
            tool: tool.to_string(),
            planned: locked.map(str::to_string),
            listed: listed.map(|(_, h)| h.to_string()),
            changes: mismatch.map(|m| m.changes).unwrap_or_default(),
            refused: g.inputs.policy.lock.on_mismatch == LockMode::Cut,
        }))
    }
}

/// What a chat was offered of every server, as a lock.
fn planned(inputs: &Inputs) -> Lock {
    inputs
        .policy
        .servers
        .iter()
        .fold(Lock::default(), |lock, s| {
            lock.update(&s.name, inputs.listings.of(&s.name)).0
        })
}
