//! Narrowing an MCP tool: which listed tools a server block offers, which
//! arguments the model is shown, which ride fixed on every call, and when the
//! server's schema has drifted so far from the block that the tool must be
//! kept away.
//!
//! Why `params` is not enough on its own: fixing one argument leaves every
//! other argument the tool takes in the model's hands, and some of them can
//! widen what the fixed one bounds. Schemas are listed from a live server, so
//! an argument the server adds later would reach the model without anyone
//! declaring it. `only` names what the model may write; everything else is
//! taken out of the schema it is shown, so the listing growing fails safe.
//!
//! This module is pure: it reads no files, starts no servers and prints
//! nothing. It decides from a schema and a [`Narrowing`]; the planner turns
//! outcomes into findings and the call gateway enforces the fixed values and
//! allowed names on each call. Argument names are top-level keys of the
//! schema's `properties`, compared literally (no dotted paths).

use crate::schema::Schema;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Problem};

/// A server block's validated narrowing, as [`validate_narrowing`] returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Narrowing {
    /// Tool names the block offers; `None` offers every listed tool.
    pub allow: Option<Vec<String>>,
    /// Tool names never offered; wins over `allow`.
    pub deny: Vec<String>,
    /// Per tool, arguments with a fixed value that rides on every call.
    pub params: BTreeMap<String, BTreeMap<String, Value>>,
    /// Per tool, the only arguments the model may write.
    pub only: BTreeMap<String, Vec<String>>,
}

/// Why a tool is not a candidate at all: the block itself leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExcludeCode {
    /// `denied`: the block's `deny` names the tool.
    Denied,
    /// `not-allowed`: the block has an `allow` list and it does not name the tool.
    NotAllowed,
}

/// Why a tool the block means to offer is kept away: offering it would be
/// unsafe or useless given the schema the server lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepAwayCode {
    /// `fixed-undeclared`: `params` fixes an argument the schema does not
    /// declare. The server may ignore it, so the bound it was meant to set
    /// would silently not hold.
    FixedUndeclared,
    /// `required-unreachable`: the schema requires an argument that `only`
    /// does not list and `params` does not fix; every call would go out
    /// without it and be refused.
    RequiredUnreachable,
    /// `schema-not-object`: the tool's `inputSchema` is not a JSON object,
    /// so nothing can be shown or narrowed.
    SchemaNotObject,
}

/// What a [`DriftWarning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftCode {
    /// `only-undeclared`: `only` lists an argument the schema does not
    /// declare. The tool is still offered (the miss opens nothing up); the
    /// model just cannot write what the block meant it to.
    OnlyUndeclared,
    /// `required-unreachable`: see [`KeepAwayCode::RequiredUnreachable`];
    /// the warning names the tool and the argument.
    RequiredUnreachable,
}

macro_rules! kebab {
    ($ty:ty { $($variant:ident => $s:literal),* $(,)? }) => {
        impl $ty {
            /// The stable kebab-case code.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $s),* }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

kebab!(ExcludeCode { Denied => "denied", NotAllowed => "not-allowed" });
kebab!(KeepAwayCode {
    FixedUndeclared => "fixed-undeclared",
    RequiredUnreachable => "required-unreachable",
    SchemaNotObject => "schema-not-object",
});
kebab!(DriftCode {
    OnlyUndeclared => "only-undeclared",
    RequiredUnreachable => "required-unreachable",
});

/// The server's schema differs from what the block assumes.
///
/// Ordered and hashable so the planner can report each warning once per plan
/// however often the tool occurs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DriftWarning {
    /// What kind of drift.
    pub code: DriftCode,
    /// The tool, as the server lists it.
    pub tool: String,
    /// The argument involved.
    pub argument: String,
}

impl fmt::Display for DriftWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tool, arg) = (&self.tool, &self.argument);
        match self.code {
            DriftCode::OnlyUndeclared => write!(
                f,
                "{tool}: `only` lists `{arg}` but the server's schema does not declare it; \
                 the model cannot write it"
            ),
            DriftCode::RequiredUnreachable => write!(
                f,
                "{tool}: the server's schema requires `{arg}`, which `only` does not list and \
                 `params` does not fix; the tool is kept away"
            ),
        }
    }
}

/// What narrowing decided for one listed tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum NarrowOutcome {
    /// The tool is offered with a narrowed schema.
    Offered(Offered),
    /// The block means to offer the tool but the listed schema makes that
    /// unsafe or useless.
    KeptAway {
        /// Why.
        code: KeepAwayCode,
        /// The arguments involved (none for a schema that is not an object).
        arguments: Vec<String>,
        /// Drift found along the way.
        warnings: Vec<DriftWarning>,
    },
    /// The block leaves the tool out.
    Excluded {
        /// Why.
        code: ExcludeCode,
    },
}

/// An offered tool: what the model is shown and what a call check needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offered {
    /// The inputSchema the model is shown: fixed arguments, and with `only`
    /// every unlisted argument, removed from `properties` and `required`.
    /// The listed schema itself, shared, when nothing is removed.
    pub shown_schema: Schema,
    /// Values that ride on every call; a value the model writes for one of
    /// these is dropped.
    pub fixed: BTreeMap<String, Value>,
    /// With `only`, the argument names a call may carry (besides `fixed`).
    pub only: Option<Vec<String>>,
    /// Drift that does not keep the tool away.
    pub warnings: Vec<DriftWarning>,
}

/// Decides whether `tool_name`, listed with `input_schema`, is offered under
/// `n`, and what the model is shown.
///
/// # Example
/// ```
/// use muster::narrow::{narrow_tool, Narrowing, NarrowOutcome};
/// use serde_json::json;
///
/// let schema = json!({"type": "object",
///     "properties": {"query": {"type": "string"}, "scope": {"type": "string"},
///                    "limit": {"type": "integer"}},
///     "required": ["query", "scope"]});
/// let mut n = Narrowing { allow: Some(vec!["search".into()]), ..Default::default() };
/// n.params.entry("search".into()).or_default().insert("scope".into(), json!("handbook"));
/// n.only.insert("search".into(), vec!["query".into()]);
///
/// let schema = muster::schema::Schema::new(&schema);
/// let NarrowOutcome::Offered(o) = narrow_tool("search", &schema, &n) else { panic!() };
/// let shown = o.shown_schema.value();
/// assert_eq!(shown["properties"], json!({"query": {"type": "string"}}));
/// assert_eq!(shown["required"], json!(["query"]));
/// assert_eq!(o.fixed["scope"], json!("handbook"));
/// ```
pub fn narrow_tool(tool_name: &str, input_schema: &Schema, n: &Narrowing) -> NarrowOutcome {
    if n.deny.iter().any(|d| d == tool_name) {
        return NarrowOutcome::Excluded {
            code: ExcludeCode::Denied,
        };
    }
    if let Some(allow) = &n.allow
        && !allow.iter().any(|a| a == tool_name)
    {
        return NarrowOutcome::Excluded {
            code: ExcludeCode::NotAllowed,
        };
    }
    if !input_schema.is_object() {
        return NarrowOutcome::KeptAway {
            code: KeepAwayCode::SchemaNotObject,
            arguments: Vec::new(),
            warnings: Vec::new(),
        };
    }
    let empty = BTreeMap::new();
    let fixed = n.params.get(tool_name).unwrap_or(&empty);
    let only = n.only.get(tool_name);
    // Nothing narrows this tool and its `required` names no entry to drop:
    // what follows would find nothing to warn of or remove, so the schema
    // is offered as listed without parsing it (most tools of a large
    // listing).
    if fixed.is_empty() && only.is_none() && input_schema.required_text_only() {
        return NarrowOutcome::Offered(Offered {
            shown_schema: input_schema.clone(),
            fixed: BTreeMap::new(),
            only: None,
            warnings: Vec::new(),
        });
    }
    let tree = input_schema.value();
    let Some(schema) = tree.as_object() else {
        return NarrowOutcome::KeptAway {
            code: KeepAwayCode::SchemaNotObject,
            arguments: Vec::new(),
            warnings: Vec::new(),
        };
    };

    let declared: BTreeSet<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    let mut warnings = Vec::new();
    if let Some(only) = only {
        for arg in only {
            if !declared.contains(arg.as_str()) {
                warnings.push(DriftWarning {
                    code: DriftCode::OnlyUndeclared,
                    tool: tool_name.to_string(),
                    argument: arg.clone(),
                });
            }
        }
    }

    // Without `only` the model may write every declared argument, so a
    // required one is always reachable; one with a `default` the server
    // fills when the call leaves it out.
    let unreachable: Vec<&str> = match only {
        Some(only) => required
            .iter()
            .copied()
            .filter(|r| {
                !only.iter().any(|o| o == r)
                    && !fixed.contains_key(*r)
                    && !crate::schema::filled_by_default(schema, r)
            })
            .collect(),
        None => Vec::new(),
    };
    for arg in &unreachable {
        warnings.push(DriftWarning {
            code: DriftCode::RequiredUnreachable,
            tool: tool_name.to_string(),
            argument: (*arg).to_string(),
        });
    }

    let undeclared_fixed: Vec<&str> = fixed
        .keys()
        .map(String::as_str)
        .filter(|k| !declared.contains(k))
        .collect();
    if !undeclared_fixed.is_empty() {
        return NarrowOutcome::KeptAway {
            code: KeepAwayCode::FixedUndeclared,
            arguments: undeclared_fixed.iter().map(|a| a.to_string()).collect(),
            warnings,
        };
    }
    if !unreachable.is_empty() {
        return NarrowOutcome::KeptAway {
            code: KeepAwayCode::RequiredUnreachable,
            arguments: unreachable.iter().map(|a| a.to_string()).collect(),
            warnings,
        };
    }

    let keep = |name: &str| -> bool {
        !fixed.contains_key(name) && only.is_none_or(|o| o.iter().any(|a| a == name))
    };
    // A schema narrowing removes nothing from is shared, not copied: a
    // large listing holds each schema once.
    let props_cut = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| props.keys().any(|k| !keep(k)));
    let required_cut = match schema.get("required") {
        Some(Value::Array(req)) => req.iter().any(|r| !r.as_str().is_some_and(keep)),
        _ => false,
    };
    let shown_schema = if props_cut || required_cut {
        let mut shown = schema.clone();
        if let Some(Value::Object(props)) = shown.get_mut("properties") {
            props.retain(|k, _| keep(k));
        }
        if let Some(Value::Array(req)) = shown.get_mut("required") {
            let before = req.len();
            // A non-string entry names no argument the model could write; drop it.
            req.retain(|r| r.as_str().is_some_and(keep));
            if req.is_empty() && before > 0 {
                shown.shift_remove("required");
            }
        }
        Schema::new(&Value::Object(shown))
    } else {
        input_schema.clone()
    };

    NarrowOutcome::Offered(Offered {
        shown_schema,
        fixed: fixed.clone(),
        only: only.cloned(),
        warnings,
    })
}

/// A name as the policy file writes it, with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name, as written.
    pub name: String,
    /// The line, when the loader kept a span.
    pub line: Option<usize>,
}

impl Entry {
    /// An entry without a line.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            line: None,
        }
    }

    /// An entry on `line`.
    pub fn at(name: impl Into<String>, line: usize) -> Self {
        Self {
            name: name.into(),
            line: Some(line),
        }
    }
}

/// One `[mcp.only]` entry: `tool = ["arg", ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlyEntry {
    /// The tool key, with the line of `tool = [...]`.
    pub tool: Entry,
    /// The listed arguments, each with its own line when the list spans several.
    pub args: Vec<Entry>,
}

/// One `[mcp.params.<tool>]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsEntry {
    /// The tool key, with the line of its table header.
    pub tool: Entry,
    /// Each fixed argument with its line and value.
    pub args: Vec<(Entry, Value)>,
}

/// A server block's narrowing keys as the policy loader parsed them, before
/// validation: every name keeps the line it was written on so a problem can
/// point at it.
///
/// The loader fills this from its span-keeping raw structs (lines are
/// 1-based; use [`crate::error::line_of`] on a span's start). Entries are
/// in file order; `validate_narrowing` keeps that order in the
/// [`Narrowing`] it returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NarrowingInput {
    /// The block's `name`, used in messages.
    pub server: String,
    /// The policy file, attached to every problem.
    pub file: Option<PathBuf>,
    /// The line of the block's `[[mcp]]` header, for problems about the
    /// block as a whole.
    pub line: Option<usize>,
    /// `allow`, when present.
    pub allow: Option<Vec<Entry>>,
    /// `deny`.
    pub deny: Vec<Entry>,
    /// `[mcp.params.*]`.
    pub params: Vec<ParamsEntry>,
    /// `[mcp.only]`.
    pub only: Vec<OnlyEntry>,
}

/// Checks a block's narrowing keys and returns the [`Narrowing`] the planner
/// uses, or every problem at once.
///
/// # Errors
/// An [`ErrorKind::Policy`] error listing every problem, each with the file
/// and line of the entry involved, when:
/// - `only` or `params` is given without `allow` (there is nothing to hold
///   their tool names against, and every listed tool would be a candidate);
/// - an `only` or `params` tool name is not in `allow`;
/// - an argument is both listed in `only` and fixed by `params`;
/// - an `only` list is empty;
/// - a name is repeated (in `allow`, `deny`, an `only` list, a `params`
///   table, or as a tool key);
/// - a name is empty.
pub fn validate_narrowing(input: &NarrowingInput) -> Result<Narrowing, Error> {
    let mut problems = Vec::new();
    let server = &input.server;
    let at = |code: &'static str, line: Option<usize>, msg: String, help: &str| {
        let mut p = Problem::coded(code, msg)
            .at_line(line.or(input.line))
            .help(help.to_string());
        if let Some(file) = &input.file {
            p = p.in_file(file);
        }
        p
    };

    let names_ok = |what: &str, entries: &[Entry], problems: &mut Vec<Problem>| {
        let mut seen = BTreeSet::new();
        for e in entries {
            if e.name.is_empty() {
                problems.push(at(
                    crate::error::code::MISSING_VALUE,
                    e.line,
                    format!("mcp server `{server}`: empty name in {what}"),
                    "write the name, or remove the entry",
                ));
            } else if !seen.insert(e.name.as_str()) {
                problems.push(at(
                    crate::error::code::DUPLICATE,
                    e.line,
                    format!("mcp server `{server}`: `{}` is repeated in {what}", e.name),
                    "list each name once",
                ));
            }
        }
    };

    if let Some(allow) = &input.allow {
        names_ok("`allow`", allow, &mut problems);
    }
    names_ok("`deny`", &input.deny, &mut problems);
    let only_tools: Vec<Entry> = input.only.iter().map(|o| o.tool.clone()).collect();
    names_ok("`only` tool names", &only_tools, &mut problems);
    let params_tools: Vec<Entry> = input.params.iter().map(|p| p.tool.clone()).collect();
    names_ok("`params` tool names", &params_tools, &mut problems);

    let allowed = |tool: &str| {
        input
            .allow
            .as_ref()
            .is_some_and(|a| a.iter().any(|e| e.name == tool))
    };
    for (key, tools) in [("only", &only_tools), ("params", &params_tools)] {
        if tools.is_empty() {
            continue;
        }
        if input.allow.is_none() {
            problems.push(at(
                crate::error::code::MISSING_VALUE, tools[0].line,
                format!("mcp server `{server}`: `{key}` is given without `allow`"),
                &format!(
                    "add `allow = [...]` naming the tools this block offers, including those in `{key}`"
                ),
            ));
            continue;
        }
        for t in tools.iter().filter(|t| !t.name.is_empty()) {
            if !allowed(&t.name) {
                problems.push(at(
                    crate::error::code::UNKNOWN_NAME, t.line,
                    format!(
                        "mcp server `{server}`: `{key}` names tool `{}`, which `allow` does not list",
                        t.name
                    ),
                    &format!("add `{}` to `allow`, or remove it from `{key}`", t.name),
                ));
            }
        }
    }

    for o in &input.only {
        if o.args.is_empty() {
            problems.push(at(
                crate::error::code::MISSING_VALUE,
                o.tool.line,
                format!(
                    "mcp server `{server}`: `only` for `{}` is an empty list",
                    o.tool.name
                ),
                "list the arguments the model may write; to offer no tool, use `deny`",
            ));
        }
        names_ok(
            &format!("`only` for `{}`", o.tool.name),
            &o.args,
            &mut problems,
        );
    }
    for p in &input.params {
        let args: Vec<Entry> = p.args.iter().map(|(e, _)| e.clone()).collect();
        names_ok(
            &format!("`params` for `{}`", p.tool.name),
            &args,
            &mut problems,
        );
        let Some(o) = input.only.iter().find(|o| o.tool.name == p.tool.name) else {
            continue;
        };
        for (fixed, _) in &p.args {
            if let Some(listed) = o.args.iter().find(|a| a.name == fixed.name) {
                problems.push(at(
                    crate::error::code::CONFLICT, listed.line.or(fixed.line),
                    format!(
                        "mcp server `{server}`: `{}` of tool `{}` is both listed in `only` and fixed by `params`",
                        fixed.name, p.tool.name
                    ),
                    "a fixed argument is not the model's to write: remove it from `only`",
                ));
            }
        }
    }

    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Policy, problems));
    }
    let names = |v: &[Entry]| v.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    Ok(Narrowing {
        allow: input.allow.as_deref().map(names),
        deny: names(&input.deny),
        params: input
            .params
            .iter()
            .map(|p| {
                let args = p
                    .args
                    .iter()
                    .map(|(e, v)| (e.name.clone(), v.clone()))
                    .collect();
                (p.tool.name.clone(), args)
            })
            .collect(),
        only: input
            .only
            .iter()
            .map(|o| (o.tool.name.clone(), names(&o.args)))
            .collect(),
    })
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
