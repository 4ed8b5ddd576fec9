//! What a reviewer is shown of a changed tool: the description word by word,
//! the input schema's and the other members' differing paths, the safety
//! hints that moved. Data `discover`, `lock` and `lock --check` return and
//! the binary (and the CI report) render; each bound says what it left out.
//! JSON: see `docs/policy.md` ("What changed in a tool").

use serde::{Deserialize, Serialize};

/// What changed in one tool listed in both snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolChange {
    /// The tool's name (tools are matched by name, so a rename shows as one
    /// tool removed and one added).
    pub name: String,
    /// The description changed.
    pub description: bool,
    /// The input schema changed.
    pub input_schema: bool,
    /// Some other field changed (title, annotations, outputSchema, …).
    pub other: bool,
    /// What changed, for a reviewer: the description's words, the input
    /// schema's paths, the hints, the other members.
    #[serde(default, skip_serializing_if = "ChangeDetails::is_empty")]
    pub details: ChangeDetails,
}

/// What changed in one tool's definition, shown to whoever reviews it.
/// Every list is bounded; what a bound left out is counted beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeDetails {
    /// The description, word by word, when it changed: runs of words both
    /// sides have, or only the old or the new one, in order (at most
    /// [`MAX_TEXT_SPANS`] runs and about [`MAX_SHOWN_CHARS`] characters;
    /// a long run is shown by its ends, [`TextSpan::elided`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub description: Vec<TextSpan>,
    /// Runs of the description's diff left out past its bounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub description_more: usize,
    /// The word-by-word comparison passed its bound
    /// ([`crate::snapshot::MAX_DIFF_EDITS`] or [`crate::snapshot::MAX_DIFF_STEPS`]): the part
    /// between the common beginning and end is one removed and one added run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub description_coarse: bool,
    /// Where the input schemas differ, as JSON pointers in sorted order (at
    /// most [`MAX_SCHEMA_PATHS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_paths: Vec<PathChange>,
    /// How many more schema paths differ than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub schema_paths_more: usize,
    /// Safety hints whose value (as declared, else MCP's default) changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<HintChange>,
    /// Where the other members differ (`/title`, `/annotations/…`,
    /// `/outputSchema/…`, `/_meta/…`, `/execution/…`), as JSON pointers
    /// into the tool object in sorted order (at most [`MAX_SCHEMA_PATHS`]);
    /// a safety hint listed in `hints` is not repeated here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<PathChange>,
    /// How many more member paths differ than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub members_more: usize,
}

/// The most paths one change lists for its input schema, and again for
/// its other members.
pub const MAX_SCHEMA_PATHS: usize = 50;
/// The most runs a description's diff shows.
pub const MAX_TEXT_SPANS: usize = 200;
/// About the most characters a description's diff shows: once its runs
/// have shown this many, the rest are counted in `description_more`.
pub const MAX_SHOWN_CHARS: usize = 20_000;
/// The most characters of a value shown at a differing path.
pub const MAX_VALUE_CHARS: usize = 120;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ChangeDetails {
    /// Nothing to show.
    pub fn is_empty(&self) -> bool {
        self.description.is_empty()
            && self.description_more == 0
            && self.schema_paths.is_empty()
            && self.schema_paths_more == 0
            && self.hints.is_empty()
            && self.members.is_empty()
            && self.members_more == 0
    }
}

/// A run of a text diff: words both sides have, or only the old or the
/// new one. A run longer than its bound is shown by its beginning
/// (`text`) and end (`tail`), `elided` counting the characters between.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextSpan {
    /// `same`, `removed` or `added`.
    pub op: SpanOp,
    /// The run as the server wrote it (escape it to show it); for an
    /// elided run, its beginning (empty when only its end is shown).
    pub text: String,
    /// Characters left out after `text`; 0 when the run is whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub elided: usize,
    /// For an elided run, its last characters (empty when only its
    /// beginning is shown).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tail: String,
}

/// Which side of a text diff a run is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanOp {
    /// On both sides.
    Same,
    /// Only in the old text.
    Removed,
    /// Only in the new text.
    Added,
}

/// One place where two JSON values differ.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathChange {
    /// A JSON pointer (RFC 6901); `/` for the whole value.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub change: PathOp,
    /// The value there before (absent when added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ShownValue>,
    /// The value there now (absent when removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ShownValue>,
}

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathOp {
    /// Only the new value has it.
    Added,
    /// Only the old value has it.
    Removed,
    /// Both have it, with another value or of another kind.
    Changed,
}

impl PathOp {
    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Changed => "changed",
        }
    }
}

/// A value at a differing path, for a reviewer: its kind and the beginning
/// of its canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShownValue {
    /// Its JSON kind.
    pub kind: JsonKind,
    /// Its canonical JSON (keys sorted, no whitespace), at most
    /// [`MAX_VALUE_CHARS`] characters (escape it to show it).
    pub json: String,
    /// `json` is only its beginning.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

/// The kind of a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JsonKind {
    /// `{…}`.
    Object,
    /// `[…]`.
    Array,
    /// `"…"`.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
}

/// One safety hint's change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintChange {
    /// `readOnlyHint`, `destructiveHint`, `idempotentHint` or `openWorldHint`.
    pub hint: String,
    /// Its value before (as declared, else MCP's default).
    pub before: bool,
    /// Its value now.
    pub after: bool,
}
