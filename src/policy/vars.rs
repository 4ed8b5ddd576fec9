//! `${VAR}` in an `[[mcp]]` block's `env` and `headers` values: how a
//! reference is written (checked when the policy loads) and how it is
//! filled from muster's environment when a server is reached.
//!
//! A value is kept as written everywhere muster records it (the policy's
//! [`ServerDef`](super::ServerDef), a [`ServerSpec`](crate::discover::ServerSpec));
//! only [`expand_vars`] sees the filled value, and its errors name the
//! variable, the server and the key, never a value.

use crate::error::{Error, ErrorKind, Problem, code};

/// One piece of a value: literal text or a variable's name.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Splits `value` into text and `${NAME}` references; `$$` is one literal
/// `$`, and a `$` followed by anything else stays as written.
///
/// # Errors
/// A message for a `${` with no closing `}` or a name that is not letters,
/// digits and `_` (not starting with a digit).
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push(Piece::Text("$"));
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err("has a `${` with no closing `}`".into());
            };
            let name = &tail[..end];
            if !is_name(name) {
                return Err(format!(
                    "names the variable {:?}, which is not letters, digits and `_` (not starting with a digit)",
                    crate::names::shown(name)
                ));
            }
            out.push(Piece::Var(name));
            rest = &tail[end + 1..];
        } else {
            out.push(Piece::Text("$"));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why a written value cannot be expanded, for the policy loader: `None`
/// when every `${...}` in it is well formed.
pub(super) fn syntax_problem(value: &str) -> Option<String> {
    pieces(value).err()
}

/// The variables `value` names, in order (for docs and checks; a value
/// that does not parse names none).
#[must_use]
pub fn vars_named(value: &str) -> Vec<String> {
    pieces(value)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name.to_string()),
            Piece::Text(_) => None,
        })
        .collect()
}

/// Fills every `${VAR}` in `value` (an `env` or `headers` value of the MCP
/// server block `server`, under `key`, such as `headers.Authorization`)
/// from muster's own environment; `$$` becomes `$`. Call it when the
/// server is reached, and keep the result out of anything recorded.
///
/// # Errors
/// [`ErrorKind::Mcp`] with code `env-var-unset` when a variable named is
/// not set (or is not UTF-8), and `invalid-value` when a reference is
/// malformed (the policy loader refuses those first). The message names
/// the variable, the server and the key, never a value.
///
/// # Example
/// ```
/// let out = muster::policy::expand_vars("Bearer $${literal}", "github", "headers.Authorization");
/// assert_eq!(out.unwrap(), "Bearer ${literal}");
/// ```
pub fn expand_vars(value: &str, server: &str, key: &str) -> Result<String, Error> {
    expand_with(value, server, key, |name| std::env::var(name))
}

/// [`expand_vars`] over `lookup` instead of the process environment.
pub(crate) fn expand_with(
    value: &str,
    server: &str,
    key: &str,
    lookup: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<String, Error> {
    let pieces = pieces(value).map_err(|why| {
        Error::new(
            ErrorKind::Mcp,
            Problem::coded(
                code::INVALID_VALUE,
                format!("mcp server `{server}`: {key} {why}"),
            )
            .help("write a variable as ${NAME}, and a literal `$` as $$"),
        )
    })?;
    let mut out = String::with_capacity(value.len());
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Var(name) => match lookup(name) {
                Ok(v) => out.push_str(&v),
                Err(e) => {
                    let why = match e {
                        std::env::VarError::NotPresent => "is not set",
                        std::env::VarError::NotUnicode(_) => "is not UTF-8 text",
                    };
                    return Err(Error::new(
                        ErrorKind::Mcp,
                        Problem::coded(
                            code::ENV_VAR_UNSET,
                            format!(
                                "mcp server `{server}`: {key} names the environment variable {name}, which {why}"
                            ),
                        )
                        .help(format!(
                            "set {name} in muster's environment before it reaches the server, or write the value without ${{{name}}}"
                        )),
                    ));
                }
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    fn env(name: &str) -> Result<String, VarError> {
        match name {
            "TOKEN" => Ok("s3cr3t-value".into()),
            "EMPTY" => Ok(String::new()),
            _ => Err(VarError::NotPresent),
        }
    }

    #[test]
    fn references_are_filled_and_dollars_escaped() {
        let out = expand_with("Bearer ${TOKEN}/${EMPTY}$$x $y", "s", "k", env).unwrap();
        assert_eq!(out, "Bearer s3cr3t-value/$x $y");
        assert_eq!(expand_with("plain", "s", "k", env).unwrap(), "plain");
        assert_eq!(expand_with("end$", "s", "k", env).unwrap(), "end$");
    }

    #[test]
    fn an_unset_variable_is_named_with_server_and_key_and_no_value() {
        let err = expand_with(
            "${TOKEN}:${MISSING}",
            "github",
            "headers.Authorization",
            env,
        )
        .unwrap_err();
        let p = &err.problems()[0];
        assert_eq!(p.code, code::ENV_VAR_UNSET);
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = format!("{err} {:?}", p.help);
        assert!(text.contains("MISSING"), "{text}");
        assert!(text.contains("github"), "{text}");
        assert!(text.contains("headers.Authorization"), "{text}");
        assert!(!text.contains("s3cr3t"), "{text}");
    }

    #[test]
    fn malformed_references_are_refused() {
        for bad in ["${TOKEN", "${}", "${1A}", "${A-B}", "x${ A}"] {
            assert!(syntax_problem(bad).is_some(), "{bad}");
            let err = expand_with(bad, "s", "env.X", env).unwrap_err();
            assert_eq!(err.problems()[0].code, code::INVALID_VALUE, "{bad}");
        }
        assert_eq!(syntax_problem("$HOME ${A_1} $$ {}"), None);
        assert_eq!(vars_named("${A}${B}$${C}"), ["A", "B"]);
    }

    #[test]
    fn the_process_environment_is_read() {
        // PATH is set wherever the tests run.
        assert!(!expand_vars("${PATH}", "s", "env.PATH").unwrap().is_empty());
    }
}
