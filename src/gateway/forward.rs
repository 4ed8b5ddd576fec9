//! A checked `tools/call` of an MCP tool forwarded to its server: the
//! tool's live definition compared with the one reviewed (`drift`), the
//! call sent (with its progress and its server's requests relayed,
//! `relay`), and the answer shaped to the chat's budget (`shape`). It
//! decides nothing the check decided; the caller logs the record.

use std::time::Instant;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::own_meta::tool_error;
use super::progress::Outbox;
use super::relay::{Forward, Forwarded};
use super::rpc::{self, Failure};
use super::upstream::UpstreamError;
use super::{CallRecord, Gateway, shape};
use crate::check::McpTool;

/// One call to forward, as the chat asked it.
pub(super) struct ToServer<'a> {
    pub chat: &'a str,
    pub id: &'a RawValue,
    /// The tool's name as the chat was given it.
    pub name: &'a str,
    pub target: &'a McpTool,
    /// The arguments' text, as checked.
    pub arguments: String,
    pub params: &'a Map<String, Value>,
    pub stateless: bool,
    /// The request named 2026-07-28.
    pub modern: bool,
    pub outbox: Option<Outbox>,
}

impl Gateway {
    /// What `server` may relay that `declared` lacks (the capabilities a
    /// tool it lists only to some clients may need), or `None`.
    fn undeclared(
        &self,
        server: &str,
        declared: &crate::mcp_client::Declared,
    ) -> Option<Vec<&'static str>> {
        let missing: Vec<&'static str> = self
            .upstreams
            .relayed(server)
            .into_iter()
            .filter(|r| !declared.has(*r))
            .map(crate::policy::Relayed::key)
            .collect();
        (!missing.is_empty()).then_some(missing)
    }

    /// Forwards `to` and answers the chat; `record` says what happened.
    pub(super) async fn forward(
        &self,
        to: ToServer<'_>,
        record: &mut CallRecord,
    ) -> Result<String, Failure> {
        let ToServer {
            target, arguments, ..
        } = &to;
        record.server = Some(target.server.clone());
        if self.options.log_arguments {
            record.arguments = RawValue::from_string(arguments.clone()).ok();
        }
        let sent = Instant::now();
        let upstream_start = super::spans::now(record);
        let f = Forward {
            chat: to.chat,
            stateless: to.stateless,
            server: &target.server,
            tool: &target.tool,
            arguments,
            params: to.params,
            modern: to.modern,
            outbox: to.outbox.clone(),
        };
        let declared = self.relays.declared(&self.upstreams, &f);
        let drift = match self.drift(&target.server, &target.tool, &declared).await {
            Ok(drift) => drift,
            Err(e) => {
                record.verdict = "upstream-failed";
                record.codes.push(e.code().into());
                let meta =
                    serde_json::json!({"upstream": {"code": e.code(), "server": target.server}});
                return Ok(tool_error(&e.sentence(&target.server), &meta));
            }
        };
        if let Some(drift) = &drift
            && drift.listed.is_none()
            && let Some(missing) = self.undeclared(&target.server, &declared)
        {
            // Not a change: the server offers the tool only to a client
            // that declares what it may relay, and this one did not.
            record.codes.push("needs-client-capability".into());
            let meta = serde_json::json!({"needs": {"code": "needs-client-capability", "server": target.server, "capabilities": missing}});
            let sentence = format!(
                "MCP server `{}` lists `{}` only to a client that declares {}: this chat's client did not, so muster cannot forward the call",
                crate::names::escape(&target.server),
                crate::names::escape(&target.tool),
                missing.join(" or "),
            );
            return Ok(tool_error(&sentence, &meta));
        }
        if let Some(drift) = &drift {
            record.codes.push("upstream-changed".into());
            if drift.refused {
                record.verdict = "drifted";
                let meta = serde_json::json!({"drift": drift});
                return Ok(tool_error(&drift.sentence(), &meta));
            }
        }
        // The request carries muster's `traceparent` naming the upstream span.
        let outgoing = super::spans::outgoing(record);
        let forwarded = self.relays.forward(&self.upstreams, f, declared);
        let forwarded = crate::trace::carrying(outgoing, forwarded).await;
        super::spans::upstream(record, upstream_start);
        let result = match forwarded {
            Forwarded::Reply(reply) => reply,
            Forwarded::InputRequired(result) => {
                record.upstream_ms = Some(sent.elapsed().as_secs_f64() * 1000.0);
                record.verdict = "input-required";
                return Ok(result);
            }
            Forwarded::Refused(code, message) => {
                record.codes.push(code.into());
                let mut f = Failure::new(Some(to.id.to_owned()), rpc::INVALID_PARAMS, message);
                f.data = Some(serde_json::json!({"code": code}));
                return Err(f);
            }
        };
        record.upstream_ms = Some(sent.elapsed().as_secs_f64() * 1000.0);
        match result {
            Ok(raw) => {
                record.verdict = "forwarded";
                // A drift let through (`on_mismatch = "warn"`) rides in the
                // answer, as the log has it.
                let mut details = serde_json::Map::new();
                if let Some(drift) = &drift {
                    details.insert("drift".into(), serde_json::json!(drift));
                }
                let ask = shape::Ask {
                    server: &target.server,
                    tool: &target.tool,
                    called: to.name,
                    turn_left: self.turn_budget(),
                    details,
                };
                let shaped = self.shape(ask, raw).await;
                record.codes.extend(shaped.codes);
                record.result_tokens = Some(shaped.tokens);
                Ok(shaped.text)
            }
            Err(UpstreamError::Rpc { code, message }) => {
                record.verdict = "upstream-failed";
                record.codes.push("upstream-error".into());
                Err(Failure::new(
                    Some(to.id.to_owned()),
                    code,
                    UpstreamError::Rpc { code, message }.sentence(&target.server),
                ))
            }
            Err(e) => {
                record.verdict = "upstream-failed";
                record.codes.push(e.code().into());
                let meta =
                    serde_json::json!({"upstream": {"code": e.code(), "server": target.server}});
                Ok(tool_error(&e.sentence(&target.server), &meta))
            }
        }
    }
}
