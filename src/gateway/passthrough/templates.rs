//! Resource templates as patterns: an RFC 6570 URI template a server lists
//! (`demo://resource/dynamic/text/{resourceId}`) read as an anchored
//! pattern a URI either matches or does not, so `resources/read` can tell
//! which server's template a URI was made from. Decides only whether a URI
//! matches; which server reads it is the passthrough's.
//!
//! Each expression matches what its expansion can produce: a simple one
//! (`{id}`) one or more characters other than `/`, `?` and `#`; a reserved
//! one (`{+path}`) one or more of any; the others (`{#f}`, `{.ext}`,
//! `{/seg}`, `{;p}`, `{?q}`, `{&q}`) their prefix and what follows it,
//! or nothing. Patterns run on the linear-time regex engine under a size
//! limit, so a hostile template costs at most its length to compile and
//! the URI's length to match.

use regex::{Regex, RegexBuilder};

use super::MAX_URI_BYTES;

/// The most memory one template's compiled pattern may take.
const PATTERN_BYTES: usize = 1 << 20;

/// `template` as an anchored pattern; `None` when it is longer than
/// [`MAX_URI_BYTES`], has an unclosed or stray brace, an operator RFC 6570
/// reserves, or an empty or malformed variable.
pub(super) fn pattern(template: &str) -> Option<Regex> {
    if template.len() > MAX_URI_BYTES {
        return None;
    }
    let mut re = String::with_capacity(template.len() + 16);
    re.push('^');
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        let (literal, tail) = rest.split_at(at);
        re.push_str(&regex::escape(literal));
        if tail.starts_with('}') {
            return None;
        }
        let close = tail.find('}')?;
        let expression = &tail[1..close];
        let (operator, variables) = match expression.chars().next()? {
            c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&') => (Some(c), &expression[1..]),
            _ => (None, expression),
        };
        if variables.is_empty() || !variables.split(',').all(is_varspec) {
            return None;
        }
        re.push_str(match operator {
            None => "[^/?#]+",
            Some('+') => ".+",
            Some('#') => "(?:#.*)?",
            Some('.') => r"(?:\.[^/?#.]*)*",
            Some('/') => "(?:/[^/?#]*)*",
            Some(';') => "(?:;[^/?#]*)*",
            Some('?') => r"(?:\?[^#]*)?",
            _ => "(?:&[^#]*)*",
        });
        rest = &tail[close + 1..];
    }
    re.push_str(&regex::escape(rest));
    re.push('$');
    RegexBuilder::new(&re)
        .size_limit(PATTERN_BYTES)
        .build()
        .ok()
}

/// Whether `spec` is an RFC 6570 varspec: a name of letters, digits, `_`,
/// `.` and `%`, then `*` or `:` and a length.
fn is_varspec(spec: &str) -> bool {
    let (name, modifier) = match spec.split_once(':') {
        Some((name, length)) => (
            name,
            !length.is_empty() && length.len() <= 4 && length.bytes().all(|b| b.is_ascii_digit()),
        ),
        None => (spec.strip_suffix('*').unwrap_or(spec), true),
    };
    modifier
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(template: &str, uri: &str) -> bool {
        pattern(template).unwrap().is_match(uri)
    }

    #[test]
    fn a_simple_variable_matches_one_segment_and_nothing_else() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(matches(t, "demo://resource/dynamic/text/7"));
        assert!(!matches(t, "demo://resource/dynamic/text/"));
        assert!(!matches(t, "demo://resource/dynamic/text/7/8"));
        assert!(!matches(t, "demo://resource/dynamic/blob/7"));
        // Literal text is matched as written, not as a pattern.
        assert!(!matches("a.b/{x}", "aXb/1"));
    }

    #[test]
    fn operators_match_what_their_expansion_makes() {
        assert!(matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(matches(
            "search://q{?query,limit}",
            "search://q?query=x&limit=3"
        ));
        assert!(matches("search://q{?query,limit}", "search://q"));
        assert!(matches("x://{id}{/rest*}", "x://1/a/b"));
        assert!(matches("x://{id}{.ext}", "x://1.json"));
    }

    #[test]
    fn a_template_muster_cannot_read_is_refused() {
        for bad in ["a{", "a}b", "{}", "{=x}", "{a b}", "{x:}", "{x:99999}"] {
            assert!(pattern(bad).is_none(), "{bad}");
        }
        assert!(pattern(&format!("x://{}", "a".repeat(MAX_URI_BYTES))).is_none());
    }
}
