//! Reading and writing the session document: the one shape a host stores.
//! Reading fails closed on anything muster did not write; what the document
//! claims about the policy is checked when it is opened.

use crate::canon;
use crate::contract::{SESSION_FORMAT_VERSION, SessionDocument};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// The document as compact JSON with a trailing newline: what `session new`
/// writes and every changing verb rewrites. Compact, since a host stores
/// and sends it whole on every call.
pub fn to_json_string(doc: &SessionDocument) -> String {
    let mut text = serde_json::to_string(doc).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

pub(crate) fn json_text<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// Just the version, read before the rest so an older document gets a
/// clear answer rather than a list of fields it lacks.
#[derive(Deserialize)]
struct Version {
    format_version: Option<Value>,
}

use serde_json::Value;

/// Reads a session document and checks that it is whole: the version this
/// muster writes, well-formed digests, each name pinned once. A UTF-8
/// byte-order mark before it is skipped.
///
/// # Errors
/// An [`ErrorKind::Input`] error naming `file` (and the line, for JSON that
/// cannot be read) and the field to correct.
pub fn read(text: &str, file: &Path) -> Result<SessionDocument, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    const HELP: &str = "give the document muster wrote, unchanged but for what muster rewrote";
    if let Ok(Version {
        format_version: Some(version),
    }) = serde_json::from_str::<Version>(text)
        && version.as_u64() != Some(u64::from(SESSION_FORMAT_VERSION))
    {
        return Err(Error::new(
            ErrorKind::Input,
            Problem::coded(code::UNSUPPORTED_VERSION, format!(
                "session document format_version {version} is not the one this muster reads ({SESSION_FORMAT_VERSION}){}",
                if version.as_u64() == Some(1) {
                    ": version 1 documents copied every definition; version 2 pins them by digest"
                } else {
                    ""
                }
            ))
            .in_file(file)
            .help("start a new session with this muster (`session new`, `POST /v1/sessions`); a chat's document cannot be converted, since the definitions it was pinned to are not in it"),
        ));
    }
    let doc: SessionDocument = serde_json::from_str(text)
        .map_err(|err| Error::json(file, "session document", &err, HELP))?;
    let mut problems = Vec::new();
    let mut problem = |message: String, help: &str| {
        problems.push(
            Problem::coded(code::SESSION_TAMPERED, message)
                .in_file(file)
                .help(help),
        );
    };
    const AGAIN: &str = "create the session again";
    let hex = |text: &str, digits: usize| {
        text.len() == digits && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let parts_ok = |text: &str| {
        let parts: Vec<&str> = text.split('.').collect();
        parts.len() == 4 && parts.iter().all(|p| hex(p, 8))
    };
    let mut names = BTreeSet::new();
    for tool in &doc.roster {
        if !names.insert(tool.name.as_str()) {
            problem(
                format!("roster names {:?} a second time", tool.name),
                "a session pins each tool once; create the session again",
            );
        }
        if !hex(&tool.digest, 16) || !parts_ok(&tool.parts) {
            problem(
                format!(
                    "roster tool {:?}: digest or parts is not muster's (16 hex digits; four of 8 joined by `.`)",
                    tool.name
                ),
                AGAIN,
            );
        }
    }
    for tool in &doc.loaded {
        if !hex(&tool.digest, 16) || !parts_ok(&tool.parts) {
            problem(
                format!(
                    "loaded tool {:?}: digest or parts is not muster's (16 hex digits; four of 8 joined by `.`)",
                    tool.name
                ),
                AGAIN,
            );
        }
    }
    for (field, value) in [
        ("fingerprint", &doc.fingerprint),
        ("deferred.digest", &doc.deferred.digest),
    ] {
        if canon::parse_labelled_hex(value).is_none() {
            problem(
                format!("{field} {value:?} is not a sha256: digest"),
                "digests are \"sha256:\" and 64 lowercase hex digits; create the session again",
            );
        }
    }
    if let Some(id) = &doc.id
        && !is_session_id(id)
    {
        problem(
            format!("id {id:?} is not a session id muster makes"),
            "give the id a session store answered, or leave it out",
        );
    }
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(Error::many(ErrorKind::Input, problems))
    }
}

/// Whether `id` has the shape of a session id: 1 to 64 of
/// `[A-Za-z0-9_-]`.
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
