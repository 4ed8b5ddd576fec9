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
/// `key` is a bare key (`tool`); for any other, nothing is found. A
/// one-line string its line ends in is read as ending there, as the lexer
/// reads it: the file is not valid TOML, the entry that holds the string
/// reports so, and the entries after it are still judged apart, so each
/// of their problems is reported too. Past any other byte valid TOML
/// cannot hold where it stands (an unterminated multi-line string, a lone
/// carriage return), nothing more is found.
pub(super) fn array_table_starts(text: &str, key: &str) -> Vec<usize> {
    if !is_bare_key(key) {
        return Vec::new();
    }
    let (bytes, key) = (text.as_bytes(), key.as_bytes());
    let first = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    let mut starts: Vec<usize> = header_at(bytes, first, key).into_iter().collect();
    // Only line ends, comments and strings change what a byte means, so the
    // scan goes from one of their marks to the next, `at` always outside
    // strings and comments. Each arm gives where the scan goes on, or stops
    // it where valid TOML could not go on: a missed header changes nothing,
    // a false one would split an entry.
    let mut at = first;
    while let Some(n) = bytes[at..].iter().position(|&b| is_mark(b)) {
        let mark = at + n;
        let next = match bytes[mark] {
            b'\n' => Some(mark + 1),
            b'\r' if bytes.get(mark + 1) == Some(&b'\n') => Some(mark + 2),
            // A carriage return alone ends a line for the lexer, not for TOML.
            b'\r' => None,
            b'#' => Some(memchr2(b'\r', b'\n', &bytes[mark..]).map_or(bytes.len(), |n| mark + n)),
            // The lexer reads a quote right after a bare key, number or word
            // (`a"b`) as part of it; no valid TOML holds one there. (The byte
            // before is a quote if it closes a string.)
            b'"' | b'\'' if mark > first && in_atom(bytes[mark - 1]) => None,
            b'"' if bytes[mark..].starts_with(b"\"\"\"") => ml_string_end(bytes, mark + 3, b'"'),
            b'"' => basic_string_end(bytes, mark + 1),
            b'\'' if bytes[mark..].starts_with(b"'''") => ml_string_end(bytes, mark + 3, b'\''),
            b'\'' => memchr2(b'\'', b'\n', &bytes[mark + 1..])
                .map(|n| mark + 1 + n)
                .map(|end| end + usize::from(bytes[end] == b'\'')),
            _ => None,
        };
        let Some(next) = next else {
            break;
        };
        if matches!(bytes[mark], b'\n' | b'\r') {
            starts.extend(header_at(bytes, next, key));
        }
        at = next;
    }
    starts
}

/// The byte order mark the lexer skips at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether `byte` may begin a line end, a comment or a string.
fn is_mark(byte: u8) -> bool {
    matches!(byte, b'\n' | b'\r' | b'#' | b'"' | b'\'')
}

/// Whether the lexer reads `byte` as part of an atom (a bare key, number,
/// date or word) it is in, quotes aside.
fn in_atom(byte: u8) -> bool {
    !matches!(
        byte,
        b'.' | b'='
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b' '
            | b'\t'
            | b'#'
            | b'\r'
            | b'\n'
            | b'"'
            | b'\''
    )
}

/// Where the `[[key]]` header is on the line starting at `line`, after its
/// spaces and tabs, if it is one.
fn header_at(bytes: &[u8], line: usize, key: &[u8]) -> Option<usize> {
    let at = line + blanks(&bytes[line..]);
    is_header(&bytes[at..], key).then_some(at)
}

/// How many spaces and tabs `bytes` opens with.
fn blanks(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count()
}

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
    let Some(rest) = rest.strip_prefix(b"[[") else {
        return false;
    };
    let Some(rest) = rest[blanks(rest)..].strip_prefix(key) else {
        return false;
    };
    rest[blanks(rest)..].starts_with(b"]]")
}

/// Where the basic string whose text starts at `from` ends (past its
/// closing quote); at the line end, if its line ends first; `None` if the
/// file ends first.
fn basic_string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let found = from + memchr3(b'"', b'\\', b'\n', &bytes[from..])?;
        match bytes[found] {
            b'"' => return Some(found + 1),
            b'\\' => from = escaped_end(bytes, found),
            _ => return Some(found),
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
