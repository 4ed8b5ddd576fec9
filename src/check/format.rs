//! The `format` values MCP servers enforce, and what conforms to each: the one rule lenient and
//! strict checking both apply (issue 21). zod's `z.url()`, `z.email()`, `z.uuid()`,
//! `z.iso.datetime()`, … and Pydantic's `HttpUrl`, `EmailStr`, `UUID`, `datetime`, … write these
//! formats into the schemas they list and refuse a value that does not conform; a server that
//! validates with ajv-formats does the same. Other formats (`hostname`, `regex`, `uri-template`,
//! …) are not asserted: few servers enforce them, and their readers disagree.
//!
//! Each test refuses only what every common reader refuses, so a value a server accepts is never
//! refused here: an email needs a dot in its domain (zod, Pydantic and ajv all ask for one) but
//! is otherwise read loosely; a UUID is its 8-4-4-4-12 hex shape, whatever its version.

use std::net::{Ipv4Addr, Ipv6Addr};

/// A `format` muster asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Uri,
    Email,
    DateTime,
    Date,
    Uuid,
    Ipv4,
    Ipv6,
}

/// Every format name muster asserts, as schemas write it (`url` is not a JSON Schema format,
/// but schemas carry it).
pub(crate) const ASSERTED: [&str; 8] = [
    "uri",
    "url",
    "email",
    "date-time",
    "date",
    "uuid",
    "ipv4",
    "ipv6",
];

/// The formats the validator knows that muster does not assert: registered as always passing,
/// so turning format assertion on asserts only [`ASSERTED`].
pub(crate) const NOT_ASSERTED: [&str; 12] = [
    "duration",
    "hostname",
    "idn-email",
    "idn-hostname",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri-reference",
    "uri-template",
];

impl Format {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "uri" | "url" => Self::Uri,
            "email" => Self::Email,
            "date-time" => Self::DateTime,
            "date" => Self::Date,
            "uuid" => Self::Uuid,
            "ipv4" => Self::Ipv4,
            "ipv6" => Self::Ipv6,
            _ => return None,
        })
    }

    /// Whether `text` is of this format.
    pub(crate) fn conforms(self, text: &str) -> bool {
        match self {
            Self::Uri => uri(text),
            Self::Email => email(text),
            Self::DateTime => date_time(text),
            Self::Date => date(text),
            Self::Uuid => uuid(text),
            Self::Ipv4 => text.parse::<Ipv4Addr>().is_ok(),
            Self::Ipv6 => text.parse::<Ipv6Addr>().is_ok(),
        }
    }
}

/// An absolute URI: a scheme (`[A-Za-z][A-Za-z0-9+.-]*`), a colon, something after it, no
/// whitespace or control characters; `http`/`https` need a host after `//`.
fn uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok || rest.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
        let Some(after) = rest.strip_prefix("//") else {
            return false;
        };
        let authority = after.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        return !host.is_empty() && !host.starts_with(':');
    }
    true
}

/// `local@domain`: one `@`, a local part without whitespace, a domain of dot-separated labels
/// (letters, digits, hyphens, not starting or ending with one) with at least one dot.
fn email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && !local.contains('@')
        && !local.chars().any(|c| c.is_whitespace() || c.is_control());
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        });
    local_ok && domain_ok
}

/// `YYYY-MM-DD`, a real calendar date.
fn date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10]))
    else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339: a date, `T` (any case), `HH:MM:SS`, an optional fraction, and `Z` or `±HH:MM`.
fn date_time(text: &str) -> bool {
    let Some((day, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    if !date(day) {
        return false;
    }
    let b = time.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) =
        (digits(&b[0..2]), digits(&b[3..5]), digits(&b[6..8]))
    else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            matches!((digits(&[*h1, *h2]), digits(&[*m1, *m2])), (Some(h), Some(m)) if h <= 23 && m <= 59)
        }
        _ => false,
    }
}

/// 8-4-4-4-12 hexadecimal digits.
fn uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// The number the ASCII digits `b` spell, when they are all digits.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_takes_what_servers_take_and_refuses_what_they_all_refuse() {
        let cases: [(&str, &[&str], &[&str]); 7] = [
            (
                "uri",
                &[
                    "https://example.com",
                    "http://localhost:3000/a?b#c",
                    "mailto:a@b.co",
                    "urn:isbn:1",
                    "file:///tmp/x",
                ],
                &[
                    "example.com",
                    "www.example.com/page",
                    "https://",
                    "http://exa mple.com",
                    "",
                    "/relative/path",
                    "1http://x",
                ],
            ),
            (
                "email",
                &[
                    "a@example.com",
                    "first.last+tag@mail.example.co.uk",
                    "Ünïcode@exämple.de",
                ],
                &[
                    "not-an-email",
                    "a@b",
                    "@example.com",
                    "a@.com",
                    "a b@example.com",
                    "a@example..com",
                    "a@-x.com",
                ],
            ),
            (
                "date-time",
                &[
                    "2026-12-02T01:30:00Z",
                    "2026-12-02t01:30:00.123+05:30",
                    "2024-02-29T23:59:60Z",
                ],
                &[
                    "2026-12-02",
                    "2026-12-02 01:30:00Z",
                    "2026-13-02T01:30:00Z",
                    "2026-12-02T25:00:00Z",
                    "2026-12-02T01:30:00",
                    "yesterday",
                ],
            ),
            (
                "date",
                &["2026-12-02", "2024-02-29"],
                &[
                    "2023-02-29",
                    "2026-12-2",
                    "02/12/2026",
                    "2026-12-02T00:00:00Z",
                ],
            ),
            (
                "uuid",
                &[
                    "3f1c2b4e-9a7d-4c1e-8b2a-0d9e6f5a4b3c",
                    "00000000-0000-0000-0000-000000000000",
                ],
                &[
                    "3f1c2b4e9a7d4c1e8b2a0d9e6f5a4b3c",
                    "not-a-uuid",
                    "3f1c2b4e-9a7d-4c1e-8b2a-0d9e6f5a4b3g",
                ],
            ),
            (
                "ipv4",
                &["192.168.0.1", "0.0.0.0"],
                &["256.1.1.1", "1.2.3", "01.2.3.4", "::1"],
            ),
            (
                "ipv6",
                &["::1", "2001:db8::8a2e:370:7334"],
                &["2001:db8::g", "1.2.3.4", "fe80::1%eth0"],
            ),
        ];
        for (name, good, bad) in cases {
            let format = Format::parse(name).unwrap();
            for text in good {
                assert!(format.conforms(text), "{name}: {text} should conform");
            }
            for text in bad {
                assert!(!format.conforms(text), "{name}: {text} should not conform");
            }
        }
        assert_eq!(Format::parse("url"), Some(Format::Uri));
        assert_eq!(Format::parse("hostname"), None);
    }
}
