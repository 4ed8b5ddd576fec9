//! Provider-safe names: the one rule that turns a muster name
//! (`mcp.bland_call.start_call`) into the name a provider accepts
//! (`mcp__bland_call__start_call`), and the request shapes each provider
//! takes (see [`shape`]).
//!
//! OpenAI and Anthropic both refuse a tool name that does not match
//! `^[a-zA-Z0-9_-]{1,64}$`. The mapping is a pure function of the muster
//! name and the policy's `[names] separator`, so a tool keeps its provider
//! name whatever else the catalog holds:
//!
//! 1. every `.` becomes the separator (default `__`);
//! 2. every other character outside `[a-zA-Z0-9_-]` becomes `_`;
//! 3. when step 2 replaced anything, or the result is longer than 64
//!    characters, `_` plus the first 8 hex digits of the SHA-256 of the
//!    muster name go before the last part, which is kept whole (the
//!    tool's verb), and the parts before it are cut to the room left; so
//!    two names that read alike after steps 1–2 still differ, and tools of
//!    one long server still differ by what they do
//!    (`mcp__long_server_na_1a2b3c4d__browser_click`). A last part too long
//!    for that is cut instead: first characters, then the hash.
//!
//! The mapping is not injective on every string (`a.b` and `a__b` both give
//! `a__b`), so it is reversed through the catalog that made it: the
//! catalog cuts the later of two tools whose provider names collide
//! (`provider-name-collision`), and within one plan each provider name then
//! names exactly one tool. This module decides spellings and collisions; it
//! never decides what is offered.

pub mod accept;
pub mod shape;

use sha2::{Digest, Sha256};

/// The longest tool name OpenAI and Anthropic accept.
pub const MAX_NAME_LEN: usize = 64;

/// The separator a `.` becomes when the policy names none.
pub const DEFAULT_SEPARATOR: &str = "__";

/// Hex digits of the muster name's hash added to a rewritten name.
const HASH_DIGITS: usize = 8;

/// Longest separator the policy may set: a longer one would eat the room
/// a name has under [`MAX_NAME_LEN`].
pub const MAX_SEPARATOR_LEN: usize = 8;

/// How the policy spells muster names for providers (`[names]` in
/// `muster.toml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePolicy {
    /// What each `.` in a muster name becomes.
    pub separator: String,
}

impl Default for NamePolicy {
    fn default() -> Self {
        Self {
            separator: DEFAULT_SEPARATOR.to_string(),
        }
    }
}

/// Whether `c` may appear in a provider's tool name.
pub fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_LEN && name.chars().all(allowed)
}

/// What is wrong with `separator` as `[names] separator`, if anything.
pub fn separator_problem(separator: &str) -> Option<&'static str> {
    if separator.is_empty() {
        Some("is empty; names would run their parts together")
    } else if !separator.chars().all(allowed) {
        Some("holds a character providers refuse in tool names")
    } else if separator.len() > MAX_SEPARATOR_LEN {
        Some("is longer than 8 characters")
    } else {
        None
    }
}

/// A muster name as a provider is sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelling {
    /// The provider name: always matches `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Set when the name was cut and given a hash: the length the
    /// plain spelling had, and the characters that had to be replaced (as
    /// `U+XXXX`).
    pub rewritten: Option<Rewrite>,
}

/// Why a provider name carries a hash suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// Characters the plain spelling (dots replaced) would have.
    pub length: usize,
    /// Characters outside `[a-zA-Z0-9_-]` that were replaced, as `U+XXXX`,
    /// each once, in order of first appearance.
    pub characters: Vec<String>,
}

/// The provider name of `name` under `policy`: see the module docs.
///
/// # Example
/// ```
/// use muster::provider::{spell, NamePolicy};
/// let spelt = spell("mcp.bland_call.start_call", &NamePolicy::default());
/// assert_eq!(spelt.name, "mcp__bland_call__start_call");
/// assert!(spelt.rewritten.is_none());
/// ```
pub fn spell(name: &str, policy: &NamePolicy) -> Spelling {
    let mut plain = String::with_capacity(name.len() + 8);
    let mut characters: Vec<String> = Vec::new();
    for c in name.chars() {
        if c == '.' {
            plain.push_str(&policy.separator);
        } else if allowed(c) {
            plain.push(c);
        } else {
            plain.push('_');
            let point = crate::names::code_point(c);
            if !characters.contains(&point) {
                characters.push(point);
            }
        }
    }
    if characters.is_empty() && is_valid(&plain) {
        return Spelling {
            name: plain,
            rewritten: None,
        };
    }
    let digest = Sha256::digest(name.as_bytes());
    let hash: String = digest
        .iter()
        .take(HASH_DIGITS / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    Spelling {
        name: shortened(name, &plain, &hash, policy),
        rewritten: Some(Rewrite {
            length: plain.len(),
            characters,
        }),
    }
}

/// A rewritten spelling: the hash goes before the last part (the tool's
/// own name, usually its verb), which is kept whole, and the parts before
/// it are cut to what room is left, so tools of one long server read
/// `mcp__long_server_na_1a2b3c4d__browser_click`. When the last part
/// alone leaves no room for a character of the parts before it (or the
/// name has no dot), the spelling is the first characters and the hash.
fn shortened(name: &str, plain: &str, hash: &str, policy: &NamePolicy) -> String {
    // `plain` spells each `.` as the separator, so the last part starts
    // where the spelling of everything up to the last dot ends.
    if let Some(dot) = name.rfind('.') {
        let last = &plain[plain.len() - plain_len(&name[dot + 1..])..];
        let head = &plain[..plain.len() - last.len() - policy.separator.len()];
        let fixed = 1 + HASH_DIGITS + policy.separator.len() + last.len();
        if !head.is_empty() && fixed < MAX_NAME_LEN {
            let keep = head.len().min(MAX_NAME_LEN - fixed);
            return format!("{}_{hash}{}{last}", &head[..keep], policy.separator);
        }
    }
    // The plain spelling is ASCII, so a byte cut is a character cut.
    let keep = plain.len().min(MAX_NAME_LEN - HASH_DIGITS - 1);
    format!("{}_{hash}", &plain[..keep])
}

/// Characters the spelling of `part` (a name part without dots) has: one
/// per character, each written as itself or as `_`.
fn plain_len(part: &str) -> usize {
    part.chars().count()
}

/// For each name in priority order, the position of the earlier name it
/// collides with, if any: the later of two equal provider names loses.
pub fn collisions<'a>(provider_names: impl IntoIterator<Item = &'a str>) -> Vec<Option<usize>> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    provider_names
        .into_iter()
        .enumerate()
        .map(|(i, name)| match first.get(name) {
            Some(&earlier) => Some(earlier),
            None => {
                first.insert(name, i);
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelt(name: &str) -> String {
        spell(name, &NamePolicy::default()).name
    }

    #[test]
    fn dots_become_the_separator_and_valid_names_stay_as_written() {
        assert_eq!(
            spelt("mcp.bland_call.start_call"),
            "mcp__bland_call__start_call"
        );
        assert_eq!(spelt("web-search_2"), "web-search_2");
        let dash = NamePolicy {
            separator: "-".into(),
        };
        assert_eq!(spell("a.b.c", &dash).name, "a-b-c");
    }

    #[test]
    fn a_long_name_keeps_a_readable_prefix_and_a_hash() {
        let long = format!("mcp.server.{}", "x".repeat(80));
        let s = spell(&long, &NamePolicy::default());
        assert_eq!(s.name.len(), MAX_NAME_LEN);
        assert!(s.name.starts_with("mcp__server__xxx"));
        assert!(is_valid(&s.name));
        assert_eq!(
            s.rewritten,
            Some(Rewrite {
                length: 93,
                characters: vec![]
            })
        );
        // Two long names with the same first 55 characters still differ.
        let other = format!("{long}y");
        assert_ne!(spelt(&other), s.name);
    }

    #[test]
    fn characters_providers_refuse_are_replaced_and_hashed() {
        let s = spell("mcp.kb.suche_é/v2", &NamePolicy::default());
        assert!(is_valid(&s.name), "{}", s.name);
        assert!(s.name.starts_with("mcp__kb_"), "{}", s.name);
        assert!(s.name.ends_with("__suche___v2"), "{}", s.name);
        assert_eq!(
            s.rewritten.unwrap().characters,
            vec!["U+00E9".to_string(), "U+002F".to_string()]
        );
        assert_ne!(spelt("a/b"), spelt("a:b"));
    }

    /// Issue 21 item 6: with a long server name, 15 of 63 tools read alike
    /// and differed only by a hash at the end, where their verb had been.
    #[test]
    fn a_long_server_name_is_cut_and_each_tool_keeps_its_verb_whole() {
        let server = "acme_browser_automation_playwright_extended_edition_server";
        let verbs = [
            "browser_click",
            "browser_close",
            "browser_console_messages",
            "browser_drag",
            "browser_evaluate",
            "browser_file_upload",
            "browser_fill_form",
            "browser_handle_dialog",
            "browser_hover",
            "browser_navigate",
            "browser_navigate_back",
            "browser_network_requests",
            "browser_press_key",
            "browser_resize",
            "browser_select_option",
            "browser_snapshot",
            "browser_take_screenshot",
            "browser_type",
            "browser_wait_for",
        ];
        let mut seen = std::collections::BTreeSet::new();
        let mut shown = std::collections::BTreeSet::new();
        for verb in verbs {
            let name = format!("mcp.{server}.{verb}");
            let s = spell(&name, &NamePolicy::default());
            assert!(is_valid(&s.name), "{}", s.name);
            assert_eq!(s.name.len(), MAX_NAME_LEN, "{}", s.name);
            assert!(s.name.starts_with("mcp__acme_browser"), "{}", s.name);
            let (before, after) = s.name.rsplit_once("__").unwrap();
            assert_eq!(after, verb, "the verb is whole and last: {}", s.name);
            let hash = &before[before.len() - HASH_DIGITS..];
            assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{}", s.name);
            assert_eq!(s, spell(&name, &NamePolicy::default()), "deterministic");
            assert!(seen.insert(s.name.clone()), "unique: {}", s.name);
            // With the hash taken out, the names still differ.
            assert!(shown.insert(s.name.replace(hash, "")), "{}", s.name);
        }
        // Another separator is kept around the verb as well.
        let dash = NamePolicy {
            separator: "-".into(),
        };
        let s = spell(&format!("mcp.{server}.browser_click"), &dash);
        assert!(
            s.name.ends_with("-browser_click") && is_valid(&s.name),
            "{}",
            s.name
        );
    }

    #[test]
    fn the_later_of_two_equal_names_collides_with_the_first() {
        assert_eq!(
            collisions(["a__b", "c", "a__b", "a__b"]),
            vec![None, None, Some(0), Some(0)]
        );
    }

    #[test]
    fn separators_are_checked() {
        assert!(separator_problem("__").is_none());
        assert!(separator_problem("").is_some());
        assert!(separator_problem(".").is_some());
        assert!(separator_problem("_________").is_some());
    }
}
