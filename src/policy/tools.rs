//! Configured tools: `tools/*.toml` `[[tool]]` tables validated into
//! [`ToolDef`]s (names, input schemas inline or from a file, positional
//! parameters, call-policy overrides).

use super::load::{Loader, Source};
use super::{Origin, ToolDef, bad_name, bad_name_code, raw};
use crate::contract::SchemaProblem;
use crate::error::{Problem, code};
use crate::schema::Prepared;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

impl Loader {
    pub(super) fn load_tools(&mut self) -> Vec<ToolDef> {
        let mut tools: Vec<ToolDef> = Vec::new();
        let mut seen: BTreeMap<String, Origin> = BTreeMap::new();
        for path in self.toml_files("tools") {
            let text = match crate::input::read_text(&path) {
                Ok(text) => text,
                Err(err) => {
                    self.problems.push(err.problem(&path, "file"));
                    continue;
                }
            };
            let file = Source::new(path.clone(), &text);
            // Each `[[tool]]` entry is parsed and validated on its own, so
            // a large file is never one TOML document in memory.
            let starts = super::chunks::array_table_starts(&text, "tool");
            // Room for every entry at once (a doubling vector of 100,000
            // tools holds a third more than it needs).
            tools.reserve(starts.len());
            let mut bounds = vec![0];
            bounds.extend(starts.iter().copied().filter(|&s| s > 0));
            bounds.push(text.len());
            if bounds.len() > 2 && starts.first() != Some(&0) {
                // The text before the first header: if it declares tools
                // itself (`tool = [...]`), that conflicts with the headers
                // after it, and only the whole file parsed as one is judged
                // right.
                match self.parse_toml::<raw::ToolsFile>(&path, &file, &text[..bounds[1]]) {
                    Some(before) if !before.tool.is_empty() => bounds = vec![0, text.len()],
                    _ => {
                        bounds.remove(0);
                    }
                }
            }
            let parts: Vec<(usize, usize)> = bounds.windows(2).map(|p| (p[0], p[1])).collect();
            // Parsing is most of loading a large file and its entries are
            // independent: a batch is parsed on every core, then judged in
            // order, so problems and tools come out as from one thread and
            // only a batch of parsed entries is held at once.
            for batch in parts.chunks(PARSE_BATCH) {
                let parsed = parse_parts(&text, batch);
                for (&(start, _), parsed) in batch.iter().zip(parsed) {
                    let src = file.part(start);
                    let Some(entries) = self.parsed_toml(&path, &src, parsed) else {
                        continue;
                    };
                    for (entry, prepared) in entries {
                        let origin = src.at(&entry);
                        let raw = entry.into_inner();
                        if let Some(tool) = self.tool(&src, origin, raw, prepared, &mut seen) {
                            tools.push(tool);
                        }
                    }
                }
            }
        }
        tools
    }

    /// The tool `raw` declares, with `prepared` its inline schema as the
    /// parsing thread read it ([`parse_parts`]).
    fn tool(
        &mut self,
        src: &Source,
        origin: Origin,
        raw: raw::RawTool,
        prepared: Option<Prepared>,
        seen: &mut BTreeMap<String, Origin>,
    ) -> Option<ToolDef> {
        let name = raw.name.get_ref().clone();
        let name_origin = src.at(&raw.name);
        if let Some(problem) = bad_name(&name) {
            self.problems.push(
                name_origin
                    .coded(bad_name_code(&name), format!("tool name {:?} {problem}", crate::names::shown(&name)))
                    .help(format!("name it with visible characters only (no spaces, controls, bidi or invisible characters), at most {} bytes", crate::names::MAX_NAME_BYTES)),
            );
            return None;
        }
        if name.starts_with("mcp.") {
            self.problems.push(
                name_origin
                    .coded(code::RESERVED_NAME, format!("configured tool {name:?} uses the reserved prefix \"mcp.\""))
                    .help("discovered tools are named mcp.<server>.<tool>; rename the configured tool"),
            );
        }
        if let Some(first) = seen.get(&name) {
            self.problems.push(
                name_origin
                    .coded(
                        code::DUPLICATE,
                        format!(
                            "tool {name:?} is registered twice; first at {}:{}",
                            first.file.display(),
                            first.line.unwrap_or(0)
                        ),
                    )
                    .help("remove one of the two entries or rename one"),
            );
            return None;
        }
        seen.insert(name.clone(), name_origin.clone());

        // The schema as it will be held, and its tree, which only
        // `parameters` reads (a parsing thread drops it otherwise).
        let (input_schema, tree) = match (raw.input_schema, raw.input_schema_file) {
            (Some(_), Some(file)) => {
                self.problems.push(
                    src.at(&file)
                        .coded(
                            code::CONFLICT,
                            format!("tool {name:?} has both input_schema and input_schema_file"),
                        )
                        .help("keep one of the two"),
                );
                return None;
            }
            (Some(inline), None) => {
                let at = src.at(&inline);
                let super::finite::TomlJson {
                    value: tree,
                    non_finite,
                } = inline.into_inner();
                for (path, x) in &non_finite {
                    self.problems.push(
                        at.clone()
                            .coded(
                                code::NON_FINITE_NUMBER,
                                format!(
                                    "tool {name:?}: its input_schema holds {x} at {}, a number JSON cannot hold",
                                    if path.is_empty() { "the schema itself".to_string() } else { format!("{path:?}") }
                                ),
                            )
                            .help("write a finite number there, or leave the keyword out"),
                    );
                }
                if !non_finite.is_empty() {
                    return None;
                }
                let prepared = prepared.unwrap_or_else(|| Prepared::new(&tree));
                self.object_schema(&name, prepared.problem(), &at)?;
                (prepared, tree)
            }
            (None, Some(file)) => {
                let at = src.at(&file);
                let path = self.inside(
                    src,
                    file.get_ref(),
                    &at,
                    &format!("tool {name:?}"),
                    "input_schema_file",
                )?;
                let tree = self.read_json(&path, &at, &name)?;
                let prepared = Prepared::new(&tree);
                let at = Origin {
                    file: path,
                    line: None,
                };
                self.object_schema(&name, prepared.problem(), &at)?;
                (prepared, tree)
            }
            (None, None) => {
                let tree = serde_json::json!({"type": "object", "properties": {}});
                (Prepared::new(&tree), tree)
            }
        };

        let unknown_arguments = raw
            .unknown_arguments
            .as_ref()
            .and_then(|u| self.unknown_arguments(src, u, &format!("tool {name:?}")));
        let when = raw.when.as_ref().and_then(|w| self.flag_name(src, w));
        let parameters = raw
            .parameters
            .as_ref()
            .map(|p| self.parameters(src, &name, p, &tree, raw.variadic));
        let check = raw
            .check
            .as_ref()
            .and_then(|c| self.check_mode(src, c, &format!("tool {name:?}")));
        Some(ToolDef {
            name,
            description: raw.description,
            input_schema: self.schemas.hold(input_schema),
            when,
            default_roster: raw.default_roster,
            priority: raw.priority,
            deferrable: raw.deferrable,
            parameters,
            variadic: raw.variadic,
            unknown_arguments,
            coerce: raw.coerce,
            check,
            origin,
        })
    }

    /// The file `named` (written in `src`) points to, when it stays inside
    /// `None` (with the problem recorded) when `problem` keeps the schema
    /// from being `tool`'s input schema.
    fn object_schema(
        &mut self,
        tool: &str,
        problem: Option<&SchemaProblem>,
        at: &Origin,
    ) -> Option<()> {
        match problem {
            // Nested too deep, the tool is cut from plans as `invalid-schema` (docs/limits.md),
            // the rest of the policy kept; `validate` refuses it ([`schema_problem`]).
            None | Some(SchemaProblem::TooDeep { .. }) => Some(()),
            Some(problem) => {
                self.problems.push(schema_problem(tool, problem, at));
                None
            }
        }
    }

    fn parameters(
        &mut self,
        src: &Source,
        tool: &str,
        params: &Spanned<Vec<Spanned<String>>>,
        schema: &Value,
        variadic: bool,
    ) -> Vec<String> {
        let props = schema.get("properties").and_then(Value::as_object);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut first_optional: Option<&str> = None;
        let mut names = Vec::new();
        for p in params.get_ref() {
            let name = p.get_ref().as_str();
            let at = src.at(p);
            if !props.is_some_and(|props| props.contains_key(name)) {
                self.problems.push(
                    at.coded(code::PARAMETER_MISMATCH, format!(
                        "tool {tool:?}: parameter {name:?} is not a property of its input schema"
                    ))
                    .help("list only properties the schema declares"),
                );
            }
            if names.iter().any(|n| n == name) {
                self.problems.push(
                    at.coded(
                        code::PARAMETER_MISMATCH,
                        format!("tool {tool:?}: parameter {name:?} is listed twice"),
                    )
                    .help("list each parameter once"),
                );
            }
            let is_required = required.contains(name);
            match (is_required, first_optional) {
                (true, Some(optional)) => self.problems.push(
                    at.coded(code::PARAMETER_MISMATCH, format!(
                        "tool {tool:?}: required parameter {name:?} comes after optional parameter {optional:?}"
                    ))
                    .help("optional parameters come last; move it before them or make it optional"),
                ),
                (false, None) => first_optional = Some(name),
                _ => {}
            }
            names.push(name.to_string());
        }
        // A positional call carries listed parameters only; a property left
        // out could be written by the model and silently lost.
        for name in props.into_iter().flat_map(|p| p.keys()) {
            if !names.iter().any(|n| n == name) {
                self.problems.push(
                    src.at(params)
                        .coded(code::PARAMETER_MISMATCH, format!(
                            "tool {tool:?}: parameters leaves out property {name:?}, so a positional call could not carry it"
                        ))
                        .help("list every property of the input schema, required ones first"),
                );
            }
        }
        if variadic && let Some(optional) = first_optional {
            self.problems.push(
                src.at(params)
                    .coded(code::CONFLICT, format!(
                        "tool {tool:?} is variadic and has optional parameter {optional:?}"
                    ))
                    .help("a variadic tool takes no optional parameters; make them required or drop variadic"),
            );
        }
        names
    }
}

/// Entries parsed together: enough to keep every core busy, few enough
/// that a batch of parsed schemas stays small.
const PARSE_BATCH: usize = 4096;

/// Fewer parts than this are parsed on the calling thread: starting
/// threads would cost more than they save.
const PARALLEL_PARTS: usize = 256;

/// One part of a tools file as a parsing thread leaves it: its entries,
/// each with its inline schema read into the form [`Shared`] holds (its
/// tree dropped there unless the entry's `parameters` must read it).
///
/// [`Shared`]: crate::schema::Shared
type ParsedPart = Result<Vec<(Spanned<raw::RawTool>, Option<Prepared>)>, Vec<toml::de::Error>>;

/// Each part of `text` (by byte range) parsed as a tools file, in order,
/// on every core.
/// The problem a configured tool's input schema has, at `at`: the one wording for the loader
/// and for `validate`.
pub(crate) fn schema_problem(tool: &str, problem: &SchemaProblem, at: &Origin) -> Problem {
    let help = match problem {
        SchemaProblem::NotObjectType { .. } => {
            "tool arguments are always an object; wrap the value in a property"
        }
        SchemaProblem::TooDeep { .. } => "flatten the schema or use $ref definitions",
        _ => "give a JSON Schema object with type = \"object\" and an object of properties",
    };
    at.coded(
        code::INVALID_SCHEMA,
        format!("tool {tool:?}: input schema {problem}"),
    )
    .help(help)
}

fn parse_parts(text: &str, parts: &[(usize, usize)]) -> Vec<ParsedPart> {
    let parse = |&(start, end): &(usize, usize)| -> ParsedPart {
        let file: raw::ToolsFile = raw::parse_all(&text[start..end])?;
        Ok(file.tool.into_iter().map(prepare).collect())
    };
    let threads = if parts.len() < PARALLEL_PARTS {
        1
    } else {
        crate::parallel::cores()
    };
    crate::parallel::map_indices(parts.len(), threads, || (), |(), i| parse(&parts[i]))
}

/// `entry` with its inline schema read ([`ParsedPart`]).
fn prepare(mut entry: Spanned<raw::RawTool>) -> (Spanned<raw::RawTool>, Option<Prepared>) {
    let raw = entry.get_mut();
    let tree_needed = raw.parameters.is_some();
    let prepared = raw.input_schema.as_mut().map(|schema| {
        let prepared = Prepared::new(&schema.get_ref().value);
        if !tree_needed {
            schema.get_mut().value = Value::Null;
        }
        prepared
    });
    (entry, prepared)
}

#[cfg(test)]
mod tests {
    use crate::policy::load_with_tools_file as load;

    /// A tools file of `n` entries, three lines each; `edit` may rewrite
    /// entry `i`'s lines.
    fn tools_file(n: usize, edit: impl Fn(usize) -> Option<String>) -> String {
        (0..n)
            .map(|i| {
                edit(i).unwrap_or_else(|| {
                    format!("[[tool]]\nname = \"t.n{i}\"\ninput_schema = {{ type = \"object\" }}\n")
                })
            })
            .collect()
    }

    /// Past [`super::PARALLEL_PARTS`] entries a file is parsed on every core
    /// and in batches ([`super::PARSE_BATCH`]); its tools and problems still
    /// come out in file order.
    #[test]
    fn a_file_parsed_on_every_core_is_judged_in_file_order() {
        let n = super::PARSE_BATCH + 700;
        let inputs = load(&tools_file(n, |_| None)).unwrap();
        let names: Vec<&str> = inputs
            .policy
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        let expected: Vec<String> = (0..n).map(|i| format!("t.n{i}")).collect();
        assert_eq!(names, expected);

        // Entry i starts on line 3i + 1.
        let bad = [5, 300, 650, super::PARSE_BATCH + 10];
        let text = tools_file(n, |i| match i {
            5 => Some("[[tool]]\nname = \"t.n5\"\ninput_schema = { type = \"string\" }\n".into()),
            300 => Some("[[tool]]\nname = \"t.n7\"\ninput_schema = { type = \"object\" }\n".into()),
            650 => Some("[[tool]]\nname = \"t.n650\"\nprority = 1\n".into()),
            i if i == super::PARSE_BATCH + 10 => {
                Some(format!("[[tool]]\nname = \"t.n{i}\"\ninput_schema = []\n"))
            }
            _ => None,
        });
        let err = load(&text).unwrap_err();
        let lines: Vec<Option<usize>> = err.problems().iter().map(|p| p.line).collect();
        let expected: Vec<Option<usize>> = [
            3 * bad[0] + 3, // the schema's line
            3 * bad[1] + 2, // the repeated name's line
            3 * bad[2] + 3, // the unknown key's line
            3 * bad[3] + 3, // the schema's line
        ]
        .into_iter()
        .map(Some)
        .collect();
        assert_eq!(lines, expected, "{err}");
    }
}
