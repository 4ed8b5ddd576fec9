//! The one home of redaction: which values muster filled from its environment into what it
//! sends a server (`${VAR}` in an `[[mcp]]` block's `env` and `headers`), and text with every
//! one of them hidden. Discovery, the gateway, `muster call` and `/v1/call` pass whatever a
//! server wrote back (an error's message, an HTTP body, a stderr tail) through
//! [`Secrets::redact`] before it reaches a client, a log line or a file, so a server that
//! echoes its credentials leaks nothing. It decides nothing else; values written in the policy
//! as they are (no `${VAR}`) are not secrets.

use std::borrow::Cow;

/// What a redacted value is shown as.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not hidden: they would hide ordinary words.
pub const MIN_SECRET_BYTES: usize = 4;

/// Values filled from the environment, longest first (so a header value goes before the token
/// in it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The secrets of `written` values (`env` and `headers` values as the policy writes them),
    /// filled as muster fills them now: each variable's value, and each whole value that holds
    /// a variable.
    pub fn of_written<'a>(written: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets = Self::default();
        for value in written {
            secrets.keep_filled(value, |name| std::env::var(name).ok());
        }
        secrets
    }

    /// Keeps the secrets of the written `value` as `var` fills its variables.
    pub fn keep_filled(&mut self, value: &str, var: impl Fn(&str) -> Option<String>) {
        let names = crate::policy::vars_named(value);
        if names.is_empty() {
            return;
        }
        for name in &names {
            if let Some(v) = var(name) {
                self.keep(&v);
            }
        }
        let lookup = |name: &str| var(name).ok_or(std::env::VarError::NotPresent);
        if let Ok(filled) = crate::policy::expand_with(value, "", "", lookup) {
            self.keep(&filled);
        }
    }

    /// Keeps `value` as a secret (when it is at least [`MIN_SECRET_BYTES`] long).
    pub fn keep(&mut self, value: &str) {
        if value.len() >= MIN_SECRET_BYTES && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// Whether there is no secret to hide.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }
}

/// `url` as an answer, a log line or an error names it: scheme, host, port and path, without
/// the user, password, query or fragment it may carry (a key set's or a server's URL can hold
/// a token there); text that is no URL is not quoted at all.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            crate::names::escape(parsed.as_str())
        }
        Err(_) => "(a URL that cannot be read)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_values_are_hidden_and_written_ones_are_not() {
        let mut s = Secrets::default();
        let var = |name: &str| (name == "TOKEN").then(|| "s3cr3t-value".to_string());
        s.keep_filled("Bearer ${TOKEN}", var);
        s.keep_filled("plain-value", var);
        s.keep_filled("${UNSET}", var);
        assert_eq!(
            s.redact("got Bearer s3cr3t-value and s3cr3t-value, plain-value"),
            "got [redacted] and [redacted], plain-value"
        );
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
        let mut short = Secrets::default();
        short.keep("abc");
        assert_eq!(short.redact("abc"), "abc");
    }

    /// Found by a hostile probe: a refusal quoted the key set's URL whole,
    /// `?api_key=…` included, to any caller; a policy error its password.
    #[test]
    fn a_url_is_shown_without_its_user_password_query_or_fragment() {
        assert_eq!(
            shown_url("https://user:pw@idp.example:8443/jwks?api_key=SECRET#x"),
            "https://idp.example:8443/jwks"
        );
        assert_eq!(
            shown_url("not a url ?api_key=SECRET"),
            "(a URL that cannot be read)"
        );
    }
}
