//! Drift: a tool whose live definition differs from the one a chat was
//! offered, what changed in it (shown as `lock` shows a change:
//! [`crate::lock::Lock::shown`]), and the sentence the model and the log
//! read about it. Decides nothing: the gateway refuses or forwards by
//! `lock.on_mismatch`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Gateway, Generation, UpstreamError};
use crate::contract::{ChangeDetails, UpstreamCode};
use crate::lock::Lock;
use crate::mcp_client::Declared;
use crate::names::escape;
use crate::policy::{Inputs, LockMode};
use crate::snapshot::ListedTool;
use serde::Serialize;

/// The most characters of what changed that a drift's sentence names (the
/// hints, the description's counts, the paths); past it the sentence says
/// the rest is in `_meta`. The data there is bounded as `lock`'s review is.
pub const MAX_SHOWN_CHARS: usize = 1_000;

/// A tool whose live definition differs from the one planned.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    /// Always `upstream-changed`: the code the call log and `/v1/call`'s
    /// `error` carry for it.
    pub code: UpstreamCode,
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
    /// What changed, as `lock` shows it to a reviewer: the description word
    /// by word, the input schema's and other members' paths, the hints
    /// (`None` when the tool is gone or was not planned).
    pub details: Option<ChangeDetails>,
    /// Whether the call was refused (`lock.on_mismatch = "cut"`) or
    /// forwarded with this warning (`"warn"`).
    pub refused: bool,
}

impl Drift {
    /// One sentence for the model and the log: the kind of change and what
    /// changed, in words that quote no text of the server's but escaped
    /// paths, at most [`MAX_SHOWN_CHARS`] characters of it.
    pub fn sentence(&self) -> String {
        let what = if self.listed.is_none() {
            "no longer lists".to_string()
        } else {
            let kinds: Vec<&str> = self.changes.iter().map(|c| c.as_str()).collect();
            if kinds.is_empty() {
                "now lists a different definition of".to_string()
            } else {
                format!("changed ({}) its definition of", kinds.join(", "))
            }
        };
        let shown = self
            .details
            .as_ref()
            .map(|d| crate::snapshot::review::show::outline(d).join("; "))
            .filter(|s| !s.is_empty())
            .map(|s| format!(" ({})", bounded(&s)))
            .unwrap_or_default();
        let then = if self.refused {
            "muster forwards no call to it until the change is reviewed (`muster discover`, then `muster lock`)"
        } else {
            "the call was forwarded (lock.on_mismatch = \"warn\")"
        };
        format!(
            "MCP server `{}` {what} `{}` since this chat was offered it{shown}; {then}",
            self.server,
            escape(&self.tool)
        )
    }
}

/// `text` held to [`MAX_SHOWN_CHARS`] characters, saying where the rest is.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        None => text.to_string(),
        Some((end, _)) => format!(
            "{}… (the rest in _meta[\"dev.muster/gateway\"].drift.details)",
            &text[..end]
        ),
    }
}

/// What changed in each drifted tool, kept per generation by server and
/// tool with the listed hash it was made for.
#[derive(Default)]
pub(super) struct Shown(Mutex<HashMap<(String, String), MadeFor>>);

/// What changed, and the listed hash it was made for.
type MadeFor = (String, Option<ChangeDetails>);

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
        let g = self.current.load_full();
        let planned = g.planned.get_or_init(|| planned(&g.inputs));
        let listed = listing.get(tool);
        let locked = planned.get(server, tool);
        if let (Some((_, hash)), Some(locked)) = (listed, locked)
            && hash == locked
        {
            return Ok(None);
        }
        let mismatch = listed.and_then(|(t, _)| planned.check(server, t));
        let details = match (listed, locked) {
            (Some((t, hash)), Some(_)) => shown(&g, server, t, hash).await,
            _ => None,
        };
        Ok(Some(Drift {
            code: UpstreamCode::UpstreamChanged,
            server: server.to_string(),
            tool: tool.to_string(),
            planned: locked.map(str::to_string),
            listed: listed.map(|(_, h)| h.to_string()),
            changes: mismatch.map(|m| m.changes).unwrap_or_default(),
            details,
            refused: g.inputs.policy.lock.on_mismatch == LockMode::Cut,
        }))
    }
}

/// What changed in `tool` as `server` lists it (hash `hash`) against what
/// chats were offered: made on the blocking pool the first time (a
/// megabyte description's diff is bounded work, but not a worker's), then
/// kept for the generation until the server lists another definition.
async fn shown(
    g: &Arc<Generation>,
    server: &str,
    tool: &ListedTool,
    hash: &str,
) -> Option<ChangeDetails> {
    let key = (server.to_string(), tool.name.clone());
    if let Ok(kept) = g.shown.0.lock()
        && let Some((made_for, details)) = kept.get(&key)
        && made_for == hash
    {
        return details.clone();
    }
    let (work, listed) = (g.clone(), tool.clone());
    let server_name = key.0.clone();
    let details = super::call::off_worker(move || {
        let planned = work.planned.get_or_init(|| planned(&work.inputs));
        planned.shown(&server_name, &listed)
    })
    .await
    .ok()
    .flatten()
    .filter(|d| !d.is_empty());
    if let Ok(mut kept) = g.shown.0.lock() {
        kept.insert(key, (hash.to_string(), details.clone()));
    }
    details
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_changed_is_held_to_its_bound_on_a_character_boundary() {
        let short = "readOnlyHint true -> false";
        assert_eq!(bounded(short), short);
        let long = "é".repeat(MAX_SHOWN_CHARS + 5);
        let cut = bounded(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_SHOWN_CHARS)));
        assert!(cut.ends_with("… (the rest in _meta[\"dev.muster/gateway\"].drift.details)"));
        assert_eq!(cut.chars().filter(|c| *c == 'é').count(), MAX_SHOWN_CHARS);
    }
}
