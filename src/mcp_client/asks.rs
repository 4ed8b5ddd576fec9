//! Requests a server sends its client (elicitation, sampling, roots), and
//! what muster declares it can answer. A connection declares, at its
//! handshake, only the capabilities its [`Declared`] holds; a request of a
//! declared kind goes to the connection's [`AskSink`] while one is set (a
//! call that relays is in flight on it) and is answered later with
//! [`Conn::respond`]. Any other request of the server's is answered at once
//! by [`super::replies::route`]. It decides nothing about where an ask goes
//! next: the gateway does.

use serde_json::Value;
use serde_json::value::RawValue;

use super::Conn;
use crate::policy::Relayed;

/// The most bytes of one capability object of a client's muster declares
/// upstream as the client wrote it; a longer one is declared as `{}`.
pub const MAX_CAPABILITY_BYTES: usize = 4096;

/// The client capabilities a connection declares: each relayed kind with
/// the object declared for it (the chat's client's own, or `{}`), in
/// [`Relayed::ALL`]'s order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Declared(Vec<(Relayed, String)>);

impl Declared {
    /// Every kind of `relay`, each declared as `{}` (discovery lists the
    /// tools a server offers to a client that can answer all of them).
    pub fn all_of(relay: &[Relayed]) -> Self {
        Self(
            Relayed::ALL
                .into_iter()
                .filter(|r| relay.contains(r))
                .map(|r| (r, "{}".to_string()))
                .collect(),
        )
    }

    /// The kinds of `relay` the client's `capabilities` object declares,
    /// each with the object it declared (kept only when it is an object of
    /// at most [`MAX_CAPABILITY_BYTES`]; else `{}`).
    pub fn of_client(relay: &[Relayed], capabilities: Option<&Value>) -> Self {
        let Some(Value::Object(caps)) = capabilities else {
            return Self::default();
        };
        Self(
            Relayed::ALL
                .into_iter()
                .filter(|r| relay.contains(r))
                .filter_map(|r| {
                    let declared = caps.get(r.key())?;
                    let text = match declared {
                        Value::Object(_) => serde_json::to_string(declared).ok()?,
                        _ => return None,
                    };
                    Some((
                        r,
                        if text.len() <= MAX_CAPABILITY_BYTES {
                            text
                        } else {
                            "{}".into()
                        },
                    ))
                })
                .collect(),
        )
    }

    /// Whether it declares nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The kinds it declares.
    pub fn kinds(&self) -> Vec<Relayed> {
        self.0.iter().map(|(r, _)| *r).collect()
    }

    /// Whether it declares `kind`.
    pub fn has(&self, kind: Relayed) -> bool {
        self.0.iter().any(|(r, _)| *r == kind)
    }

    /// The `capabilities` object it is declared as.
    pub fn json(&self) -> String {
        let members: Vec<String> = self
            .0
            .iter()
            .map(|(r, object)| format!(r#""{}":{object}"#, r.key()))
            .collect();
        format!("{{{}}}", members.join(","))
    }
}

/// A request the server sent its client: the server's id for it, its kind
/// and its params as sent (`{}` when it sent none); answered with
/// [`ServerAsk::answer`] on the connection it came on.
#[derive(Debug)]
pub struct ServerAsk {
    conn: std::sync::Weak<Conn>,
    /// The server's id, to answer under.
    pub id: Box<RawValue>,
    /// What it asks.
    pub kind: Relayed,
    /// Its params, as the server sent them.
    pub params: Box<RawValue>,
}

/// Where a connection's asks go while a relaying call is in flight on it.
pub type AskSink = tokio::sync::mpsc::Sender<ServerAsk>;

/// How many asks a relaying call holds before the server's next ones are
/// answered with an error.
pub const ASKS_BUFFERED: usize = 8;

impl ServerAsk {
    /// Answers it on the connection it came on (nothing, when that
    /// connection is gone): with `result` (JSON text), or with a JSON-RPC
    /// error.
    pub async fn answer(&self, outcome: Result<&RawValue, (i64, &str)>) {
        if let Some(conn) = self.conn.upgrade() {
            conn.respond(&self.id, outcome).await;
        }
    }
}

impl Conn {
    /// Sends the server's asks to `sink` from now on (or, with `None`,
    /// answers them at once again).
    pub(crate) fn set_asks(&self, sink: Option<AskSink>) {
        *self.asks.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    }

    /// What the connection declared at its handshake.
    pub(crate) fn declared(&self) -> Declared {
        self.declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Hands a request of the server's to the sink, when its kind was
    /// declared and a sink is set; the request back when not (to be
    /// answered at once).
    pub(super) fn ask(&self, id: &RawValue, method: &str, params: Option<&RawValue>) -> bool {
        let Some(kind) = Relayed::of_method(method) else {
            return false;
        };
        if !self
            .declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .has(kind)
        {
            return false;
        }
        let Some(sink) = self.asks.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
            return false;
        };
        let params = params.map_or_else(
            || RawValue::from_string("{}".into()).expect("{} is JSON"),
            RawValue::to_owned,
        );
        sink.try_send(ServerAsk {
            conn: self.me.clone(),
            id: id.to_owned(),
            kind,
            params,
        })
        .is_ok()
    }

    /// Answers the server's request `id`: with `result` (JSON text), or with
    /// a JSON-RPC error.
    async fn respond(&self, id: &RawValue, outcome: Result<&RawValue, (i64, &str)>) {
        let line = match outcome {
            Ok(result) => format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
                id.get(),
                result.get()
            ),
            Err((code, message)) => format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":{}}}}}"#,
                id.get(),
                serde_json::to_string(message).unwrap_or_else(|_| "\"\"".into())
            ),
        };
        let _ = self.send(&line).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_declares_only_what_the_server_may_relay() {
        let caps = serde_json::json!({"elicitation": {"form": {}}, "sampling": {}, "roots": true, "x": {}});
        let d = Declared::of_client(&[Relayed::Elicitation, Relayed::Roots], Some(&caps));
        assert_eq!(d.json(), r#"{"elicitation":{"form":{}}}"#);
        assert!(d.has(Relayed::Elicitation) && !d.has(Relayed::Roots));
        assert!(Declared::of_client(&Relayed::ALL, None).is_empty());
        assert_eq!(
            Declared::all_of(&[Relayed::Roots, Relayed::Elicitation]).json(),
            r#"{"elicitation":{},"roots":{}}"#
        );
    }

    #[test]
    fn a_huge_capability_object_is_declared_empty() {
        let big = "x".repeat(MAX_CAPABILITY_BYTES);
        let caps = serde_json::json!({"sampling": {"note": big}});
        assert_eq!(
            Declared::of_client(&[Relayed::Sampling], Some(&caps)).json(),
            r#"{"sampling":{}}"#
        );
    }
}
