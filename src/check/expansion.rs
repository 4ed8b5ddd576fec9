//! How much work a schema's references can make strict checking do, measured before any call is
//! validated. The validator applies a `$ref`'s target where the reference stands, so a 2 KB
//! schema whose definitions each refer twice to the one before ("billion laughs") makes one call
//! visit 2^40 nodes; and a definition that applies itself twice to one part of the arguments
//! doubles the work at each level they nest. This module counts the schema nodes one place of
//! the arguments can be judged by, references expanded (each reference target measured once, so
//! the count itself is linear in the schema), and finds self-reference that multiplies; strict
//! checking refuses a schema it finds unbounded ([`super::strict::compile_strict`]). It decides
//! nothing else and never runs the validator.
//!
//! References are resolved as the validator resolves them where this module can tell: a JSON
//! pointer against the nearest enclosing `$id` (or `id` under drafts 3 and 4), an anchor by
//! name, another resource by its `$id`. Where that finds nothing it counts every node the
//! reference could name, so a reference it misreads is counted too high, never too low; one
//! naming nothing in the schema (a bundled meta-schema) counts as one node.

use std::fmt;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

/// The most schema nodes, references expanded, strict checking follows to judge one place of a
/// call's arguments. A schema over it is uncheckable: every call to the tool is refused.
pub const MAX_SCHEMA_EXPANSION: u64 = 100_000;

/// Why a schema's references make the work of checking one call unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unbounded {
    /// References expanded, the schema has more than `budget` nodes.
    TooLarge { budget: u64 },
    /// The reference `at` leads back to itself more than once for one part of the arguments, so
    /// the work multiplies with each level the arguments nest.
    Multiplies { at: String },
    /// The reference `at` leads back to itself without descending into the arguments.
    InPlace { at: String },
}

impl fmt::Display for Unbounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { budget } => write!(
                f,
                "with its references expanded it has more than {budget} nodes, the most strict checking follows for one call"
            ),
            Self::Multiplies { at } => write!(
                f,
                "\"{at}\" refers back to itself more than once for the same part of the arguments, so the work multiplies with each level they nest"
            ),
            Self::InPlace { at } => write!(
                f,
                "\"{at}\" refers back to itself without descending into the arguments"
            ),
        }
    }
}

/// The nodes, references expanded, that judge one place of the arguments by `schema`, when at
/// most `budget`.
///
/// # Errors
///
/// [`Unbounded`] when the count passes `budget` or a reference cycle multiplies the work.
pub(crate) fn measure(schema: &Value, budget: u64) -> Result<u64, Unbounded> {
    let mut graph = Graph::new(schema, budget);
    graph.walk_all()?;
    graph.cost()
}

/// Where a reference applies its target, relative to the place the reference's unit judges:
/// there itself, or one level down. A unit that reaches itself at most once per place one level
/// down (and never at its own place) does work linear in the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step<'s> {
    Same,
    /// Each item of a list.
    Element,
    /// Any member of an object.
    Member,
    /// The member of this name.
    Name(&'s str),
}

/// A reference target (or the root), walked once.
struct Unit<'s> {
    node: &'s Value,
    /// The reference that first named it, for messages.
    name: String,
    /// Its own nodes, references not expanded.
    body: u64,
    /// The units its references apply, and where.
    edges: Vec<(usize, Step<'s>)>,
}

struct Graph<'s> {
    root: &'s Value,
    budget: u64,
    draft4: bool,
    /// The nearest enclosing resource of every object node.
    base_of: FxHashMap<*const Value, &'s Value>,
    /// The resource enclosing each resource.
    outer: FxHashMap<*const Value, &'s Value>,
    /// Every node with an identifier, by its identifier as written.
    resources: Vec<(&'s str, &'s Value)>,
    anchors: FxHashMap<&'s str, Vec<&'s Value>>,
    units: Vec<Unit<'s>>,
    unit_of: FxHashMap<*const Value, usize>,
}

/// Keywords whose values are data, never judged as schemas.
const DATA: [&str; 9] = [
    "$defs",
    "definitions",
    "enum",
    "const",
    "default",
    "examples",
    "$comment",
    "title",
    "description",
];

impl<'s> Graph<'s> {
    fn new(root: &'s Value, budget: u64) -> Self {
        let draft4 = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("draft-04") || s.contains("draft-03"));
        let mut graph = Self {
            root,
            budget,
            draft4,
            base_of: FxHashMap::default(),
            outer: FxHashMap::default(),
            resources: Vec::new(),
            anchors: FxHashMap::default(),
            units: Vec::new(),
            unit_of: FxHashMap::default(),
        };
        graph.index();
        graph.unit(root, "#");
        graph
    }

    /// The identifier that makes `map` a resource, if any.
    fn id_of(&self, map: &'s Map<String, Value>) -> Option<&'s str> {
        let key = if self.draft4 { "id" } else { "$id" };
        match map.get(key).or_else(|| map.get("$id")) {
            Some(Value::String(id)) if !id.starts_with('#') => Some(id),
            _ => None,
        }
    }

    /// Records every node's resource, every resource and every anchor.
    fn index(&mut self) {
        let mut stack = vec![(self.root, self.root)];
        while let Some((value, base)) = stack.pop() {
            match value {
                Value::Object(map) => {
                    let mut base = base;
                    if let Some(id) = self.id_of(map) {
                        self.resources.push((id, value));
                        if !std::ptr::eq(value, self.root) {
                            self.outer.insert(value, base);
                        }
                        base = value;
                    }
                    for key in ["$anchor", "$dynamicAnchor", "$id", "id"] {
                        if let Some(Value::String(name)) = map.get(key) {
                            let name = match key {
                                "$anchor" | "$dynamicAnchor" => name.as_str(),
                                _ => match name.split_once('#') {
                                    Some((_, anchor)) if !anchor.is_empty() => anchor,
                                    _ => continue,
                                },
                            };
                            self.anchors.entry(name).or_default().push(value);
                        }
                    }
                    self.base_of.insert(value, base);
                    stack.extend(map.values().map(|child| (child, base)));
                }
                Value::Array(items) => stack.extend(items.iter().map(|child| (child, base))),
                _ => {}
            }
        }
    }

    /// The unit for `node`, made when first named.
    fn unit(&mut self, node: &'s Value, name: &str) -> usize {
        let len = self.units.len();
        *self.unit_of.entry(node).or_insert_with(|| {
            self.units.push(Unit {
                node,
                name: name.to_string(),
                body: 0,
                edges: Vec::new(),
            });
            len
        })
    }

    /// Walks every unit, each once, finding the units their references name.
    fn walk_all(&mut self) -> Result<(), Unbounded> {
        let mut next = 0;
        while next < self.units.len() {
            self.walk(next)?;
            next += 1;
        }
        Ok(())
    }

    fn walk(&mut self, at: usize) -> Result<(), Unbounded> {
        let node = self.units[at].node;
        let base = self
            .base_of
            .get(&(node as *const Value))
            .copied()
            .unwrap_or(self.root);
        let mut body = 0u64;
        let mut refs: Vec<(&'s str, &'s Value, Step<'s>)> = Vec::new();
        let mut stack = vec![(node, Step::Same, base)];
        while let Some((value, step, base)) = stack.pop() {
            body += 1;
            if body > self.budget {
                return Err(Unbounded::TooLarge {
                    budget: self.budget,
                });
            }
            let map = match value {
                Value::Object(map) => map,
                Value::Array(items) => {
                    stack.extend(items.iter().map(|item| (item, step, base)));
                    continue;
                }
                _ => continue,
            };
            let base = if self.id_of(map).is_some() {
                value
            } else {
                base
            };
            for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
                if let Some(Value::String(reference)) = map.get(key) {
                    let reference = if key == "$recursiveRef" {
                        "#"
                    } else {
                        reference
                    };
                    refs.push((reference, base, step));
                }
            }
            for (key, child) in map {
                let below = |down| if step == Step::Same { down } else { step };
                match key.as_str() {
                    k if DATA.contains(&k) => {}
                    "properties" => match child {
                        Value::Object(members) => {
                            body += 1;
                            stack.extend(
                                members
                                    .iter()
                                    .map(|(name, s)| (s, below(Step::Name(name)), base)),
                            );
                        }
                        other => stack.push((other, step, base)),
                    },
                    // Maps of schemas: their keys are patterns or names, never keywords.
                    "patternProperties" | "dependentSchemas" | "dependencies" => match child {
                        Value::Object(members) => {
                            body += 1;
                            let down = if key == "patternProperties" {
                                below(Step::Member)
                            } else {
                                step
                            };
                            stack.extend(members.values().map(|s| (s, down, base)));
                        }
                        other => stack.push((other, step, base)),
                    },
                    "items" | "prefixItems" | "additionalItems" | "contains"
                    | "unevaluatedItems" => stack.push((child, below(Step::Element), base)),
                    "additionalProperties" | "unevaluatedProperties" | "propertyNames" => {
                        stack.push((child, below(Step::Member), base))
                    }
                    _ => stack.push((child, step, base)),
                }
            }
        }
        let mut edges = Vec::new();
        for (reference, base, step) in refs {
            let targets = self.targets(reference, base);
            if targets.is_empty() {
                // Nothing in the schema: a bundled meta-schema, or a reference the validator
                // refuses when it compiles.
                body = body.saturating_add(1);
            }
            for target in targets {
                edges.push((self.unit(target, reference), step));
            }
        }
        let unit = &mut self.units[at];
        unit.body = body;
        unit.edges = edges;
        Ok(())
    }

    /// The nodes `reference`, standing in the resource `base`, can name.
    fn targets(&self, reference: &str, base: &'s Value) -> Vec<&'s Value> {
        let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let fragment = percent_decoded(fragment);
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return self
                .anchors
                .get(fragment.as_str())
                .cloned()
                .unwrap_or_default();
        }
        let at = |resource: &'s Value| {
            if fragment.is_empty() {
                Some(resource)
            } else {
                resource.pointer(&fragment)
            }
        };
        if uri.is_empty() {
            // The nearest resource that has the pointer, outward to the root.
            let mut resource = Some(base);
            while let Some(r) = resource {
                if let Some(found) = at(r) {
                    return vec![found];
                }
                resource = self.outer.get(&(r as *const Value)).copied();
            }
            if let Some(found) = at(self.root) {
                return vec![found];
            }
            return self.resources.iter().filter_map(|(_, r)| at(r)).collect();
        }
        let last = |text: &'s str| text.rsplit(['/', ':']).next().unwrap_or(text);
        let wanted = uri.rsplit(['/', ':']).next().unwrap_or(uri);
        let any = matches!(wanted, "" | "." | "..");
        let mut found: Vec<&'s Value> = self
            .resources
            .iter()
            .filter(|(id, _)| {
                let id = id.split('#').next().unwrap_or(id);
                any || id == uri || last(id) == wanted
            })
            .filter_map(|(_, r)| at(r))
            .collect();
        if any && let Some(node) = at(self.root) {
            found.push(node);
        }
        found.sort_by_key(|node| *node as *const Value);
        found.dedup_by_key(|node| *node as *const Value);
        found
    }

    /// The count for the root, each strongly connected set of units judged once.
    fn cost(&self) -> Result<u64, Unbounded> {
        let mut cost = vec![0u64; self.units.len()];
        let mut set_of = vec![usize::MAX; self.units.len()];
        // Each set comes after every set its units reach.
        for (n, set) in strongly_connected(&self.units).into_iter().enumerate() {
            for &u in &set {
                set_of[u] = n;
            }
            let cyclic = set.len() > 1 || self.units[set[0]].edges.iter().any(|e| e.0 == set[0]);
            let mut total = 0u64;
            for &u in &set {
                let unit = &self.units[u];
                total = total.saturating_add(unit.body);
                for &(to, _) in &unit.edges {
                    if set_of[to] != n {
                        total = total.saturating_add(cost[to]);
                    }
                }
                if cyclic {
                    self.multiplies(u, &set_of, n)?;
                }
            }
            if cyclic {
                self.in_place(&set, &set_of, n)?;
            }
            if total > self.budget {
                return Err(Unbounded::TooLarge {
                    budget: self.budget,
                });
            }
            for &u in &set {
                cost[u] = total;
            }
        }
        Ok(cost[0])
    }

    /// Whether unit `u` of the cyclic set `n` applies units of its set more than once to one
    /// place: its own (more than zero times there, with anything else), or one level down.
    fn multiplies(&self, u: usize, set_of: &[usize], n: usize) -> Result<(), Unbounded> {
        let (mut same, mut element, mut member) = (0u32, 0u32, 0u32);
        let mut names: FxHashMap<&str, u32> = FxHashMap::default();
        for &(to, step) in &self.units[u].edges {
            if set_of[to] != n {
                continue;
            }
            match step {
                Step::Same => same += 1,
                Step::Element => element += 1,
                Step::Member => member += 1,
                Step::Name(name) => *names.entry(name).or_default() += 1,
            }
        }
        let named = names.values().copied().max().unwrap_or(0);
        if same + element > 1 || same + member + named > 1 {
            return Err(Unbounded::Multiplies {
                at: self.units[u].name.clone(),
            });
        }
        Ok(())
    }

    /// Whether the set `n` has a cycle of references that stay at one place of the arguments.
    fn in_place(&self, set: &[usize], set_of: &[usize], n: usize) -> Result<(), Unbounded> {
        // Kahn's algorithm over the references that stay in place: a cycle leaves units behind.
        let mut incoming: FxHashMap<usize, u32> = set.iter().map(|&u| (u, 0)).collect();
        let same = |u: usize| {
            self.units[u]
                .edges
                .iter()
                .filter(move |&&(to, step)| step == Step::Same && set_of[to] == n)
                .map(|&(to, _)| to)
        };
        for &u in set {
            for to in same(u) {
                *incoming.entry(to).or_default() += 1;
            }
        }
        let mut ready: Vec<usize> = set.iter().copied().filter(|u| incoming[u] == 0).collect();
        let mut done = 0;
        while let Some(u) = ready.pop() {
            done += 1;
            for to in same(u) {
                if let Some(count) = incoming.get_mut(&to) {
                    *count -= 1;
                    if *count == 0 {
                        ready.push(to);
                    }
                }
            }
        }
        if done < set.len() {
            let left = set
                .iter()
                .find(|u| incoming[u] > 0)
                .copied()
                .unwrap_or(set[0]);
            return Err(Unbounded::InPlace {
                at: self.units[left].name.clone(),
            });
        }
        Ok(())
    }
}

/// The strongly connected sets of `units` (Tarjan's algorithm on a heap stack), each after every
/// set its units reach.
fn strongly_connected(units: &[Unit<'_>]) -> Vec<Vec<usize>> {
    let mut t = Tarjan {
        index: vec![Tarjan::NEW; units.len()],
        low: vec![0; units.len()],
        on_stack: vec![false; units.len()],
        stack: Vec::new(),
        calls: Vec::new(),
        next: 0,
    };
    let mut sets = Vec::new();
    for start in 0..units.len() {
        if t.index[start] != Tarjan::NEW {
            continue;
        }
        t.open(start);
        while let Some(&(v, e)) = t.calls.last() {
            if let Some(&(w, _)) = units[v].edges.get(e) {
                if let Some(call) = t.calls.last_mut() {
                    call.1 += 1;
                }
                if t.index[w] == Tarjan::NEW {
                    t.open(w);
                } else if t.on_stack[w] {
                    t.low[v] = t.low[v].min(t.index[w]);
                }
                continue;
            }
            t.calls.pop();
            if let Some(&(parent, _)) = t.calls.last() {
                t.low[parent] = t.low[parent].min(t.low[v]);
            }
            if t.low[v] == t.index[v] {
                let mut set = Vec::new();
                while let Some(w) = t.stack.pop() {
                    t.on_stack[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                sets.push(set);
            }
        }
    }
    sets
}

struct Tarjan {
    index: Vec<usize>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    /// The units being visited, each with the next of its edges to follow.
    calls: Vec<(usize, usize)>,
    next: usize,
}

impl Tarjan {
    const NEW: usize = usize::MAX;

    fn open(&mut self, v: usize) {
        self.index[v] = self.next;
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        self.calls.push((v, 0));
    }
}

/// `text` with `%XX` escapes decoded, as a URI fragment is read.
fn percent_decoded(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The schema of issue 24: each definition refers twice to the one before.
    pub(crate) fn laughs(depth: usize) -> Value {
        let mut defs = Map::new();
        defs.insert("l0".into(), json!({"type": "string"}));
        for i in 1..=depth {
            let below = format!("#/$defs/l{}", i - 1);
            defs.insert(
                format!("l{i}"),
                json!({"allOf": [{"$ref": below}, {"$ref": below}]}),
            );
        }
        json!({"type": "object", "$defs": defs,
            "properties": {"x": {"$ref": format!("#/$defs/l{depth}")}}})
    }

    #[test]
    fn doubling_definitions_are_counted_expanded_and_refused_past_the_budget() {
        // The root, its `type`, its `properties`, the member and its `$ref` (the `$defs` are
        // judged only where referred to), then l0 and its `type`.
        assert_eq!(measure(&laughs(0), u64::MAX), Ok(5 + 2));
        // Each level adds its object, its list and two references (2 nodes each), then both
        // expansions of the level below.
        assert_eq!(measure(&laughs(1), u64::MAX), Ok(5 + 6 + 2 * 2));
        let small = measure(&laughs(8), u64::MAX).unwrap();
        assert!(small > 1 << 8, "{small}");
        assert_eq!(
            measure(&laughs(40), MAX_SCHEMA_EXPANSION),
            Err(Unbounded::TooLarge {
                budget: MAX_SCHEMA_EXPANSION
            })
        );
    }

    #[test]
    fn recursion_that_descends_once_per_place_is_bounded() {
        for schema in [
            // A tree: each child named once.
            json!({"$defs": {"node": {"type": "object", "properties": {
                "left": {"$ref": "#/$defs/node"}, "right": {"$ref": "#/$defs/node"}}}},
                "properties": {"root": {"$ref": "#/$defs/node"}}}),
            // Any JSON value: lists and objects never both.
            json!({"$defs": {"v": {"anyOf": [{"type": "string"},
                {"type": "array", "items": {"$ref": "#/$defs/v"}},
                {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}}]}},
                "properties": {"v": {"$ref": "#/$defs/v"}}}),
            // The root itself, and an anchor.
            json!({"properties": {"next": {"$ref": "#"}}}),
            json!({"properties": {"a": {"$anchor": "a", "items": {"$ref": "#a"}}}}),
        ] {
            assert!(measure(&schema, MAX_SCHEMA_EXPANSION).is_ok(), "{schema}");
        }
    }

    #[test]
    fn recursion_that_multiplies_or_stays_in_place_is_refused() {
        let twice = json!({"$defs": {"a": {"allOf": [{"items": {"$ref": "#/$defs/a"}},
            {"items": {"$ref": "#/$defs/a"}}]}}, "properties": {"x": {"$ref": "#/$defs/a"}}});
        assert_eq!(
            measure(&twice, MAX_SCHEMA_EXPANSION),
            Err(Unbounded::Multiplies {
                at: "#/$defs/a".into()
            })
        );
        let through_another = json!({"$defs": {
            "a": {"allOf": [{"$ref": "#/$defs/b"}], "items": {"$ref": "#/$defs/a"}},
            "b": {"items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"});
        assert!(matches!(
            measure(&through_another, MAX_SCHEMA_EXPANSION),
            Err(Unbounded::Multiplies { .. })
        ));
        let in_place = json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]},
            "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"});
        assert!(matches!(
            measure(&in_place, MAX_SCHEMA_EXPANSION),
            Err(Unbounded::InPlace { .. })
        ));
    }

    #[test]
    fn a_reference_hidden_behind_an_id_or_escapes_is_still_followed() {
        // Inside a resource with its own `$id`, `#/…` names that resource's definitions.
        let mut inner = laughs(40);
        inner["$id"] = json!("urn:inner");
        let outer = json!({"type": "object", "properties": {"v": inner}});
        assert!(matches!(
            measure(&outer, MAX_SCHEMA_EXPANSION),
            Err(Unbounded::TooLarge { .. })
        ));
        // By the resource's identifier, and percent-escaped.
        let mut by_id = laughs(40);
        by_id["$id"] = json!("https://example.com/s.json");
        by_id["properties"]["y"] = json!({"$ref": "s.json#/%24defs/l40"});
        by_id["properties"].as_object_mut().unwrap().remove("x");
        assert!(matches!(
            measure(&by_id, MAX_SCHEMA_EXPANSION),
            Err(Unbounded::TooLarge { .. })
        ));
    }

    #[test]
    fn a_schema_under_a_pattern_or_name_that_spells_a_data_keyword_is_counted() {
        for keyword in ["patternProperties", "dependentSchemas", "properties"] {
            let mut schema = laughs(40);
            let x = schema["properties"]["x"].take();
            schema["properties"] = json!({});
            schema[keyword] = json!({ "enum": x });
            assert!(
                matches!(
                    measure(&schema, MAX_SCHEMA_EXPANSION),
                    Err(Unbounded::TooLarge { .. })
                ),
                "{keyword}"
            );
        }
    }

    #[test]
    fn a_deep_chain_of_references_is_measured_without_recursion() {
        let mut defs = Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..20_000 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i - 1)}),
            );
        }
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d19999"});
        assert!(measure(&schema, MAX_SCHEMA_EXPANSION).is_ok());
    }
}
