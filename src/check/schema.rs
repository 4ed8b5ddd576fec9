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
//!
//! The type model is in `ty`, the compiled schema in `compiled`, casts and enum matching in
//! `cast`, argument paths in `path`, the edits a check makes in `edit` and shared wording in
//! `wording`; this module holds the walk that applies them.

use serde_json::{Map, Value};

use super::cast::{cast_to, enum_member, integer_out_of_range};
use super::compiled::{Additional, CNode, Compiled, Items};
use super::edit::Edit;
use super::path::{Paths, ROOT, Seg};
use super::ty::{Declared, Ty};
use super::wording::not_in_enum;
use crate::contract::{CallNote, CallProblem, CheckNote, CheckProblem, Got, UnknownArguments};

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
    pub notes: Vec<CheckNote>,
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
        if node.never {
            self.problem(path, last, |tool, argument| never(tool, argument, value));
            return false;
        }
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
        if let (Some(format), Value::String(text)) =
            (node.format, cast_value.as_ref().unwrap_or(value))
            && !format.conforms(text)
        {
            self.problem(path, last, |tool, argument| CallProblem::WrongFormat {
                tool,
                argument,
                format: node.format_name.clone(),
                got: Got::of(value),
            });
            return false;
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
                                    _ if schema.never => never(tool, argument, value),
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
                            self.drop_member(path, name, |call, argument| {
                                CallNote::NullOptionalDropped { call, argument }
                            });
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
                    Additional::Open
                        if top && node.has_properties && !node.requires_undescribed(name) =>
                    {
                        match self.cx.unknown {
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
                                self.drop_member(path, name, |call, argument| {
                                    CallNote::UndeclaredArgumentDropped { call, argument }
                                });
                            }
                            UnknownArguments::Pass => {}
                        }
                    }
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

    /// Drops the member `name` at `path`; `note` gets the call's id and the rendered path.
    fn drop_member(
        &mut self,
        path: usize,
        name: &'a str,
        note: impl FnOnce(String, String) -> CallNote,
    ) {
        let steps = self.paths.steps(path, Some(Seg::Key(name)));
        self.found.notes.push(
            note(
                self.cx.call_id.to_string(),
                self.paths.render(path, Some(Seg::Key(name))),
            )
            .into(),
        );
        self.edits.push(Edit::Remove(steps));
    }
}

/// The problem for a value where the schema `false` accepts none, worded as strict checking
/// words the validator's finding.
fn never(tool: String, argument: String, value: &Value) -> CallProblem {
    CallProblem::SchemaMismatch {
        tool,
        argument: Some(argument),
        keyword: "false".to_string(),
        limit: None,
        got: Got::of(value),
        detail: None,
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
