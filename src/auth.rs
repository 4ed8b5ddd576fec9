//! Who is asking: a bearer token (a JWT an OAuth 2.1 authorization server
//! issued, or a static API key `mst_…` of `[[auth.key]]`) checked against
//! `[auth]` of the policy into a [`Caller`] (its `sub`, client id, scopes
//! and the agents its grants or key open), or a [`Refusal`] saying why not. The one place identity is decided
//! (docs/auth.md). It knows nothing of HTTP routes: `serve` maps a
//! refusal to 401/403 and a caller to the roster it may use.
//!
//! Checked: the signature with the issuer's key named by `kid`
//! (RS256/384/512, PS256/384/512, ES256/384, EdDSA only: `none` and HMAC
//! are refused whatever the token says), `iss` exactly, `aud` holding the
//! audience (RFC 8707), `exp` (required) and `nbf` with the leeway.

mod grant;
mod jwks;
mod key;
mod limit;

pub use key::{PREFIX as KEY_PREFIX, generate as new_key};
pub(crate) use key::{digest, same_digest};
pub use limit::{Limited, Limiter};

use crate::error::{Error, ErrorKind, Problem, code};
use crate::policy::{AuthPolicy, Issuer};
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Longest bearer token read, in bytes: longer ones are refused unread.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The algorithms a token may be signed with: public-key ones only.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Who a valid token says is asking, and what it may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub` (its client id when it has none).
    pub sub: String,
    /// The OAuth client: `client_id`, else `azp`.
    pub client_id: Option<String>,
    /// The token's scopes, sorted.
    pub scopes: BTreeSet<String>,
    /// The agents its grants open, in grant order; the first is its default.
    pub agents: Vec<String>,
}

impl Caller {
    /// The agent a request asking for `asked` (none: the default) is
    /// planned for, or `None` when the caller's grants do not open it.
    pub fn agent(&self, asked: Option<&str>) -> Option<&str> {
        match asked {
            None => self.agents.first().map(String::as_str),
            Some(name) => self.agents.iter().find(|a| *a == name).map(String::as_str),
        }
    }
}

/// Why a request is not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header (401, `token-missing`).
    Missing,
    /// A token that does not pass (401 `invalid_token`, `token-invalid`).
    Invalid(Invalid),
    /// A valid token that matches no grant (403 `insufficient_scope`).
    NoGrant {
        /// The scopes it carries.
        scopes: BTreeSet<String>,
    },
    /// The issuer's keys cannot be had now (503, `jwks-unavailable`).
    KeysUnavailable(String),
}

/// Why a token does not pass: a stable kebab-case reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Not `Bearer <token>`, not three base64url parts, or too long.
    Malformed,
    /// `alg` is `none`, HMAC or one muster does not take.
    Algorithm,
    /// `kid` names no key of the issuer (after a refetch).
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Past `exp` (+ leeway).
    Expired,
    /// Before `nbf` (- leeway).
    NotYetValid,
    /// `aud` does not hold the audience.
    Audience,
    /// `iss` is not the issuer.
    Issuer,
    /// A required claim (`exp`, `iss`, `aud`; a string `sub` or `client_id`, which names the
    /// caller) is missing or of the wrong type, or the `sub` is in muster's own `key:`
    /// namespace (an API key's caller).
    Claims,
    /// An API key (`mst_…`) no `[[auth.key]]` holds.
    UnknownApiKey,
    /// A JWT, and `[auth]` names no issuer (it takes API keys only).
    NoIssuer,
}

impl Invalid {
    /// The reason's code.
    pub fn code(self) -> &'static str {
        match self {
            Invalid::Malformed => "malformed",
            Invalid::Algorithm => "algorithm-refused",
            Invalid::UnknownKey => "unknown-key",
            Invalid::Signature => "bad-signature",
            Invalid::Expired => "expired",
            Invalid::NotYetValid => "not-yet-valid",
            Invalid::Audience => "wrong-audience",
            Invalid::Issuer => "wrong-issuer",
            Invalid::Claims => "missing-claim",
            Invalid::UnknownApiKey => "unknown-api-key",
            Invalid::NoIssuer => "jwt-not-accepted",
        }
    }

    /// One sentence for the client.
    pub fn sentence(self) -> &'static str {
        match self {
            Invalid::Malformed => "the Authorization header is not `Bearer` and a JWT",
            Invalid::Algorithm => {
                "the token is signed with an algorithm muster does not take (only RS*, PS*, ES256/384 and EdDSA; never none or HMAC)"
            }
            Invalid::UnknownKey => {
                "the token is signed with a key the issuer's key set does not hold"
            }
            Invalid::Signature => "the token's signature does not verify",
            Invalid::Expired => "the token has expired",
            Invalid::NotYetValid => "the token is not valid yet (nbf)",
            Invalid::Audience => {
                "the token is for another audience: ask the authorization server for a token with this service as its resource"
            }
            Invalid::Issuer => "the token is from another issuer",
            Invalid::Claims => {
                "the token lacks exp, iss, aud, or a string sub or client_id naming its caller, or one has the wrong type, or its sub starts with key: (API keys' callers)"
            }
            Invalid::UnknownApiKey => {
                "the API key is not one [[auth.key]] holds (mistyped, or its entry was removed)"
            }
            Invalid::NoIssuer => {
                "this service takes API keys (mst_...) only: [auth] names no issuer of tokens"
            }
        }
    }
}

impl Refusal {
    /// The problem code.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Missing => code::TOKEN_MISSING,
            Refusal::Invalid(_) => code::TOKEN_INVALID,
            Refusal::NoGrant { .. } => code::INSUFFICIENT_SCOPE,
            Refusal::KeysUnavailable(_) => code::JWKS_UNAVAILABLE,
        }
    }
}

/// Checks tokens and API keys against one `[auth]`.
#[derive(Debug)]
pub struct Authenticator {
    policy: AuthPolicy,
    tokens: Option<Tokens>,
}

/// What checks the issuer's tokens.
#[derive(Debug)]
struct Tokens {
    keys: jwks::Keys,
    /// One validation per algorithm: jsonwebtoken checks a key against
    /// every algorithm a validation lists, so each lists one.
    validations: Vec<(Algorithm, Validation)>,
}

impl Authenticator {
    /// The checker for `policy`: a JWKS file is read now, a URL on first use.
    ///
    /// # Errors
    /// A JWKS file that cannot be read or is not a key set (`jwks-unavailable`).
    pub fn new(policy: &AuthPolicy) -> Result<Self, Error> {
        let tokens = match &policy.issuer {
            None => None,
            Some(issuer) => Some(Tokens::new(issuer).map_err(|message| {
                Error::new(
                    ErrorKind::Policy,
                    Problem::coded(code::JWKS_UNAVAILABLE, message)
                        .in_file(policy.origin.file.clone())
                        .at_line(policy.origin.line)
                        .help("give auth.jwks a JSON Web Key Set ({\"keys\": [...]}) as the issuer's jwks_uri serves it"),
                )
            })?),
        };
        Ok(Self {
            policy: policy.clone(),
            tokens,
        })
    }

    /// The `[auth]` it checks against.
    pub fn policy(&self) -> &AuthPolicy {
        &self.policy
    }

    /// The caller an `Authorization` header value names.
    ///
    /// # Errors
    /// Why the request is not let in.
    pub async fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Caller, Refusal> {
        let Some(value) = authorization else {
            return Err(Refusal::Missing);
        };
        let token = bearer(value).ok_or(Refusal::Invalid(Invalid::Malformed))?;
        if token.starts_with(key::PREFIX) {
            return key::caller(&self.policy.keys, token)
                .ok_or(Refusal::Invalid(Invalid::UnknownApiKey));
        }
        let Some(tokens) = &self.tokens else {
            return Err(Refusal::Invalid(Invalid::NoIssuer));
        };
        let claims = tokens.verify(token).await?;
        let caller = grant::caller(&self.policy.grants, &claims);
        // Every caller is someone: tokens naming nobody (no string `sub` or `client_id`) would
        // share one empty identity, its chats and its limits; and `key:` names API keys'
        // callers, which no token may speak for.
        if caller.sub.is_empty() || caller.sub.starts_with(key::CALLER_PREFIX) {
            return Err(Refusal::Invalid(Invalid::Claims));
        }
        if caller.agents.is_empty() {
            return Err(Refusal::NoGrant {
                scopes: caller.scopes,
            });
        }
        Ok(caller)
    }
}

impl Tokens {
    fn new(issuer: &Issuer) -> Result<Self, String> {
        let keys = jwks::Keys::new(&issuer.jwks, issuer.jwks_refetch_secs)?;
        let validations = ALGORITHMS
            .iter()
            .map(|&alg| {
                let mut validation = Validation::new(alg);
                validation.set_issuer(&[&issuer.issuer]);
                validation.set_audience(&[&issuer.audience]);
                validation.set_required_spec_claims(&["exp", "iss", "aud"]);
                validation.leeway = issuer.leeway_secs;
                validation.validate_nbf = true;
                (alg, validation)
            })
            .collect();
        Ok(Self { keys, validations })
    }

    /// The token's claims when it passes every check.
    async fn verify(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| Refusal::Invalid(unreadable_header(token, &e)))?;
        let Some((_, validation)) = self.validations.iter().find(|(a, _)| *a == header.alg) else {
            return Err(Refusal::Invalid(Invalid::Algorithm));
        };
        let candidates = self
            .keys
            .for_token(header.kid.as_deref(), header.alg)
            .await?;
        let mut last = Invalid::UnknownKey;
        for key in &candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => last = invalid(&e),
            }
            if last != Invalid::Signature && last != Invalid::Algorithm {
                break;
            }
        }
        Err(Refusal::Invalid(last))
    }
}

/// The token of `Bearer <token>` (the scheme in any case), bounded.
fn bearer(value: &[u8]) -> Option<&str> {
    if value.len() > MAX_TOKEN_BYTES + 7 {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Why a header jsonwebtoken cannot read was refused: an `alg` it does
/// not know (`none`, say) is [`Invalid::Algorithm`], else as the error says.
fn unreadable_header(token: &str, e: &jsonwebtoken::errors::Error) -> Invalid {
    use base64::Engine as _;
    let alg = token
        .split('.')
        .next()
        .and_then(|h| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(h)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
        .is_some_and(|h| h.get("alg").is_some_and(Value::is_string));
    if alg { Invalid::Algorithm } else { invalid(e) }
}

/// The reason a jsonwebtoken error stands for.
fn invalid(e: &jsonwebtoken::errors::Error) -> Invalid {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => Invalid::Expired,
        K::ImmatureSignature => Invalid::NotYetValid,
        K::InvalidAudience => Invalid::Audience,
        K::InvalidIssuer => Invalid::Issuer,
        K::InvalidSignature => Invalid::Signature,
        K::InvalidAlgorithm
        | K::InvalidAlgorithmName
        | K::UnsupportedAlgorithm
        | K::MissingAlgorithm => Invalid::Algorithm,
        K::MissingRequiredClaim(_) | K::InvalidClaimFormat(_) => Invalid::Claims,
        _ => Invalid::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_reads_the_scheme_in_any_case_and_nothing_else() {
        assert_eq!(bearer(b"Bearer abc.def.ghi"), Some("abc.def.ghi"));
        assert_eq!(bearer(b"bearer abc"), Some("abc"));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer "), None);
        assert_eq!(bearer(b"Bearer a b"), None);
        assert_eq!(bearer(&vec![b'a'; MAX_TOKEN_BYTES + 8]), None);
    }

    #[test]
    fn a_caller_uses_only_its_agents() {
        let caller = Caller {
            sub: "s".into(),
            client_id: None,
            scopes: BTreeSet::new(),
            agents: vec!["reader".into(), "other".into()],
        };
        assert_eq!(caller.agent(None), Some("reader"));
        assert_eq!(caller.agent(Some("other")), Some("other"));
        assert_eq!(caller.agent(Some("writer")), None);
    }
}
