//! Streamable HTTP to an upstream MCP server: each message is one POST to
//! the server's `url`; the answer is a JSON message or an event stream of
//! messages, each routed as a stdio line would be. A server of the
//! handshake revisions keeps its session in `Mcp-Session-Id`, and may send
//! notifications (`tools/list_changed`) on a GET stream muster keeps open.
//!
//! The block's `headers` are filled from muster's environment here, when
//! the connection is made, and live only in this connection's requests:
//! they are marked sensitive, and no message muster writes quotes them.
//! With `[mcp.oauth]`, each request carries the access token `oauth` holds,
//! and one the server refuses (401) is sent once more with a new token.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::{Conn, MAX_MESSAGE_BYTES, ServerSpec, UpstreamError, route, short};

const SESSION: &str = "mcp-session-id";

/// One server's endpoint and its session.
pub(super) struct Endpoint {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The block's headers, filled; sensitive.
    headers: HeaderMap,
    /// The block's OAuth client credentials, when it has them.
    credentials: Option<Box<super::oauth::Credentials>>,
    /// The session the server gave at `initialize`, if any.
    session: Mutex<Option<HeaderValue>>,
}

impl Endpoint {
    /// The endpoint at `url`, its headers filled.
    ///
    /// # Errors
    /// What is wrong, naming the server, the header and any variable, never
    /// a header's value.
    pub(super) fn new(spec: &ServerSpec, url: &str) -> Result<Self, String> {
        let url =
            reqwest::Url::parse(url).map_err(|e| format!("has a url muster cannot read ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "has a url with scheme {:?}: muster reaches MCP servers over http or https",
                url.scheme()
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, written) in &spec.headers {
            let key = format!("headers.{name}");
            let value =
                crate::policy::expand_vars(written, &spec.name, &key).map_err(|e| e.to_string())?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("has a header name muster cannot send ({key})"))?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                format!("has a value for {key} that is not a valid HTTP header value once filled")
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        // Whoever installs a provider first wins; ring is muster's (as
        // discovery's).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not be reached: {}", e.without_url()))?;
        let credentials = spec
            .oauth
            .as_ref()
            .map(|oauth| super::oauth::Credentials::new(&spec.name, oauth).map(Box::new))
            .transpose()?;
        Ok(Self {
            client,
            url,
            headers,
            credentials,
            session: Mutex::new(None),
        })
    }

    /// The access tokens this connection got (none without `oauth`).
    pub(super) fn tokens(&self) -> Vec<String> {
        self.credentials
            .as_ref()
            .map(|c| c.issued())
            .unwrap_or_default()
    }

    fn session(&self) -> Option<HeaderValue> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn request(&self, method: reqwest::Method, version: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, self.url.clone())
            .headers(self.headers.clone());
        if let Some(session) = self.session() {
            request = request.header(SESSION, session);
        }
        request.header("mcp-protocol-version", version)
    }

    /// POSTs one message (`body`) and routes every message the answer
    /// holds to `conn`, until the answer ends.
    ///
    /// # Errors
    /// The server could not be reached, refused the POST, or answered what
    /// muster cannot read; a JSON-RPC error in the answer is routed instead.
    pub(super) async fn post(
        &self,
        conn: &Conn,
        (method, trace): (&str, Option<&crate::trace::Outgoing>),
        version: &str,
        body: String,
    ) -> Result<(), UpstreamError> {
        let make = |body: String| {
            let mut request = self
                .request(reqwest::Method::POST, version)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json, text/event-stream");
            if version == super::UPSTREAM_VERSIONS[0] {
                request = request.header("mcp-method", method);
            }
            // W3C Trace Context: muster's span, and the caller's state as
            // bounded (only valid members: always a valid header value).
            if let Some(trace) = trace {
                request = request.header("traceparent", trace.traceparent.as_str());
                if let Some(state) = &trace.tracestate {
                    request = request.header("tracestate", state.as_str());
                }
            }
            request.body(body)
        };
        let answer = self.send(make, body).await?;
        let status = answer.status();
        // Only an answer that succeeded starts a session: the Python SDK's
        // server names a fresh session id on its 400 to a request without
        // one, and forgets it at once.
        if status.is_success()
            && let Some(session) = answer.headers().get(SESSION)
        {
            let mut held = self.session.lock().unwrap_or_else(|e| e.into_inner());
            if held.is_none() {
                *held = Some(session.clone());
            }
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Ok(());
        }
        if status == reqwest::StatusCode::NOT_FOUND && self.session().is_some() {
            let why = "ended muster's session (HTTP 404); muster starts a new one on the next call";
            conn.end(why.into());
            return Err(UpstreamError::Exited {
                message: why.into(),
            });
        }
        let streams = answer
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if streams && status.is_success() {
            return read_events(conn, answer).await;
        }
        let bytes = read_bounded(answer).await?;
        if !status.is_success() {
            // Refused credentials are that, whatever the body holds (a
            // JSON-RPC error included): the block's headers are to check.
            if matches!(status.as_u16(), 401 | 403) {
                let check = if self.credentials.is_some() {
                    "a new access token too; check the block's oauth scope and resource"
                } else {
                    "check the block's headers"
                };
                return Err(UpstreamError::BadResponse {
                    message: format!("refused muster's credentials (HTTP {status}); {check}"),
                });
            }
            // Otherwise a JSON-RPC error in the body says more than the status.
            if is_rpc_error(&bytes) {
                let _ = route(conn, &bytes);
                return Ok(());
            }
            let mut tokens = crate::secrets::Secrets::default();
            for token in self.tokens() {
                tokens.keep(&token);
            }
            // Redacted before it is cut short, so no part of a token is left.
            return Err(UpstreamError::BadResponse {
                message: format!(
                    "answered HTTP {status}: {}",
                    short(&tokens.redact(&String::from_utf8_lossy(&bytes)))
                ),
            });
        }
        // A server request over HTTP gets no answer here: muster keeps no
        // stream open to answer on.
        let _ = route(conn, &bytes);
        Ok(())
    }

    /// Sends the request `make` builds around `body`, with the access
    /// token when the block has OAuth credentials; a 401 is answered by
    /// one more try with a new token.
    ///
    /// # Errors
    /// The server could not be reached, or no token could be had.
    async fn send<B: Clone>(
        &self,
        make: impl Fn(B) -> reqwest::RequestBuilder,
        body: B,
    ) -> Result<reqwest::Response, UpstreamError> {
        let unreached = |e: reqwest::Error| UpstreamError::Exited {
            message: format!("could not be reached ({})", e.without_url()),
        };
        let no_token = |message: String| UpstreamError::BadResponse { message };
        let Some(credentials) = &self.credentials else {
            return make(body).send().await.map_err(unreached);
        };
        let token = credentials.bearer(None).await.map_err(no_token)?;
        let answer = make(body.clone())
            .header(header::AUTHORIZATION, token.clone())
            .send()
            .await
            .map_err(unreached)?;
        if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(answer);
        }
        let token = credentials.bearer(Some(&token)).await.map_err(no_token)?;
        make(body)
            .header(header::AUTHORIZATION, token)
            .send()
            .await
            .map_err(unreached)
    }

    /// Ends the session at the server (best effort, at most 2 s).
    pub(super) async fn close(&self) {
        if self.session().is_none() {
            return;
        }
        let delete = self.send(
            |()| self.request(reqwest::Method::DELETE, super::UPSTREAM_VERSIONS[1]),
            (),
        );
        let _ = tokio::time::timeout(Duration::from_secs(2), delete).await;
    }
}

fn is_rpc_error(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(rename = "error")]
        _error: serde::de::IgnoredAny,
    }
    serde_json::from_slice::<Shape>(bytes).is_ok()
}

/// The answer's body, at most [`MAX_MESSAGE_BYTES`].
async fn read_bounded(mut answer: reqwest::Response) -> Result<Vec<u8>, UpstreamError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| UpstreamError::Exited {
        message: format!("broke off its answer ({})", e.without_url()),
    })? {
        if bytes.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Err(UpstreamError::BadResponse {
                message: format!("a message over {MAX_MESSAGE_BYTES} bytes"),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Reads an event stream, routing each event's data as one message, until
/// the stream ends. An event over [`MAX_MESSAGE_BYTES`] ends it as
/// unreadable.
async fn read_events(conn: &Conn, mut answer: reqwest::Response) -> Result<(), UpstreamError> {
    let mut events = Events::default();
    while let Some(chunk) = answer.chunk().await.map_err(|e| UpstreamError::Exited {
        message: format!("broke off its event stream ({})", e.without_url()),
    })? {
        for message in events.push(&chunk)? {
            let _ = route(conn, &message);
        }
    }
    Ok(())
}

/// A Server-Sent Events parser: bytes in, each event's `data` out.
#[derive(Default)]
struct Events {
    line: Vec<u8>,
    data: Vec<u8>,
}

impl Events {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, UpstreamError> {
        let mut out = Vec::new();
        for &byte in chunk {
            if byte != b'\n' {
                self.line.push(byte);
                if self.line.len() > MAX_MESSAGE_BYTES {
                    return Err(UpstreamError::BadResponse {
                        message: format!("an event over {MAX_MESSAGE_BYTES} bytes"),
                    });
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(std::mem::take(&mut self.data));
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                if self.data.len() > MAX_MESSAGE_BYTES {
                    return Err(UpstreamError::BadResponse {
                        message: format!("an event over {MAX_MESSAGE_BYTES} bytes"),
                    });
                }
            }
            // `event:`, `id:`, `retry:` and comments carry nothing muster reads.
        }
        Ok(out)
    }
}

/// Keeps the server's GET stream open while the connection lives, so a
/// notification the server sends outside an answer (`tools/list_changed`)
/// is heard. A server that offers none (405) is not asked again; a stream
/// that ends is opened again after a second.
pub(super) async fn listen(conn: std::sync::Arc<Conn>) {
    let super::Wire::Http(endpoint) = &conn.wire else {
        return;
    };
    while conn.alive.load(Ordering::Acquire) {
        let version = *conn.version.lock().unwrap_or_else(|e| e.into_inner());
        let get = async {
            let make = |()| {
                endpoint
                    .request(reqwest::Method::GET, version)
                    .header(header::ACCEPT, "text/event-stream")
            };
            let answer = endpoint.send(make, ()).await.ok()?;
            if !answer.status().is_success() {
                return Some(answer.status());
            }
            let _ = read_events(&conn, answer).await;
            None
        };
        tokio::select! {
            _ = conn.stopped.notified() => return,
            status = get => {
                if status.is_some_and(|s| s.is_client_error()) {
                    return;
                }
            }
        }
        tokio::select! {
            _ = conn.stopped.notified() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_on_blank_lines_and_data_lines_joined() {
        let mut events = Events::default();
        let out = events
            .push(b"event: message\r\ndata: {\"a\":\ndata: 1}\r\n\r\n: comment\n\ndata: x")
            .unwrap();
        assert_eq!(out, vec![b"{\"a\":\n1}".to_vec()]);
        let out = events.push(b"y\n\n").unwrap();
        assert_eq!(out, vec![b"xy".to_vec()]);
    }
}
