//! JSON-RPC 2.0 as MCP uses it: one message in, at most one answer out,
//! with the standard error codes for what cannot be read or served.

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The message is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The message is JSON but not a JSON-RPC request (or a batch, which MCP
/// no longer allows).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method, or one muster does not serve.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's params are wrong: a missing or non-string tool name, an
/// unknown tool, arguments that are not an object.
pub const INVALID_PARAMS: i64 = -32602;
/// muster failed to answer (its session store is unreachable).
pub const INTERNAL_ERROR: i64 = -32603;
/// The request declared a protocol revision muster does not speak
/// (2026-07-28's `UnsupportedProtocolVersionError`); `data` lists the
/// supported ones.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The chat's pinned roster no longer holds under the current policies.
pub const TOOL_PIN_MISMATCH: i64 = -32010;
/// No chat has the id the request addresses.
pub const CHAT_NOT_FOUND: i64 = -32011;
/// A `subscriptions/listen` past the bound on open listen streams (per
/// chat or in all); `data.code` is `too-many-listen-streams`.
pub const TOO_MANY_STREAMS: i64 = -32012;
/// A `tools/call` past the caller's limit (`[auth.limits]`, docs/auth.md);
/// `data` holds `code` (`rate-limited`), `scope` (`caller` or `tool`),
/// `per_minute` and `retry_after_secs`.
pub const RATE_LIMITED: i64 = -32013;
/// A request the client cancelled (`notifications/cancelled`) while its
/// answer was still owed on an HTTP POST (LSP's code for it): its server
/// was told, nothing of its result is sent.
pub const REQUEST_CANCELLED: i64 = -32800;

/// The most bytes one message may hold: 4 MiB.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// One message read.
#[derive(Debug)]
pub enum Message {
    /// A request: it gets an answer.
    Request {
        /// Its id, as sent.
        id: Box<RawValue>,
        /// Its method.
        method: String,
        /// Its params.
        params: Option<Value>,
    },
    /// A notification: it gets none.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Option<Value>,
    },
    /// A response: to a request muster relayed to the client (see
    /// `relay`), or to none (then ignored).
    Response {
        /// Its id.
        id: Box<RawValue>,
        /// Its `result`, or its `error`'s code and message.
        outcome: Result<Box<RawValue>, (i64, String)>,
    },
}

/// Why a message cannot be served, and the id to answer under (null when
/// it could not be read).
#[derive(Debug, Clone)]
pub struct Failure {
    /// The request's id, when it had a readable one.
    pub id: Option<Box<RawValue>>,
    /// The JSON-RPC code.
    pub code: i64,
    /// What is wrong and what to send instead.
    pub message: String,
    /// Typed details, when there are any.
    pub data: Option<Value>,
}

impl Failure {
    /// A failure with no data.
    pub fn new(id: Option<Box<RawValue>>, code: i64, message: impl Into<String>) -> Self {
        Self {
            id,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error response's JSON text.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Body<'a> {
            code: i64,
            message: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            data: Option<&'a Value>,
        }
        let body = serde_json::to_string(&Body {
            code: self.code,
            message: &self.message,
            data: self.data.as_ref(),
        })
        .unwrap_or_else(|_| format!(r#"{{"code":{},"message":"error"}}"#, self.code));
        let id = self.id.as_deref().map_or("null", RawValue::get);
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{body}}}"#)
    }
}

/// A result response's JSON text; `result` is JSON text.
pub fn result(id: &RawValue, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.get())
}

/// A notification's JSON text.
pub fn notification(method: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#)
}

/// The `_meta` key naming the subscription a message belongs to
/// (2026-07-28): the id of the `subscriptions/listen` request.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A notification on the subscription `listen` opened (2026-07-28), its
/// `params` being `params` (an object's text) tagged with the
/// subscription's id.
pub fn tagged(method: &str, listen: &RawValue, params: &str) -> String {
    let meta = format!(r#""_meta":{{"{SUBSCRIPTION_ID}":{}}}"#, listen.get());
    let params = match params.trim_start().strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => format!("{{{meta}}}"),
        Some(rest) => format!("{{{meta},{rest}"),
        None => format!("{{{meta}}}"),
    };
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#)
}

/// The answer that ends the subscription `listen` opened, when the server
/// closes it (2026-07-28).
pub fn listen_ended(listen: &RawValue) -> String {
    result(
        listen,
        &format!(
            r#"{{"resultType":"complete","_meta":{{"{SUBSCRIPTION_ID}":{}}}}}"#,
            listen.get()
        ),
    )
}

/// Reads one message.
///
/// # Errors
/// [`PARSE_ERROR`] for bytes that are not JSON (or over
/// [`MAX_MESSAGE_BYTES`]); [`INVALID_REQUEST`] for JSON that is not one
/// JSON-RPC 2.0 message (a batch, a missing or wrong `jsonrpc`, a method
/// that is not a string, an id that is neither a string nor an integer);
/// [`INVALID_PARAMS`] for a request or notification whose `params` is
/// neither an object nor an array.
pub fn parse(bytes: &[u8]) -> Result<Message, Failure> {
    #[derive(Deserialize)]
    struct Raw {
        jsonrpc: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        id: Option<Box<RawValue>>,
        method: Option<Value>,
        params: Option<Value>,
        // `"result": null` is a result (a client's answer with no value), not an absent one.
        #[serde(default, deserialize_with = "present")]
        result: Option<Box<RawValue>>,
        error: Option<Value>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
        Box::<RawValue>::deserialize(d).map(Some)
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(Failure::new(
            None,
            PARSE_ERROR,
            format!("the message is over {MAX_MESSAGE_BYTES} bytes"),
        ));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        // Text that is not JSON is a parse error whatever it starts with.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            return Err(Failure::new(
                None,
                PARSE_ERROR,
                format!("the message is not JSON: {e}"),
            ));
        }
        return Err(Failure::new(
            None,
            INVALID_REQUEST,
            "batches are not part of MCP (since 2025-06-18): send one JSON-RPC message at a time",
        ));
    }
    let raw: Raw = match serde_json::from_slice(bytes) {
        Ok(raw) => raw,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return Err(Failure::new(
                None,
                PARSE_ERROR,
                format!("the message is not JSON: {e}"),
            ));
        }
        Err(e) => {
            return Err(Failure::new(
                None,
                INVALID_REQUEST,
                format!("the message is not a JSON-RPC 2.0 object: {e}"),
            ));
        }
    };
    let id = match raw.id {
        Some(id) => {
            let text = id.get();
            let string = text.starts_with('"');
            let integer = serde_json::from_str::<i64>(text).is_ok();
            if !string && !integer {
                return Err(Failure::new(
                    None,
                    INVALID_REQUEST,
                    format!(
                        "the id {} is neither a string nor an integer",
                        shorten(text)
                    ),
                ));
            }
            Some(id)
        }
        None => None,
    };
    if raw.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(Failure::new(
            id,
            INVALID_REQUEST,
            "`jsonrpc` must be \"2.0\"",
        ));
    }
    // JSON-RPC 2.0: `params`, when present, is an object or an array.
    if raw.method.is_some()
        && raw
            .params
            .as_ref()
            .is_some_and(|p| !(p.is_object() || p.is_array()))
    {
        return Err(Failure::new(
            id,
            INVALID_PARAMS,
            "`params` must be an object (or an array), or left out",
        ));
    }
    match (raw.method, id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request {
            id,
            method,
            params: raw.params,
        }),
        (Some(Value::String(method)), None) => Ok(Message::Notification {
            method,
            params: raw.params,
        }),
        (Some(_), id) => Err(Failure::new(
            id,
            INVALID_REQUEST,
            "`method` must be a string",
        )),
        (None, Some(id)) if raw.result.is_some() || raw.error.is_some() => {
            let outcome = match (raw.result, raw.error) {
                (Some(result), None) => Ok(result),
                (_, error) => {
                    let error = error.unwrap_or_default();
                    Err((
                        error
                            .get("code")
                            .and_then(Value::as_i64)
                            .unwrap_or(INTERNAL_ERROR),
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the client answered with an error")
                            .to_string(),
                    ))
                }
            };
            Ok(Message::Response { id, outcome })
        }
        (None, id) => Err(Failure::new(
            id,
            INVALID_REQUEST,
            "the message has no `method`: send a request or a notification",
        )),
    }
}

fn shorten(text: &str) -> String {
    crate::names::escape(&text.chars().take(60).collect::<String>())
}

/// The id (JSON text, as `notifications/cancelled` names it) of a
/// `tools/call` request, read without the rest: what a transport keys the
/// call by so a client's cancellation can stop it.
pub(crate) fn call_id(message: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let head: Head<'_> = serde_json::from_slice(message).ok()?;
    if head.method.as_deref() != Some("tools/call") {
        return None;
    }
    // As `notifications/cancelled` names it (`Value::to_string`).
    let id: serde_json::Value = serde_json::from_str(head.id?.get()).ok()?;
    Some(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &str) -> i64 {
        parse(bytes.as_bytes()).unwrap_err().code
    }

    #[test]
    fn each_bad_message_gets_its_code() {
        assert_eq!(code("{"), PARSE_ERROR);
        assert_eq!(code("not json"), PARSE_ERROR);
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            INVALID_REQUEST
        );
        assert_eq!(code(r#"{"id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
        assert_eq!(code("5"), INVALID_REQUEST);
        // Found by a hostile probe: text that is not JSON is a parse error
        // even when it starts like a batch; `params` that is neither an
        // object nor an array is invalid params.
        assert_eq!(code("[1,"), PARSE_ERROR);
        assert_eq!(code("[not json]"), PARSE_ERROR);
        for params in ["5", "\"x\"", "true"] {
            let message =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{params}}}"#);
            assert_eq!(code(&message), INVALID_PARAMS, "{message}");
        }
        assert!(parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#).is_ok());
    }

    #[test]
    fn the_id_is_echoed_as_sent() {
        let f = parse(br#"{"jsonrpc":"1","id":"a\u0062","method":"x"}"#).unwrap_err();
        assert!(f.to_json().contains(r#""id":"a\u0062""#), "{}", f.to_json());
        let Message::Request { id, method, .. } =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!((id.get(), method.as_str()), ("7", "ping"));
        assert_eq!(result(&id, "{}"), r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    }

    #[test]
    fn notifications_and_responses_are_told_apart() {
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Message::Response { outcome: Ok(_), .. })
        ));
        // A result of null is a result, not an error (a hostile probe found it answered as one).
        let Ok(Message::Response {
            outcome: Ok(result),
            ..
        }) = parse(br#"{"jsonrpc":"2.0","id":1,"result":null}"#)
        else {
            panic!("a response with a null result")
        };
        assert_eq!(result.get(), "null");
        assert!(matches!(
            parse(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
            Ok(Message::Request { .. })
        ));
    }
}
