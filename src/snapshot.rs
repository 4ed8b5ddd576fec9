//! Snapshots: a server's recorded `tools/list` result, read, checked, written
//! and compared. One per-tool reader serves both sides: discovery is strict
//! (a listing with any bad tool is not recorded) and planning is lenient (a
//! bad tool in a recorded snapshot becomes that tool's cut, so one entry
//! cannot take the whole roster down). This module knows nothing of
//! policies, plans or servers' processes.

use crate::error::code;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

pub use crate::contract::{SnapshotDiff, ToolChange};
use crate::error::{Error, ErrorKind, Problem};
use crate::schema::{Schema, Shared};

mod listing;
pub mod review;

use listing::read_listing;
pub use review::{HINTS, MAX_DIFF_EDITS, MAX_DIFF_STEPS};

/// One tool as a server listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// `name`.
    pub name: String,
    /// `description`, when given.
    pub description: Option<String>,
    /// `inputSchema`: always a JSON object in a listing discovery accepted;
    /// in a snapshot read for planning, whatever was recorded (the catalog
    /// cuts a non-object as `invalid-schema`). Shared with the catalog's
    /// candidates, so a large listing holds each schema once.
    pub input_schema: Schema,
    /// The tool object as listed, fields muster does not read included,
    /// except that its `inputSchema` member (when it has one) holds `null`:
    /// the schema is kept once, in `input_schema`. `null` when the object
    /// held nothing but `name`, a text `description` (if any) and
    /// `inputSchema`, in that order, as most tools are listed: then the
    /// fields above say it all, and a large listing holds no second object
    /// per tool. [`ListedTool::listed`] writes the object whole.
    pub raw: Value,
}

impl ListedTool {
    /// The tool object exactly as listed: `raw` with `input_schema` in its
    /// `inputSchema` member, members in listed order.
    pub fn listed(&self) -> Listed<'_> {
        Listed(self)
    }
}

/// A [`ListedTool`] serialized as the object the server listed, written
/// without copying its schema back into `raw`.
#[derive(Debug, Clone, Copy)]
pub struct Listed<'a>(&'a ListedTool);

impl Serialize for Listed<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let tool = self.0;
        let Value::Object(members) = &tool.raw else {
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("name", &tool.name)?;
            if let Some(description) = &tool.description {
                map.serialize_entry("description", description)?;
            }
            map.serialize_entry("inputSchema", &tool.input_schema)?;
            return map.end();
        };
        let mut map = serializer.serialize_map(Some(members.len()))?;
        for (key, value) in members {
            if key == "inputSchema" {
                map.serialize_entry(key, &self.0.input_schema)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Reads one listed tool object, taking its schema out of it (see
/// [`ListedTool::raw`]). A tool whose schema is missing or not an object is
/// still returned (with `Value::Null` or what was sent as its schema)
/// together with its problem, so planning can cut it by name; a tool
/// without a usable name has nothing to cut and is an error.
fn read_tool(
    i: usize,
    mut raw: Value,
    schemas: &mut Shared,
) -> Result<(ListedTool, Option<String>), String> {
    let Some(obj) = raw.as_object_mut() else {
        return Err(format!(
            "tool #{} is {}, not an object",
            i + 1,
            crate::canon::kind_of(&raw)
        ));
    };
    let name = match obj.get("name") {
        // Too long to show in a table or to quote whole: as unusable as
        // no name at all, so refused at discovery and in a recorded
        // snapshot alike.
        Some(Value::String(n)) if let Some(long) = crate::names::too_long(n) => {
            return Err(format!(
                "tool #{} has a name ({:?}) that {long}",
                i + 1,
                crate::names::shown(n)
            ));
        }
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(other) => {
            return Err(format!(
                "tool #{} has a `name` that is {}, not a non-empty string",
                i + 1,
                crate::canon::kind_of(other)
            ));
        }
        None => return Err(format!("tool #{} has no `name`", i + 1)),
    };
    let mut problem = None;
    // The name as a problem quotes it: the server's text, escaped.
    let shown = crate::names::escape(&name);
    let input_schema = match obj.get_mut("inputSchema") {
        Some(s @ Value::Object(_)) => std::mem::take(s),
        Some(other) => {
            problem = Some(format!(
                "tool `{shown}` has an inputSchema that is {}, not an object",
                crate::canon::kind_of(other)
            ));
            std::mem::take(other)
        }
        None => {
            problem = Some(format!("tool `{shown}` has no inputSchema"));
            Value::Null
        }
    };
    let description = match obj.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(other) => {
            problem.get_or_insert(format!(
                "tool `{shown}` has a description that is {}, not a string",
                crate::canon::kind_of(other)
            ));
            None
        }
    };
    // The common shape is not kept twice (see [`ListedTool::raw`]).
    let plain = {
        let mut keys = obj.keys().map(String::as_str);
        match (keys.next(), keys.next(), keys.next(), keys.next()) {
            (Some("name"), Some("inputSchema"), None, None) => true,
            (Some("name"), Some("description"), Some("inputSchema"), None) => description.is_some(),
            _ => false,
        }
    };
    Ok((
        ListedTool {
            name,
            description,
            input_schema: schemas.share(input_schema),
            raw: if plain { Value::Null } else { raw },
        },
        problem,
    ))
}

/// One tool object read as a listing reads it (a recorded definition
/// the lock kept), or `None` when it has no usable name.
pub(crate) fn tool_from(raw: Value) -> Option<ListedTool> {
    read_tool(0, raw, &mut Shared::default())
        .ok()
        .map(|(tool, _)| tool)
}

/// The one rule for names in a listing: each tool name is listed once. The
/// position (in `names`) and name of every repeat, in listed order; the first
/// listing of a name is not a repeat.
pub(crate) fn repeats<'n>(names: impl IntoIterator<Item = &'n str>) -> Vec<(usize, &'n str)> {
    let mut seen = BTreeSet::new();
    names
        .into_iter()
        .enumerate()
        .filter(|&(_, name)| !seen.insert(name))
        .collect()
}

/// The problem for a name [`repeats`] found, as discovery words it.
pub(crate) fn repeat_problem(name: &str) -> String {
    format!("tool `{}` is listed twice", crate::names::escape(name))
}

/// One listed tool as read: the tool and the problem that keeps discovery
/// from accepting it, or why it could not be read at all.
type Read = Result<(ListedTool, Option<String>), String>;

/// Turns listed tool objects into [`ListedTool`]s, or describes every tool
/// that breaks the rules: not an object, no string `name`, a non-object
/// `inputSchema`, a non-string `description`, a name listed twice.
///
/// Tools are pushed one at a time, as pages arrive, and each JSON tree is
/// dropped once read: a long listing is held as [`ListedTool`]s (schemas
/// as text, shared when written alike), not as trees, which cost several
/// times the bytes listed.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    schemas: Shared,
    read: Vec<Read>,
}

impl Checker {
    /// Reads the next listed tool object.
    pub(crate) fn push(&mut self, raw: Value) {
        let i = self.read.len();
        self.read.push(read_tool(i, raw, &mut self.schemas));
    }

    /// How many tools were pushed.
    pub(crate) fn len(&self) -> usize {
        self.read.len()
    }

    /// The tools in listed order, or every problem (one per tool at fault).
    pub(crate) fn finish(self) -> Result<Vec<ListedTool>, Vec<String>> {
        strict(self.read)
    }
}

/// The rules of [`Checker`] over tools already read.
fn strict(read: Vec<Read>) -> Result<Vec<ListedTool>, Vec<String>> {
    let repeated: BTreeSet<usize> = repeats(
        read.iter()
            .map(|r| r.as_ref().map_or("", |(tool, _)| tool.name.as_str())),
    )
    .into_iter()
    .filter(|&(i, _)| read[i].is_ok())
    .map(|(i, _)| i)
    .collect();
    let mut out = Vec::with_capacity(read.len());
    let mut problems = Vec::new();
    for (i, r) in read.into_iter().enumerate() {
        match r {
            Err(problem) => problems.push(problem),
            Ok((tool, _)) if repeated.contains(&i) => problems.push(repeat_problem(&tool.name)),
            Ok((_, Some(problem))) => problems.push(problem),
            Ok((tool, None)) => out.push(tool),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// A recorded snapshot read for planning: every tool that has a name, in
/// listed order, repeats and bad schemas included (the catalog cuts them as
/// `duplicate-name` and `invalid-schema`).
///
/// # Errors
/// The 1-based line (for bad JSON) and what is wrong, when the text is not
/// JSON, not `{"tools": [...]}`, or a tool has no usable name.
pub fn parse_lenient(text: &str) -> Result<Vec<ListedTool>, (Option<usize>, String)> {
    parse_listing(text, &mut Shared::default())
}

/// [`parse_lenient`], sharing schemas written alike through `schemas`.
pub(crate) fn parse_listing(
    text: &str,
    schemas: &mut Shared,
) -> Result<Vec<ListedTool>, (Option<usize>, String)> {
    let read = read_listing(text, schemas)
        .map_err(|e| (Some(e.line()), format!("is not valid JSON: {e}")))?
        .ok_or((None, "has no \"tools\" list".to_string()))?;
    let mut tools: Vec<ListedTool> = read
        .into_iter()
        .map(|r| r.map(|(tool, _)| tool).map_err(|p| (None, p)))
        .collect::<Result<_, _>>()?;
    // Collected in the place the larger reads took, with their room.
    tools.shrink_to_fit();
    Ok(tools)
}

/// The snapshot file's bytes: `{"tools": [...]}`, pretty, tools in listed
/// order, newline-terminated. serde_json's map is ordered by key, so the
/// same listing always gives the same bytes.
pub fn snapshot_bytes(tools: &[ListedTool]) -> Vec<u8> {
    snapshot_bytes_with(tools, &ServerNotes::default())
}

/// The most characters of a server's `instructions` a snapshot keeps:
/// 16,384 (the longest seen on 16 real servers was 2,010). Longer ones are
/// cut there.
pub const MAX_INSTRUCTIONS_CHARS: usize = 16_384;
/// The most resources, and the most prompts, a snapshot keeps of one
/// server: 10,000 each; the rest are left out and counted in
/// [`ServerNotes::left_out`].
pub const MAX_NOTED: usize = 10_000;

/// What a server says besides its tools, kept in its snapshot beside
/// `tools` for a reader to see and never planned: its initialize
/// `instructions`, and the names and descriptions of its resources and
/// prompts when it offers those. Every member is left out of the file when
/// empty, so a snapshot of a server with none reads as before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerNotes {
    /// The initialize result's `instructions`, cut to
    /// [`MAX_INSTRUCTIONS_CHARS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `resources/list`, every page: each resource's `uri`, `name` and,
    /// when given, `title`, `description`, `mimeType`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NotedResource>,
    /// `prompts/list`, every page: each prompt's `name` and, when given,
    /// `title`, `description` and `arguments` (name, description, required).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<NotedPrompt>,
    /// Resources and prompts past [`MAX_NOTED`], or whose list failed, that
    /// are not recorded: "resources: 12 past 10,000", "prompts: list failed".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// One resource a server lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotedResource {
    /// `uri`.
    pub uri: String,
    /// `name`.
    pub name: String,
    /// `title`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mimeType`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One prompt a server lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotedPrompt {
    /// `name`.
    pub name: String,
    /// `title`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `arguments`, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<NotedArgument>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NotedArgument {
    /// `name`.
    pub name: String,
    /// `description`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `required`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// The snapshot file for `tools` and what else the server said: `tools`
/// first, then `notes`' members that are not empty.
pub fn snapshot_bytes_with(tools: &[ListedTool], notes: &ServerNotes) -> Vec<u8> {
    let raw: Vec<Listed<'_>> = tools.iter().map(ListedTool::listed).collect();
    let mut doc = serde_json::Map::new();
    doc.insert("tools".into(), serde_json::json!(raw));
    if let Ok(Value::Object(extra)) = serde_json::to_value(notes) {
        doc.extend(extra);
    }
    let mut bytes =
        serde_json::to_vec_pretty(&Value::Object(doc)).expect("a JSON value always serializes");
    bytes.push(b'\n');
    bytes
}

/// What a snapshot holds besides its tools ([`ServerNotes`]); empty for a
/// snapshot written before they were kept.
///
/// # Errors
/// As [`read_snapshot`] for a file that cannot be read or is not JSON;
/// [`ErrorKind::Mcp`] with `invalid-snapshot` when a member is of the wrong
/// shape.
pub fn read_snapshot_notes(path: &Path) -> Result<ServerNotes, Error> {
    let text = crate::input::read_text(path).map_err(|e| e.into_error(path, "the snapshot"))?;
    serde_json::from_str::<ServerNotes>(&text).map_err(|e| {
        Error::new(
            ErrorKind::Mcp,
            Problem::coded(code::INVALID_SNAPSHOT, format!("snapshot: {e}"))
                .in_file(path)
                .at_line(Some(e.line()))
                .help("run `muster discover` to record it again"),
        )
    })
}

/// Reads a snapshot written by discovery (or recorded by hand).
///
/// # Errors
/// [`ErrorKind::Io`] when the file cannot be read, [`ErrorKind::Input`] when
/// it is not a regular UTF-8 file within the input size cap; [`ErrorKind::Mcp`] naming
/// the file, and for bad JSON the line, when it is not JSON, not
/// `{"tools": [...]}`, or a tool breaks the listing rules.
pub fn read_snapshot(path: &Path) -> Result<Vec<ListedTool>, Error> {
    let text = crate::input::read_text(path).map_err(|e| e.into_error(path, "the snapshot"))?;
    parse_snapshot(&text, path)
}

/// [`read_snapshot`] for the bytes of the snapshot at `path`.
///
/// # Errors
/// As [`read_snapshot`], but never [`ErrorKind::Io`].
pub(crate) fn read_snapshot_bytes(bytes: &[u8], path: &Path) -> Result<Vec<ListedTool>, Error> {
    let text = crate::input::text_of(bytes).map_err(|e| e.into_error(path, "the snapshot"))?;
    parse_snapshot(text, path)
}

fn parse_snapshot(text: &str, path: &Path) -> Result<Vec<ListedTool>, Error> {
    let read = read_listing(text, &mut Shared::default()).map_err(|e| {
        Error::new(
            ErrorKind::Mcp,
            Problem::coded(
                code::INVALID_JSON,
                format!("snapshot is not valid JSON: {e}"),
            )
            .in_file(path)
            .at_line(Some(e.line()))
            .help("run `muster discover` to record it again"),
        )
    })?;
    let Some(read) = read else {
        return Err(Error::new(
            ErrorKind::Mcp,
            Problem::coded(
                code::INVALID_SNAPSHOT,
                "snapshot is not an object with a `tools` array",
            )
            .in_file(path)
            .help("a snapshot is `{\"tools\": [...]}` as tools/list returns it"),
        ));
    };
    strict(read).map_err(|problems| {
        Error::many(
            ErrorKind::Mcp,
            problems
                .into_iter()
                .map(|p| {
                    Problem::coded(code::INVALID_SNAPSHOT, format!("snapshot: {p}")).in_file(path)
                })
                .collect(),
        )
    })
}

/// Compares two listings of one server; every list is sorted by name.
pub fn diff_snapshots(old: &[ListedTool], new: &[ListedTool]) -> SnapshotDiff {
    let old: BTreeMap<&str, &ListedTool> = old.iter().map(|t| (t.name.as_str(), t)).collect();
    let new: BTreeMap<&str, &ListedTool> = new.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut diff = SnapshotDiff::default();
    for (name, n) in &new {
        let Some(o) = old.get(name) else {
            diff.added.push(name.to_string());
            continue;
        };
        // The members muster does not read (`name` is the same on both
        // sides).
        let strip = |t: &ListedTool| {
            let mut others = t.raw.as_object().cloned().unwrap_or_default();
            for read in ["name", "description", "inputSchema"] {
                others.shift_remove(read);
            }
            others
        };
        let mut change = ToolChange {
            name: name.to_string(),
            description: o.description != n.description,
            input_schema: o.input_schema != n.input_schema,
            other: strip(o) != strip(n),
            details: Default::default(),
        };
        if change.description || change.input_schema || change.other {
            change.details = review::details(o, n);
            diff.changed.push(change);
        }
    }
    diff.removed = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(|k| k.to_string())
        .collect();
    diff
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_tools(tools: Vec<Value>) -> Result<Vec<ListedTool>, Vec<String>> {
        let mut checker = Checker::default();
        tools.into_iter().for_each(|raw| checker.push(raw));
        checker.finish()
    }

    fn tools(v: Value) -> Vec<ListedTool> {
        let Value::Array(v) = v else { panic!("a list") };
        check_tools(v).unwrap()
    }

    #[test]
    fn check_reports_every_bad_tool() {
        let problems = check_tools(vec![
            json!({"name": "a", "inputSchema": {}}),
            json!({"name": "a", "inputSchema": {}}),
            json!({"name": "b", "inputSchema": "x"}),
            json!({"inputSchema": {}}),
            json!(3),
            json!({"name": "c"}),
        ])
        .unwrap_err();
        assert_eq!(
            problems,
            vec![
                "tool `a` is listed twice",
                "tool `b` has an inputSchema that is text, not an object",
                "tool #4 has no `name`",
                "tool #5 is a number, not an object",
                "tool `c` has no inputSchema",
            ]
        );
    }

    /// Issue 24 item 7: a listed name is the server's text, and reached
    /// the terminal raw in discovery's problems.
    #[test]
    fn a_problem_quotes_a_listed_name_with_its_hidden_characters_escaped() {
        let name = "evil\u{1b}[2J\u{202E}txt";
        let problems = check_tools(vec![
            json!({"name": name, "inputSchema": "x"}),
            json!({"name": name, "inputSchema": {}}),
            json!({"name": "ok\u{2066}", "description": 1, "inputSchema": {}}),
            json!({"name": "ok\u{2066}"}),
        ])
        .unwrap_err();
        assert_eq!(
            problems,
            vec![
                "tool `evil\\u{001B}[2J\\u{202E}txt` has an inputSchema that is text, not an object",
                "tool `evil\\u{001B}[2J\\u{202E}txt` is listed twice",
                "tool `ok\\u{2066}` has a description that is a number, not a string",
                "tool `ok\\u{2066}` is listed twice",
            ]
        );
    }

    #[test]
    fn diff_names_added_removed_and_what_changed() {
        let old = tools(json!([
            {"name": "keep", "inputSchema": {}},
            {"name": "gone", "inputSchema": {}},
            {"name": "desc", "description": "a", "inputSchema": {}},
            {"name": "schema", "inputSchema": {"type": "object"}},
            {"name": "title", "title": "x", "inputSchema": {}},
        ]));
        let new = tools(json!([
            {"name": "title", "title": "y", "inputSchema": {}},
            {"name": "schema", "inputSchema": {"type": "object", "properties": {}}},
            {"name": "desc", "description": "b", "inputSchema": {}},
            {"name": "keep", "inputSchema": {}},
            {"name": "new", "inputSchema": {}},
        ]));
        let d = diff_snapshots(&old, &new);
        assert_eq!(d.added, vec!["new"]);
        assert_eq!(d.removed, vec!["gone"]);
        let summary: Vec<(&str, bool, bool, bool)> = d
            .changed
            .iter()
            .map(|c| (c.name.as_str(), c.description, c.input_schema, c.other))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("desc", true, false, false),
                ("schema", false, true, false),
                ("title", false, false, true),
            ]
        );
        assert!(diff_snapshots(&new, &new).is_empty());
    }

    /// Whatever shape a tool was listed in (the plain one held without its
    /// object, or any other), it is written back as it was listed, and
    /// only members muster does not read count as `other` changes.
    #[test]
    fn every_shape_is_written_back_as_listed() {
        let listing = json!({"tools": [
            {"name": "plain", "description": "d", "inputSchema": {"b": 1, "a": 2}},
            {"name": "bare", "inputSchema": {}},
            {"description": "d", "name": "reordered", "inputSchema": {}},
            {"name": "null-description", "description": null, "inputSchema": {}},
            {"name": "number-description", "description": 3, "inputSchema": {}},
            {"name": "titled", "description": "d", "inputSchema": {}, "title": "T"},
            {"name": "text-schema", "inputSchema": "x"},
            {"name": "no-schema", "description": "d"},
        ]});
        let tools = parse_lenient(&listing.to_string()).unwrap();
        let held: Vec<bool> = tools.iter().map(|t| t.raw.is_object()).collect();
        assert_eq!(
            held,
            [false, false, true, true, true, true, false, true],
            "only the plain shape is not held twice"
        );
        let mut expected = serde_json::to_vec_pretty(&listing).unwrap();
        expected.push(b'\n');
        assert_eq!(
            String::from_utf8(snapshot_bytes(&tools)).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        let reordered = parse_lenient(
            r#"{"tools": [{"description": "d", "name": "plain", "inputSchema": {"b": 1, "a": 2}},
                          {"name": "titled", "description": "d", "inputSchema": {}}]}"#,
        )
        .unwrap();
        let diff = diff_snapshots(&tools, &reordered);
        let changed: Vec<(&str, bool)> = diff
            .changed
            .iter()
            .map(|c| (c.name.as_str(), c.other))
            .collect();
        assert_eq!(changed, [("titled", true)]);
    }

    #[test]
    fn snapshot_round_trips_and_bytes_are_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let t = tools(
            json!([{"name": "z", "inputSchema": {"b": 1, "a": 2}}, {"name": "a", "inputSchema": {}}]),
        );
        std::fs::write(&path, snapshot_bytes(&t)).unwrap();
        let back = read_snapshot(&path).unwrap();
        assert_eq!(back, t);
        assert_eq!(snapshot_bytes(&back), snapshot_bytes(&t));
        assert_eq!(back[0].name, "z", "listed order is kept");
    }

    #[test]
    fn bad_json_is_reported_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{\n  \"tools\": [\n    oops\n  ]\n}\n").unwrap();
        let err = read_snapshot(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        assert_eq!(err.problems()[0].line, Some(3));
        assert_eq!(err.problems()[0].file.as_deref(), Some(path.as_path()));
    }

    #[test]
    fn a_snapshot_without_tools_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "[]").unwrap();
        assert!(
            read_snapshot(&path).unwrap_err().problems()[0]
                .message
                .contains("`tools` array")
        );
    }
}
