//! Splitting a large tools file into the entries it declares, so each is
//! parsed on its own: a file of 100,000 `[[tool]]` entries is never held as
//! one TOML document in memory.
//!
//! A tools file holds nothing at its top level but the `tool` array of
//! tables, so the text from one `[[tool]]` header up to the next declares
//! exactly one entry (with its sub-tables), independently of the others.
//! Headers are found with the TOML lexer, never inside a string.

use std::collections::VecDeque;

use toml_parser::lexer::{Token, TokenKind};

/// The byte offsets of the `[[key]]` headers that begin a line of `text`,
/// in order. Only the plain spelling is found (`[[ key ]]` with optional
/// spaces around the key); a header spelled otherwise (quoted, say) stays
/// inside the entry before it, which the parser then reads as one more
/// entry of the same array, so nothing changes meaning.
pub(super) fn array_table_starts(text: &str, key: &str) -> Vec<usize> {
    // Tokens are read as the lexer gives them, with the few after the
    // current one in view: held all at once, the tokens of a 26 MB file
    // took 400 MB.
    let mut lexer = toml_parser::Source::new(text)
        .lex()
        .filter(|t| t.kind() != TokenKind::Eof);
    let mut ahead: VecDeque<Token> = lexer.by_ref().take(HEADER_TOKENS).collect();
    let mut starts = Vec::new();
    let mut line_start = true;
    while let Some(token) = ahead.pop_front() {
        ahead.extend(lexer.next());
        // The token `n` places after the current one.
        let at = |n: usize| ahead.get(n - 1);
        let kind = |n: usize| at(n).map(|t| t.kind());
        let at_line_start = line_start;
        line_start = token.kind() == TokenKind::Newline
            || (at_line_start && token.kind() == TokenKind::Whitespace);
        if !at_line_start || token.kind() != TokenKind::LeftSquareBracket {
            continue;
        }
        let span = token.span();
        let mut j = 1;
        if kind(j) != Some(TokenKind::LeftSquareBracket)
            || at(j).is_some_and(|t| t.span().start() != span.end())
        {
            continue;
        }
        j += 1;
        if kind(j) == Some(TokenKind::Whitespace) {
            j += 1;
        }
        let is_key = kind(j) == Some(TokenKind::Atom)
            && at(j).is_some_and(|t| &text[t.span().start()..t.span().end()] == key);
        if !is_key {
            continue;
        }
        j += 1;
        if kind(j) == Some(TokenKind::Whitespace) {
            j += 1;
        }
        if kind(j) == Some(TokenKind::RightSquareBracket)
            && kind(j + 1) == Some(TokenKind::RightSquareBracket)
            && at(j + 1)
                .zip(at(j))
                .is_some_and(|(close, before)| close.span().start() == before.span().end())
        {
            starts.push(span.start());
        }
    }
    starts
}

/// The most tokens a header takes: `[`, `[`, space, key, space, `]`, `]`.
const HEADER_TOKENS: usize = 7;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headers_at_line_starts_only() {
        let text = "# tools\n[[tool]]\nname = \"a\"\n  [[ tool ]]\nname = \"b\"\n\
                    [[tool.parameters]]\nx = 1\nd = \"\"\"\n[[tool]]\n\"\"\"\n\
                    e = '''\n[[tool]]'''\n[[\"tool\"]]\nname = \"c\"\n[[tool]] # last\n";
        let starts = array_table_starts(text, "tool");
        let lines: Vec<&str> = starts
            .iter()
            .map(|&s| text[s..].lines().next().unwrap())
            .collect();
        assert_eq!(lines, ["[[tool]]", "[[ tool ]]", "[[tool]] # last"]);
    }

    #[test]
    fn nothing_to_split_in_a_file_without_headers() {
        assert!(array_table_starts("", "tool").is_empty());
        assert!(array_table_starts("tool = [{ name = \"a\" }]\n", "tool").is_empty());
        assert!(array_table_starts("x = \"[[tool]]\"\n", "tool").is_empty());
    }

    use crate::policy::Inputs;

    /// Loads a policy whose only tools file is `tools`; the error text if
    /// it does not load.
    fn load(tools: &str) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("muster.toml"),
            "[caps]\nitems = 30\ntokens = 9000\n\n[[agent]]\nname = \"chat\"\nversion = 1\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/t.toml"), tools).unwrap();
        Inputs::load(dir.path())
            .map(|i| i.policy.tools.iter().map(|t| t.name.clone()).collect())
            .map_err(|e| e.to_string())
    }

    const ENTRY: &str = "[[tool]]\nname = \"t.a\"\n";

    #[test]
    fn entries_parsed_apart_load_as_one_file_would() {
        let text = format!(
            "# header comment naming tool\n{ENTRY}description = \"x\"\n\
             [[tool]]\nname = \"t.b\"\ninput_schema = {{ type = \"object\" }}\n\
             [[\"tool\"]]\nname = \"t.c\"\n"
        );
        assert_eq!(load(&text).unwrap(), ["t.a", "t.b", "t.c"]);
    }

    #[test]
    fn an_error_in_a_later_entry_names_its_line_in_the_file() {
        let text = format!("{ENTRY}\n[[tool]]\nname = \"t.b\"\nprority = 1\n");
        let err = load(&text).unwrap_err();
        assert!(err.contains("t.toml:6"), "{err}");
    }

    #[test]
    fn every_entry_with_an_error_is_reported() {
        let text = "[[tool]]\nname = 1\n[[tool]]\nname = \"t.b\"\n[[tool]]\nname = 2\n";
        let err = load(text).unwrap_err();
        assert!(
            err.contains("t.toml:2") && err.contains("t.toml:6"),
            "{err}"
        );
    }

    #[test]
    fn tools_declared_before_the_headers_are_judged_with_the_whole_file() {
        // Valid TOML cannot extend an inline array with `[[tool]]`.
        let text = format!("tool = [{{ name = \"t.x\" }}]\n{ENTRY}");
        assert!(load(&text).is_err());
        assert_eq!(load("tool = [{ name = \"t.x\" }]\n").unwrap(), ["t.x"]);
    }
}
