//! Open chats across a reviewed change. When a reload changes tools a chat
//! was pinned to, `[lock] chats` decides: `follow` (the default) plans the
//! chat again for its agent ([`crate::session::repin`]), keeps its loads
//! that still hold, stores it in place of the old document (a
//! compare-and-swap on the chat's revision) and tells the chat's client
//! its list changed; `refuse` answers every request of the chat
//! `tool-pin-mismatch`, as muster did before chats could follow.
//!
//! Either way the resume report (what changed, tool by tool) is what the
//! client is given: in the error's `data` under `refuse`, in the answer's
//! `_meta` under `follow`. Tools that did not change are offered and
//! checked exactly as before; a changed tool is offered with its reviewed
//! definition.

use super::*;
use crate::contract::ResumeReport;
use crate::policy::ChatsMode;

/// A chat's session opened for one request.
pub(super) struct Opening {
    /// The session, its pin holding.
    pub(super) live: Box<session::Live>,
    /// The chat's document as the store keeps it now.
    pub(super) stored: Stored,
    /// What changed, when the chat was re-pinned by this request.
    pub(super) repinned: Option<ResumeReport>,
}

/// What following a change came to.
pub(super) enum Followed {
    /// The chat is re-pinned (by this request).
    Done(Opening),
    /// Another request changed the chat first: read it again.
    Stale,
}

impl Gateway {
    /// Re-pins `chat`, whose document `stored` no longer opens under `g`
    /// (`report` says why), or refuses it, as `[lock] chats` says.
    pub(super) fn follow(
        &self,
        g: &Generation,
        chat: &str,
        stored: &Stored,
        report: ResumeReport,
        id: &RawValue,
    ) -> Result<Followed, Failure> {
        let failed = |code, message: String| Failure::new(Some(id.to_owned()), code, message);
        let mismatch = |report: &ResumeReport| {
            let mut f = failed(
                rpc::TOOL_PIN_MISMATCH,
                "tool-pin-mismatch: the tools this chat was pinned to changed under the current policies; start a new chat".into(),
            );
            f.data = serde_json::to_value(report).ok();
            f
        };
        if g.inputs.policy.lock.chats == ChatsMode::Refuse {
            return Err(mismatch(&report));
        }
        let old = session::read(&stored.document, Path::new("chat"))
            .map_err(|e| failed(rpc::INTERNAL_ERROR, e.to_string()))?;
        let repinned = {
            let mut cache = g.cache.lock().unwrap_or_else(|e| e.into_inner());
            session::repin(&g.inputs, &old, &self.options.keys, &mut cache)
        };
        let repinned = match repinned {
            Ok(Some(r)) => r,
            // The agent is gone: nothing to follow.
            Ok(None) => return Err(mismatch(&report)),
            Err(e) => return Err(failed(rpc::INTERNAL_ERROR, e.to_string())),
        };
        let doc = repinned.live.document();
        let next = Stored {
            document: session::to_json_string(doc),
            revision: doc.revision,
        };
        match self
            .store
            .swap(chat, stored.revision, &next, now(), self.expiry())
            .map_err(|e| failed(rpc::INTERNAL_ERROR, e.to_string()))?
        {
            Swapped::Done => {
                self.announce(chat);
                Ok(Followed::Done(Opening {
                    live: repinned.live,
                    stored: next,
                    repinned: Some(report),
                }))
            }
            Swapped::Stale { .. } => Ok(Followed::Stale),
            Swapped::Missing => Err(failed(
                rpc::CHAT_NOT_FOUND,
                format!("no chat {chat:?} is kept"),
            )),
        }
    }
}
