//! Judges a call's arguments against the JSON Schema its tool was offered with, and casts
//! forwarded values to the declared types where the tool's policy asks for it.
//!
//! It refuses only what a tool cannot read: a missing required argument or null where the
//! declared types exclude it, a list or object where a scalar is declared, an object where a list
//! is declared, anything but an object where an object is declared, a value outside an `enum`,
//! and a name the schema excludes or the tool's policy refuses. It must not refuse what a tool
//! commonly reads after a cast ("5" for an integer, 1 for a boolean, "NOTES" for "notes"), nor
//! judge what it cannot read: a node with `$ref`, `oneOf`, `anyOf`, `allOf`, `not` or `if`, or an
//! unknown type name, is skipped with everything under it. The walk keeps its own stack, so no
//! schema or value nesting can overflow the thread's stack.

use serde_json::{Map, Number, Value};

use super::offered::{OfferedTool, UnknownArguments};
use crate::contract::{CallProblem, CheckProblem, Got};

/// The most problem sentences a call's answer holds. A call with more problems lists the
/// first `MAX_PROBLEMS - 1` and one sentence counting the rest ("and N more problems not
/// listed here").
pub const MAX_PROBLEMS: usize = 10;

/// What one call's check found and did.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// The first [`MAX_PROBLEMS`] problems, one sentence each (the answer lists one fewer when
    /// there are more, to make room for the count).
    pub problems: Vec<CheckProblem>,
    /// How many problems there were in all.
    pub total: usize,
    /// Each drop the check made.
    pub notes: Vec<String>,
}

impl Findings {
    pub(crate) fn problem(&mut self, make: impl FnOnce() -> CallProblem) {
        // Past the limit only the count matters; skip building a problem nobody reads.
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(make().into());
        }
        self.total += 1;
    }
}

/// How a call is judged: which tool, which call, and the tool's policy.
pub(crate) struct Context<'c> {
    pub tool: &'c str,
    pub call_id: &'c str,
    pub coerce: bool,
    pub unknown: UnknownArguments,
}

/// A declared JSON type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
    Null,
}

impl Ty {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            "object" => Self::Object,
            "null" => Self::Null,
            _ => return None,
        })
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The JSON Schema name of the type.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Array => "array",
            Self::Object => "object",
            Self::Null => "null",
        }
    }

    /// Whether a tool can read `value` as this type, possibly after a cast: the value already
    /// is this type, or a cast a tool commonly makes reads it as one ("5" and 5.0 for an
    /// integer, a number or boolean for text, "true", 1 and 0 for a boolean). A scalar no such
    /// cast reads ("soon" or 5.5 for an integer, "maybe" for a boolean, anything but null for
    /// null) is not admitted, nor is a container where a scalar is declared or an object where a
    /// list is declared. A lone scalar where a list is declared is admitted: a tool may read it
    /// as one item.
    pub(crate) fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::String, Value::String(_) | Value::Number(_) | Value::Bool(_)) => true,
            (Self::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
            }
            (Self::Integer, Value::String(s)) => {
                let s = s.trim();
                // Digits beyond every integer type still spell an integer; the cast refuses them
                // as out of range.
                is_digits(s) || number_text(s).is_some_and(|x| x.is_infinite() || x.fract() == 0.0)
            }
            (Self::Number, Value::Number(_)) => true,
            (Self::Number, Value::String(s)) => {
                let s = s.trim();
                integer_text(s).is_some() || number_text(s).is_some_and(f64::is_finite)
            }
            (Self::Boolean, Value::Bool(_)) => true,
            (Self::Boolean, Value::String(s)) => {
                let s = s.trim();
                s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false")
            }
            (Self::Boolean, Value::Number(n)) => {
                matches!(n.as_f64(), Some(x) if x == 1.0 || x == 0.0)
            }
            (Self::Null, Value::Null) => true,
            (Self::Array, value) => !value.is_object(),
            (Self::Object, Value::Object(_)) => true,
            _ => false,
        }
    }

    /// Whether `value` already is this type, needing no cast.
    pub(crate) fn holds(self, value: &Value) -> bool {
        match (self, value) {
            (Self::String, Value::String(_))
            | (Self::Number, Value::Number(_))
            | (Self::Boolean, Value::Bool(_))
            | (Self::Array, Value::Array(_))
            | (Self::Object, Value::Object(_))
            | (Self::Null, Value::Null) => true,
            (Self::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        }
    }
}

/// The types a schema node declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Declared {
    /// No `type` keyword: any kind.
    #[default]
    Any,
    /// A set of known types (bits of [`Ty::bit`]).
    Types(u8),
    /// A type the check cannot read (an unknown name or a malformed `type`).
    Unreadable,
}

impl Declared {
    pub(crate) fn of(type_keyword: Option<&Value>) -> Self {
        match type_keyword {
            None => Self::Any,
            Some(Value::String(name)) => {
                Ty::parse(name).map_or(Self::Unreadable, |t| Self::Types(t.bit()))
            }
            Some(Value::Array(names)) if !names.is_empty() => {
                let mut bits = 0;
                for name in names {
                    match name.as_str().and_then(Ty::parse) {
                        Some(t) => bits |= t.bit(),
                        None => return Self::Unreadable,
                    }
                }
                Self::Types(bits)
            }
            Some(_) => Self::Unreadable,
        }
    }

    /// The types of the schema node `schema`, without judging whether the node is skipped.
    pub(crate) fn of_schema(schema: &Value) -> Self {
        match schema {
            Value::Object(node) => Self::of(node.get("type")),
            _ => Self::Any,
        }
    }

    pub(crate) fn has(self, ty: Ty) -> bool {
        matches!(self, Self::Types(bits) if bits & ty.bit() != 0)
    }

    /// Whether null is excluded: only a readable type list without "null" excludes it.
    fn excludes_null(self) -> bool {
        matches!(self, Self::Types(_)) && !self.has(Ty::Null)
    }
}

/// A tool's schema compiled once, when the plan is read: each node's keywords in a flat arena,
/// so checking a call neither re-reads keyword names nor recurses.
#[derive(Debug, PartialEq)]
pub(crate) struct Compiled {
    nodes: Vec<CNode>,
    /// Top-level members declared as a list or object and not as text: the ones a model may
    /// have wrapped in a JSON string.
    wrappable: Vec<String>,
}

/// One compiled schema node.
#[derive(Debug, PartialEq, Default)]
struct CNode {
    /// False for a node the check does not judge (`$ref`, `oneOf`, …, an unreadable type, or a
    /// node that is not an object): it and everything under it pass.
    judged: bool,
    declared: Declared,
    /// The declared types in the order written; casts try them in this order.
    order: Vec<Ty>,
    enumeration: Option<Vec<Value>>,
    /// Declared members, sorted by name: (name, node, required).
    properties: Vec<(String, usize, bool)>,
    has_properties: bool,
    /// Required names: (name, node when `properties` declares it).
    required: Vec<(String, Option<usize>)>,
    pattern_properties: bool,
    additional: Additional,
    items: Items,
}

#[derive(Debug, PartialEq, Default)]
enum Additional {
    #[default]
    Open,
    Closed,
    Schema(usize),
}

#[derive(Debug, PartialEq, Default)]
enum Items {
    #[default]
    None,
    Each(usize),
    Tuple(Vec<usize>),
}

impl Drop for Compiled {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            for member in node.enumeration.take().unwrap_or_default() {
                super::deep::drop_value(member);
            }
        }
    }
}

impl Compiled {
    /// Compiles `schema` level by level on the heap, so any nesting compiles.
    pub(crate) fn new(schema: &Value) -> Self {
        let mut nodes = vec![CNode::default()];
        let mut todo = vec![(schema, 0usize)];
        while let Some((schema, at)) = todo.pop() {
            nodes[at] = compile_one(schema, &mut nodes, &mut todo);
        }
        let wrappable = nodes[0]
            .properties
            .iter()
            .filter(|(_, at, _)| wrappable(nodes[*at].declared))
            .map(|(name, _, _)| name.clone())
            .collect();
        Self { nodes, wrappable }
    }

    /// Top-level members a model may have wrapped in a JSON string.
    pub(crate) fn wrappable(&self) -> &[String] {
        &self.wrappable
    }

    fn root(&self) -> &CNode {
        &self.nodes[0]
    }
}

fn compile_one<'s>(
    schema: &'s Value,
    nodes: &mut Vec<CNode>,
    todo: &mut Vec<(&'s Value, usize)>,
) -> CNode {
    let mut node = CNode::default();
    let Some(map) = schema.as_object() else {
        return node;
    };
    let mut child = |schema: &'s Value| {
        nodes.push(CNode::default());
        todo.push((schema, nodes.len() - 1));
        nodes.len() - 1
    };
    if ["$ref", "oneOf", "anyOf", "allOf", "not", "if"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return node;
    }
    node.declared = Declared::of(map.get("type"));
    if node.declared == Declared::Unreadable {
        return node;
    }
    node.judged = true;
    node.order = match map.get("type") {
        Some(Value::String(name)) => Ty::parse(name).into_iter().collect(),
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|n| n.as_str().and_then(Ty::parse))
            .collect(),
        _ => Vec::new(),
    };
    node.enumeration = map
        .get("enum")
        .and_then(Value::as_array)
        .map(|members| members.iter().map(super::deep::clone_value).collect());
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        node.has_properties = true;
        node.properties = properties
            .iter()
            .map(|(name, schema)| {
                (
                    name.clone(),
                    child(schema),
                    required.contains(&name.as_str()),
                )
            })
            .collect();
        node.properties.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let mut seen: Vec<&str> = Vec::new();
    for name in required {
        if !seen.contains(&name) {
            seen.push(name);
            let at = node
                .properties
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, at, _)| *at);
            node.required.push((name.to_string(), at));
        }
    }
    node.pattern_properties = map.contains_key("patternProperties");
    node.additional = match map.get("additionalProperties") {
        Some(Value::Bool(false)) => Additional::Closed,
        Some(schema @ Value::Object(_)) => Additional::Schema(child(schema)),
        _ => Additional::Open,
    };
    node.items = match map.get("items") {
        Some(Value::Array(tuple)) => Items::Tuple(tuple.iter().map(&mut child).collect()),
        Some(schema) => Items::Each(child(schema)),
        None => Items::None,
    };
    node
}

impl CNode {
    /// The declared member `name`: (node, required). Members usually arrive in name order, as
    /// the properties are kept, so the entry after the last hit (`hint`) is tried first.
    #[inline(always)]
    fn member(&self, name: &str, hint: &mut usize) -> Option<(usize, bool)> {
        let at = match self.properties.get(*hint) {
            Some((n, _, _)) if n == name => *hint,
            _ => self.member_after(name, *hint)?,
        };
        *hint = at + 1;
        let (_, node, required) = &self.properties[at];
        Some((*node, *required))
    }

    /// Where `name` is among the properties when it is not at `hint`. A call usually leaves out
    /// some optional members, so the next given one is a few entries on; those are compared for
    /// equality alone, which is cheap, before searching.
    #[inline(never)]
    fn member_after(&self, name: &str, hint: usize) -> Option<usize> {
        let start = (hint + 1).min(self.properties.len());
        match self.properties[start..]
            .iter()
            .take(3)
            .position(|(n, _, _)| n == name)
        {
            Some(offset) => Some(start + offset),
            None => self
                .properties
                .binary_search_by(|(n, _, _)| n.as_str().cmp(name))
                .ok(),
        }
    }

    /// Whether null is excluded: by the declared types, or by an `enum` without null.
    fn excludes_null(&self) -> bool {
        self.judged
            && (self.declared.excludes_null()
                || self
                    .enumeration
                    .as_ref()
                    .is_some_and(|members| !members.iter().any(Value::is_null)))
    }

    /// The declared type names, in the order written.
    fn type_names(&self) -> Vec<String> {
        self.order.iter().map(|t| t.name().to_string()).collect()
    }
}

/// How many levels the quick pass looks into before it leaves a call to the full walk. The quick
/// pass recurses; the full walk keeps its own stack and has no such limit.
const QUICK_DEPTH: usize = 64;

impl Compiled {
    /// Whether a call of `tool` with the argument object `arguments` goes through exactly as
    /// sent: no member the repair would try to unwrap, no name the narrowing drops, and nothing
    /// the check refuses, casts or drops. It applies the same rules as [`super::repair::repair`],
    /// [`super::narrow::outside`] and [`check`], but only answers yes or no, so it builds no
    /// path, sentence or edit and allocates nothing. `false` means "not sure": the full steps
    /// then decide and explain, so the answer is the same either way.
    pub(crate) fn fits_as_sent(&self, arguments: &Map<String, Value>, tool: &OfferedTool) -> bool {
        let root = self.root();
        if !root.judged {
            // The check judges nothing here and no member is declared for the repair.
            return arguments
                .keys()
                .all(|name| super::narrow::keeps(tool, name));
        }
        self.quick_members(root, arguments, tool.coerce, 0, Some(tool))
    }

    /// The quick pass over one value and the node judging it (see [`Walk::judge`]): the same
    /// rules ([`Ty::holds`], [`enum_member`], [`CNode::excludes_null`]), answering only whether
    /// the value goes through unchanged.
    #[inline]
    fn quick(&self, at: usize, value: &Value, coerce: bool, depth: usize) -> bool {
        let node = &self.nodes[at];
        if !node.judged || value.is_null() {
            return true;
        }
        // A value some declared type holds without a cast; one a type admits only after a cast
        // is left to the full walk.
        if matches!(node.declared, Declared::Types(_)) && !node.order.iter().any(|t| t.holds(value))
        {
            return false;
        }
        if let Some(members) = &node.enumeration {
            match enum_member(members, value) {
                Some(member) if !coerce || member == value => {}
                _ => return false,
            }
        }
        !matches!(value, Value::Array(_) | Value::Object(_))
            || self.quick_inside(node, value, coerce, depth)
    }

    /// The quick pass into a list or object (see [`Walk::one`]).
    fn quick_inside(&self, node: &CNode, value: &Value, coerce: bool, depth: usize) -> bool {
        if depth >= QUICK_DEPTH {
            return false;
        }
        match value {
            Value::Object(map) => self.quick_members(node, map, coerce, depth + 1, None),
            Value::Array(items) => match &node.items {
                Items::Each(each) => items
                    .iter()
                    .all(|item| self.quick(*each, item, coerce, depth + 1)),
                Items::Tuple(tuple) => items
                    .iter()
                    .zip(tuple)
                    .all(|(item, at)| self.quick(*at, item, coerce, depth + 1)),
                Items::None => true,
            },
            _ => true,
        }
    }

    /// The quick pass over the members of an object (see [`Walk::object`]); `top` is the tool
    /// when `map` is the call's argument object, where the repair, the narrowing and the
    /// undeclared-name policy apply.
    fn quick_members(
        &self,
        node: &CNode,
        map: &Map<String, Value>,
        coerce: bool,
        depth: usize,
        top: Option<&OfferedTool>,
    ) -> bool {
        let mut required_seen = 0;
        let mut hint = 0;
        let narrowed = top.filter(|tool| !tool.fixed.is_empty() || tool.only.is_some());
        for (name, value) in map {
            if let Some(tool) = narrowed
                && !super::narrow::keeps(tool, name)
            {
                return false;
            }
            match node.member(name, &mut hint) {
                Some((child, required)) => {
                    required_seen += usize::from(required);
                    let schema = &self.nodes[child];
                    if value.is_null() {
                        // Refused when required, dropped when optional and the tool coerces.
                        if schema.excludes_null() && (required || coerce) {
                            return false;
                        }
                        continue;
                    }
                    if top.is_some()
                        && wrappable(schema.declared)
                        && matches!(value, Value::String(text) if super::repair::may_wrap(text))
                    {
                        return false;
                    }
                    if !self.quick(child, value, coerce, depth) {
                        return false;
                    }
                }
                None if node.pattern_properties => {}
                None => match node.additional {
                    Additional::Closed => return false,
                    Additional::Schema(child) => {
                        if !self.quick(child, value, coerce, depth) {
                            return false;
                        }
                    }
                    Additional::Open => {
                        if let Some(tool) = top
                            && node.has_properties
                            && tool.unknown_arguments != UnknownArguments::Pass
                        {
                            return false;
                        }
                    }
                },
            }
        }
        required_seen >= node.required.len()
            || node.required.iter().all(|(name, _)| map.contains_key(name))
    }
}

/// Whether a top-level member declared `declared` is one a model may have wrapped in a JSON
/// string: declared as a list or object and not as text.
fn wrappable(declared: Declared) -> bool {
    (declared.has(Ty::Array) || declared.has(Ty::Object)) && !declared.has(Ty::String)
}

/// One step of an argument path: a name or a list index.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// A path step that outlives the arguments it was read from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// A change the check makes to what the tool receives.
#[derive(Debug, PartialEq)]
pub(crate) enum Edit {
    /// Replace the value at the path (a cast, or the declared enum member).
    Set(Vec<Step>, Value),
    /// Remove the member at the path.
    Remove(Vec<Step>),
}

/// Argument paths as a tree in one vector: each entry points at its parent, so a path is
/// spelled out only when a problem or edit needs it.
struct Paths<'a> {
    entries: Vec<(usize, Seg<'a>)>,
}

const ROOT: usize = usize::MAX;

impl<'a> Paths<'a> {
    fn push(&mut self, parent: usize, seg: Seg<'a>) -> usize {
        self.entries.push((parent, seg));
        self.entries.len() - 1
    }

    fn segs(&self, mut at: usize, last: Option<Seg<'a>>) -> Vec<Seg<'a>> {
        let mut segs: Vec<Seg<'a>> = Vec::new();
        if let Some(last) = last {
            segs.push(last);
        }
        while at != ROOT {
            let (parent, seg) = self.entries[at];
            segs.push(seg);
            at = parent;
        }
        segs.reverse();
        segs
    }

    fn steps(&self, at: usize, last: Option<Seg<'a>>) -> Vec<Step> {
        self.segs(at, last)
            .into_iter()
            .map(|seg| match seg {
                Seg::Key(key) => Step::Key(key.to_string()),
                Seg::Index(index) => Step::Index(index),
            })
            .collect()
    }

    fn render(&self, at: usize, last: Option<Seg<'a>>) -> String {
        render_segs(&self.segs(at, last))
    }
}

/// An argument path as problems and notes spell it: `filters[2].date`, `m["c.d"]`.
pub(crate) fn render_steps(steps: &[Step]) -> String {
    let segs: Vec<Seg<'_>> = steps
        .iter()
        .map(|step| match step {
            Step::Key(key) => Seg::Key(key),
            Step::Index(index) => Seg::Index(*index),
        })
        .collect();
    render_segs(&segs)
}

fn render_segs(segs: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(key) if !plain(key) => push_quoted_key(&mut out, key),
            Seg::Key(key) if i == 0 => out.push_str(key),
            Seg::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Seg::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Whether `key` can stand in an argument path as written: a plain identifier
/// (`[A-Za-z_][A-Za-z0-9_-]*`), which no `.`, `[`, `"` or emptiness can make ambiguous.
fn plain(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `key` as a path step in brackets, quoted and escaped as a JSON string: `["c.d"]`.
fn push_quoted_key(out: &mut String, key: &str) {
    out.push('[');
    // Writing a string into a String cannot fail.
    let _ = std::fmt::Write::write_fmt(out, format_args!("{}", Value::from(key)));
    out.push(']');
}

/// A top-level argument name as an argument path renders it: as written when it is a plain
/// identifier, else quoted in brackets (`["c.d"]`).
pub(crate) fn render_name(name: &str) -> std::borrow::Cow<'_, str> {
    if plain(name) {
        std::borrow::Cow::Borrowed(name)
    } else {
        let mut out = String::new();
        push_quoted_key(&mut out, name);
        std::borrow::Cow::Owned(out)
    }
}

/// Applies `edits` to `arguments`. Paths come from the same arguments, so each resolves;
/// one that does not is ignored rather than trusted.
pub(crate) fn apply(arguments: &mut Map<String, Value>, edits: Vec<Edit>) {
    for edit in edits {
        let (steps, value) = match edit {
            Edit::Set(steps, value) => (steps, Some(value)),
            Edit::Remove(steps) => (steps, None),
        };
        let Some((Step::Key(first), rest)) = steps.split_first() else {
            continue;
        };
        let Some((last, middle)) = rest.split_last() else {
            match value {
                Some(value) => {
                    if let Some(target) = arguments.get_mut(first) {
                        *target = value;
                    }
                }
                None => {
                    if let Some(old) = arguments.remove(first) {
                        super::deep::drop_value(old);
                    }
                }
            }
            continue;
        };
        let mut at = arguments.get_mut(first);
        for step in middle {
            at = match (at, step) {
                (Some(Value::Object(map)), Step::Key(key)) => map.get_mut(key),
                (Some(Value::Array(items)), Step::Index(i)) => items.get_mut(*i),
                _ => None,
            };
        }
        match (at, last, value) {
            (Some(Value::Object(map)), Step::Key(key), None) => {
                if let Some(old) = map.remove(key) {
                    super::deep::drop_value(old);
                }
            }
            (Some(Value::Object(map)), Step::Key(key), Some(value)) => {
                if let Some(target) = map.get_mut(key) {
                    *target = value;
                }
            }
            (Some(Value::Array(items)), Step::Index(i), Some(value)) => {
                if let Some(target) = items.get_mut(*i) {
                    *target = value;
                }
            }
            _ => {}
        }
    }
}

/// A value to judge: its schema node, and its path as the parent entry plus a last step (the
/// entry itself is recorded only when the value is a container with children to judge).
struct Task<'a> {
    node: usize,
    value: &'a Value,
    path: usize,
    last: Option<Seg<'a>>,
}

/// Checks the argument object `arguments` against the tool's compiled schema. Problems and
/// notes go to `found`; the casts and drops the tool's policy asks for are returned as edits,
/// so arguments are copied only when something changes.
pub(crate) fn check(
    schema: &Compiled,
    arguments: &Map<String, Value>,
    cx: &Context<'_>,
    found: &mut Findings,
) -> Vec<Edit> {
    let mut edits = Vec::new();
    let root = schema.root();
    // The top level is an object by construction; only its members are judged.
    if !root.judged {
        return edits;
    }
    let mut paths = Paths {
        entries: Vec::new(),
    };
    let mut stack: Vec<Task<'_>> = Vec::new();
    let mut w = Walk {
        schema,
        cx,
        found,
        edits: &mut edits,
        paths: &mut paths,
        stack: &mut stack,
    };
    w.object(root, arguments, ROOT, true);
    w.stack.reverse();
    while let Some(task) = w.stack.pop() {
        w.descend(task);
    }
    edits
}

struct Walk<'w, 'a> {
    schema: &'a Compiled,
    cx: &'w Context<'w>,
    found: &'w mut Findings,
    edits: &'w mut Vec<Edit>,
    paths: &'w mut Paths<'a>,
    stack: &'w mut Vec<Task<'a>>,
}

impl<'a> Walk<'_, 'a> {
    /// Records a problem at the argument path `path` + `last`; `make` gets the tool's name and
    /// the rendered path.
    fn problem(
        &mut self,
        path: usize,
        last: Option<Seg<'a>>,
        make: impl FnOnce(String, String) -> CallProblem,
    ) {
        let paths = &*self.paths;
        let tool = self.cx.tool;
        self.found
            .problem(|| make(tool.to_string(), paths.render(path, last)));
    }

    /// Judges a value's own kind and enum at once, so a container's own problem is listed
    /// beside its siblings' before anything inside it; then queues a container that fits for
    /// its members to be judged later. Paths are recorded only for containers looked into, and
    /// scalars cost no stack entry.
    fn visit(&mut self, task: Task<'a>) {
        if self.judge(&task) {
            self.stack.push(task);
        }
    }

    /// Judges the value of `task` itself: its kind against the declared types, its enum, and
    /// the cast the tool's policy asks for. Returns whether it is a list or object whose
    /// members are still to be judged.
    fn judge(&mut self, task: &Task<'a>) -> bool {
        let &Task {
            node,
            value,
            path,
            last,
        } = task;
        let node = &self.schema.nodes[node];
        // Null is judged by the parent (required or not); here it is nothing to look into.
        if !node.judged || value.is_null() {
            return false;
        }
        let mut cast_value: Option<Value> = None;
        if let Declared::Types(_) = node.declared {
            if !node.order.iter().any(|t| t.admits(value)) {
                self.problem(path, last, |tool, argument| CallProblem::WrongType {
                    tool,
                    argument,
                    expected: node.type_names(),
                    got: Got::of(value),
                });
                return false;
            }
            if self.cx.coerce && !node.order.iter().any(|t| t.holds(value)) {
                cast_value = node.order.iter().find_map(|t| cast_to(value, *t));
                // An integer no tool's integer type holds would be forwarded as a float or
                // as text, which a strictly validating server reads as another number or not
                // at all.
                if cast_value.is_none()
                    && node.declared.has(Ty::Integer)
                    && integer_out_of_range(value)
                {
                    self.problem(path, last, |tool, argument| {
                        CallProblem::IntegerOutOfRange {
                            tool,
                            argument,
                            got: Got::of(value),
                        }
                    });
                    return false;
                }
            }
        }
        if let Some(members) = &node.enumeration {
            let current = cast_value.as_ref().unwrap_or(value);
            match enum_member(members, current) {
                Some(member) => {
                    if self.cx.coerce && member != current {
                        cast_value = Some(member.clone());
                    }
                }
                None => {
                    self.problem(path, last, |tool, argument| {
                        not_in_enum(tool, argument, members, value)
                    });
                    return false;
                }
            }
        }
        if let Some(cast) = cast_value {
            let steps = self.paths.steps(path, last);
            self.edits.push(Edit::Set(steps, cast));
            return false;
        }
        matches!(value, Value::Array(_) | Value::Object(_))
    }

    /// Queues the members of a list or object [`Walk::judge`] let through.
    fn descend(&mut self, task: Task<'a>) {
        let Task {
            node,
            value,
            path,
            last,
        } = task;
        let node = &self.schema.nodes[node];
        let here = last.map_or(path, |seg| self.paths.push(path, seg));
        let first_task = self.stack.len();
        match value {
            Value::Object(map) => self.object(node, map, here, false),
            Value::Array(items) => match &node.items {
                Items::Tuple(tuple) => {
                    for (i, (item, node)) in items.iter().zip(tuple).enumerate() {
                        self.visit(Task {
                            node: *node,
                            value: item,
                            path: here,
                            last: Some(Seg::Index(i)),
                        });
                    }
                }
                Items::Each(node) => {
                    for (i, item) in items.iter().enumerate() {
                        self.visit(Task {
                            node: *node,
                            value: item,
                            path: here,
                            last: Some(Seg::Index(i)),
                        });
                    }
                }
                Items::None => {}
            },
            _ => {}
        }
        // Children were queued in order; the stack pops last first, so turn them round to
        // report problems in order.
        self.stack[first_task..].reverse();
    }

    /// Judges the members of an object: required names, names the schema does not declare,
    /// null for optional members; then queues each member for its own check.
    fn object(&mut self, node: &'a CNode, map: &'a Map<String, Value>, path: usize, top: bool) {
        let mut required_seen = 0;
        let mut hint = 0;
        for (name, value) in map {
            match node.member(name, &mut hint) {
                Some((child, required)) => {
                    required_seen += usize::from(required);
                    let schema = &self.schema.nodes[child];
                    if value.is_null() {
                        if required && schema.excludes_null() {
                            self.problem(
                                path,
                                Some(Seg::Key(name)),
                                |tool, argument| match &schema.enumeration {
                                    Some(members) if schema.order.is_empty() => {
                                        not_in_enum(tool, argument, members, &Value::Null)
                                    }
                                    _ => CallProblem::WrongType {
                                        tool,
                                        argument,
                                        expected: schema.type_names(),
                                        got: Got::of(&Value::Null),
                                    },
                                },
                            );
                        } else if !required && self.cx.coerce && schema.excludes_null() {
                            // A null optional member means "left out"; a server that validates
                            // strictly refuses null where its types exclude it.
                            self.drop_member(
                                path,
                                name,
                                "null for an optional argument is sent as left out",
                            );
                        }
                        continue;
                    }
                    self.visit(Task {
                        node: child,
                        value,
                        path,
                        last: Some(Seg::Key(name)),
                    });
                }
                None if node.pattern_properties => {}
                None => match node.additional {
                    Additional::Closed => {
                        self.problem(path, Some(Seg::Key(name)), |tool, argument| {
                            let (accepted, more) = list_names(node);
                            CallProblem::NotAccepted {
                                tool,
                                argument,
                                accepted,
                                more,
                            }
                        });
                    }
                    Additional::Schema(child) => {
                        self.visit(Task {
                            node: child,
                            value,
                            path,
                            last: Some(Seg::Key(name)),
                        });
                    }
                    Additional::Open if top && node.has_properties => match self.cx.unknown {
                        UnknownArguments::Refuse => {
                            self.problem(path, Some(Seg::Key(name)), |tool, argument| {
                                let (declared, more) = list_names(node);
                                CallProblem::UndeclaredArgument {
                                    tool,
                                    argument,
                                    declared,
                                    more,
                                }
                            });
                        }
                        UnknownArguments::Drop => {
                            self.drop_member(path, name, "the tool does not declare it");
                        }
                        UnknownArguments::Pass => {}
                    },
                    Additional::Open => {}
                },
            }
        }
        // Counting required members seen spares a look-up per required name when none is missing.
        if required_seen < node.required.len() {
            for (name, child) in &node.required {
                if map.contains_key(name) {
                    continue;
                }
                let expected = child
                    .map(|c| &self.schema.nodes[c])
                    .filter(|c| c.judged)
                    .map(CNode::type_names)
                    .unwrap_or_default();
                self.problem(path, Some(Seg::Key(name)), |tool, argument| {
                    CallProblem::MissingArgument {
                        tool,
                        argument,
                        expected,
                    }
                });
            }
        }
    }

    fn drop_member(&mut self, path: usize, name: &'a str, why: &str) {
        let steps = self.paths.steps(path, Some(Seg::Key(name)));
        self.found.notes.push(format!(
            "call \"{}\": dropped argument \"{}\": {why}",
            self.cx.call_id,
            self.paths.render(path, Some(Seg::Key(name)))
        ));
        self.edits.push(Edit::Remove(steps));
    }
}

fn cast_to(value: &Value, ty: Ty) -> Option<Value> {
    match (ty, value) {
        (Ty::String, Value::Number(n)) => Some(Value::String(n.to_string())),
        (Ty::String, Value::Bool(b)) => Some(Value::String(b.to_string())),
        (Ty::Integer, Value::Number(n)) => integral(n.as_f64()?),
        (Ty::Integer, Value::String(s)) => {
            let s = s.trim();
            match integer_text(s) {
                Some(i) => Some(i),
                // Digits alone that fit no integer type are out of range, not a float.
                None if is_digits(s) => None,
                None => integral(number_text(s)?),
            }
        }
        (Ty::Number, Value::String(s)) => {
            let s = s.trim();
            // Integers first, so a large one keeps every digit; text a double would round
            // is not cast at all.
            integer_text(s).or_else(|| {
                (!super::digits::loses_digits(s))
                    .then(|| Number::from_f64(number_text(s)?).map(Value::Number))
                    .flatten()
            })
        }
        (Ty::Boolean, Value::String(s)) => {
            if s.trim().eq_ignore_ascii_case("true") {
                Some(Value::Bool(true))
            } else if s.trim().eq_ignore_ascii_case("false") {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        (Ty::Boolean, Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

/// The integer a float with no fraction is, when an `i64` or `u64` holds it.
fn integral(x: f64) -> Option<Value> {
    if !x.is_finite() || x.fract() != 0.0 {
        return None;
    }
    // 2^63 and 2^64 are exact as floats; the casts below are exact inside these bounds.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        Some(Value::from(x as i64))
    } else if (0.0..18_446_744_073_709_551_616.0).contains(&x) {
        Some(Value::from(x as u64))
    } else {
        None
    }
}

/// The integer the text `s` spells with digits alone, when an `i64` or else a `u64` holds it.
fn integer_text(s: &str) -> Option<Value> {
    s.parse::<i64>()
        .map(Value::from)
        .or_else(|_| s.parse::<u64>().map(Value::from))
        .ok()
}

/// Whether `s` is an optional sign and decimal digits only.
fn is_digits(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The number the text `s` spells in decimal notation (no `inf` or `NaN`); infinite when it
/// is too large for a float.
fn number_text(s: &str) -> Option<f64> {
    let numeric = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    numeric.then(|| s.parse::<f64>().ok()).flatten()
}

/// Whether `value`, given where an integer is declared and cast to nothing, is an integer no
/// `i64` or `u64` holds: digits beyond their range, or a number with no fraction beyond it
/// (`1e20`, `"1e400"`).
fn integer_out_of_range(value: &Value) -> bool {
    let x = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if is_digits(s.trim()) => return integer_text(s.trim()).is_none(),
        Value::String(s) => number_text(s.trim()),
        _ => None,
    };
    x.is_some_and(|x| x.is_infinite() || (x.fract() == 0.0 && integral(x).is_none()))
}

/// The enum member `value` stands for: the member equal to it when there is one, else the first
/// it matches after a cast (see [`enum_matches`]), so `"A"` stays `"A"` in `["a", "A"]`.
fn enum_member<'m>(members: &'m [Value], value: &Value) -> Option<&'m Value> {
    members
        .iter()
        .find(|m| json_equal(m, value))
        .or_else(|| members.iter().find(|m| enum_matches(m, value)))
}

/// Whether `value` is the enum member `member`, allowing the casts a tool commonly makes:
/// 2 for "2" and back, and text in another letter case.
fn enum_matches(member: &Value, value: &Value) -> bool {
    if json_equal(member, value) {
        return true;
    }
    match (member, value) {
        (Value::String(m), Value::String(v)) => {
            m.eq_ignore_ascii_case(v)
                || m.chars()
                    .flat_map(char::to_lowercase)
                    .eq(v.chars().flat_map(char::to_lowercase))
        }
        (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
            match (s.trim().parse::<f64>(), n.as_f64()) {
                (Ok(a), Some(b)) => a == b,
                _ => false,
            }
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(s), Value::Bool(b)) | (Value::Bool(b), Value::String(s)) => s
            .trim()
            .eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        _ => false,
    }
}

/// Whether `a` and `b` are equal as JSON Schema compares values (`enum`, `const`): numbers by
/// their mathematical value (0 is 0.0), lists item by item, objects member by member in any
/// order. It keeps its own stack, so any nesting compares.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    let mut todo = vec![(a, b)];
    while let Some((a, b)) = todo.pop() {
        let same = match (a, b) {
            (Value::Number(x), Value::Number(y)) => same_number(x, y),
            (Value::Array(x), Value::Array(y)) => {
                todo.extend(x.iter().zip(y));
                x.len() == y.len()
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter().all(|(k, v)| match y.get(k) {
                        Some(w) => {
                            todo.push((v, w));
                            true
                        }
                        None => false,
                    })
            }
            _ => a == b,
        };
        if !same {
            return false;
        }
    }
    true
}

/// Whether two JSON numbers are the same number: exactly when both are integers, else as
/// floats.
fn same_number(x: &Number, y: &Number) -> bool {
    match (x.as_i128(), y.as_i128()) {
        (Some(a), Some(b)) => a == b,
        _ => x.as_f64() == y.as_f64(),
    }
}

/// "an object", "a list", … for the kind of `value`.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The first ten names `node` declares, and how many more it does.
fn list_names(node: &CNode) -> (Vec<String>, usize) {
    let names = node
        .properties
        .iter()
        .take(10)
        .map(|(k, _, _)| k.clone())
        .collect();
    (names, node.properties.len().saturating_sub(10))
}

/// The problem for `value` matching no member of `members`.
pub(crate) fn not_in_enum(
    tool: String,
    argument: String,
    members: &[Value],
    value: &Value,
) -> CallProblem {
    CallProblem::NotInEnum {
        tool,
        argument,
        allowed: members
            .iter()
            .take(10)
            .map(super::deep::clone_value)
            .collect(),
        more: members.len().saturating_sub(10),
        got: Got::of(value),
    }
}
