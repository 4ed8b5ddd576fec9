//! Static API keys (`[[auth.key]]`): `mst_` and 43 base64url characters,
//! 32 bytes from the operating system's random source. muster keeps only
//! each key's SHA-256 and compares digests in constant time.
//!
//! Why SHA-256 and not a slow password hash (argon2id): a slow hash makes
//! guessing a *low-entropy* secret expensive. These keys are 256 random
//! bits, so guessing one is out of reach at any hash speed, and a leaked
//! policy's digest does not give it back; a slow hash would only make
//! every request cost tens of milliseconds and hand anyone who can send
//! made-up keys a lever to burn the service's CPU. GitHub's and Stripe's
//! high-entropy tokens are kept the same way.

use super::Caller;
use crate::policy::ApiKey;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What every muster API key starts with: a token that does not is read
/// as a JWT.
pub const PREFIX: &str = "mst_";

/// How an API key's caller is named: `key:NAME`. A token's `sub` may not start so.
pub const CALLER_PREFIX: &str = "key:";
/// Random bytes in a key.
const KEY_BYTES: usize = 32;

/// A new key and its `sha256:<hex>` hash.
///
/// # Errors
/// The operating system gave no random bytes.
pub fn generate() -> Result<(String, String), String> {
    use base64::Engine as _;
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes from the system: {e}"))?;
    let key = format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = crate::canon::sha256_hex(key.as_bytes());
    Ok((key, hash))
}

/// SHA-256 of a key's text.
pub(crate) fn digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

/// `a == b` without an early exit, so the time taken says nothing of
/// where two digests differ.
pub(crate) fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The caller of the key `presented`, if one of `keys` is it. Every key is
/// compared, a match or not.
pub(super) fn caller(keys: &[ApiKey], presented: &str) -> Option<Caller> {
    let digest = digest(presented.as_bytes());
    let mut found = None;
    for key in keys {
        if same_digest(&key.digest, &digest) && found.is_none() {
            found = Some(key);
        }
    }
    found.map(|key| Caller {
        sub: format!("{CALLER_PREFIX}{}", key.name),
        client_id: None,
        scopes: BTreeSet::new(),
        agents: key.agents.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Origin;

    #[test]
    fn a_new_key_opens_its_agents_and_nothing_else_does() {
        let (key, hash) = generate().unwrap();
        assert!(
            key.starts_with(PREFIX) && key.len() == PREFIX.len() + 43,
            "{key}"
        );
        let keys = [ApiKey {
            name: "ci".into(),
            agents: vec!["reader".into()],
            digest: crate::canon::parse_hex(hash.strip_prefix("sha256:").unwrap()).unwrap(),
            origin: Origin {
                file: "muster.toml".into(),
                line: None,
            },
        }];
        let c = caller(&keys, &key).unwrap();
        assert_eq!(
            (c.sub.as_str(), c.agents.as_slice()),
            ("key:ci", &["reader".to_string()][..])
        );
        assert!(caller(&keys, &format!("{key}x")).is_none());
        assert_ne!(generate().unwrap().0, key);
    }
}
