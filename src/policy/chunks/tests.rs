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

/// Loads a policy whose only tools file is `tools`; the error text if
/// it does not load.
fn load(tools: &str) -> Result<Vec<String>, String> {
    crate::policy::load_with_tools_file(tools)
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
fn an_open_string_is_reported_and_every_entry_after_it_judged() {
    // The open string ends at its line, as the lexer reads it; the entry
    // that holds it reports the syntax error, and the next entry's own
    // problem is reported too.
    let text = format!("{ENTRY}[[tool]]\nname = \"t.b\n[[tool]]\nname = \"t.c\"\nprority = 1\n");
    assert_eq!(
        array_table_starts(&text, "tool"),
        [0, ENTRY.len(), text.rfind("[[tool]]").unwrap()]
    );
    let err = crate::policy::load_with_tools_file(&text).unwrap_err();
    let lines: Vec<Option<usize>> = err.problems().iter().map(|p| p.line).collect();
    assert_eq!(lines, [Some(4), Some(7)], "{err}");
}

#[test]
fn tools_declared_before_the_headers_are_judged_with_the_whole_file() {
    // Valid TOML cannot extend an inline array with `[[tool]]`.
    let text = format!("tool = [{{ name = \"t.x\" }}]\n{ENTRY}");
    assert!(load(&text).is_err());
    assert_eq!(load("tool = [{ name = \"t.x\" }]\n").unwrap(), ["t.x"]);
}

#[test]
fn strings_of_every_kind_and_comments_hide_headers() {
    let text = "a = \"\\\"\\\\\" # [[tool]]\n\
                b = \"\"\"\\\"\"\"\n[[tool]]\n\"\"\"\"\"\n\
                c = '''\n[[tool]]'''''\n\
                d = 'x\\'\r\n\
                \t[[\ttool ]]\r\n";
    assert_eq!(
        array_table_starts(text, "tool"),
        [text.find("\t[[").unwrap() + 1]
    );
}

#[test]
fn a_byte_order_mark_is_stepped_over() {
    assert_eq!(array_table_starts("\u{feff}[[tool]]\n", "tool"), [3]);
}

#[test]
fn nothing_is_found_past_what_valid_toml_cannot_hold() {
    // Each line ends the scan: the lexer would find the header after it,
    // but no valid file holds it, so no split is guessed.
    for stop in [
        "a = x\"\n",
        "a = x'\n",
        "a = 1\r",
        "a = \"\"\"x\"\"\"\"\"\"\n",
    ] {
        let text = format!("[[tool]]\n{stop}[[tool]]\n");
        assert_eq!(array_table_starts(&text, "tool"), [0], "{stop:?}");
        assert_eq!(lexer_starts(&text, "tool").len(), 2, "{stop:?}");
    }
    // A one-line string its line ends in ends there, as the lexer reads it.
    for open in ["a = \"open\n", "a = 'open\n", "a = \"x\\\"\n"] {
        let text = format!("[[tool]]\n{open}[[tool]]\n");
        let starts = array_table_starts(&text, "tool");
        assert_eq!(starts, lexer_starts(&text, "tool"), "{open:?}");
        assert_eq!(starts.len(), 2, "{open:?}");
    }
    for open in ["a = \"\"\"\n", "a = '''\n"] {
        let text = format!("[[tool]]\n{open}[[tool]]\n");
        assert_eq!(array_table_starts(&text, "tool"), [0], "{open:?}");
    }
}

#[test]
fn only_a_bare_key_is_looked_for() {
    assert!(array_table_starts("[[]]\n", "").is_empty());
    assert!(array_table_starts("[[a.b]]\n", "a.b").is_empty());
    assert_eq!(array_table_starts("[[a-b_1]]\n", "a-b_1"), [0]);
}

/// The headers the TOML lexer's tokens show: the scanner's oracle, found as
/// the scanner once found them.
fn lexer_starts(text: &str, key: &str) -> Vec<usize> {
    use toml_parser::lexer::TokenKind;
    let tokens: Vec<_> = toml_parser::Source::new(text)
        .lex()
        .filter(|t| t.kind() != TokenKind::Eof)
        .collect();
    let kind = |j: usize| tokens.get(j).map(|t| t.kind());
    let mut starts = Vec::new();
    let mut line_start = true;
    for (i, token) in tokens.iter().enumerate() {
        let at_line_start = line_start;
        line_start = token.kind() == TokenKind::Newline
            || (at_line_start && token.kind() == TokenKind::Whitespace);
        if !at_line_start || token.kind() != TokenKind::LeftSquareBracket {
            continue;
        }
        let mut j = i + 1;
        if kind(j) != Some(TokenKind::LeftSquareBracket) {
            continue;
        }
        j += 1;
        if kind(j) == Some(TokenKind::Whitespace) {
            j += 1;
        }
        let is_key = kind(j) == Some(TokenKind::Atom)
            && tokens[j].span().start() < text.len()
            && &text[tokens[j].span().start()..tokens[j].span().end()] == key;
        if !is_key {
            continue;
        }
        j += 1;
        if kind(j) == Some(TokenKind::Whitespace) {
            j += 1;
        }
        if kind(j) == Some(TokenKind::RightSquareBracket)
            && kind(j + 1) == Some(TokenKind::RightSquareBracket)
        {
            starts.push(token.span().start());
        }
    }
    starts
}

mod props {
    use super::{array_table_starts, lexer_starts};
    use proptest::prelude::*;
    use proptest::sample::select;

    /// Joins what `parts` draws.
    fn joined(parts: impl Strategy<Value = Vec<&'static str>>) -> impl Strategy<Value = String> {
        parts.prop_map(|p| p.concat())
    }

    fn line_end() -> impl Strategy<Value = &'static str> {
        select(vec!["\n", "\r\n"])
    }

    /// A comment to end a line with, or none.
    fn comment() -> impl Strategy<Value = &'static str> {
        select(vec![
            "",
            "",
            " # [[tool]]",
            "# \"open '''open \"\"\"open \\",
            "\t#",
        ])
    }

    /// `[[tool]]` spelled every way TOML allows: the scanner finds the
    /// plain ones, the lexer the same.
    fn header() -> impl Strategy<Value = &'static str> {
        select(vec![
            "[[tool]]",
            "[[tool]]",
            "[[ tool ]]",
            "[[\ttool\t]]",
            "  [[tool]]",
            "\t[[ tool]]",
            "[[tool ]]",
            "[[\"tool\"]]",
            "[['tool']]",
            " [[ \"tool\" ]]",
        ])
    }

    fn sub_table() -> impl Strategy<Value = &'static str> {
        select(vec![
            "[[tool.parameters]]",
            "[[ tool.parameters ]]",
            "[[tool . \"parameters\"]]",
        ])
    }

    fn basic() -> impl Strategy<Value = String> {
        let piece = select(vec![
            "[[tool]]",
            "a",
            " ",
            "\t",
            "\\\"",
            "\\\\",
            "'",
            "'''",
            "#",
            "\\n",
            "\\u0041",
            "\\\"\\\"\\\"",
            "é",
            "]]",
        ]);
        joined(prop::collection::vec(piece, 0..6)).prop_map(|s| format!("\"{s}\""))
    }

    fn literal() -> impl Strategy<Value = String> {
        let piece = select(vec![
            "[[tool]]", "a", " ", "\"", "\\", "\"\"\"", "#", "é", "\\n",
        ]);
        joined(prop::collection::vec(piece, 0..6)).prop_map(|s| format!("'{s}'"))
    }

    fn ml_basic() -> impl Strategy<Value = String> {
        let piece = select(vec![
            "[[tool]]",
            "\n[[tool]]\n",
            "\r\n  [[ tool ]]\r\n",
            "\n# [[tool]]\n",
            "\n",
            "\r\n",
            "a",
            "\"a",
            "\"\"a",
            "\\\"",
            "\\\"\\\"\\\"",
            "\\\\",
            "\\\n  \n  ",
            "\\  \r\n",
            "'''",
            "'",
            "#",
            "é",
        ]);
        let end = select(vec!["", "\"", "\"\""]);
        (joined(prop::collection::vec(piece, 0..8)), end)
            .prop_map(|(s, end)| format!("\"\"\"{s}{end}\"\"\""))
    }

    fn ml_literal() -> impl Strategy<Value = String> {
        let piece = select(vec![
            "[[tool]]",
            "\n[[tool]]\n",
            "\r\n\t[[tool]] # x\r\n",
            "\n",
            "\r\n",
            "a",
            "'a",
            "''a",
            "\\",
            "\\'a",
            "\"\"\"",
            "\"",
            "#",
            "é",
        ]);
        let end = select(vec!["", "'", "''"]);
        (joined(prop::collection::vec(piece, 0..8)), end)
            .prop_map(|(s, end)| format!("'''{s}{end}'''"))
    }

    /// A value of any kind, strings of all four kinds inside arrays and
    /// inline tables too, an array over several lines.
    fn value() -> impl Strategy<Value = String> {
        let string = prop_oneof![basic(), literal(), ml_basic(), ml_literal()];
        prop_oneof![
            4 => string.clone(),
            1 => Just("1".to_string()),
            1 => prop::collection::vec(string.clone(), 0..3)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            1 => (string.clone(), line_end(), comment())
                .prop_map(|(s, end, c)| format!("[{c}{end}  {s},{end}[[1]]{end}]")),
            1 => string.prop_map(|s| format!("{{ a = {s} }}")),
        ]
    }

    /// The lines of one table: `key = value` lines with distinct keys,
    /// comment lines and blank lines.
    fn body() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            4 => (value(), comment(), line_end()).prop_map(|(v, c, e)| (Some(v), format!("{c}{e}"))),
            1 => (comment(), line_end()).prop_map(|(c, e)| (None, format!("{c}{e}"))),
        ];
        prop::collection::vec(line, 0..4).prop_map(|lines| {
            let mut text = String::new();
            for (n, (value, rest)) in lines.into_iter().enumerate() {
                if let Some(value) = value {
                    text.push_str(&format!("k{n} = {value}"));
                }
                text.push_str(&rest);
            }
            text
        })
    }

    /// One `[[tool]]` entry: its header, its keys, its sub-tables.
    fn entry() -> impl Strategy<Value = String> {
        let table = (sub_table(), comment(), line_end(), body())
            .prop_map(|(h, c, e, b)| format!("{h}{c}{e}{b}"));
        (
            header(),
            comment(),
            line_end(),
            body(),
            prop::collection::vec(table, 0..2),
        )
            .prop_map(|(h, c, e, b, tables)| format!("{h}{c}{e}{b}{}", tables.concat()))
    }

    /// A tools file that is valid TOML: a byte order mark perhaps, a
    /// preamble, then entries.
    fn tools_file() -> impl Strategy<Value = String> {
        (
            select(vec!["", "", "\u{feff}"]),
            body(),
            prop::collection::vec(entry(), 0..5),
        )
            .prop_map(|(bom, preamble, entries)| {
                // The preamble's keys are the file's own, apart from the
                // tables' `k0`, `k1`.
                let preamble = preamble.replace("k", "p");
                format!("{bom}{preamble}{}", entries.concat())
            })
    }

    /// Anything: a tools file broken by cuts and stray pieces, or pieces
    /// of TOML put together at random.
    fn any_text() -> impl Strategy<Value = String> {
        let stray = select(vec![
            "\"",
            "\"\"\"",
            "'",
            "'''",
            "\\",
            "\n",
            "\r\n",
            "\r",
            "#",
            " ",
            "\t",
            "[[tool]]",
            "\n[[tool]]",
            "[[",
            "]]",
            "[",
            "tool",
            "a",
            "=",
            "é",
            "\u{feff}",
            "\"\"",
            "''",
        ]);
        let broken = (
            tools_file(),
            prop::collection::vec((any::<prop::sample::Index>(), stray.clone()), 0..4),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(mut text, inserts, cut)| {
                for (at, piece) in inserts {
                    let mut at = at.index(text.len() + 1);
                    while !text.is_char_boundary(at) {
                        at -= 1;
                    }
                    text.insert_str(at, piece);
                }
                let mut cut = cut.index(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                if cut % 3 == 0 {
                    text.truncate(cut);
                }
                text
            });
        prop_oneof![broken, joined(prop::collection::vec(stray, 0..40))]
    }

    /// The `tool` entries `text` declares, read as one document.
    fn tools_of(text: &str) -> Vec<toml::Value> {
        let table: toml::Table = toml::from_str(text).unwrap();
        match table.get("tool") {
            Some(toml::Value::Array(entries)) => entries.clone(),
            _ => Vec::new(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn valid_files_split_where_the_lexer_splits_them(text in tools_file()) {
            prop_assert!(toml::from_str::<toml::Table>(&text).is_ok(), "{text:?}");
            let starts = array_table_starts(&text, "tool");
            prop_assert_eq!(&starts, &lexer_starts(&text, "tool"), "{:?}", text);
            // Each part parsed apart declares the same entries, in order,
            // as the whole file.
            let mut bounds = vec![0];
            bounds.extend(starts.iter().copied().filter(|&s| s > 0));
            bounds.push(text.len());
            let parts: Vec<toml::Value> =
                bounds.windows(2).flat_map(|b| tools_of(&text[b[0]..b[1]])).collect();
            prop_assert_eq!(parts, tools_of(&text), "{:?}", text);
        }

        #[test]
        fn no_header_is_found_the_lexer_does_not_find(text in any_text()) {
            let starts = array_table_starts(&text, "tool");
            let lexed = lexer_starts(&text, "tool");
            if toml::from_str::<toml::Table>(&text).is_ok() {
                prop_assert_eq!(&starts, &lexed, "{:?}", text);
            }
            prop_assert!(starts.iter().all(|s| lexed.contains(s)), "{starts:?} {lexed:?} {text:?}");
        }
    }
}
