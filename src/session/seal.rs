//! Signing session documents: with a key configured, every document muster
//! writes carries an HMAC-SHA256 over the rest of it, and every document it
//! reads must carry a valid one. This is what stops a host, or anything
//! between the host and muster, from editing a session (loading tools it
//! was never given, raising its bounds) when the guards that recompute a
//! document's claims cannot tell: a document muster could have written.
//!
//! Keys are text `ID:SECRET`, one a line in a key file or one in
//! `MUSTER_SESSION_KEY`; the first signs, every one verifies, so a key is
//! rotated by putting the new one first and dropping the old one once the
//! sessions it signed are gone. This module never reads the environment or
//! a file itself (the binary does) and never lets a secret reach a message.

use crate::contract::{SessionDocument, Signature};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use std::path::Path;

/// Fewest bytes a secret may have: HMAC-SHA256's block of security.
pub const MIN_SECRET_BYTES: usize = 32;

/// Longest key id.
pub const MAX_KEY_ID: usize = 64;

/// The keys sessions are signed and verified with; none by default.
#[derive(Clone, Default)]
pub struct SessionKeys {
    /// `(id, secret)`, the signing key first.
    keys: Vec<(String, Vec<u8>)>,
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secrets.
        f.debug_struct("SessionKeys")
            .field("ids", &self.ids())
            .finish()
    }
}

impl SessionKeys {
    /// No keys: documents are neither signed nor accepted signed.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads keys from `text`, one `ID:SECRET` a line (blank lines and lines
    /// starting with `#` are skipped); `source` names where the text came
    /// from in errors, which never quote a secret.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`] naming the line of every malformed key: no `:`,
    /// an id outside `[A-Za-z0-9._-]{1,64}`, an id given twice, a secret
    /// shorter than [`MIN_SECRET_BYTES`], or no key at all.
    pub fn parse(text: &str, source: &Path) -> Result<Self, Error> {
        let mut keys: Vec<(String, Vec<u8>)> = Vec::new();
        let mut problems = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |message: String| {
                Problem::coded(code::SESSION_KEY, message)
                    .in_file(source)
                    .at_line(Some(n + 1))
                    .help("write each key as ID:SECRET, the id from [A-Za-z0-9._-], the secret at least 32 bytes (e.g. `openssl rand -hex 32`)")
            };
            let Some((id, secret)) = line.split_once(':') else {
                problems.push(at(
                    "a session key has no `:` between its id and its secret".into()
                ));
                continue;
            };
            if id.is_empty()
                || id.len() > MAX_KEY_ID
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                problems.push(at(format!(
                    "session key id {id:?} is not 1 to 64 of [A-Za-z0-9._-]"
                )));
            } else if keys.iter().any(|(k, _)| k == id) {
                problems.push(at(format!("session key id {id:?} is given twice")));
            } else if secret.len() < MIN_SECRET_BYTES {
                problems.push(at(format!(
                    "the secret of session key {id:?} has {} bytes; at least {MIN_SECRET_BYTES} are needed",
                    secret.len()
                )));
            } else {
                keys.push((id.to_string(), secret.as_bytes().to_vec()));
            }
        }
        if keys.is_empty() && problems.is_empty() {
            problems.push(
                Problem::coded(code::SESSION_KEY, "no session key is given")
                    .in_file(source)
                    .help("write one key a line as ID:SECRET"),
            );
        }
        if problems.is_empty() {
            Ok(Self { keys })
        } else {
            Err(Error::many(ErrorKind::Usage, problems))
        }
    }

    /// Whether any key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key ids, the signing key first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Signs `doc` with the first key (replacing any signature), or leaves
    /// it unsigned when no key is held.
    pub fn sign(&self, doc: &mut SessionDocument) {
        doc.signature = None;
        if let Some((id, secret)) = self.keys.first() {
            let tag = mac(secret, doc);
            doc.signature = Some(Signature {
                key: id.clone(),
                hmac: crate::canon::hex(&tag),
            });
        }
    }

    /// Checks `doc`'s signature: required when a key is held, and then
    /// made with one of them over the document as it stands.
    ///
    /// # Errors
    /// [`ErrorKind::Session`] naming `file`: unsigned while keys are held,
    /// signed with a key id not held (or while none is), or a signature
    /// that does not match (the document was edited).
    pub fn verify(&self, doc: &SessionDocument, file: &Path) -> Result<(), Error> {
        let refuse = |message: String, help: &str| {
            Err(Error::new(
                ErrorKind::Session,
                Problem::coded(code::SESSION_TAMPERED, message)
                    .in_file(file)
                    .help(help),
            ))
        };
        match &doc.signature {
            None if self.keys.is_empty() => Ok(()),
            None => refuse(
                "the session document is not signed, and this muster signs every session".into(),
                "give the document muster wrote, signature included; an unsigned one may have been edited",
            ),
            Some(signature) => {
                let Some((_, secret)) = self.keys.iter().find(|(id, _)| *id == signature.key)
                else {
                    return refuse(
                        format!(
                            "the session document is signed with key {:?}, which this muster does not hold",
                            signature.key
                        ),
                        "configure the key that signed it (MUSTER_SESSION_KEY or the session key file), or start a new session",
                    );
                };
                let valid = crate::canon::parse_hex(&signature.hmac).is_some_and(|tag| {
                    let mut unsigned = doc.clone();
                    unsigned.signature = None;
                    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
                        .expect("HMAC takes a key of any length");
                    m.update(&signing_bytes(&unsigned));
                    m.verify_slice(&tag).is_ok()
                });
                if valid {
                    Ok(())
                } else {
                    refuse(
                        "the session document's signature does not match it: it was edited after muster wrote it".into(),
                        "give the document exactly as muster last returned it, or start a new session",
                    )
                }
            }
        }
    }
}

/// The bytes a signature covers: the document without `signature`, as
/// compact JSON in field order.
fn signing_bytes(doc: &SessionDocument) -> Vec<u8> {
    serde_json::to_vec(doc).unwrap_or_default()
}

fn mac(secret: &[u8], doc: &SessionDocument) -> [u8; 32] {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes a key of any length");
    m.update(&signing_bytes(doc));
    m.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "k1:0123456789abcdef0123456789abcdef";

    #[test]
    fn keys_are_read_one_a_line_and_errors_never_quote_a_secret() {
        let keys = SessionKeys::parse(
            &format!("# rotation\n{KEY}\n\nk0:fedcba9876543210fedcba9876543210\n"),
            Path::new("keys"),
        )
        .unwrap();
        assert_eq!(keys.ids(), ["k1", "k0"]);
        assert!(!format!("{keys:?}").contains("0123456789"));
        let err = SessionKeys::parse("k1:short-secret-value\nk 2:x\nnocolon", Path::new("keys"))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        assert_eq!(err.problems().len(), 3);
        assert_eq!(err.problems()[0].line, Some(1));
        assert!(!err.to_string().contains("short-secret-value"));
        assert!(SessionKeys::parse("\n# none\n", Path::new("keys")).is_err());
    }
}
