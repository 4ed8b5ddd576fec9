//! Re-pinning: a session whose pin no longer holds (a reviewed change was
//! reloaded) planned again for the same agent under the current policies,
//! keeping what it had loaded where the policies still defer it.
//!
//! It decides only what the new pin holds: the agent's current version,
//! the flags and provider the session was pinned with, and the loads that
//! can still be made (each by name, within the policy's bounds as counted
//! now, in the order they were loaded). Whether a chat re-pins at all is
//! the caller's choice (`[lock] chats`); what changed is the resume report
//! the caller got from [`super::open`], which it keeps for whoever asks.

use super::{Live, LoadRequest, NewSession, Opened, SessionKeys};
use crate::catalog::Selection;
use crate::contract::{LoadStatus, SessionDocument};
use crate::error::Error;
use crate::policy::Inputs;
use crate::tokens::TokenCache;
use std::path::Path;

/// What re-pinning made of a session.
#[derive(Debug)]
pub struct Repinned {
    /// The new session, pinned to what the current policies give the
    /// agent, at a revision after the old document's.
    pub live: Box<Live>,
    /// Loaded tools the new pin could not load again (no longer deferred,
    /// over the bounds as counted now), in their old order.
    pub dropped: Vec<String>,
}

/// Plans `old`'s agent again under `inputs` and loads again, by name, what
/// `old` had loaded. The new document keeps `old`'s id, names and provider;
/// its revision is after `old`'s, so a store's compare-and-swap on the old
/// revision replaces it. `None` when the policies no longer have the agent.
///
/// # Errors
/// The plan's errors for a selection that no longer builds (a flag the
/// policy dropped); the document's own errors as [`super::open`] reports
/// them.
pub fn repin(
    inputs: &Inputs,
    old: &SessionDocument,
    keys: &SessionKeys,
    cache: &mut TokenCache,
) -> Result<Option<Repinned>, Error> {
    if inputs.policy.agent(Some(&old.agent.name), None).is_none() {
        return Ok(None);
    }
    let selection = Selection {
        agent: Some(old.agent.name.clone()),
        version: None,
        profile: None,
        flags: old.selection.flags.clone(),
        provider: Some(old.provider),
        mcp_only: old.selection.mcp_only,
    };
    let options = NewSession {
        caps: (None, None),
        names: old.names,
        id: old.id.clone(),
    };
    let mut doc = super::new(inputs, &selection, &options, keys, cache)?;
    doc.revision = old.revision.saturating_add(1);
    doc.repinned = Some(doc.revision);
    doc.owner = old.owner.clone();
    keys.sign(&mut doc);
    let mut live = match super::open(inputs, doc, keys, Path::new("chat"), cache)? {
        Opened::Live(live) => live,
        // A fresh pin always holds against the inputs it was made from.
        Opened::Mismatch(_) => return Ok(None),
    };
    let mut dropped = Vec::new();
    for tool in &old.loaded {
        // A tool that loads with its group came in with an earlier one.
        if live.document().loaded.iter().any(|t| t.name == tool.name) {
            continue;
        }
        let answer = live.load(&LoadRequest::Names(vec![tool.name.clone()]));
        if answer.status != LoadStatus::Loaded {
            dropped.push(tool.name.clone());
        }
    }
    Ok(Some(Repinned { live, dropped }))
}
