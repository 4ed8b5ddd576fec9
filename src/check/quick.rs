//! The quick pass: whether a call goes through exactly as sent, answered yes or no with the
//! rules the full steps use, so most calls skip building paths, sentences and edits.

use serde_json::{Map, Value};

use super::cast::enum_member;
use super::compiled::{Additional, CNode, Compiled, Items, wrappable};
use super::offered::OfferedTool;
use super::ty::Declared;
use crate::contract::UnknownArguments;

/// How many levels the quick pass looks into before it leaves a call to the full walk. The quick
/// pass recurses; the full walk keeps its own stack and has no such limit.
const QUICK_DEPTH: usize = 64;

impl Compiled {
    /// Whether a call of `tool` with the argument object `arguments` goes through exactly as
    /// sent: no member the repair would try to unwrap, no name the narrowing drops, and nothing
    /// the check refuses, casts or drops. It applies the same rules as `repair::repair`,
    /// `narrow::outside` and `schema::check`, but only answers yes or no, so it builds no
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

    /// The quick pass over one value and the node judging it (see `Walk::judge`): the same
    /// rules (`Ty::holds`, [`enum_member`], [`CNode::excludes_null`]), answering only whether
    /// the value goes through unchanged.
    #[inline]
    fn quick(&self, at: usize, value: &Value, coerce: bool, depth: usize) -> bool {
        let node = &self.nodes[at];
        if node.never {
            return false;
        }
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
        if let (Some(format), Value::String(text)) = (node.format, value)
            && !format.conforms(text)
        {
            return false;
        }
        !matches!(value, Value::Array(_) | Value::Object(_))
            || self.quick_inside(node, value, coerce, depth)
    }

    /// The quick pass into a list or object (see `Walk::descend`).
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

    /// The quick pass over the members of an object (see `Walk::object`); `top` is the tool
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
                            && !node.requires_undescribed(name)
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
