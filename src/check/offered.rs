//! Reads the plan a model was offered (the JSON of `muster plan --format json`) into the few
//! facts the gateway needs: each offered tool's schema and narrowing, the deferred tools and the
//! control tool. It reads with its own types and ignores every other field, so the planner may
//! grow its output without breaking the gateway; it must not judge the plan's decisions.

use crate::error::code;
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::compiled::Compiled;
use super::deep;
use super::strict::Strict;
use crate::contract::{CheckMode, UnknownArguments};
use crate::error::{Error, ErrorKind, Problem};
use rustc_hash::FxHashMap;

/// Where an offered tool comes from; only MCP tools are narrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A tool declared in the policy file.
    Configured,
    /// A tool listed by an MCP server.
    Mcp,
    /// The control tool that loads deferred tools.
    Control,
}

/// Where a discovered tool lives: the server block's name and the name the
/// server lists it under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct McpTool {
    /// The `[[mcp]]` block's name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
}

/// One entry of a configured tool's ordered parameter list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Parameter {
    /// The argument name, as declared in the tool's schema.
    pub name: String,
    /// Whether a call must give it.
    #[serde(default)]
    pub required: bool,
}

/// A tool as the model was offered it.
#[derive(Debug, PartialEq)]
pub struct OfferedTool {
    /// Full name as offered to the model.
    pub name: String,
    /// The name providers are sent, when it differs from `name`: a call may
    /// use either.
    pub provider_name: Option<String>,
    /// Where the tool comes from.
    pub source: Source,
    /// The MCP server and the tool's own name there, for a discovered tool.
    pub mcp: Option<McpTool>,
    /// The JSON Schema the model saw (already narrowed by the planner).
    pub input_schema: Value,
    /// Values set on every call (MCP tools); the model cannot change them.
    pub fixed: Map<String, Value>,
    /// The argument names the model may write (MCP tools); `None` means no restriction.
    pub only: Option<Vec<String>>,
    /// Policy for argument names the schema does not declare.
    pub unknown_arguments: UnknownArguments,
    /// Whether forwarded values are cast to the declared type.
    pub coerce: bool,
    /// Whether the forwarded arguments are also validated against the whole schema.
    pub check: CheckMode,
    /// Ordered positional parameters (configured tools), when declared.
    pub parameters: Option<Vec<Parameter>>,
    /// Whether the last parameter takes every remaining positional value.
    pub variadic: bool,
}

impl Drop for OfferedTool {
    fn drop(&mut self) {
        // A schema built in code may nest far deeper than the default drop can recurse.
        deep::drop_value(std::mem::take(&mut self.input_schema));
    }
}

/// A tool the planner deferred: not offered, loadable through the control tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredTool {
    /// Full name the tool would have when loaded.
    pub name: String,
    /// The name providers are sent, when it differs from `name`.
    pub provider_name: Option<String>,
    /// The finding code that deferred it (`item-cap`, `token-cap`, …).
    pub code: Option<String>,
}

/// The plan a turn is checked against.
#[derive(Debug, PartialEq)]
pub struct OfferedPlan {
    roster: Vec<OfferedTool>,
    compiled: Vec<Compiled>,
    /// Each tool's schema compiled for strict checking, once per plan.
    strict: Vec<Strict>,
    /// Name → roster index: the look-up of a call's tool.
    by_name: FxHashMap<String, usize>,
    deferred: Vec<DeferredTool>,
    control_tool: Option<String>,
}

impl OfferedPlan {
    /// A plan from tools built in code. A later tool of the same name replaces an earlier one in
    /// look-ups; [`OfferedPlan::from_json`] refuses such plans instead.
    pub fn new(
        roster: Vec<OfferedTool>,
        deferred: Vec<DeferredTool>,
        control_tool: Option<String>,
    ) -> Self {
        // A later entry of the same name replaces an earlier one, and a
        // muster name wins over a provider spelling.
        let spellings = roster
            .iter()
            .enumerate()
            .filter_map(|(i, tool)| tool.provider_name.as_ref().map(|p| (p.clone(), i)));
        let names = roster
            .iter()
            .enumerate()
            .map(|(i, tool)| (tool.name.clone(), i));
        let by_name = spellings.chain(names).collect();
        let compiled = roster
            .iter()
            .map(|t| Compiled::new(&t.input_schema))
            .collect();
        let strict = roster
            .iter()
            .map(|t| Strict::new(&t.input_schema, t.check == CheckMode::Strict))
            .collect();
        Self {
            roster,
            compiled,
            strict,
            by_name,
            deferred,
            control_tool,
        }
    }

    /// Reads the output of `muster plan --format json`, using only `roster`, `deferred` and
    /// `control_tool` and ignoring every other field.
    ///
    /// # Errors
    /// An [`ErrorKind::Input`] error naming `file` and the line when the text is not JSON, lacks
    /// `roster`, or a roster entry lacks `name` or `input_schema` or has a field of the wrong
    /// kind; also when two roster entries share a name, when `format_version` is missing or not
    /// 1, or when an `input_schema` is not a JSON Schema object describing an object (a call to
    /// such a tool could not be judged).
    pub fn from_json(text: &str, file: &Path) -> Result<Self, Error> {
        const HELP: &str = "give the JSON that `muster plan --format json` prints: an object with \
                            \"roster\": [{\"name\", \"input_schema\", ...}]";
        let text = super::turn::without_bom(text);
        super::turn::not_a_list(text, file, "plan", HELP)?;
        let raw: RawPlan = serde_json::from_str(text)
            .map_err(|err| super::turn::json_error(file, "plan", &err, HELP))?;
        let mut problems = Vec::new();
        let mut seen = BTreeMap::new();
        for tool in &raw.roster {
            if seen.insert(tool.name.as_str(), ()).is_some() {
                problems.push(
                    Problem::coded(
                        code::DUPLICATE,
                        format!("the roster offers tool \"{}\" twice", tool.name),
                    )
                    .in_file(file)
                    .help("a plan names each offered tool once; make the plan again"),
                );
            }
        }
        match &raw.format_version {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| READS.contains(&v)) => {}
            other => problems.push(
                Problem::coded(code::UNSUPPORTED_VERSION, match other {
                    None => {
                        "the plan has no \"format_version\"; the check cannot tell how to read it"
                            .to_string()
                    }
                    Some(v) => format!(
                        "the plan's \"format_version\" is {v}; this muster reads {} or {FORMAT_VERSION}",
                        READS[0]
                    ),
                })
                .in_file(file)
                .help("give the JSON that this muster's `muster plan --format json` prints"),
            ),
        }
        // A call to a tool whose schema the check cannot read would pass unjudged.
        for (i, tool) in raw.roster.iter().enumerate() {
            if let Some(why) = crate::canon::schema_shape_problem(&tool.input_schema) {
                problems.push(
                    Problem::coded(code::INVALID_SCHEMA, format!(
                        "roster[{i}].input_schema of tool \"{}\" {why}; calls to it cannot be checked",
                        tool.name
                    ))
                    .in_file(file)
                    .help("make the plan again with `muster plan --format json`: every offered tool's input_schema is a JSON Schema object of type \"object\""),
                );
            }
        }
        if !problems.is_empty() {
            return Err(Error::many(ErrorKind::Input, problems));
        }
        let roster = raw
            .roster
            .into_iter()
            .map(|tool| OfferedTool {
                provider_name: tool.provider_name.filter(|p| *p != tool.name),
                name: tool.name,
                source: tool.source,
                mcp: match (tool.server, tool.tool) {
                    (Some(server), Some(tool)) => Some(McpTool { server, tool }),
                    _ => None,
                },
                input_schema: tool.input_schema,
                fixed: tool.fixed.unwrap_or_default(),
                only: tool.only,
                unknown_arguments: tool.unknown_arguments.unwrap_or_default(),
                coerce: tool.coerce.unwrap_or(false),
                check: tool.check.unwrap_or(match tool.source {
                    Source::Mcp => CheckMode::Strict,
                    Source::Configured | Source::Control => CheckMode::Lenient,
                }),
                parameters: tool.parameters,
                variadic: tool.variadic,
            })
            .collect();
        let deferred = raw
            .deferred
            .into_iter()
            .map(|d| DeferredTool {
                provider_name: d.provider_name.filter(|p| *p != d.name),
                name: d.name,
                code: d.code,
            })
            .collect();
        Ok(Self::new(roster, deferred, raw.control_tool))
    }

    /// The offered tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&OfferedTool> {
        self.index(name).map(|i| &self.roster[i])
    }

    /// The offered tool called `name` with its compiled schema, lenient and strict.
    pub(crate) fn entry(&self, name: &str) -> Option<(&OfferedTool, &Compiled, &Strict)> {
        self.index(name)
            .map(|i| (&self.roster[i], &self.compiled[i], &self.strict[i]))
    }

    /// The roster index of the tool called `name`; the last one when the name is offered twice.
    fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Every offered tool, in plan order.
    pub fn roster(&self) -> &[OfferedTool] {
        &self.roster
    }

    /// Every deferred tool, in plan order.
    pub fn deferred_tools(&self) -> &[DeferredTool] {
        &self.deferred
    }

    /// The deferred tool called `name`, as muster or as providers spell it.
    pub fn deferred(&self, name: &str) -> Option<&DeferredTool> {
        self.deferred.iter().find(|d| d.name == name).or_else(|| {
            self.deferred
                .iter()
                .find(|d| d.provider_name.as_deref() == Some(name))
        })
    }

    /// The control tool's name as providers are sent it, when the plan
    /// offers it and gives a provider spelling.
    pub fn control_tool_provider_name(&self) -> Option<&str> {
        let control = self.control_tool.as_deref()?;
        self.roster
            .iter()
            .find(|t| t.name == control)
            .and_then(|t| t.provider_name.as_deref())
    }

    /// The name of the control tool that loads deferred tools, when the plan has one.
    pub fn control_tool(&self) -> Option<&str> {
        self.control_tool.as_deref()
    }
}

/// The `format_version` of the plan JSON the planner prints; the same as
/// [`crate::plan::FORMAT_VERSION`] (a test holds them together), written
/// here so the check never reaches back up to the planner.
const FORMAT_VERSION: u64 = 4;

/// The plan versions the check reads: 4 only added `provider` beside
/// `encoding`, which the check does not read, so a version-3 plan reads the
/// same.
const READS: [u64; 2] = [3, FORMAT_VERSION];

#[derive(Deserialize)]
struct RawPlan {
    #[serde(default)]
    format_version: Option<Value>,
    roster: Vec<RawTool>,
    #[serde(default)]
    deferred: Vec<RawDeferred>,
    #[serde(default)]
    control_tool: Option<String>,
}

#[derive(Deserialize)]
struct RawTool {
    name: String,
    #[serde(default)]
    provider_name: Option<String>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default = "configured")]
    source: Source,
    input_schema: Value,
    #[serde(default)]
    fixed: Option<Map<String, Value>>,
    #[serde(default)]
    only: Option<Vec<String>>,
    #[serde(default)]
    unknown_arguments: Option<UnknownArguments>,
    #[serde(default)]
    coerce: Option<bool>,
    #[serde(default)]
    check: Option<CheckMode>,
    #[serde(default)]
    parameters: Option<Vec<Parameter>>,
    #[serde(default)]
    variadic: bool,
}

fn configured() -> Source {
    Source::Configured
}

#[derive(Deserialize)]
struct RawDeferred {
    name: String,
    #[serde(default)]
    provider_name: Option<String>,
    #[serde(default)]
    code: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_it_needs_and_ignores_the_rest() {
        let text = r#"{
          "format_version": 3, "version": 3, "budget": {"tokens": 4000},
          "roster": [
            {"name": "mcp.files.search", "source": "mcp", "tokens": 88,
             "input_schema": {"type": "object"}, "fixed": {"scope": "handbook"},
             "only": ["query"], "unknown_arguments": "drop", "coerce": true},
            {"name": "fs.read", "input_schema": {"type": "object"},
             "parameters": [{"name": "path", "required": true}, {"name": "start"}]}
          ],
          "deferred": [{"name": "mcp.mail.get", "tokens": 120, "code": "item-cap", "detail": "x"}],
          "control_tool": "tools.load"
        }"#;
        let plan = OfferedPlan::from_json(text, Path::new("plan.json")).unwrap();
        let search = plan.tool("mcp.files.search").unwrap();
        assert_eq!(search.source, Source::Mcp);
        assert_eq!(search.fixed["scope"], "handbook");
        assert_eq!(search.only.as_deref(), Some(&["query".to_string()][..]));
        assert_eq!(search.unknown_arguments, UnknownArguments::Drop);
        assert!(search.coerce);
        let read = plan.tool("fs.read").unwrap();
        assert_eq!(read.source, Source::Configured);
        assert!(!read.coerce);
        assert_eq!(read.unknown_arguments, UnknownArguments::Refuse);
        assert_eq!(read.parameters.as_ref().unwrap().len(), 2);
        assert!(plan.deferred("mcp.mail.get").is_some());
        assert_eq!(plan.control_tool(), Some("tools.load"));
    }

    #[test]
    fn a_plan_without_a_roster_is_an_input_error_naming_file_and_line() {
        let err =
            OfferedPlan::from_json("{\n  \"deferred\": []\n}", Path::new("p.json")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let problem = &err.problems()[0];
        assert_eq!(problem.file.as_deref(), Some(Path::new("p.json")));
        assert_eq!(problem.line, Some(3));
        assert!(problem.message.contains("roster"), "{}", problem.message);
        assert!(problem.help.is_some());
    }

    fn tool(name: &str, schema: serde_json::Value) -> OfferedTool {
        OfferedTool {
            name: name.into(),
            provider_name: None,
            source: Source::Configured,
            mcp: None,
            input_schema: schema,
            fixed: Map::new(),
            only: None,
            unknown_arguments: UnknownArguments::Refuse,
            coerce: false,
            check: CheckMode::Lenient,
            parameters: None,
            variadic: false,
        }
    }

    #[test]
    fn every_offered_name_is_found_and_no_other() {
        let names: Vec<String> = (0..300)
            .map(|i| format!("mcp.server_{}.tool_{}", i % 7, "x".repeat(i % 23)))
            .chain((0..40).map(|i| "ab".repeat(i)))
            .collect();
        let plan = OfferedPlan::new(
            names
                .iter()
                .map(|n| tool(n, serde_json::json!({})))
                .collect(),
            Vec::new(),
            None,
        );
        for (i, name) in names.iter().enumerate() {
            let found = plan.tool(name).unwrap();
            assert_eq!(&found.name, name);
            // A name listed twice is found as its last entry.
            let last = names.iter().rposition(|n| n == name).unwrap();
            assert!(std::ptr::eq(found, &plan.roster()[last]), "{i} {name}");
        }
        for other in ["mcp.server_0.tool", "ab ", "mcp.server_1.tool_y", "abab_"] {
            assert!(plan.tool(other).is_none(), "{other}");
        }
    }

    #[test]
    fn a_later_tool_of_the_same_name_replaces_an_earlier_one_in_look_ups() {
        let plan = OfferedPlan::new(
            vec![
                tool("a", serde_json::json!({"type": "object"})),
                tool("a", serde_json::json!({})),
            ],
            Vec::new(),
            None,
        );
        assert_eq!(plan.tool("a").unwrap().input_schema, serde_json::json!({}));
    }

    #[test]
    fn a_plan_that_offers_a_name_twice_is_refused_and_once_is_read() {
        let twice = r#"{"format_version": 3, "roster": [{"name": "a", "input_schema": {}}, {"name": "a", "input_schema": {}}]}"#;
        let err = OfferedPlan::from_json(twice, Path::new("p.json")).unwrap_err();
        assert!(err.to_string().contains("\"a\" twice"));
        let once = r#"{"format_version": 3, "roster": [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]}"#;
        assert!(OfferedPlan::from_json(once, Path::new("p.json")).is_ok());
    }

    #[test]
    fn the_version_read_is_the_version_the_planner_writes() {
        assert_eq!(FORMAT_VERSION, u64::from(crate::plan::FORMAT_VERSION));
    }

    #[test]
    fn plans_of_version_3_and_4_are_read_and_2_is_refused() {
        let file = Path::new("p.json");
        for version in [3, 4] {
            let text = format!(
                r#"{{"format_version": {version}, "provider": "openai", "roster": [{{"name": "a", "input_schema": {{}}}}]}}"#
            );
            assert!(OfferedPlan::from_json(&text, file).is_ok(), "{version}");
        }
        let old = r#"{"format_version": 2, "roster": [{"name": "a", "input_schema": {}}]}"#;
        let err = OfferedPlan::from_json(old, file).unwrap_err();
        assert!(err.problems()[0].message.contains("reads 3 or 4"), "{err}");
    }

    /// Issue 13: a plan the check cannot judge was read silently, and every call to a tool
    /// with a schema like `"x"` passed unchecked.
    #[test]
    fn a_plan_the_check_cannot_judge_is_refused_naming_file_and_field() {
        let file = Path::new("p.json");
        for version in [
            "",
            r#""format_version": 99,"#,
            r#""format_version": "one","#,
        ] {
            let text =
                format!(r#"{{{version} "roster": [{{"name": "a", "input_schema": {{}}}}]}}"#);
            let err = OfferedPlan::from_json(&text, file).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Input);
            assert_eq!(err.problems().len(), 1, "{err}");
            let problem = &err.problems()[0];
            assert_eq!(problem.file.as_deref(), Some(file));
            assert!(problem.message.contains("\"format_version\""), "{problem}");
            assert!(problem.help.is_some());
        }
        for schema in [
            r#""x""#,
            "[]",
            "null",
            r#"{"type": "string"}"#,
            r#"{"type": ["object", "null"]}"#,
            r#"{"type": "object", "properties": []}"#,
        ] {
            let text = format!(
                r#"{{"format_version": 3, "roster": [{{"name": "ok", "input_schema": {{}}}},
                   {{"name": "bad", "input_schema": {schema}}}]}}"#
            );
            let err = OfferedPlan::from_json(&text, file).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Input);
            assert_eq!(err.problems().len(), 1, "{schema}: {err}");
            let problem = &err.problems()[0];
            assert_eq!(problem.file.as_deref(), Some(file));
            assert!(
                problem
                    .message
                    .starts_with("roster[1].input_schema of tool \"bad\""),
                "{problem}"
            );
            assert!(problem.help.is_some());
        }
    }
}
