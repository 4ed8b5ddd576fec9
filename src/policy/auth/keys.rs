//! `[[auth.key]]`: static API keys for teams without an identity provider.
//! A key is written as its name, the agents it opens and `hash =
//! "sha256:<hex>"`, the SHA-256 of its text (`muster auth key new` prints
//! the entry); the key itself is never in the policy. Names and hashes are
//! unique, so a caller is one key.

use super::super::load::{Loader, Source};
use super::super::{Agent, raw};
use super::ApiKey;
use crate::error::code;
use toml::Spanned;

/// Longest key name.
pub const MAX_KEY_NAME: usize = 64;

/// Whether `name` may name a key: 1 to [`MAX_KEY_NAME`] letters, digits,
/// `.`, `_` or `-` (its caller, `key:<name>`, is logged and owns chats).
pub fn is_key_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_KEY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

impl Loader {
    /// Every `[[auth.key]]` that is right; a problem for each that is not.
    pub(super) fn keys(
        &mut self,
        src: &Source,
        raw: &[Spanned<raw::RawKey>],
        agents: &[Agent],
    ) -> Vec<ApiKey> {
        let mut keys: Vec<ApiKey> = Vec::new();
        for entry in raw {
            let r = entry.get_ref();
            let name = r.name.get_ref();
            let named = is_key_name(name);
            if !named {
                self.problems.push(
                    src.at(&r.name)
                        .coded(code::INVALID_VALUE, format!("auth.key name {:?} is not a key name", crate::names::escape(name)))
                        .help(format!("use 1 to {MAX_KEY_NAME} letters, digits, `.`, `_` or `-`: its caller is `key:<name>`")),
                );
            }
            let digest = r
                .hash
                .get_ref()
                .strip_prefix("sha256:")
                .and_then(crate::canon::parse_hex);
            if digest.is_none() {
                self.problems.push(
                    src.at(&r.hash)
                        .coded(code::INVALID_VALUE, format!("auth.key {:?}: hash is not `sha256:` and 64 lowercase hex digits", crate::names::escape(name)))
                        .help("paste the hash line `muster auth key new` printed; the key itself never goes in the policy"),
                );
            }
            let opened = self.opened(src, &r.agents, agents, "auth.key");
            for (clash, what) in [
                (keys.iter().find(|k| &k.name == name), "name"),
                (
                    keys.iter().find(|k| Some(k.digest) == digest),
                    "hash (the same key)",
                ),
            ] {
                if let Some(earlier) = clash {
                    self.problems.push(
                        src.at(entry)
                            .coded(code::CONFLICT, format!(
                                "auth.key {:?} has the {what} of the key at line {}",
                                crate::names::escape(name),
                                earlier.origin.line.unwrap_or_default()
                            ))
                            .help("give every key its own name and its own key (`muster auth key new`)"),
                    );
                }
            }
            if let (true, Some(digest), Some(agents)) = (named, digest, opened) {
                keys.push(ApiKey {
                    name: name.clone(),
                    agents,
                    digest,
                    origin: src.at(entry),
                });
            }
        }
        keys
    }
}
