//! OAuth 2.1 client credentials for an HTTP server (`[mcp.oauth]`): muster
//! asks the server's authorization server for an access token (RFC 6749
//! §4.4, with `scope`, `resource` (RFC 8707) and `audience` as the block
//! says), keeps it until shortly before it expires, and gets a new one
//! when it is that old or the server refused it (the caller retries once).
//!
//! The secret is filled from muster's environment when the connection is
//! made; the secret and the token live only in this connection's requests,
//! as sensitive header values. No message muster writes quotes either: a
//! refusal names the token endpoint and the OAuth `error` code only.

use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderValue};

use crate::policy::{ClientAuth, UpstreamOAuth};

/// Longest a token request may take.
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest token response read, in bytes.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;
/// Longest access token sent on, in bytes.
pub const MAX_ACCESS_TOKEN_BYTES: usize = 16 * 1024;
/// A token is replaced this long before it expires (half its lifetime
/// when that is shorter), so no request carries one about to lapse.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(60);

/// One token, as the `Authorization` value, and when to replace it.
struct Held {
    bearer: HeaderValue,
    /// `None`: the server gave no `expires_in`; kept until refused.
    refresh_at: Option<Instant>,
}

/// The client credentials of one connection and the token they got.
pub(super) struct Credentials {
    oauth: UpstreamOAuth,
    secret: String,
    client: reqwest::Client,
    held: tokio::sync::Mutex<Option<Held>>,
    /// The last tokens got, newest last: what is redacted from what the
    /// server sends back.
    issued: std::sync::Mutex<Vec<String>>,
}

/// Tokens of one connection remembered for redaction.
const REMEMBERED: usize = 4;

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token_url", &self.oauth.token_url)
            .field("client_id", &self.oauth.client_id)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The credentials of server `name`, the secret filled now.
    ///
    /// # Errors
    /// The secret's variable is not set (naming it, never a value).
    pub(super) fn new(name: &str, oauth: &UpstreamOAuth) -> Result<Self, String> {
        let secret = crate::policy::expand_vars(&oauth.client_secret, name, "oauth.client_secret")
            .map_err(|e| e.to_string())?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TOKEN_TIMEOUT)
            .build()
            .map_err(|e| format!("could not be reached: {}", e.without_url()))?;
        Ok(Self {
            oauth: oauth.clone(),
            secret,
            client,
            held: tokio::sync::Mutex::new(None),
            issued: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The `Authorization` value to send: the token held while it is
    /// fresh, else a new one. With `refused` (the value the server just
    /// refused), a new one unless another request has replaced it since.
    ///
    /// # Errors
    /// No token could be had: the sentence says why, naming the token
    /// endpoint, never the secret or a token.
    pub(super) async fn bearer(
        &self,
        refused: Option<&HeaderValue>,
    ) -> Result<HeaderValue, String> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.as_ref() {
            let replaced = refused.is_some_and(|r| r != h.bearer);
            let fresh = refused.is_none() && h.refresh_at.is_none_or(|at| Instant::now() < at);
            if replaced || fresh {
                return Ok(h.bearer.clone());
            }
        }
        let new = self.fetch().await.map_err(|why| {
            format!(
                "could not get an access token from {} ({why})",
                crate::names::escape(&self.oauth.token_url)
            )
        })?;
        let bearer = new.bearer.clone();
        if let Some(token) = bearer.to_str().ok().and_then(|b| b.strip_prefix("Bearer ")) {
            let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
            issued.push(token.to_string());
            let past = issued.len().saturating_sub(REMEMBERED);
            issued.drain(..past);
        }
        *held = Some(new);
        Ok(bearer)
    }

    /// The last tokens this connection got, to redact from what the server
    /// sends back (a server that echoes its `Authorization`).
    pub(super) fn issued(&self) -> Vec<String> {
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The token request's form; with `post`, the client's id and secret
    /// in it (`client_secret_post`).
    fn form(&self, post: bool) -> String {
        let o = &self.oauth;
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        for (key, value) in [
            ("scope", &o.scope),
            ("resource", &o.resource),
            ("audience", &o.audience),
        ] {
            if let Some(value) = value {
                form.append_pair(key, value);
            }
        }
        if post {
            form.append_pair("client_id", &o.client_id);
            form.append_pair("client_secret", &self.secret);
        }
        form.finish()
    }

    /// Asks the token endpoint for a token.
    async fn fetch(&self) -> Result<Held, String> {
        let o = &self.oauth;
        let post = o.auth_method == ClientAuth::Post;
        let mut request = self
            .client
            .post(&o.token_url)
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(self.form(post));
        if !post {
            // RFC 6749 §2.3.1: each part form-encoded before Basic.
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(encode(&o.client_id), Some(encode(&self.secret)));
        }
        let sent = Instant::now();
        let mut answer = request
            .send()
            .await
            .map_err(|e| format!("it could not be reached: {}", e.without_url()))?;
        let status = answer.status();
        let mut body = Vec::new();
        while let Some(chunk) = answer
            .chunk()
            .await
            .map_err(|e| format!("it broke off its answer: {}", e.without_url()))?
        {
            if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
                return Err(format!(
                    "its answer is over {MAX_TOKEN_RESPONSE_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        held(status, &body, sent)
    }
}

/// The token a token endpoint's answer (`status`, `body`) gives, asked for
/// at `sent`.
fn held(status: reqwest::StatusCode, body: &[u8], sent: Instant) -> Result<Held, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        access_token: Option<String>,
        token_type: Option<String>,
        expires_in: Option<serde_json::Value>,
        error: Option<String>,
    }
    let answer = serde_json::from_slice::<Answer>(body).ok();
    if !status.is_success() {
        // Only the OAuth error code: it is short and a fixed vocabulary;
        // the description is the server's own text.
        let code = answer
            .and_then(|a| a.error)
            .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_graphic()))
            .map(|e| format!(" {}", crate::names::escape(&e)))
            .unwrap_or_default();
        return Err(format!("it answered HTTP {}{code}", status.as_u16()));
    }
    let Some(Answer {
        access_token: Some(token),
        token_type,
        expires_in,
        ..
    }) = answer
    else {
        return Err("its answer has no access_token".into());
    };
    if token_type.is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
        return Err("it gave a token that is not a bearer token (token_type)".into());
    }
    if token.is_empty() || token.len() > MAX_ACCESS_TOKEN_BYTES {
        return Err(format!(
            "it gave an access token that is empty or over {MAX_ACCESS_TOKEN_BYTES} bytes"
        ));
    }
    let mut bearer = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "it gave an access token that cannot be sent in a header".to_string())?;
    bearer.set_sensitive(true);
    // A number, or a string holding one (some servers send that).
    let lifetime = expires_in.and_then(|v| match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    });
    Ok(Held {
        bearer,
        refresh_at: lifetime.map(|secs| refresh_at(sent, secs)),
    })
}

/// When a token asked for at `sent`, living `secs`, is replaced:
/// [`REFRESH_BEFORE`] before it lapses, or halfway for a short one.
fn refresh_at(sent: Instant, secs: u64) -> Instant {
    let life = Duration::from_secs(secs);
    sent + life - REFRESH_BEFORE.min(life / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

    #[test]
    fn a_token_is_replaced_before_it_lapses() {
        let t = Instant::now();
        assert_eq!(refresh_at(t, 600), t + Duration::from_secs(540));
        assert_eq!(refresh_at(t, 10), t + Duration::from_secs(5));
        assert_eq!(refresh_at(t, 0), t);
        let h = held(
            StatusCode::OK,
            br#"{"access_token":"abc","token_type":"Bearer","expires_in":"300"}"#,
            t,
        )
        .unwrap();
        assert_eq!(h.bearer, "Bearer abc");
        assert!(h.bearer.is_sensitive());
        assert_eq!(h.refresh_at, Some(t + Duration::from_secs(240)));
        let kept = held(StatusCode::OK, br#"{"access_token":"abc"}"#, t).unwrap();
        assert_eq!(kept.refresh_at, None);
    }

    #[test]
    fn a_refusal_names_the_oauth_error_and_nothing_the_server_wrote() {
        let e = held(
            StatusCode::UNAUTHORIZED,
            br#"{"error":"invalid_client","error_description":"secret s3cr3t is wrong"}"#,
            Instant::now(),
        )
        .err()
        .unwrap();
        assert_eq!(e, "it answered HTTP 401 invalid_client");
        let dpop = held(
            StatusCode::OK,
            br#"{"access_token":"abc","token_type":"DPoP"}"#,
            Instant::now(),
        );
        assert!(dpop.is_err());
        assert!(held(StatusCode::OK, b"{}", Instant::now()).is_err());
    }
}
