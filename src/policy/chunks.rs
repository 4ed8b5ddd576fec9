//! Splitting a large tools file into the entries it declares, so each is
//! parsed on its own: a file of 100,000 `[[tool]]` entries is never held as
//! one TOML document in memory.
//!
//! A tools file holds nothing at its top level but the `tool` array of
//! tables, so the text from one `[[tool]]` header up to the next declares
//! exactly one entry (with its sub-tables), independently of the others.
//! Headers are found by one pass over the bytes that steps over comments
//! and strings of all four kinds as the TOML lexer does, never inside a
//! string; from the first byte no valid TOML could hold there (an
//! unterminated string, say) it finds no more, leaving the rest of the
//! file to the parser whole.

use memchr::{memchr, memchr2, memchr3};

/// The byte offsets of the `[[key]]` headers that begin a line of `text`,
/// in order. Only the plain spelling is found (`[[ key ]]` with optional
/// spaces around the key); a header spelled otherwise (quoted, say) stays
/// inside the entry before it, which the parser then reads as one more
/// entry of the same array, so nothing changes meaning.
///
/// `key` is a bare key (`tool`); for any other, nothing is found.
pub(super) fn array_table_starts(text: &str, key: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    if !is_bare_key(key) {
        return starts;
    }
    let (bytes, key) = (text.as_bytes(), key.as_bytes());
    let mut at = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    let mut line_start = true;
    // Each arm leaves `at` past what it read, or stops the scan where valid
    // TOML could not go on: a missed header changes nothing, a false one
    // would split an entry.
    while let Some(&byte) = bytes.get(at) {
        let next = match byte {
            b'\n' => Some(at + 1),
            b'\r' if bytes.get(at + 1) == Some(&b'\n') => Some(at + 2),
            // A carriage return alone ends a line for the lexer, not for TOML.
            b'\r' => None,
            b' ' | b'\t' => Some(at + 1),
            b'#' => Some(memchr2(b'\r', b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n)),
            b'"' if bytes[at..].starts_with(b"\"\"\"") => ml_string_end(bytes, at + 3, b'"'),
            b'"' => basic_string_end(bytes, at + 1),
            b'\'' if bytes[at..].starts_with(b"\'\'\'") => ml_string_end(bytes, at + 3, b'\''),
            b'\'' => memchr2(b'\'', b'\n', &bytes[at + 1..])
                .map(|n| at + 1 + n)
                .filter(|&end| bytes[end] == b'\'')
                .map(|end| end + 1),
            b'[' => {
                if line_start && is_header(&bytes[at..], key) {
                    starts.push(at);
                }
                Some(at + 1)
            }
            b'.' | b'=' | b',' | b']' | b'{' | b'}' => Some(at + 1),
            // A bare key, number, date or word: it runs to the next token
            // start; a quote inside one (`a"b`) is in no valid TOML.
            _ => {
                let end = bytes[at + 1..]
                    .iter()
                    .position(|&b| ATOM_END.contains(&b))
                    .map_or(bytes.len(), |n| at + 1 + n);
                (!matches!(bytes.get(end), Some(b'"' | b'\''))).then_some(end)
            }
        };
        let Some(next) = next else {
            break;
        };
        line_start = match byte {
            b'\n' | b'\r' => true,
            b' ' | b'\t' => line_start,
            _ => false,
        };
        at = next;
    }
    starts
}

/// The byte order mark the lexer skips at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The bytes that end an atom (a bare key, number, date or word) for the
/// lexer, and the quotes, which it reads inside one but valid TOML never
/// holds there.
const ATOM_END: &[u8] = b".=,[]{} \t#\r\n\"'";

/// A key the lexer reads as one atom, as `[[key]]` spells it.
fn is_bare_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `rest` opens with `[[`, optional spaces or tabs, `key`, optional
/// spaces or tabs and `]]`.
fn is_header(rest: &[u8], key: &[u8]) -> bool {
    let skip_blank =
        |s: &[u8]| -> usize { s.iter().take_while(|&&b| b == b' ' || b == b'\t').count() };
    let Some(rest) = rest.strip_prefix(b"[[") else {
        return false;
    };
    let Some(rest) = rest[skip_blank(rest)..].strip_prefix(key) else {
        return false;
    };
    rest[skip_blank(rest)..].starts_with(b"]]")
}

/// Where the basic string whose text starts at `from` ends (past its
/// closing quote), or `None` if a line or the file ends first.
fn basic_string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let found = from + memchr3(b'"', b'\\', b'\n', &bytes[from..])?;
        match bytes[found] {
            b'"' => return Some(found + 1),
            b'\\' => from = escaped_end(bytes, found),
            _ => return None,
        }
    }
}

/// Past the escape sequence whose backslash is at `backslash`, as far as
/// finding the string's end goes: an escaped quote or backslash is stepped
/// over, anything else is read as text.
fn escaped_end(bytes: &[u8], backslash: usize) -> usize {
    match bytes.get(backslash + 1) {
        Some(b'"' | b'\\') => backslash + 2,
        _ => backslash + 1,
    }
}

/// Where the multi-line string delimited by `quote` whose text starts at
/// `from` ends, past its closing delimiter and the one or two quotes the
/// text may end with; `None` if the file ends first, or if more than five
/// quotes close it. Backslash escapes count in basic strings only.
fn ml_string_end(bytes: &[u8], mut from: usize, quote: u8) -> Option<usize> {
    loop {
        let found = from
            + if quote == b'"' {
                memchr2(quote, b'\\', &bytes[from..])?
            } else {
                memchr(quote, &bytes[from..])?
            };
        if bytes[found] == b'\\' {
            from = escaped_end(bytes, found);
            continue;
        }
        let run = bytes[found..].iter().take_while(|&&b| b == quote).count();
        match run {
            0..=2 => from = found + run,
            3..=5 => return Some(found + run),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests;
