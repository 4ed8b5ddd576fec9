//! Reads a turn: the tool calls one model reply asked for. It decides only whether the file is a
//! readable turn; what a call's arguments hold is the model's business and is judged by the
//! check, never here, so a call with odd arguments is still read.

use crate::error::code;
use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::deep;
use crate::error::{Error, ErrorKind, LineIndex, Problem};

/// One tool call of a turn.
#[derive(Debug, PartialEq)]
pub struct Call {
    /// The id the model gave the call; answers refer to it.
    pub id: String,
    /// The tool the call names.
    pub name: String,
    /// The arguments as the model sent them: usually an object, sometimes a string holding
    /// one. A missing `arguments` reads as null, which the check takes as no arguments (as it
    /// takes blank text); so do
    /// arguments that could not be read (see `unreadable`).
    pub arguments: Value,
    /// Why the call's `arguments` could not be read (a number out of range, a lone surrogate,
    /// nesting deeper than the parser allows, a member named twice, a number a double would
    /// round), when they could not. The check refuses such a call; the rest of the turn is
    /// still read.
    pub unreadable: Option<Unreadable>,
    /// Integers the arguments' text spells that serde_json holds as doubles (`-0`,
    /// `18446744073709551616`), by the double's bits, so what is forwarded writes them as the
    /// model did ([`super::digits::written_integers`]).
    pub(crate) written: Box<[(u64, Box<str>)]>,
}

impl Call {
    /// A call built in code: `arguments` as the model sent them, read.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            unreadable: None,
            written: Box::default(),
        }
    }
}

/// Why a call's arguments were not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unreadable {
    /// Occurs when the arguments are not JSON muster reads: serde_json's reason and where it
    /// stopped (`number out of range at column 10`).
    Json(String),
    /// Occurs when the arguments hold a number no `i64`, `u64` or double holds exactly
    /// (`123456789012345678901234567890`): serde_json would read the nearest double, and the
    /// tool would receive other digits than the model wrote. The number as written.
    LossyNumber(String),
}

impl Drop for Call {
    fn drop(&mut self) {
        // Arguments built in code may nest deeper than the default drop can recurse.
        deep::drop_value(std::mem::take(&mut self.arguments));
    }
}

/// The tool calls of one model reply, in the order the model sent them.
#[derive(Debug, Default, PartialEq)]
pub struct Turn {
    /// The calls, in order.
    pub calls: Vec<Call>,
}

impl Turn {
    /// Reads `{"calls": [{"id": "...", "name": "...", "arguments": <object or string>}]}`.
    ///
    /// # Errors
    /// An [`ErrorKind::Input`] error naming `file`, the line and what to change when the text is
    /// not JSON or lacks `calls`, a call lacks a text `id` or `name`, or two calls share an
    /// `id` (naming the id and both lines). A call whose
    /// `arguments` cannot be read is not an error here: it is read with
    /// [`Call::unreadable`] set, for the check to refuse.
    pub fn from_json(text: &str, file: &Path) -> Result<Self, Error> {
        const HELP: &str = "give an object {\"calls\": [{\"id\": \"...\", \"name\": \"...\", \
                            \"arguments\": {...}}]}";
        let text = without_bom(text);
        not_a_list(text, file, "turn", HELP)?;
        let raw: RawTurn<'_> =
            serde_json::from_str(text).map_err(|err| json_error(file, "turn", &err, HELP))?;
        if let Some(err) = repeated_id(&raw.calls, text, file) {
            return Err(err);
        }
        Ok(Self {
            calls: raw
                .calls
                .into_iter()
                .map(|c| {
                    // Each call's arguments are read on their own: what a model wrote there is
                    // answered in the report, and never makes the whole turn unreadable.
                    let (arguments, unreadable, written) = match c.arguments {
                        None => (Value::Null, None, Box::default()),
                        Some(raw) => match read_arguments(raw) {
                            Ok(value) => {
                                let written = written_in(raw.get(), &value);
                                (value, None, written)
                            }
                            Err(why) => (Value::Null, Some(why), Box::default()),
                        },
                    };
                    Call {
                        id: c.id,
                        name: c.name,
                        arguments,
                        unreadable,
                        written,
                    }
                })
                .collect(),
        })
    }
}

/// The input error for the first call whose id an earlier call of the turn already used:
/// answers name calls by id, so two calls with one id could not be told apart.
fn repeated_id(calls: &[RawCall<'_>], text: &str, file: &Path) -> Option<Error> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(calls.len());
    let (first, again) = calls
        .iter()
        .enumerate()
        .find_map(|(i, call)| seen.insert(&call.id, i).map(|first| (first, i)))?;
    // Lines are looked up only now, on the rare turn that repeats an id.
    let lines = id_lines(text);
    let line = |i: usize| lines.as_ref().and_then(|l| l.get(i).copied());
    let id = &calls[again].id;
    let (a, b) = (first + 1, again + 1);
    let message = match (line(first), line(again)) {
        (Some(x), Some(y)) if x == y => format!(
            "call id \"{id}\" is used by two calls of the turn (calls {a} and {b}, both on line {x})"
        ),
        (Some(x), Some(y)) => format!(
            "call id \"{id}\" is used by two calls of the turn (calls {a} and {b}, on lines {x} and {y})"
        ),
        _ => format!("call id \"{id}\" is used by two calls of the turn (calls {a} and {b})"),
    };
    Some(Error::new(
        ErrorKind::Input,
        Problem::coded(code::DUPLICATE, message)
            .in_file(file)
            .at_line(line(again))
            .help("give each call of the turn its own id; answers name calls by id"),
    ))
}

/// The line of each call's `id` in `text`, in the calls' order.
fn id_lines(text: &str) -> Option<Vec<usize>> {
    #[derive(Deserialize)]
    struct Spans<'t> {
        #[serde(borrow)]
        calls: Vec<IdSpan<'t>>,
    }
    #[derive(Deserialize)]
    struct IdSpan<'t> {
        #[serde(borrow)]
        id: &'t RawValue,
    }
    let spans: Spans<'_> = serde_json::from_str(text).ok()?;
    let lines = LineIndex::new(text);
    Some(
        spans
            .calls
            .iter()
            .map(|c| lines.line(c.id.get().as_ptr() as usize - text.as_ptr() as usize))
            .collect(),
    )
}

/// The integers serde_json would write back otherwise in a call's arguments `text` (read as
/// `value`), and in the JSON text the repair may read from it: the arguments as a whole, or a
/// top-level member, sent as a string.
fn written_in(text: &str, value: &Value) -> Box<[(u64, Box<str>)]> {
    let wrapped: Vec<&str> = match value {
        Value::String(text) => vec![text.as_str()],
        Value::Object(map) => map.values().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let wrapped = wrapped
        .into_iter()
        .filter(|text| super::repair::may_wrap(text));
    super::digits::written_integers(std::iter::once(text).chain(wrapped)).into_boxed_slice()
}

/// The arguments `raw` holds, or why they cannot be read and where in them.
fn read_arguments(raw: &RawValue) -> Result<Value, Unreadable> {
    parse_arguments(raw.get())
}

/// Reads `text` as one JSON value, refusing an object that names a member twice (serde_json
/// keeps the last value silently, and a model that wrote `{"path": "a", "path": "b"}` must be
/// told, not have one of them chosen for it) and a number a double would round (every digit
/// the model wrote reaches the tool, or the call is refused).
///
/// # Errors
/// [`Unreadable::Json`] with serde_json's reason for text that is not JSON, or one naming the
/// repeated member, with the column where it stands; [`Unreadable::LossyNumber`] naming the
/// first number that would lose digits.
pub(crate) fn parse_arguments(text: &str) -> Result<Value, Unreadable> {
    let value = crate::unique::from_str(text).map_err(|err| Unreadable::Json(reason(&err)))?;
    // Scanned only once the text is known to be JSON, so the scan sees well-formed numbers.
    match super::digits::lossy_number(text) {
        Some(number) => {
            deep::drop_value(value);
            Err(Unreadable::LossyNumber(number.to_string()))
        }
        None => Ok(value),
    }
}

/// serde_json's reason for `err`, with the place it stopped given as a column of the text when
/// the text is one line, and "recursion limit exceeded" said plainly.
pub(crate) fn reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if err.line() > 0 => &text[..at],
        _ => text.as_str(),
    };
    let message = match message {
        "recursion limit exceeded" => "JSON text nested too deep (more than 128 levels)",
        other => other,
    };
    match err.line() {
        0 => message.to_string(),
        1 => format!("{message} at column {}", err.column()),
        line => format!("{message} at line {line} column {}", err.column()),
    }
}

#[derive(Deserialize)]
struct RawTurn<'t> {
    #[serde(borrow)]
    calls: Vec<RawCall<'t>>,
}

#[derive(Deserialize)]
struct RawCall<'t> {
    id: String,
    name: String,
    /// Kept as text and read per call; `null` and a missing member are `None`.
    #[serde(default, borrow)]
    arguments: Option<&'t RawValue>,
}

/// `text` without a leading UTF-8 byte-order mark, which some editors write and JSON does not
/// allow.
pub(crate) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// An input error when `text` is a JSON list: serde reads a list into a struct field by field,
/// and its complaint (`invalid length 0, expected struct …`) would name no field.
pub(crate) fn not_a_list(text: &str, file: &Path, what: &str, help: &str) -> Result<(), Error> {
    if !text.trim_start().starts_with('[') {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Input,
        Problem::coded(
            code::INVALID_JSON,
            format!("cannot read the {what}: it is a list, not an object"),
        )
        .in_file(file)
        .at_line(Some(crate::error::line_of(
            text,
            text.len() - text.trim_start().len(),
        )))
        .help(help),
    ))
}

/// An input error for a JSON file serde_json could not read, with the line it stopped at.
pub(crate) fn json_error(file: &Path, what: &str, err: &serde_json::Error, help: &str) -> Error {
    Error::json(file, what, err, help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_calls_with_object_string_and_missing_arguments() {
        let text = r#"{"calls": [
            {"id": "1", "name": "a", "arguments": {"x": 1}},
            {"id": "2", "name": "b", "arguments": "{\"x\": 1}"},
            {"id": "3", "name": "c", "extra": true}
        ]}"#;
        let turn = Turn::from_json(text, Path::new("t.json")).unwrap();
        assert_eq!(turn.calls.len(), 3);
        assert_eq!(turn.calls[0].arguments["x"], 1);
        assert!(turn.calls[1].arguments.is_string());
        assert!(turn.calls[2].arguments.is_null());
    }

    /// Issue 13 item 8: `[]` was "invalid length 0, expected struct RawTurn with 1 element",
    /// and a byte-order mark was "expected value".
    #[test]
    fn a_list_is_refused_as_not_an_object_and_a_byte_order_mark_is_skipped() {
        let err = Turn::from_json("\n []", Path::new("t.json")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let p = &err.problems()[0];
        assert_eq!(p.line, Some(2));
        assert!(
            p.message.ends_with("it is a list, not an object"),
            "{}",
            p.message
        );
        assert!(p.help.is_some());
        let turn = Turn::from_json(
            "\u{feff}{\"calls\": [{\"id\": \"1\", \"name\": \"a\"}]}",
            Path::new("t.json"),
        )
        .unwrap();
        assert_eq!(turn.calls.len(), 1);
    }

    #[test]
    fn a_call_without_a_name_is_an_error_naming_file_line_and_fix() {
        let text = "{\"calls\": [\n  {\"id\": \"1\",\n   \"arguments\": {}}\n]}";
        let err = Turn::from_json(text, Path::new("t.json")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let p = &err.problems()[0];
        assert_eq!(p.file.as_deref(), Some(Path::new("t.json")));
        assert_eq!(p.line, Some(3));
        assert!(p.message.contains("missing field `name`"), "{}", p.message);
        assert!(!p.message.contains(" at line "), "{}", p.message);
        assert!(p.help.as_deref().unwrap().contains("\"calls\""));
    }

    /// serde_json's reason a call's arguments were not read, when that is why.
    fn json_reason(call: &Call) -> Option<&str> {
        match &call.unreadable {
            Some(Unreadable::Json(reason)) => Some(reason),
            _ => None,
        }
    }

    #[test]
    fn a_bad_value_inside_arguments_is_kept_for_the_report_and_bad_text_elsewhere_is_not() {
        let text = r#"{"calls": [
            {"id": "1", "name": "a", "arguments": {"a":1e400}},
            {"id": "2", "name": "b", "arguments": {"s": "\ud800"}},
            {"id": "3", "name": "c", "arguments": {"a": 1e300, "s": "\ud83d\ude00"}},
            {"id": "4", "name": "d", "arguments": null}
        ]}"#;
        let turn = Turn::from_json(text, Path::new("t.json")).unwrap();
        assert_eq!(
            json_reason(&turn.calls[0]),
            Some("number out of range at column 10")
        );
        assert!(turn.calls[0].arguments.is_null());
        let why = json_reason(&turn.calls[1]).unwrap();
        assert!(why.contains("escape at column 14"), "{why}");
        // The twins: a large but finite number and a surrogate pair are read.
        assert_eq!(turn.calls[2].unreadable, None);
        assert_eq!(turn.calls[2].arguments["s"], "\u{1F600}");
        assert_eq!(turn.calls[3].unreadable, None);
        assert!(turn.calls[3].arguments.is_null());
        // The same kind of flaw outside `arguments` still makes the turn unreadable.
        let err = Turn::from_json(
            r#"{"calls": [{"id": "1", "name": "\ud800"}]}"#,
            Path::new("t.json"),
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        assert!(err.to_string().contains("escape"), "{err}");
    }

    /// Issue 13 item 8: a member named twice inside arguments took the last value silently.
    #[test]
    fn a_member_named_twice_in_arguments_is_unreadable_and_distinct_names_are_read() {
        let text = r#"{"calls": [
            {"id": "1", "name": "a", "arguments": {"path": "a", "opts": {"n": 1, "n": 2}}},
            {"id": "2", "name": "a", "arguments": {"path": "a", "path": "b"}},
            {"id": "3", "name": "a", "arguments": {"path": "a", "opts": {"n": 1, "m": [{"n": 2}]}}}
        ]}"#;
        let turn = Turn::from_json(text, Path::new("t.json")).unwrap();
        assert_eq!(
            json_reason(&turn.calls[0]),
            Some("member name \"n\" is given twice at column 34")
        );
        assert_eq!(
            json_reason(&turn.calls[1]),
            Some("member name \"path\" is given twice at column 20")
        );
        assert_eq!(turn.calls[2].unreadable, None);
        assert_eq!(turn.calls[2].arguments["opts"]["m"][0]["n"], 2);
        assert_eq!(
            parse_arguments("{\"a\": 1.5, \"b\": [null, true, -3, 18446744073709551615]}").unwrap(),
            serde_json::json!({"a": 1.5, "b": [null, true, -3, 18446744073709551615u64]})
        );
    }

    /// Issue 13 item 5: a number a double would round is named, never read rounded.
    #[test]
    fn a_number_a_double_would_round_is_unreadable_and_exact_ones_are_read() {
        let text = r#"{"calls": [
            {"id": "1", "name": "a", "arguments": {"s": "123456789012345678901234567890", "n": 123456789012345678901234567890}},
            {"id": "2", "name": "a", "arguments": {"n": [1, 1.5, 18446744073709551616, 1e300, -9223372036854775808]}},
            {"id": "3", "name": "a", "arguments": {"n": 1, "n": 123456789012345678901234567890}}
        ]}"#;
        let turn = Turn::from_json(text, Path::new("t.json")).unwrap();
        assert_eq!(
            turn.calls[0].unreadable,
            Some(Unreadable::LossyNumber(
                "123456789012345678901234567890".into()
            ))
        );
        assert!(turn.calls[0].arguments.is_null());
        assert_eq!(turn.calls[1].unreadable, None);
        assert_eq!(turn.calls[1].arguments["n"][2], 18446744073709551616f64);
        // Text that is not JSON is reported as such first.
        assert!(json_reason(&turn.calls[2]).unwrap().contains("given twice"));
    }

    #[test]
    fn a_call_id_used_twice_is_an_error_naming_the_id_and_lines_and_distinct_ids_are_read() {
        let text = "{\"calls\": [\n  {\"id\": \"c1\", \"name\": \"a\"},\n  {\"id\": \"c2\", \"name\": \"a\"},\n  {\"name\": \"b\",\n   \"id\": \"c1\"}\n]}";
        let err = Turn::from_json(text, Path::new("t.json")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let p = &err.problems()[0];
        assert_eq!(p.line, Some(5));
        assert_eq!(
            p.message,
            "call id \"c1\" is used by two calls of the turn (calls 1 and 3, on lines 2 and 5)"
        );
        assert!(p.help.as_deref().unwrap().contains("its own id"));
        // The twin: the same turn with distinct ids is read.
        let text = text.replacen("\"c1\"}\n]", "\"c3\"}\n]", 1);
        assert_eq!(
            Turn::from_json(&text, Path::new("t.json"))
                .unwrap()
                .calls
                .len(),
            3
        );
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        let err = Turn::from_json("calls: []", Path::new("t.json")).unwrap_err();
        assert_eq!(err.problems()[0].line, Some(1));
    }
}
