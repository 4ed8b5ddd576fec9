//! Decides what an `[[mcp]]` block may ask muster to send to a server:
//! a `url` must be `https://`, or plain `http://` only to this machine
//! (loopback; anything else travels readable on the network), with a host
//! and no credentials; and no `${VAR}` in `env` or `headers` may name one
//! of muster's own variables (`MUSTER_*`: the session key, the admin
//! token, ...), which would hand muster's secrets to whatever the block
//! reaches. It checks written values only and reads no environment.

use crate::error::code;

/// Every variable muster reads itself: the session keys, the admin token,
/// the cache directory and discovery's mark. A test holds this list and
/// the `MUSTER_*` names in muster's source together.
pub(crate) const OWN_VARIABLES: [&str; 6] = [
    "MUSTER_SESSION_KEY",
    "MUSTER_SESSION_KEY_FILE",
    "MUSTER_ADMIN_TOKEN",
    "MUSTER_CACHE_DIR",
    "MUSTER_DISCOVER_MARK",
    "MUSTER_NO_WARM",
];

/// The secrets among [`OWN_VARIABLES`]: never inherited by a server muster
/// starts (a stdio server gets muster's environment less these), so no
/// policy, and no server, reads muster's keys.
pub const SECRET_VARIABLES: [&str; 3] = [
    "MUSTER_SESSION_KEY",
    "MUSTER_SESSION_KEY_FILE",
    "MUSTER_ADMIN_TOKEN",
];

/// Why `url` cannot be reached as a Streamable HTTP endpoint, if it cannot,
/// with the problem's code: `http://` or `https://`, a host, no
/// credentials, no spaces, and `http://` only to a loopback host.
pub(super) fn url_problem(url: &str) -> Option<(&'static str, &'static str)> {
    let invalid = |why| Some((code::INVALID_VALUE, why));
    let (plain, rest) = match url.strip_prefix("https://") {
        Some(rest) => (false, rest),
        None => match url.strip_prefix("http://") {
            Some(rest) => (true, rest),
            None => return invalid("is not an http:// or https:// URL"),
        },
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return invalid("holds spaces or control characters");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return invalid("carries credentials before the host, which would be recorded with it");
    }
    if authority.is_empty() || authority.starts_with(':') {
        return invalid("has no host");
    }
    let local = crate::loopback::split_authority(authority)
        .is_some_and(|(host, _)| crate::loopback::host(host));
    if plain && !local {
        return Some((
            code::INSECURE_URL,
            "is plain http:// to a host that is not this machine: its requests, headers included, would cross the network unencrypted",
        ));
    }
    None
}

/// The problem of an `env` or `headers` value (of the block `subject`,
/// under `key`) that names one of muster's own variables: its code, its
/// message and its help. Names the variable, never a value.
pub(super) fn own_variable(
    value: &str,
    subject: &str,
    key: &str,
) -> Option<(&'static str, String, &'static str)> {
    let var = super::vars::vars_named(value)
        .into_iter()
        .find(|v| OWN_VARIABLES.contains(&v.as_str()))?;
    Some((
        code::OWN_VARIABLE,
        format!(
            "{subject}: {key} names ${{{var}}}, one of muster's own variables: its value would be sent to the server"
        ),
        "give the server a variable of its own (e.g. ${KB_TOKEN}); muster's own variables (MUSTER_SESSION_KEY, MUSTER_ADMIN_TOKEN, ...) are never sent to a server",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_this_machine() {
        for ok in [
            "https://example.com/mcp",
            "http://localhost:8080/mcp",
            "http://127.0.0.1/mcp",
            "http://[::1]:9/mcp",
            "http://[::ffff:127.0.0.1]:9/mcp",
        ] {
            assert_eq!(url_problem(ok), None, "{ok}");
        }
        for remote in [
            "http://example.com/mcp",
            "http://10.0.0.1:8080/mcp",
            "http://localhost.example.com/mcp",
            "http://0.0.0.0/mcp",
        ] {
            assert_eq!(
                url_problem(remote).map(|p| p.0),
                Some(code::INSECURE_URL),
                "{remote}"
            );
        }
        assert_eq!(
            url_problem("ftp://x").map(|p| p.0),
            Some(code::INVALID_VALUE)
        );
    }

    #[test]
    fn muster_variables_are_refused_and_others_pass() {
        for own in [
            "${MUSTER_SESSION_KEY}",
            "Bearer ${MUSTER_ADMIN_TOKEN}",
            "${A}${MUSTER_SESSION_KEY_FILE}",
        ] {
            let (code, message, _) = own_variable(own, "MCP server \"kb\"", "headers.X").unwrap();
            assert_eq!(code, code::OWN_VARIABLE);
            assert!(message.contains("headers.X"), "{message}");
        }
        for fine in [
            "${KB_TOKEN}",
            "$${MUSTER_SESSION_KEY}",
            "MUSTER_SESSION_KEY",
            "${MUSTER_TEST_X}",
        ] {
            assert!(own_variable(fine, "s", "k").is_none(), "{fine}");
        }
    }

    /// Every `MUSTER_*` name muster's source reads is in [`OWN_VARIABLES`].
    #[test]
    fn the_list_holds_every_variable_muster_reads() {
        let mut found = std::collections::BTreeSet::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for (at, _) in text.match_indices("\"MUSTER_") {
                    let name: String = text[at + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    if name.len() > "MUSTER_".len() {
                        found.insert(name);
                    }
                }
            }
        }
        for name in &found {
            assert!(
                OWN_VARIABLES.contains(&name.as_str()) || name.starts_with("MUSTER_TEST"),
                "{name} is read by muster but not in OWN_VARIABLES"
            );
        }
        assert!(found.contains("MUSTER_ADMIN_TOKEN"), "{found:?}");
    }
}
