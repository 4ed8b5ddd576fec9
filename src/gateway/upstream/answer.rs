//! What a server's answer to `tools/call` becomes before anyone else reads it: a result object
//! with muster's own `_meta` keys moved ([`super::super::own_meta`]) and each text in it with
//! the values muster filled redacted, and every failure's text
//! (a JSON-RPC error's message, an HTTP body, a stderr tail) with the values muster filled from
//! its environment redacted ([`crate::secrets`]), so no client, log line or file quotes them.

use super::{Conn, Reply, Server, UpstreamError, short};
use crate::discover::ServerSpec;
use crate::gateway::own_meta::from_upstream;
use crate::secrets::Secrets;
use serde_json::value::RawValue;
use std::sync::Arc;

/// The secrets muster fills into what it sends `spec`'s server.
fn secrets(spec: &ServerSpec) -> Secrets {
    Secrets::of_written(spec.written_secrets())
}

impl UpstreamError {
    /// The error with every secret of `spec` redacted from its text.
    pub(crate) fn redacted(self, spec: &ServerSpec) -> Self {
        self.hidden(&secrets(spec))
    }

    /// The error with every one of `secrets` redacted from its text.
    fn hidden(self, secrets: &Secrets) -> Self {
        let hide = |message: String| match secrets.redact(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(hidden) => hidden,
        };
        match self {
            UpstreamError::CannotStart { message } => UpstreamError::CannotStart {
                message: hide(message),
            },
            UpstreamError::Down {
                message,
                retry_in_secs,
            } => UpstreamError::Down {
                message: hide(message),
                retry_in_secs,
            },
            UpstreamError::Exited { message } => UpstreamError::Exited {
                message: hide(message),
            },
            UpstreamError::Rpc { code, message } => UpstreamError::Rpc {
                code,
                message: hide(message),
            },
            UpstreamError::BadResponse { message } => UpstreamError::BadResponse {
                message: hide(message),
            },
            other @ (UpstreamError::TimedOut { .. } | UpstreamError::Busy { .. }) => other,
        }
    }
}

impl Server {
    /// [`Server::connect`], with its failure's text redacted.
    pub(super) async fn open(&self) -> Result<Arc<Conn>, UpstreamError> {
        self.connect().await.map_err(|e| e.redacted(&self.spec))
    }
}

/// The answer `reply` (a `tools/call` response's result, or why there is none) as the gateway
/// passes it on for `spec`'s server, with the access `tokens` its connection got redacted too.
pub(super) fn of_call(reply: Reply, spec: &ServerSpec, tokens: &[String]) -> Reply {
    let mut secrets = secrets(spec);
    for token in tokens {
        secrets.keep(token);
    }
    match reply {
        Ok(raw) if raw.get().trim_start().starts_with('{') => from_upstream(raw)
            .and_then(|raw| hidden(raw, &secrets))
            .map_err(|why| UpstreamError::BadResponse {
                message: format!("a result muster cannot check: {why}"),
            }),
        Ok(raw) => Err(UpstreamError::BadResponse {
            // Redacted before it is cut short, so no part of a secret is left.
            message: format!(
                "a result that is not an object: {}",
                short(&secrets.redact(raw.get()))
            ),
        }),
        Err(e) => Err(e.hidden(&secrets)),
    }
}

/// `result` with every secret muster filled for its server redacted from each text in it
/// (issue 33, item 3: a server that echoes its environment, as server-everything's `get-env`
/// does, must not hand a client the values muster filled). Text that holds no secret and no
/// `\\u` escape (which could spell one) is passed on byte for byte without being parsed; text
/// that must be read and cannot be (a lone surrogate) is refused with why, never passed unread.
fn hidden(result: Box<RawValue>, secrets: &Secrets) -> Result<Box<RawValue>, String> {
    let text = result.get();
    if secrets.is_empty()
        || (matches!(secrets.redact(text), std::borrow::Cow::Borrowed(_)) && !text.contains("\\u"))
    {
        return Ok(result);
    }
    let mut value = serde_json::from_str::<serde_json::Value>(text)
        .map_err(|e| format!("its text cannot be read to redact secrets: {e}"))?;
    let mut todo = vec![&mut value];
    while let Some(v) = todo.pop() {
        match v {
            serde_json::Value::String(s) => {
                if let std::borrow::Cow::Owned(h) = secrets.redact(s) {
                    *s = h;
                }
            }
            serde_json::Value::Array(items) => todo.extend(items.iter_mut()),
            serde_json::Value::Object(members) => todo.extend(members.values_mut()),
            _ => {}
        }
    }
    RawValue::from_string(value.to_string()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_secret_echoed_in_a_result_is_redacted_wherever_it_is() {
        let mut secrets = Secrets::default();
        secrets.keep("s3cr3t-value");
        let raw = RawValue::from_string(
            r#"{"content":[{"type":"text","text":"KEY=s3cr3t-value"}],"structuredContent":{"env":{"KEY":"s3cr3t\u002dvalue"}}}"#.into(),
        )
        .unwrap();
        let shown = hidden(raw, &secrets).expect("readable");
        assert!(!shown.get().contains("s3cr3t"), "{}", shown.get());
        assert_eq!(shown.get().matches(crate::secrets::REDACTED).count(), 2);
        let plain = RawValue::from_string(r#"{"content":[]}"#.into()).unwrap();
        assert_eq!(
            hidden(plain, &secrets).expect("readable").get(),
            r#"{"content":[]}"#
        );
        // Text that must be read to be redacted and cannot be is refused, not passed on.
        let unreadable = RawValue::from_string(
            r#"{"content":[{"type":"text","text":"s3cr3t-value \ud800"}]}"#.into(),
        )
        .unwrap();
        assert!(hidden(unreadable, &secrets).is_err());
    }

    #[test]
    fn a_result_that_is_not_an_object_is_a_bad_response_and_an_object_passes() {
        let spec = ServerSpec::new("s", vec!["x".into()], "s.json".into());
        let raw = RawValue::from_string("[1]".into()).unwrap();
        assert!(matches!(
            of_call(Ok(raw), &spec, &[]),
            Err(UpstreamError::BadResponse { .. })
        ));
        let raw = RawValue::from_string("{\"content\":[]}".into()).unwrap();
        assert_eq!(
            of_call(Ok(raw), &spec, &[]).unwrap().get(),
            "{\"content\":[]}"
        );
        // A result speaking as muster beside a key serde cannot read is
        // refused, not forwarded as the server wrote it.
        let forged = r#"{"content":[],"_meta":{"\ud800":1,"dev.muster/gateway":{"check":"ok"}}}"#;
        let raw = RawValue::from_string(forged.into()).unwrap();
        let Err(UpstreamError::BadResponse { message }) = of_call(Ok(raw), &spec, &[]) else {
            panic!("a result muster cannot check is refused")
        };
        assert!(message.contains("cannot be read"), "{message}");
    }
}
