//! Reads a turn: the tool calls one model reply asked for. It decides only whether the file is a
//! readable turn; what a call's arguments hold is the model's business and is judged by the
//! check, never here, so a call with odd arguments is still read.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::deep;
use crate::error::{Error, ErrorKind, Problem};

/// One tool call of a turn.
#[derive(Debug, PartialEq)]
pub struct Call {
    /// The id the model gave the call; answers refer to it.
    pub id: String,
    /// The tool the call names.
    pub name: String,
    /// The arguments as the model sent them: usually an object, sometimes a string holding
    /// one. A missing `arguments` reads as null, which the check takes as no arguments.
    pub arguments: Value,
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
    /// not JSON or lacks `calls`, or a call lacks a text `id` or `name`.
    pub fn from_json(text: &str, file: &Path) -> Result<Self, Error> {
        let raw: RawTurn = serde_json::from_str(text).map_err(|err| {
            json_error(
                file,
                "turn",
                &err,
                "give an object {\"calls\": [{\"id\": \"...\", \"name\": \"...\", \
                 \"arguments\": {...}}]}",
            )
        })?;
        Ok(Self {
            calls: raw
                .calls
                .into_iter()
                .map(|c| Call {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
        })
    }
}

#[derive(Deserialize)]
struct RawTurn {
    calls: Vec<RawCall>,
}

#[derive(Deserialize)]
struct RawCall {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// An input error for a JSON file serde_json could not read, with the line it stopped at.
pub(crate) fn json_error(file: &Path, what: &str, err: &serde_json::Error, help: &str) -> Error {
    // serde_json appends " at line L column C"; the line goes in its own field instead.
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if err.line() > 0 => &text[..at],
        _ => text.as_str(),
    };
    let line = (err.line() > 0).then_some(err.line());
    Error::new(
        ErrorKind::Input,
        Problem::new(format!("cannot read the {what}: {message}"))
            .in_file(file)
            .at_line(line)
            .help(help),
    )
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

    #[test]
    fn text_that_is_not_json_is_an_error() {
        let err = Turn::from_json("calls: []", Path::new("t.json")).unwrap_err();
        assert_eq!(err.problems()[0].line, Some(1));
    }
}
