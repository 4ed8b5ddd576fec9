//! The catalog: every candidate tool for one selection (agent, flags), in
//! priority order, with its definition as the model would be shown it and
//! its token cost.
//!
//! The catalog settles everything that does not depend on the caps: which
//! candidates exist under the selected flags, which the agent enables,
//! which are duplicates or unusable, what MCP narrowing shows, and the
//! order. Those that cannot be offered whatever the caps carry an
//! [`Exclusion`] and are cut by the plan with its code. The catalog never
//! applies a cap.
//!
//! # Priority order
//! Candidates are ranked by, in turn:
//! 1. required first: members of a group marked `required = true`;
//! 2. `priority`, higher first (default 0; a tool's own field, or a server
//!    block's `priority` / `tool_priority`);
//! 3. configured tools before discovered ones;
//! 4. configured tools in declared order (tool files by file name, then
//!    order in the file); discovered tools by full name.
//!
//! With deferral on, the control tool is ranked before all of them.

mod build;
mod discovered;
mod lint;

use crate::canon;
use crate::contract::{CheckMode, Reason, Warning};
use crate::error::Error;
use crate::policy::{Caps, Inputs, UnknownArguments};
use crate::schema::Schema;
use crate::tokens::{Definition, Encoding, Provider, TokenCache};
use build::Builder;
use serde_json::Value;
use std::collections::BTreeMap;

/// Extra flags one selection may turn on beyond its profile. Each that no
/// tool or server names is answered with an `unused-flag` warning, so
/// without a bound a request's answer grew with the flags it listed (a
/// hostile probe: 13 times the request's size); a profile turns on more.
pub const MAX_EXTRA_FLAGS: usize = 64;

/// Which agent and which flags to plan for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Agent name; `None` is the policy's default agent.
    pub agent: Option<String>,
    /// Flag profile name (`flags/<profile>.toml`).
    pub profile: Option<String>,
    /// Extra flags turned on.
    pub flags: Vec<String>,
    /// Agent version; `None` is the agent's current version.
    pub version: Option<u64>,
    /// Whose billing the token counts follow; `None` is the policy's
    /// `[tokens] provider`.
    pub provider: Option<Provider>,
    /// Plan MCP tools only (the gateway's plan): every configured tool is
    /// cut as `left-to-host`, so the caps are spent on what the gateway
    /// offers.
    pub mcp_only: bool,
}

/// Where a candidate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A configured (built-in) tool.
    Configured,
    /// A tool discovered from an MCP server.
    Mcp {
        /// Server name.
        server: String,
        /// Tool name on the server.
        tool: String,
    },
    /// The control tool that loads deferred tools.
    Control,
}

impl Source {
    /// `configured`, `mcp` or `control`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Source::Configured => "configured",
            Source::Mcp { .. } => "mcp",
            Source::Control => "control",
        }
    }
}

/// One positional parameter of a configured tool.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Parameter {
    /// Argument name.
    pub name: String,
    /// Whether its schema requires it.
    pub required: bool,
}

/// What the call check needs to know about a tool's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    /// Arguments with a fixed value, set on every call (MCP `params`).
    pub fixed: BTreeMap<String, Value>,
    /// Arguments the model may write (MCP `only`); `None` = no restriction.
    pub only: Option<Vec<String>>,
    /// What happens to argument names the schema does not declare.
    pub unknown_arguments: UnknownArguments,
    /// Whether values are cast to the declared type before forwarding.
    pub coerce: bool,
    /// How calls are checked: the lenient rules alone, or also the whole schema.
    pub check: CheckMode,
    /// Ordered parameters for positional hosts.
    pub parameters: Option<Vec<Parameter>>,
    /// Whether the last parameter is variadic.
    pub variadic: bool,
}

/// Why a candidate cannot be offered whatever the caps: one of the
/// [`Reason`]s for a cut.
pub type Exclusion = Reason;

/// A candidate tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Full name as offered.
    pub name: String,
    /// The name providers are sent ([`crate::provider::spell`]).
    pub provider_name: String,
    /// Where it comes from.
    pub source: Source,
    /// Description as offered.
    pub description: String,
    /// Input schema as offered (after MCP narrowing), shared with the
    /// policy's definition when nothing changed it.
    pub input_schema: Schema,
    /// The group it belongs to, if any (the first that names it).
    pub group: Option<String>,
    /// Whether a required group names it.
    pub required: bool,
    /// Priority (higher first).
    pub priority: i64,
    /// Whether it may be deferred when it does not fit.
    pub deferrable: bool,
    /// What the call check needs.
    pub call: CallSpec,
    /// Set when it cannot be offered whatever the caps (boxed: few
    /// candidates have one, and a reason is a quarter of a candidate).
    pub exclusion: Option<Box<Exclusion>>,
    /// The kind it is summarized and, when deferred together, loaded
    /// under (index into [`Catalog::kinds`]); `None` for the control tool.
    pub kind: Option<usize>,
    /// Tokens its definition costs (0 for excluded candidates).
    pub tokens: u32,
    /// Hash of the offered definition, for the roster fingerprint.
    pub definition_hash: [u8; 32],
    /// What an MCP server listed beside the definition for a host to act
    /// on (title, annotations, output schema, `_meta`); `None` when it
    /// listed none of them (boxed: most tools list none).
    pub hints: Option<Box<ToolHints>>,
    /// Declared index among configured tools (0 for others): the last
    /// tie-breaker before the name.
    index: usize,
    /// Why the strict check cannot compile its schema (`None`: it can),
    /// found the first time a plan offers or defers it and then kept:
    /// compiling costs more than a warm plan, and most candidates of a
    /// large catalog are never shown.
    strict_problem: StrictProblem,
}

/// The members of a listed tool beside its name, description and input
/// schema that a host acts on, as the server listed them: the plan's roster
/// entries carry them ([`crate::lock::change::HASHED_MEMBERS`] are the same
/// four, hashed by the lock).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolHints {
    /// `title`.
    pub title: Option<Value>,
    /// `annotations` (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`, `title`, ...).
    pub annotations: Option<Value>,
    /// `outputSchema`.
    pub output_schema: Option<Value>,
    /// `_meta`.
    pub meta: Option<Value>,
    /// `execution` (`taskSupport`, …): passed on to a client as listed;
    /// neither hashed nor planned, as the lock does not hash it.
    pub execution: Option<Value>,
}

impl ToolHints {
    /// What `tool` lists of them, or `None` when it lists none.
    pub fn of(tool: &crate::snapshot::ListedTool) -> Option<Box<ToolHints>> {
        let obj = tool.raw.as_object()?;
        let hints = ToolHints {
            title: obj.get("title").cloned(),
            annotations: obj.get("annotations").cloned(),
            output_schema: obj.get("outputSchema").cloned(),
            meta: obj.get("_meta").cloned(),
            execution: obj.get("execution").cloned(),
        };
        (hints != ToolHints::default()).then(|| Box::new(hints))
    }

    /// Whether a tool with `hints` has `hint` for a host: each annotation
    /// read as declared, else at MCP's default; a read-only tool is never
    /// destructive.
    pub fn has(hints: Option<&ToolHints>, hint: crate::contract::Hint) -> bool {
        use crate::contract::Hint;
        let read_only = Self::hint(hints, "readOnlyHint");
        match hint {
            Hint::ReadOnly => read_only,
            Hint::Destructive => !read_only && Self::hint(hints, "destructiveHint"),
            Hint::Idempotent => Self::hint(hints, "idempotentHint"),
            Hint::OpenWorld => Self::hint(hints, "openWorldHint"),
        }
    }

    /// The value a safety hint (`readOnlyHint`, ...) has for a host: as
    /// declared, else MCP's default ([`crate::lock::change::HINTS`]).
    pub fn hint(hints: Option<&ToolHints>, name: &str) -> bool {
        let declared = hints
            .and_then(|h| h.annotations.as_ref())
            .and_then(|a| a.get(name))
            .and_then(Value::as_bool);
        let default = crate::lock::change::HINTS
            .iter()
            .find(|(hint, _, _)| *hint == name)
            .is_some_and(|(_, default, _)| *default);
        declared.unwrap_or(default)
    }
}

/// [`Candidate::strict_problem`]'s memo: derived from the schema alone, so
/// it never makes two candidates differ, computed or not.
#[derive(Debug, Clone, Default)]
pub(crate) struct StrictProblem(std::sync::OnceLock<Option<String>>);

impl PartialEq for StrictProblem {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Candidate {
    /// Why the strict check could not compile this candidate's schema, if
    /// it is checked strictly and the schema does not compile.
    pub fn strict_problem(&self) -> Option<&str> {
        if self.call.check != CheckMode::Strict {
            return None;
        }
        self.strict_problem
            .0
            .get_or_init(|| {
                crate::check::compile_strict(&self.input_schema.value())
                    .err()
                    .map(|why| why.to_string())
            })
            .as_deref()
    }

    /// The tier a candidate ranks in (required, priority, source class), as
    /// words: used by headroom to say where an addition would land.
    pub fn tier(&self) -> Tier {
        Tier {
            required: self.required,
            priority: self.priority,
            discovered: matches!(self.source, Source::Mcp { .. }),
        }
    }
}

/// What a deferred tool is summarized under in the control tool's
/// description: its MCP server, its group, or its name's first part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// `mcp.<server>`, a group's name, or a configured tool name's part
    /// before the first dot.
    pub name: String,
    /// The server's or group's one-line description, if it has one.
    pub description: Option<String>,
    /// Whether its deferred members load together as one entry.
    pub together: bool,
}

/// A priority tier: candidates that rank together except for their order
/// within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tier {
    /// Required group members.
    pub required: bool,
    /// Priority value.
    pub priority: i64,
    /// Discovered (MCP) rather than configured.
    pub discovered: bool,
}

impl Tier {
    /// Sort key: lower ranks earlier.
    pub fn key(self) -> (bool, std::cmp::Reverse<i64>, bool) {
        (
            !self.required,
            std::cmp::Reverse(self.priority),
            self.discovered,
        )
    }

    /// Words for the tier, e.g. `required configured, priority 0`.
    pub fn label(self) -> String {
        format!(
            "{}{}, priority {}",
            if self.required { "required " } else { "" },
            if self.discovered {
                "discovered"
            } else {
                "configured"
            },
            self.priority
        )
    }
}

/// Every candidate for one selection, ranked and counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    /// The agent planned for.
    pub agent: String,
    /// Its version.
    pub agent_version: u64,
    /// The flag profile, if one was selected.
    pub profile: Option<String>,
    /// Flags on, sorted.
    pub flags: Vec<String>,
    /// The policy's caps (the plan may override them).
    pub caps: Caps,
    /// Tokenizer.
    pub encoding: Encoding,
    /// Whose billing the counts follow (`[tokens] provider`).
    pub provider: Provider,
    /// Tokens of the tool section's wrapper, paid once.
    pub wrapper_tokens: u32,
    /// Whether deferral is on.
    pub deferral: bool,
    /// The policy's deferral settings (summary budget, load bounds).
    pub deferral_policy: crate::policy::Deferral,
    /// Kinds of candidates, in the order first met.
    pub kinds: Vec<Kind>,
    /// The control tool's name when deferral is on.
    pub control_tool: Option<String>,
    /// How names are spelt for providers.
    pub names: crate::provider::NamePolicy,
    /// Candidates: the control tool first when deferral is on, then
    /// configured tools in declared order, then discovered tools.
    pub candidates: Vec<Candidate>,
    /// Indices of candidates without an exclusion, in rank order.
    pub ranked: Vec<usize>,
    /// Warnings found while building.
    pub warnings: Vec<Warning>,
}

impl Catalog {
    /// Builds the catalog for `selection` from `inputs` (the policy, what its
    /// servers list and the lock) and counts every definition.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`] when the selection names an agent or flag
    /// profile the policy does not have.
    pub fn build(inputs: &Inputs, selection: &Selection) -> Result<Catalog, Error> {
        Self::build_cached(inputs, selection, &mut TokenCache::in_memory())
    }

    /// [`Catalog::build`], taking the counts `cache` holds and adding those
    /// it lacked. The catalog is the same as without the cache.
    ///
    /// # Errors
    /// As [`Catalog::build`].
    pub fn build_cached(
        inputs: &Inputs,
        selection: &Selection,
        cache: &mut TokenCache,
    ) -> Result<Catalog, Error> {
        let mut catalog = Builder::new(inputs, selection)?.build();
        catalog.count_tokens(cache);
        Ok(catalog)
    }

    /// (Re)counts the tokens of every candidate that can be offered (0 for
    /// excluded ones), through `cache`: see
    /// [`Encoding::count_definitions`].
    pub fn count_tokens(&mut self, cache: &mut TokenCache) {
        let definitions: Vec<Definition<'_>> = self
            .candidates
            .iter()
            .filter(|c| c.exclusion.is_none())
            .map(|c| Definition {
                name: &c.provider_name,
                description: &c.description,
                input_schema: &c.input_schema,
            })
            .collect();
        let mut counts = self
            .encoding
            .count_definitions_for(self.provider, &definitions, cache)
            .into_iter();
        for c in &mut self.candidates {
            c.tokens = match c.exclusion {
                Some(_) => 0,
                None => counts.next().unwrap_or(0),
            };
        }
    }

    /// The candidate called `name` (the first, if there are duplicates).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.candidates.iter().position(|c| c.name == name)
    }

    /// The candidate `name` means, written as muster spells it or as
    /// providers are sent it: a muster name wins, so a real name that looks
    /// like another's provider spelling is never misread.
    pub fn find_spelling(&self, name: &str) -> Option<usize> {
        self.find(name).or_else(|| {
            self.candidates
                .iter()
                .position(|c| c.provider_name == name && c.exclusion.is_none())
        })
    }
}

/// Hash of one definition as offered: what the model is shown and the
/// fixed values and `only` list that shape its calls.
#[allow(clippy::too_many_arguments)]
pub(crate) fn definition_hash(
    name: &str,
    provider_name: &str,
    description: &str,
    input_schema: &Schema,
    fixed: &BTreeMap<String, Value>,
    only: Option<&[String]>,
    hints: Option<&ToolHints>,
) -> [u8; 32] {
    // The canonical text of {"description", "fixed", "input_schema", "name",
    // "only", "provider_name"} and, when listed, "_meta", "annotations",
    // "output_schema" and "title" (keys in sorted order), hashed as it is
    // written instead of copying the schema into a new object first. A tool
    // without them hashes as it did before they were hashed.
    use canon::{Sink as _, write_str, write_value};
    let hint = |pick: fn(&ToolHints) -> Option<&Value>| hints.and_then(pick);
    let mut out = canon::HashSink::new();
    out.put("{");
    if let Some(meta) = hint(|h| h.meta.as_ref()) {
        out.put("\"_meta\":");
        write_value(meta, &mut out);
        out.put(",");
    }
    if let Some(annotations) = hint(|h| h.annotations.as_ref()) {
        out.put("\"annotations\":");
        write_value(annotations, &mut out);
        out.put(",");
    }
    out.put("\"description\":");
    write_str(description, &mut out);
    out.put(",\"fixed\":{");
    for (i, (key, value)) in fixed.iter().enumerate() {
        if i > 0 {
            out.put(",");
        }
        write_str(key, &mut out);
        out.put(":");
        write_value(value, &mut out);
    }
    out.put("},\"input_schema\":");
    out.put(input_schema.canonical());
    out.put(",\"name\":");
    write_str(name, &mut out);
    out.put(",\"only\":");
    match only {
        None => out.put("null"),
        Some(names) => {
            out.put("[");
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_str(n, &mut out);
            }
            out.put("]");
        }
    }
    if let Some(output) = hint(|h| h.output_schema.as_ref()) {
        out.put(",\"output_schema\":");
        write_value(output, &mut out);
    }
    out.put(",\"provider_name\":");
    write_str(provider_name, &mut out);
    if let Some(title) = hint(|h| h.title.as_ref()) {
        out.put(",\"title\":");
        write_value(title, &mut out);
    }
    out.put("}");
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definition_hash_is_the_digest_of_the_definition_object() {
        let schema =
            json!({"type": "object", "properties": {"b\"": {"enum": [1.5, "x\n"]}, "a": {}}});
        let fixed: BTreeMap<String, Value> = [
            ("z".to_string(), json!([1, {"k": null}])),
            ("a\u{1}".to_string(), json!("v")),
        ]
        .into();
        let only = ["b\"".to_string(), "é".to_string()];
        for (fixed, only) in [(&fixed, Some(&only[..])), (&BTreeMap::new(), None)] {
            let expected = canon::digest(&json!({
                "name": "mcp.x.tool",
                "provider_name": "mcp__x__tool",
                "description": "Does \"things\"\t.",
                "input_schema": schema,
                "fixed": fixed,
                "only": only,
            }));
            let got = definition_hash(
                "mcp.x.tool",
                "mcp__x__tool",
                "Does \"things\"\t.",
                &Schema::new(&schema),
                fixed,
                only,
                None,
            );
            assert_eq!(got, expected);
        }
    }
}
