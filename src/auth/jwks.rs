//! The issuer's public keys: a JSON Web Key Set read from a file once, or
//! fetched from a URL, cached, and fetched again when a token names a key
//! the cache lacks (the issuer rotated its keys) — at most once per
//! `jwks_refetch_secs`, so tokens naming made-up keys cannot make muster
//! hammer the issuer — and when the cache is older than [`MAX_AGE`].
//! Keys of kinds muster does not use (`use: "enc"`, symmetric `oct`,
//! unknown `kty`) are left out.

use super::{Invalid, Refusal};
use crate::policy::JwksSource;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Largest key set read, in bytes.
pub const MAX_JWKS_BYTES: u64 = 256 * 1024;
/// Most keys of a set kept.
pub const MAX_KEYS: usize = 64;
/// A fetched key set older than this is fetched again on the next token.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Longest a fetch of the key set may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One key of the set, ready to verify with.
#[derive(Debug)]
struct Held {
    kid: Option<String>,
    key: Arc<DecodingKey>,
}

/// The keys held now and when they were fetched.
#[derive(Debug, Default)]
struct Set {
    keys: Vec<Held>,
    fetched: Option<Instant>,
}

/// The key set of one `auth.jwks`.
#[derive(Debug)]
pub(super) struct Keys {
    url: Option<String>,
    refetch: Duration,
    held: RwLock<Arc<Set>>,
    /// Serializes fetches; holds when the last one was tried.
    fetching: tokio::sync::Mutex<Option<Instant>>,
    client: Option<reqwest::Client>,
}

impl Keys {
    /// The keys of `source`: a file's read now.
    pub(super) fn new(source: &JwksSource, refetch_secs: u64) -> Result<Self, String> {
        let (url, set) = match source {
            JwksSource::File(path) => {
                let bytes = crate::input::read_text_limited(path, MAX_JWKS_BYTES)
                    .map_err(|e| format!("auth.jwks {}: {e}", path.display()))?;
                let keys = parse(bytes.as_bytes())
                    .map_err(|e| format!("auth.jwks {}: {e}", path.display()))?;
                (
                    None,
                    Set {
                        keys,
                        fetched: None,
                    },
                )
            }
            JwksSource::Url(url) => (Some(url.clone()), Set::default()),
        };
        let client = match &url {
            None => None,
            Some(_) => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                Some(
                    reqwest::Client::builder()
                        .redirect(reqwest::redirect::Policy::none())
                        .timeout(FETCH_TIMEOUT)
                        .build()
                        .map_err(|e| format!("cannot make an HTTP client: {e}"))?,
                )
            }
        };
        Ok(Self {
            url,
            refetch: Duration::from_secs(refetch_secs),
            held: RwLock::new(Arc::new(set)),
            fetching: tokio::sync::Mutex::new(None),
            client,
        })
    }

    /// The keys a token signed with `alg` under `kid` may verify with
    /// (every key of the algorithm's family when it names none).
    pub(super) async fn for_token(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<Arc<DecodingKey>>, Refusal> {
        let set = self.current();
        let stale = set.fetched.is_none_or(|at| at.elapsed() >= MAX_AGE);
        let found = matching(&set, kid, alg);
        let refetch = found.is_empty() || (stale && self.url.is_some());
        if !refetch {
            return Ok(found);
        }
        if self.url.is_none() {
            return Err(Refusal::Invalid(Invalid::UnknownKey));
        }
        self.fetch(set.fetched).await?;
        let found = matching(&self.current(), kid, alg);
        if found.is_empty() {
            return Err(Refusal::Invalid(Invalid::UnknownKey));
        }
        Ok(found)
    }

    fn current(&self) -> Arc<Set> {
        self.held.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Fetches the set again unless another request did since `seen`, or
    /// the last try is more recent than the refetch floor. A failed fetch
    /// keeps the keys held; with none held, it is the refusal.
    async fn fetch(&self, seen: Option<Instant>) -> Result<(), Refusal> {
        let (Some(url), Some(client)) = (&self.url, &self.client) else {
            return Ok(());
        };
        let mut last = self.fetching.lock().await;
        if self.current().fetched != seen {
            return Ok(());
        }
        if last.is_some_and(|at| at.elapsed() < self.refetch) {
            // With no keys held, a fetch that failed moments ago is not repeated per request
            // (a hostile probe: 300 junk tokens, 300 fetches, each queued behind the last).
            return match seen {
                Some(_) => Ok(()),
                None => Err(Refusal::KeysUnavailable(format!(
                    "the issuer's keys at {} could not be fetched; muster tries again {} s after its last try",
                    crate::secrets::shown_url(url),
                    self.refetch.as_secs()
                ))),
            };
        }
        *last = Some(Instant::now());
        match get(client, url).await {
            Ok(keys) => {
                *self.held.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Set {
                    keys,
                    fetched: Some(Instant::now()),
                });
                Ok(())
            }
            Err(e) if seen.is_none() => Err(Refusal::KeysUnavailable(format!(
                "the issuer's keys at {} cannot be fetched: {e}",
                crate::secrets::shown_url(url)
            ))),
            Err(_) => Ok(()),
        }
    }
}

/// The keys of `set` under `kid` (any when `None`) of `alg`'s family.
fn matching(set: &Set, kid: Option<&str>, alg: Algorithm) -> Vec<Arc<DecodingKey>> {
    set.keys
        .iter()
        .filter(|h| kid.is_none() || h.kid.as_deref() == kid)
        .filter(|h| h.key.family() == alg.family())
        .map(|h| h.key.clone())
        .collect()
}

/// GETs a key set, its body bounded.
async fn get(client: &reqwest::Client, url: &str) -> Result<Vec<Held>, String> {
    let mut response = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status().as_u16()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if (body.len() + chunk.len()) as u64 > MAX_JWKS_BYTES {
            return Err(format!("the key set is larger than {MAX_JWKS_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    parse(&body)
}

/// The usable keys of a JSON Web Key Set.
fn parse(bytes: &[u8]) -> Result<Vec<Held>, String> {
    #[derive(serde::Deserialize)]
    struct RawSet {
        keys: Vec<serde_json::Value>,
    }
    let set: RawSet = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a JSON Web Key Set ({{\"keys\": [...]}}): {e}"))?;
    let keys: Vec<Held> = set
        .keys
        .into_iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter_map(|jwk| {
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Held {
                kid: jwk.common.key_id.clone(),
                key: Arc::new(key),
            })
        })
        .take(MAX_KEYS)
        .collect();
    if keys.is_empty() {
        return Err("the key set holds no public signing key muster can use (RSA, EC P-256/P-384 or Ed25519)".into());
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_unknown_keys_are_left_out() {
        let set = br#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"},{"kty":"weird"}]}"#;
        assert!(parse(set).is_err());
        assert!(parse(b"[]").is_err());
    }
}
