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

use super::offered::UnknownArguments;

/// The most problems a call lists; the rest are counted.
pub const MAX_PROBLEMS: usize = 10;

/// What one call's check found and did.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// The first [`MAX_PROBLEMS`] problems, one sentence each.
    pub problems: Vec<String>,
    /// How many problems there were in all.
    pub total: usize,
    /// Each drop the check made.
    pub notes: Vec<String>,
}

impl Findings {
    pub(crate) fn problem(&mut self, text: impl FnOnce() -> String) {
        // Past the limit only the count matters; skip formatting a sentence nobody reads.
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(text());
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
    fn parse(name: &str) -> Option<Self> {
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

    fn article(self) -> &'static str {
        match self {
            Self::String => "a string",
            Self::Number => "a number",
            Self::Integer => "an integer",
            Self::Boolean => "a boolean",
            Self::Array => "a list",
            Self::Object => "an object",
            Self::Null => "null",
        }
    }

    /// Whether a tool can read `value` as this type, possibly after a cast. Only containers
    /// where a scalar is declared, an object where a list is declared, and a non-object where an
    /// object is declared cannot be read; other scalar mismatches are left to the tool.
    fn admits(self, value: &Value) -> bool {
        match self {
            Self::String | Self::Number | Self::Integer | Self::Boolean | Self::Null => {
                !matches!(value, Value::Array(_) | Value::Object(_))
            }
            Self::Array => !value.is_object(),
            Self::Object => value.is_object(),
        }
    }

    /// Whether `value` already is this type, needing no cast.
    fn holds(self, value: &Value) -> bool {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declared {
    /// No `type` keyword: any kind.
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

const ALL: [Ty; 7] = [
    Ty::String,
    Ty::Number,
    Ty::Integer,
    Ty::Boolean,
    Ty::Array,
    Ty::Object,
    Ty::Null,
];

/// The keywords of one schema node the check reads, found in one pass over its keys.
#[derive(Default)]
struct Node<'s> {
    skip: bool,
    type_keyword: Option<&'s Value>,
    enumeration: Option<&'s [Value]>,
    properties: Option<&'s Map<String, Value>>,
    pattern_properties: bool,
    required: Option<&'s [Value]>,
    additional: Option<&'s Value>,
    items: Option<&'s Value>,
}

impl<'s> Node<'s> {
    /// The node's keywords; `None` for a node that is not an object (`true`, `false`, junk),
    /// which the check does not judge.
    fn read(schema: &'s Value) -> Option<Self> {
        let map = schema.as_object()?;
        let mut node = Node::default();
        for (key, value) in map {
            match key.as_str() {
                "$ref" | "oneOf" | "anyOf" | "allOf" | "not" | "if" => node.skip = true,
                "type" => node.type_keyword = Some(value),
                "enum" => node.enumeration = value.as_array().map(Vec::as_slice),
                "properties" => node.properties = value.as_object(),
                "patternProperties" => node.pattern_properties = true,
                "required" => node.required = value.as_array().map(Vec::as_slice),
                "additionalProperties" => node.additional = Some(value),
                "items" => node.items = Some(value),
                _ => {}
            }
        }
        Some(node)
    }
}

/// One step of an argument path: a name or a list index.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// Argument paths as a tree in one vector: each entry points at its parent, so a path is
/// spelled out only when a problem or note needs it.
struct Paths<'a> {
    entries: Vec<(usize, Seg<'a>)>,
}

const ROOT: usize = usize::MAX;

impl<'a> Paths<'a> {
    fn push(&mut self, parent: usize, seg: Seg<'a>) -> usize {
        self.entries.push((parent, seg));
        self.entries.len() - 1
    }

    fn render(&self, mut at: usize, last: Option<Seg<'_>>) -> String {
        let mut segs: Vec<Seg<'_>> = Vec::new();
        if let Some(last) = last {
            segs.push(last);
        }
        while at != ROOT {
            let (parent, seg) = self.entries[at];
            segs.push(seg);
            at = parent;
        }
        let mut out = String::new();
        for (i, seg) in segs.iter().rev().enumerate() {
            match seg {
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
}

struct Task<'a> {
    schema: &'a Value,
    value: &'a mut Value,
    path: usize,
}

/// Checks the argument object `arguments` against the tool's `schema`, casting values in place
/// when `cx.coerce` is set and dropping what the policy drops; problems and notes go to `found`.
pub(crate) fn check(
    schema: &Value,
    arguments: &mut Map<String, Value>,
    cx: &Context<'_>,
    found: &mut Findings,
) {
    let mut paths = Paths {
        entries: Vec::new(),
    };
    let mut stack: Vec<Task<'_>> = Vec::new();
    let Some(root) = Node::read(schema) else {
        return;
    };
    if root.skip
        || root
            .type_keyword
            .is_some_and(|t| Declared::of(Some(t)) == Declared::Unreadable)
    {
        return;
    }
    // The top level is an object by construction; only its members are judged here.
    object(
        &root, arguments, ROOT, true, cx, found, &mut paths, &mut stack,
    );
    while let Some(task) = stack.pop() {
        one(task, cx, found, &mut paths, &mut stack);
    }
}

fn one<'a>(
    task: Task<'a>,
    cx: &Context<'_>,
    found: &mut Findings,
    paths: &mut Paths<'a>,
    stack: &mut Vec<Task<'a>>,
) {
    let Task {
        schema,
        value,
        path,
    } = task;
    let Some(node) = Node::read(schema) else {
        return;
    };
    // Null is judged by the parent (required or not); here it is nothing to look into.
    if node.skip || value.is_null() {
        return;
    }
    let declared = Declared::of(node.type_keyword);
    match declared {
        Declared::Unreadable => return,
        Declared::Any => {}
        Declared::Types(_) => {
            if !ALL.iter().any(|t| declared.has(*t) && t.admits(value)) {
                found.problem(|| {
                    format!(
                        "tool \"{}\": argument \"{}\" must be {}; got {}",
                        cx.tool,
                        paths.render(path, None),
                        expected(node.type_keyword),
                        kind(value)
                    )
                });
                return;
            }
            if cx.coerce {
                cast(value, node.type_keyword);
            }
        }
    }
    if let Some(members) = node.enumeration {
        match members.iter().find(|m| enum_matches(m, value)) {
            Some(member) => {
                if cx.coerce && member != value {
                    *value = member.clone();
                }
            }
            None => {
                found.problem(|| {
                    format!(
                        "tool \"{}\": argument \"{}\" must be one of {}; got {}",
                        cx.tool,
                        paths.render(path, None),
                        list_values(members),
                        shown(value)
                    )
                });
                return;
            }
        }
    }
    match value {
        Value::Object(map) => object(&node, map, path, false, cx, found, paths, stack),
        Value::Array(items) => match node.items {
            Some(Value::Array(tuple)) => {
                for (i, (item, schema)) in items.iter_mut().zip(tuple).enumerate().rev() {
                    let path = paths.push(path, Seg::Index(i));
                    stack.push(Task {
                        schema,
                        value: item,
                        path,
                    });
                }
            }
            Some(schema) => {
                for (i, item) in items.iter_mut().enumerate().rev() {
                    let path = paths.push(path, Seg::Index(i));
                    stack.push(Task {
                        schema,
                        value: item,
                        path,
                    });
                }
            }
            None => {}
        },
        _ => {}
    }
}

/// Judges the members of an object: required names, names the schema does not declare, null
/// for optional members; then queues each member for its own check.
#[allow(clippy::too_many_arguments)]
fn object<'a>(
    node: &Node<'a>,
    map: &'a mut Map<String, Value>,
    path: usize,
    top: bool,
    cx: &Context<'_>,
    found: &mut Findings,
    paths: &mut Paths<'a>,
    stack: &mut Vec<Task<'a>>,
) {
    let properties = node.properties;
    let prop = |name: &str| properties.and_then(|p| p.get(name));
    let mut required_names: &[Value] = &[];
    if let Some(required) = node.required {
        required_names = required;
        for name in required.iter().filter_map(Value::as_str) {
            let declared = prop(name).map_or(Declared::Any, Declared::of_schema);
            match map.get(name) {
                None => found.problem(|| {
                    format!(
                        "tool \"{}\": argument \"{}\" is required{}; got nothing",
                        cx.tool,
                        paths.render(path, Some(Seg::Key(name))),
                        prop(name)
                            .and_then(|s| s.get("type"))
                            .map(|t| format!(" and must be {}", expected(Some(t))))
                            .unwrap_or_default()
                    )
                }),
                Some(Value::Null) if declared.excludes_null() && !skipped(prop(name)) => found
                    .problem(|| {
                        format!(
                            "tool \"{}\": argument \"{}\" must be {}; got null",
                            cx.tool,
                            paths.render(path, Some(Seg::Key(name))),
                            expected(prop(name).and_then(|s| s.get("type")))
                        )
                    }),
                Some(_) => {}
            }
        }
    }
    let is_required = |name: &str| required_names.iter().any(|r| r.as_str() == Some(name));
    let additional = node.additional;
    let mut drop: Vec<(String, &'static str)> = Vec::new();
    for (name, value) in map.iter() {
        match prop(name) {
            Some(schema) => {
                // A null optional member means "left out"; a tool that validates strictly
                // refuses null where its types exclude it, so a coercing tool gets it left out.
                if cx.coerce
                    && value.is_null()
                    && !is_required(name)
                    && Declared::of_schema(schema).excludes_null()
                    && !skipped(Some(schema))
                {
                    drop.push((
                        name.clone(),
                        "null for an optional argument is sent as left out",
                    ));
                }
            }
            None if node.pattern_properties => {}
            None => match additional {
                Some(Value::Bool(false)) => found.problem(|| {
                    format!(
                        "tool \"{}\": argument \"{}\" is not accepted; expected only {}",
                        cx.tool,
                        paths.render(path, Some(Seg::Key(name))),
                        list_names(properties)
                    )
                }),
                Some(Value::Object(_)) => {}
                _ if top && node.properties.is_some() => match cx.unknown {
                    UnknownArguments::Refuse => found.problem(|| {
                        format!(
                            "tool \"{}\": argument \"{}\" is not declared; expected only {}",
                            cx.tool,
                            paths.render(path, Some(Seg::Key(name))),
                            list_names(properties)
                        )
                    }),
                    UnknownArguments::Drop => {
                        drop.push((name.clone(), "the tool does not declare it"));
                    }
                    UnknownArguments::Pass => {}
                },
                _ => {}
            },
        }
    }
    for (name, why) in drop {
        map.remove(&name);
        found.notes.push(format!(
            "call \"{}\": dropped argument \"{}\": {why}",
            cx.call_id,
            paths.render(path, Some(Seg::Key(&name)))
        ));
    }
    let extra = match additional {
        Some(schema @ Value::Object(_)) => Some(schema),
        _ => None,
    };
    for (name, value) in map.iter_mut().rev() {
        let schema = match prop(name) {
            Some(schema) => schema,
            None => match extra {
                Some(schema) if !node.pattern_properties => schema,
                _ => continue,
            },
        };
        let path = paths.push(path, Seg::Key(name));
        stack.push(Task {
            schema,
            value,
            path,
        });
    }
}

/// Whether a member's schema is one the check does not judge.
fn skipped(schema: Option<&Value>) -> bool {
    match schema.and_then(Node::read) {
        Some(node) => node.skip,
        None => schema.is_some(),
    }
}

/// Casts `value` to the first declared type it reads as, unless it already is one of them.
/// Values no cast fits exactly ("abc" for an integer) are left as given for the tool to judge.
fn cast(value: &mut Value, type_keyword: Option<&Value>) {
    let declared = Declared::of(type_keyword);
    if ALL.iter().any(|t| declared.has(*t) && t.holds(value)) {
        return;
    }
    let names: &[Value] = match type_keyword {
        Some(Value::Array(names)) => names,
        Some(one) => std::slice::from_ref(one),
        None => return,
    };
    for ty in names.iter().filter_map(|n| n.as_str().and_then(Ty::parse)) {
        if let Some(cast) = cast_to(value, ty) {
            *value = cast;
            return;
        }
    }
}

fn cast_to(value: &Value, ty: Ty) -> Option<Value> {
    match (ty, value) {
        (Ty::String, Value::Number(n)) => Some(Value::String(n.to_string())),
        (Ty::String, Value::Bool(b)) => Some(Value::String(b.to_string())),
        (Ty::Integer, Value::Number(n)) => integral(n.as_f64()?),
        (Ty::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(i) => Some(Value::from(i)),
            Err(_) => integral(s.trim().parse::<f64>().ok()?),
        },
        (Ty::Number, Value::String(s)) => {
            let s = s.trim();
            if let Ok(i) = s.parse::<i64>() {
                return Some(Value::from(i));
            }
            Number::from_f64(s.parse::<f64>().ok()?).map(Value::Number)
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
            Some(x) if x == 1.0 => Some(Value::Bool(true)),
            Some(x) if x == 0.0 => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

fn integral(x: f64) -> Option<Value> {
    // Beyond 2^53 a float no longer names one integer; leave such values as given.
    (x.is_finite() && x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0)
        .then(|| Value::from(x as i64))
}

/// Whether `value` is the enum member `member`, allowing the casts a tool commonly makes:
/// 2 for "2" and back, and text in another letter case.
fn enum_matches(member: &Value, value: &Value) -> bool {
    if member == value {
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

/// "a string or null" for a `type` keyword.
fn expected(type_keyword: Option<&Value>) -> String {
    let names: Vec<&str> = match type_keyword {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let words: Vec<&str> = names
        .iter()
        .filter_map(|n| Ty::parse(n).map(Ty::article))
        .collect();
    match words.as_slice() {
        [] => "a value".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
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

/// A scalar as JSON, cut short when long; a container by its kind.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(_) | Value::Object(_) => kind(value).to_string(),
        Value::String(s) if s.chars().count() > 60 => {
            let head: String = s.chars().take(57).collect();
            format!("{}…", Value::String(head))
        }
        scalar => scalar.to_string(),
    }
}

fn list_values(members: &[Value]) -> String {
    let mut out: Vec<String> = members.iter().take(10).map(shown).collect();
    if members.len() > 10 {
        out.push(format!("(and {} more)", members.len() - 10));
    }
    out.join(", ")
}

fn list_names(properties: Option<&Map<String, Value>>) -> String {
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return "no arguments".to_string();
    };
    let mut out: Vec<String> = properties
        .keys()
        .take(10)
        .map(|k| format!("\"{k}\""))
        .collect();
    if properties.len() > 10 {
        out.push(format!("(and {} more)", properties.len() - 10));
    }
    out.join(", ")
}
