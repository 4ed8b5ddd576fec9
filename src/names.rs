//! Names: which characters a tool, server or group name may not hold, how
//! long one may be, and names close to a misspelt one, for "did you mean"
//! answers. One rule for every command, so `why`, a gate and a refused call
//! suggest alike, and a configured name and a discovered one are refused
//! alike.

use std::fmt;

pub use crate::contract::Hidden;

/// The longest name muster accepts, in bytes of UTF-8: a configured tool,
/// group or control tool, a server block, and a tool a server lists. Far
/// above any real name (providers take 64 characters), and far below what
/// breaks a table or floods a terminal.
pub const MAX_NAME_BYTES: usize = 1024;

/// A name longer than [`MAX_NAME_BYTES`]. Its `Display` ends with the code
/// in brackets, so the problem that quotes it carries the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The name's length in bytes.
    pub bytes: usize,
}

impl TooLong {
    /// The stable code: `name-too-long`.
    pub const CODE: &'static str = "name-too-long";
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "is {} bytes long, over the limit of {MAX_NAME_BYTES} bytes [{}]",
            self.bytes,
            Self::CODE
        )
    }
}

/// Whether `name` is longer than [`MAX_NAME_BYTES`]: the one home of the
/// length rule.
pub fn too_long(name: &str) -> Option<TooLong> {
    (name.len() > MAX_NAME_BYTES).then_some(TooLong { bytes: name.len() })
}

/// How many characters of a long name a problem quotes.
const SHOWN_CHARS: usize = 48;

/// `name` as a problem quotes it: whole when it has at most 48 characters,
/// else its first 48 and `…`, so a problem about a name of 70,000 bytes
/// stays one line.
pub fn shown(name: &str) -> String {
    match name.char_indices().nth(SHOWN_CHARS) {
        None => name.to_string(),
        Some((cut, _)) => format!("{}…", &name[..cut]),
    }
}

/// Which kind of hidden character `c` is, or `None` for one that shows as
/// itself.
pub fn hidden(c: char) -> Option<Hidden> {
    match c {
        '\u{2028}' | '\u{2029}' => Some(Hidden::Control),
        c if c.is_control() => Some(Hidden::Control),
        '\u{061C}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Some(Hidden::Bidi),
        // Default-ignorable code points and the other format (Cf) characters.
        '\u{00AD}'
        | '\u{034F}'
        | '\u{0600}'..='\u{0605}'
        | '\u{06DD}'
        | '\u{070F}'
        | '\u{0890}'..='\u{0891}'
        | '\u{08E2}'
        | '\u{115F}'..='\u{1160}'
        | '\u{17B4}'..='\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200D}'
        | '\u{2060}'..='\u{2065}'
        | '\u{206A}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF0}'..='\u{FFFB}'
        | '\u{110BD}'
        | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}' => Some(Hidden::Invisible),
        _ => None,
    }
}

/// The first hidden character in `name`: its 0-based place among the
/// name's characters, the character and its kind.
pub fn first_hidden(name: &str) -> Option<(usize, char, Hidden)> {
    name.chars()
        .enumerate()
        .find_map(|(i, c)| hidden(c).map(|h| (i, c, h)))
}

/// `name` with every hidden character written as `\u{XXXX}`, so it can be
/// shown on one line and read for what it is.
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if hidden(c).is_some() {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` escaped as [`escape`] escapes it, its line breaks kept (a
/// carriage return before one dropped): server text of several lines (a
/// description, an error message) read as written, without letting it
/// drive a terminal.
pub fn escape_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| escape(line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A wait as a person reads it: whole milliseconds under a second, else
/// seconds to a tenth (`3 s`, `1.5 s`, `250 ms`), not the nanoseconds a
/// deadline left (`2.999998578s`).
pub fn duration_text(d: std::time::Duration) -> String {
    let ms = (d.as_secs_f64() * 1000.0).round();
    if ms < 1000.0 {
        return format!("{ms} ms");
    }
    let tenths = (d.as_secs_f64() * 10.0).round() / 10.0;
    if tenths.fract() == 0.0 {
        format!("{tenths:.0} s")
    } else {
        format!("{tenths:.1} s")
    }
}

/// `text` as muster shows it to a person or a CI log: the one guard every human rendering
/// passes through, so text a server or a file wrote (a schema's `$ref`, a pattern, a file
/// name) cannot drive a terminal or a CI runner. Every hidden character but a line break and a
/// tab is written as `\uXXXX` (a JSON escape, so JSON output reads back the same), and, unless
/// `commands` (GitHub workflow commands muster wrote itself, whose data is escaped by their
/// renderer), a line whose first non-blank text is `::` gets a backslash before it, so a
/// runner never reads it as a workflow command.
pub fn shown_output(text: &str, commands: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_line = |line: &str| !commands && line.trim_start().starts_with("::");
    let clean = !text
        .chars()
        .any(|c| c != '\n' && c != '\t' && hidden(c).is_some())
        && !text.split('\n').any(unsafe_line);
    if clean {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if unsafe_line(line) {
            let blank = line.len() - line.trim_start().len();
            out.push_str(&line[..blank]);
            out.push('\\');
            push_escaped(&mut out, &line[blank..]);
        } else {
            push_escaped(&mut out, line);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Pushes `line` with every hidden character but a tab as `\uXXXX` (UTF-16 units, as JSON
/// writes them).
fn push_escaped(out: &mut String, line: &str) {
    for c in line.chars() {
        if c != '\t' && hidden(c).is_some() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        } else {
            out.push(c);
        }
    }
}

/// `c` as `U+XXXX`.
pub fn code_point(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// Up to `n` of `candidates` most like `name` (Jaro-Winkler similarity above
/// 0.6), most alike first, ties by name. A name longer than
/// [`MAX_NAME_BYTES`] is no slip of a name muster accepts and gets none: the
/// comparison costs its length times every candidate's (issue 30: a 900 KB
/// unknown tool name took half a second).
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<&'a str> {
    if name.len() > MAX_NAME_BYTES {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.6)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31 item 9: a timeout printed as what a deadline left.
    #[test]
    fn a_wait_is_shown_rounded() {
        use std::time::Duration;
        let cases = [
            (Duration::from_nanos(2_999_998_578), "3 s"),
            (Duration::from_secs(30), "30 s"),
            (Duration::from_millis(1_500), "1.5 s"),
            (Duration::from_millis(250), "250 ms"),
            (Duration::from_micros(999_600), "1 s"),
            (Duration::ZERO, "0 ms"),
        ];
        for (d, shown) in cases {
            assert_eq!(duration_text(d), shown, "{d:?}");
        }
    }

    #[test]
    fn line_breaks_are_kept_and_the_rest_escaped() {
        assert_eq!(
            escape_lines("a\r\nb\u{1b}[31m\n\tc"),
            "a\nb\\u{001B}[31m\n\\u{0009}c"
        );
    }

    #[test]
    fn the_nearest_names_come_first_and_strangers_not_at_all() {
        let names = [
            "mcp.bland_read.list_calls",
            "mcp.bland_read.get_call",
            "math.calculate",
        ];
        assert_eq!(
            closest("mcp.bland_read.list_call", names, 2),
            ["mcp.bland_read.list_calls", "mcp.bland_read.get_call"]
        );
        assert!(closest("zzzz", names, 3).is_empty());
    }

    #[test]
    fn a_name_past_the_length_limit_gets_no_suggestion() {
        let names = ["mcp.bland_read.list_calls"];
        let long = format!("mcp.bland_read.list_calls{}", "s".repeat(MAX_NAME_BYTES));
        assert!(closest(&long, names, 3).is_empty());
        let fits = format!("mcp.bland_read.list_calls{}", "s".repeat(40));
        assert_eq!(closest(&fits, names, 3), names);
    }

    #[test]
    fn names_over_the_limit_are_too_long_and_quoted_short() {
        let limit = "n".repeat(MAX_NAME_BYTES);
        assert_eq!(too_long(&limit), None);
        let long = "é".repeat(35_000);
        let err = too_long(&long).unwrap();
        assert_eq!(err.bytes, 70_000);
        assert!(err.to_string().ends_with("[name-too-long]"), "{err}");
        assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 1);
        assert_eq!(shown("short.name"), "short.name");
    }

    #[test]
    fn shown_output_escapes_controls_and_workflow_commands_and_keeps_json_readable() {
        assert_eq!(shown_output("a\nb\tc", false), "a\nb\tc");
        assert_eq!(
            shown_output("x \"(\n::error::pp\u{1b}[\u{7}\"\n  ::warning::y", false),
            "x \"(\n\\::error::pp\\u001B[\\u0007\"\n  \\::warning::y"
        );
        assert_eq!(shown_output("::notice::ok", true), "::notice::ok");
        assert_eq!(shown_output("::notice::\u{9b}", true), "::notice::\\u009B");
        let json = serde_json::json!({"a": "\u{9b}\u{200b}\u{E0041}\u{1b}"}).to_string();
        let shown = shown_output(&json, false);
        assert!(
            !shown.contains(['\u{9b}', '\u{200b}', '\u{E0041}']),
            "{shown}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            serde_json::from_str::<serde_json::Value>(&json).unwrap()
        );
    }

    #[test]
    fn control_bidi_and_invisible_characters_are_found_and_escaped() {
        assert_eq!(first_hidden("mcp.kb.search_v2-é"), None);
        assert_eq!(first_hidden("日本語.ツール"), None);
        assert_eq!(first_hidden("a\nb"), Some((1, '\n', Hidden::Control)));
        assert_eq!(
            first_hidden("ab\u{2028}"),
            Some((2, '\u{2028}', Hidden::Control))
        );
        assert_eq!(
            first_hidden("evil\u{202E}txt.exe"),
            Some((4, '\u{202E}', Hidden::Bidi))
        );
        assert_eq!(
            first_hidden("\u{2067}x"),
            Some((0, '\u{2067}', Hidden::Bidi))
        );
        for c in [
            '\u{200B}',
            '\u{200D}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{FE0F}',
            '\u{E0041}',
            '\u{3164}',
        ] {
            assert_eq!(hidden(c), Some(Hidden::Invisible), "{}", code_point(c));
        }
        assert_eq!(escape("a\u{200B}b\nc"), "a\\u{200B}b\\u{000A}c");
        assert_eq!(escape("plain.name"), "plain.name");
        assert_eq!(code_point('\u{202E}'), "U+202E");
    }
}
