//! A tool's input schema compiled once, when the plan is read, into a flat arena of nodes the
//! walk and the quick pass read without re-reading keyword names.

use serde_json::Value;

use super::ty::{Declared, Ty};

/// A tool's schema compiled once, when the plan is read: each node's keywords in a flat arena,
/// so checking a call neither re-reads keyword names nor recurses.
#[derive(Debug, PartialEq)]
pub(crate) struct Compiled {
    pub(super) nodes: Vec<CNode>,
    /// Top-level members declared as a list or object and not as text: the ones a model may
    /// have wrapped in a JSON string.
    wrappable: Vec<String>,
}

/// One compiled schema node.
#[derive(Debug, PartialEq, Default)]
pub(super) struct CNode {
    /// False for a node the check does not judge (`$ref`, `oneOf`, …, an unreadable type, or a
    /// node that is not an object): it and everything under it pass.
    pub(super) judged: bool,
    /// The schema `false`: no value is accepted here.
    pub(super) never: bool,
    pub(super) declared: Declared,
    /// The declared types in the order written; casts try them in this order.
    pub(super) order: Vec<Ty>,
    pub(super) enumeration: Option<Vec<Value>>,
    /// The `format` asserted on text here, when it is one muster asserts.
    pub(super) format: Option<super::format::Format>,
    /// The `format` as the schema writes it, for the problem.
    pub(super) format_name: String,
    /// Declared members, sorted by name: (name, node, required).
    pub(super) properties: Vec<(String, usize, bool)>,
    pub(super) has_properties: bool,
    /// Required names: (name, node when `properties` declares it).
    pub(super) required: Vec<(String, Option<usize>)>,
    pub(super) pattern_properties: bool,
    pub(super) additional: Additional,
    pub(super) items: Items,
}

#[derive(Debug, PartialEq, Default)]
pub(super) enum Additional {
    #[default]
    Open,
    Closed,
    Schema(usize),
}

#[derive(Debug, PartialEq, Default)]
pub(super) enum Items {
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

    pub(super) fn root(&self) -> &CNode {
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
        if schema == &Value::Bool(false) {
            node.judged = true;
            node.never = true;
        }
        return node;
    };
    let mut child = |schema: &'s Value| {
        nodes.push(CNode::default());
        todo.push((schema, nodes.len() - 1));
        nodes.len() - 1
    };
    // A union of literals (zod's `z.union([z.literal("a"), …])`, an optional enum written
    // `anyOf: [{enum}, {type: "null"}]`) is judged as the enum it is, so its members get the
    // same casts and letter-case repair as a plain `enum`.
    let literals = literal_union(map);
    if literals.is_none()
        && ["$ref", "oneOf", "anyOf", "allOf", "not", "if"]
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
    node.format = map
        .get("format")
        .and_then(Value::as_str)
        .and_then(super::format::Format::parse);
    if node.format.is_some() {
        node.format_name = map["format"].as_str().unwrap_or_default().to_string();
    }
    // `const` is an enum of one member.
    node.enumeration = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(members)), _) => {
            Some(members.iter().map(super::deep::clone_value).collect())
        }
        (None, Some(member)) => Some(vec![super::deep::clone_value(member)]),
        _ => literals,
    };
    // A required member with a `default` is the server's to fill: not required of the call.
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .filter(|name| !crate::schema::filled_by_default(map, name))
                .collect()
        })
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
    // With `prefixItems` (2020-12), `items` judges only the items past the prefix; those are
    // left to strict checking.
    node.items = match (map.get("prefixItems"), map.get("items")) {
        (Some(Value::Array(tuple)), _) | (None, Some(Value::Array(tuple))) => {
            Items::Tuple(tuple.iter().map(&mut child).collect())
        }
        (Some(_), _) => Items::None,
        (None, Some(schema)) => Items::Each(child(schema)),
        (None, None) => Items::None,
    };
    node
}

/// The members of a node whose `anyOf` or `oneOf` lists only literals: every branch an
/// object holding `const` or `enum` beside nothing but annotations and a `type`, or
/// `{"type": "null"}` (the member null). `None` for any other node, which stays unjudged.
fn literal_union(map: &serde_json::Map<String, Value>) -> Option<Vec<Value>> {
    const BESIDE: [&str; 7] = [
        "type",
        "description",
        "title",
        "$comment",
        "default",
        "examples",
        "deprecated",
    ];
    if ["$ref", "allOf", "not", "if"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return None;
    }
    let branches = match (map.get("anyOf"), map.get("oneOf")) {
        (Some(Value::Array(branches)), None) | (None, Some(Value::Array(branches))) => branches,
        _ => return None,
    };
    if branches.is_empty() {
        return None;
    }
    let mut members = Vec::new();
    for branch in branches {
        let branch = branch.as_object()?;
        if !branch
            .keys()
            .all(|k| k == "const" || k == "enum" || BESIDE.contains(&k.as_str()))
        {
            return None;
        }
        match (branch.get("const"), branch.get("enum")) {
            (Some(member), None) => members.push(super::deep::clone_value(member)),
            (None, Some(Value::Array(list))) => {
                members.extend(list.iter().map(super::deep::clone_value));
            }
            (None, None) if branch.get("type") == Some(&Value::from("null")) => {
                members.push(Value::Null);
            }
            _ => return None,
        }
    }
    Some(members)
}

impl CNode {
    /// Whether `name` is required without a `properties` entry: the schema names it, so it is
    /// declared (any value) and never an undeclared argument to refuse or drop.
    pub(super) fn requires_undescribed(&self, name: &str) -> bool {
        self.required
            .iter()
            .any(|(n, at)| at.is_none() && n == name)
    }

    /// The declared member `name`: (node, required). Members usually arrive in name order, as
    /// the properties are kept, so the entry after the last hit (`hint`) is tried first.
    #[inline(always)]
    pub(super) fn member(&self, name: &str, hint: &mut usize) -> Option<(usize, bool)> {
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
    pub(super) fn excludes_null(&self) -> bool {
        self.judged
            && (self.never
                || self.declared.excludes_null()
                || self
                    .enumeration
                    .as_ref()
                    .is_some_and(|members| !members.iter().any(Value::is_null)))
    }

    /// The declared type names, in the order written.
    pub(super) fn type_names(&self) -> Vec<String> {
        self.order.iter().map(|t| t.name().to_string()).collect()
    }
}

/// Whether a top-level member declared `declared` is one a model may have wrapped in a JSON
/// string: declared as a list or object and not as text.
pub(super) fn wrappable(declared: Declared) -> bool {
    (declared.has(Ty::Array) || declared.has(Ty::Object)) && !declared.has(Ty::String)
}
