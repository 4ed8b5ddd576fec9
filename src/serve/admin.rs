//! Who may call `/v1/admin/*`: the bearer of the admin token, or, when no
//! token is set, anyone who can reach a service bound to loopback only. A
//! service bound beyond loopback without a token answers 403 there, so
//! binding to `0.0.0.0` never opens reloads to the network.
//!
//! It keeps the token's SHA-256 digest, never the token, and compares
//! digests in constant time; nothing here logs or renders a token.

use super::problem::ApiError;
use crate::auth::{digest, same_digest};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// The shortest admin token accepted, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;
/// The longest admin token accepted, in bytes.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// The admin token: only its digest is kept.
#[derive(Clone, Eq)]
pub struct AdminToken {
    digest: [u8; 32],
}

impl AdminToken {
    /// A token from `secret` (surrounding whitespace, such as a file's
    /// final newline, removed); `source` names where it came from (the
    /// token file's path, `MUSTER_ADMIN_TOKEN`) as the problem's file.
    ///
    /// # Errors
    /// A `usage` error when the token is shorter than [`MIN_TOKEN_BYTES`],
    /// longer than [`MAX_TOKEN_BYTES`] or holds a character other than
    /// visible ASCII (it travels in an `Authorization` header). The
    /// problem never quotes the token.
    pub fn new(secret: &str, source: &str) -> Result<Self, Error> {
        let secret = secret.trim();
        let refuse = |what: String| {
            Err(Error::new(
                ErrorKind::Usage,
                Problem::coded(code::ADMIN_TOKEN, format!("the admin token {what}"))
                    .in_file(source)
                    .help(format!(
                        "use {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES} visible ASCII characters, e.g. `openssl rand -hex 32`"
                    )),
            ))
        };
        if secret.len() < MIN_TOKEN_BYTES {
            return refuse(format!(
                "is {} bytes, shorter than {MIN_TOKEN_BYTES}",
                secret.len()
            ));
        }
        if secret.len() > MAX_TOKEN_BYTES {
            return refuse(format!(
                "is {} bytes, longer than {MAX_TOKEN_BYTES}",
                secret.len()
            ));
        }
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return refuse("holds a space, a control or a non-ASCII character".to_string());
        }
        Ok(Self {
            digest: digest(secret.as_bytes()),
        })
    }

    /// Whether `presented` is the token: digests compared in constant
    /// time, so neither the content nor the length of the token leaks
    /// through the answer's timing.
    fn matches(&self, presented: &[u8]) -> bool {
        let other = digest(presented);
        same_digest(&self.digest, &other)
    }
}

impl PartialEq for AdminToken {
    fn eq(&self, other: &Self) -> bool {
        same_digest(&self.digest, &other.digest)
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

/// Who may call the admin routes of one running service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admin {
    /// Whoever sends `Authorization: Bearer <token>`.
    Token(AdminToken),
    /// No token, bound to loopback: whoever reaches the port.
    Loopback,
    /// No token, bound beyond loopback: nobody (SIGHUP still reloads).
    Disabled,
}

impl Admin {
    /// The rule for a service bound to `addr` with `token`.
    pub fn new(addr: SocketAddr, token: Option<AdminToken>) -> Self {
        match token {
            Some(token) => Admin::Token(token),
            None if crate::loopback::ip(addr.ip()) => Admin::Loopback,
            None => Admin::Disabled,
        }
    }

    /// The start log line's `admin` member: `token`, `loopback` or
    /// `disabled`.
    pub fn code(&self) -> &'static str {
        match self {
            Admin::Token(_) => "token",
            Admin::Loopback => "loopback",
            Admin::Disabled => "disabled",
        }
    }

    /// The 401 or 403 answer to a request with `headers` for an admin
    /// route; `None` when it may go on.
    pub fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        match self {
            Admin::Loopback => None,
            Admin::Disabled => Some(ApiError::http(
                StatusCode::FORBIDDEN,
                "admin-disabled",
                "the admin routes are off",
                Problem::coded(code::ADMIN_DISABLED,
                    "the service listens beyond loopback and has no admin token, so it takes no admin request",
                )
                .in_file("authorization")
                .help("start it with --admin-token-file PATH (or MUSTER_ADMIN_TOKEN) and send `Authorization: Bearer <token>`, or reload with SIGHUP"),
            )
            .into_response()),
            Admin::Token(token) => {
                let presented = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| bearer(v.as_bytes()));
                match presented {
                    Some(p) if token.matches(p) => None,
                    presented => {
                        let message = if presented.is_some() {
                            "the bearer token is not the admin token"
                        } else {
                            "the request has no `Authorization: Bearer` header"
                        };
                        let mut response = ApiError::http(
                            StatusCode::UNAUTHORIZED,
                            "unauthorized",
                            "the request is not authorized",
                            Problem::coded(code::UNAUTHORIZED, message)
                                .in_file("authorization")
                                .help("send `Authorization: Bearer <token>` with the token the service was started with"),
                        )
                        .into_response();
                        response.headers_mut().insert(
                            header::WWW_AUTHENTICATE,
                            HeaderValue::from_static("Bearer realm=\"muster admin\""),
                        );
                        Some(response)
                    }
                }
            }
        }
    }
}

/// The credentials of `Authorization: Bearer <credentials>` (the scheme
/// case-insensitive, as RFC 9110 has it).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123";

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    fn status(refusal: Option<Response>) -> u16 {
        refusal.map_or(200, |r| r.status().as_u16())
    }

    #[test]
    fn only_the_bearer_of_the_token_is_let_in() {
        let admin = Admin::new(
            "0.0.0.0:8080".parse().unwrap(),
            Some(AdminToken::new(&format!("{SECRET}\n"), "t").unwrap()),
        );
        assert_eq!(admin.code(), "token");
        assert_eq!(
            status(admin.refusal(&headers(&format!("Bearer {SECRET}")))),
            200
        );
        assert_eq!(
            status(admin.refusal(&headers(&format!("bearer  {SECRET}")))),
            200
        );
        assert_eq!(
            status(admin.refusal(&headers(&format!("Bearer {SECRET}x")))),
            401
        );
        assert_eq!(
            status(admin.refusal(&headers(&format!("Basic {SECRET}")))),
            401
        );
        assert_eq!(status(admin.refusal(&headers("Bearer"))), 401);
        assert_eq!(status(admin.refusal(&HeaderMap::new())), 401);
    }

    #[test]
    fn without_a_token_only_loopback_is_open() {
        for (addr, code, answer) in [
            ("127.0.0.1:8080", "loopback", 200),
            ("[::1]:8080", "loopback", 200),
            // Issue 30, item 16: an IPv4-mapped loopback address is loopback.
            ("[::ffff:127.0.0.1]:8080", "loopback", 200),
            ("[::ffff:10.1.2.3]:8080", "disabled", 403),
            ("0.0.0.0:8080", "disabled", 403),
            ("[::]:8080", "disabled", 403),
            ("10.1.2.3:8080", "disabled", 403),
        ] {
            let admin = Admin::new(addr.parse().unwrap(), None);
            assert_eq!(admin.code(), code, "{addr}");
            assert_eq!(status(admin.refusal(&HeaderMap::new())), answer, "{addr}");
        }
    }

    #[test]
    fn a_weak_token_is_refused_without_quoting_it() {
        for secret in [
            "hunter2",
            "has a space in it, long enough",
            "ünïcødé-long-enough-token",
        ] {
            let err = AdminToken::new(secret, "MUSTER_ADMIN_TOKEN").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Usage);
            assert!(!err.to_string().contains(secret), "{err}");
        }
        assert!(AdminToken::new(&"x".repeat(MAX_TOKEN_BYTES + 1), "t").is_err());
        let token = AdminToken::new(SECRET, "t").unwrap();
        assert!(!format!("{token:?}").contains(SECRET));
    }
}
