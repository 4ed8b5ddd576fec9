//! Reading and writing the session document: the one shape a host stores.
//! Reading fails closed on anything muster did not write.

use crate::canon;
use crate::contract::{SESSION_FORMAT_VERSION, SessionDocument};
use crate::error::{Error, ErrorKind, Problem};
use crate::plan;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;

/// The document as pretty JSON with a trailing newline: what `session new`
/// writes and every changing verb rewrites.
pub fn to_json_string(doc: &SessionDocument) -> String {
    json_text(doc)
}

pub(crate) fn json_text<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// Reads a session document and checks that it is whole: the version this
/// muster writes, well-formed hashes, each name once, loaded tools among
/// the deferred ones, and a fingerprint that matches its roster.
///
/// # Errors
/// An [`ErrorKind::Input`] error naming `file` (and the line, for JSON that
/// cannot be read) and the field to correct.
pub fn read(text: &str, file: &Path) -> Result<SessionDocument, Error> {
    let doc: SessionDocument = serde_json::from_str(text).map_err(|err| {
        Error::json(
            file,
            "session document",
            &err,
            "give the document `muster session new` wrote, unchanged but for what muster rewrote",
        )
    })?;
    let mut problems = Vec::new();
    let mut problem = |message: String, help: &str| {
        problems.push(Problem::new(message).in_file(file).help(help));
    };
    if doc.format_version != SESSION_FORMAT_VERSION {
        problem(
            format!(
                "format_version {} is not one this muster reads ({SESSION_FORMAT_VERSION})",
                doc.format_version
            ),
            "create the session again with this muster's `session new`",
        );
    }
    let mut names = BTreeSet::new();
    for (place, tools) in [("roster", &doc.roster), ("deferred", &doc.deferred)] {
        for tool in tools {
            if !names.insert(tool.name.as_str()) {
                problem(
                    format!("{place} names {:?} a second time", tool.name),
                    "a session pins each tool once; create the session again",
                );
            }
            let hashes = [
                ("definition_hash", &tool.definition_hash),
                ("parts.description", &tool.parts.description),
                ("parts.input_schema", &tool.parts.input_schema),
                ("parts.fixed", &tool.parts.fixed),
                ("parts.only", &tool.parts.only),
            ];
            for (field, hash) in hashes {
                if canon::parse_labelled_hex(hash).is_none() {
                    problem(
                        format!(
                            "{place} tool {:?}: {field} {hash:?} is not a sha256: hash",
                            tool.name
                        ),
                        "hashes are \"sha256:\" and 64 lowercase hex digits; create the session again",
                    );
                }
            }
        }
    }
    let deferred: BTreeSet<&str> = doc.deferred.iter().map(|t| t.name.as_str()).collect();
    let mut loaded = BTreeSet::new();
    for tool in &doc.loaded {
        if !deferred.contains(tool.name.as_str()) {
            problem(
                format!(
                    "loaded names {:?}, which the session did not defer",
                    tool.name
                ),
                "only deferred tools can be loaded; load through `muster session load`",
            );
        }
        if !loaded.insert(tool.name.as_str()) {
            problem(
                format!("loaded names {:?} a second time", tool.name),
                "a tool is loaded once; load through `muster session load`",
            );
        }
    }
    if let Some(control) = &doc.control_tool
        && !doc.roster.iter().any(|t| &t.name == control)
    {
        problem(
            format!("control_tool {control:?} is not in the roster"),
            "create the session again",
        );
    }
    let hashes: Option<Vec<[u8; 32]>> = doc
        .roster
        .iter()
        .map(|t| canon::parse_labelled_hex(&t.definition_hash))
        .collect();
    if let Some(hashes) = hashes
        && plan::fingerprint(&doc.agent.name, doc.agent.version, &hashes) != doc.fingerprint
    {
        problem(
            format!(
                "fingerprint {} does not match the pinned agent and roster",
                doc.fingerprint
            ),
            "the document was edited; create the session again",
        );
    }
    if problems.is_empty() {
        Ok(doc)
    } else {
        Err(Error::many(ErrorKind::Input, problems))
    }
}
