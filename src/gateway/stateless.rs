//! Stateless chats: a 2026-07-28 client at plain `/mcp`, which keeps no
//! `Mcp-Session-Id` and addresses no chat by path, is served each message
//! in a chat that lives for that message only, planned afresh for the
//! agent (`?agent=NAME`, else the gateway's). Nothing it does outlives the
//! message, so its loads cannot carry to the next one; instead a deferred
//! tool it calls by name is loaded into that one message's chat first, by
//! the same load a control tool call makes (the policy's bounds, the
//! tool's definition as planned), and the call is then checked and
//! forwarded as any other: a call-through. Decides only that; what may be
//! loaded and what a call may do stay the session's and the check's.

use super::*;

impl Gateway {
    /// Answers one message in a chat made for it and ended after it.
    /// `parent` as for [`Gateway::handle_traced`], `outbox` as for
    /// [`Gateway::handle_relayed`].
    pub async fn handle_stateless(
        &self,
        agent: Option<&str>,
        bytes: &[u8],
        parent: Option<crate::trace::Context>,
        outbox: Option<super::progress::Outbox>,
    ) -> Reply {
        let chat = match self.open_chat(None, agent) {
            Ok(chat) => chat,
            Err(e) => {
                let id = match rpc::parse(bytes) {
                    Ok(Message::Request { id, .. }) => Some(id),
                    _ => None,
                };
                let code = if e.kind() == ErrorKind::Usage {
                    rpc::INVALID_PARAMS
                } else {
                    rpc::INTERNAL_ERROR
                };
                return Reply {
                    response: Some(Failure::new(id, code, e.to_string()).to_json()),
                    ..Reply::default()
                };
            }
        };
        let mut reply = self.handle_in(&chat, bytes, true, parent, outbox).await;
        // The chat ends with the message: there is no list to change.
        reply.list_changed = false;
        let _ = self.close_chat(&chat);
        reply
    }

    /// The view a stateless chat's call of `name` is checked against:
    /// `view` itself, or, when `name` is a tool the chat defers, the view
    /// after loading it by name. A load the policy refuses leaves `view`,
    /// so the check refuses the call as it refuses any deferred tool's.
    pub(super) fn call_through(
        &self,
        chat: &str,
        id: &RawValue,
        view: Arc<View>,
        name: &str,
        record: &mut CallRecord,
    ) -> Result<Arc<View>, Failure> {
        if view.offered.tool(name).is_some() || view.offered.deferred(name).is_none() {
            return Ok(view);
        }
        let mut loaded = CallRecord {
            verdict: "loaded",
            codes: Vec::new(),
            ..record.clone()
        };
        self.load(chat, id, name, &mut loaded, &mut false)?;
        super::spans::load_of(record, &loaded);
        if loaded.verdict != "loaded" {
            record.codes.extend(loaded.codes);
            return Ok(view);
        }
        record.codes.push("called-through".into());
        Ok(self.view(chat, id)?.0)
    }
}
