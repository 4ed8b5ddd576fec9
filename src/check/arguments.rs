//! Reads a call's arguments text as JSON, the one way every part of the check reads it: a
//! member named twice and a number a double would round are refused, never chosen or rounded
//! for the model. Decides nothing about what the arguments mean.

use serde_json::Value;

use super::deep;

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
    let message = crate::error::json_message(err);
    match err.line() {
        0 => message,
        1 => format!("{message} at column {}", err.column()),
        line => format!("{message} at line {line} column {}", err.column()),
    }
}
