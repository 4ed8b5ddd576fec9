//! Configured tools: `tools/*.toml` `[[tool]]` tables validated into
//! [`ToolDef`]s (names, input schemas inline or from a file, positional
//! parameters, call-policy overrides).

use super::load::{Loader, Source};
use super::{Origin, ToolDef, bad_name, raw};
use crate::canon::input_schema_problem;
use crate::contract::SchemaProblem;
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
            for part in bounds.windows(2) {
                let src = file.part(part[0]);
                let Some(parsed) =
                    self.parse_toml::<raw::ToolsFile>(&path, &src, &text[part[0]..part[1]])
                else {
                    continue;
                };
                for entry in parsed.tool {
                    let origin = src.at(&entry);
                    let raw = entry.into_inner();
                    if let Some(tool) = self.tool(&src, origin, raw, &mut seen) {
                        tools.push(tool);
                    }
                }
            }
        }
        tools
    }

    fn tool(
        &mut self,
        src: &Source,
        origin: Origin,
        raw: raw::RawTool,
        seen: &mut BTreeMap<String, Origin>,
    ) -> Option<ToolDef> {
        let name = raw.name.get_ref().clone();
        let name_origin = src.at(&raw.name);
        if let Some(problem) = bad_name(&name) {
            self.problems.push(
                name_origin
                    .problem(format!("tool name {name:?} {problem}"))
                    .help("name it with visible characters only: no spaces, controls, bidi or invisible characters"),
            );
            return None;
        }
        if name.starts_with("mcp.") {
            self.problems.push(
                name_origin
                    .problem(format!("configured tool {name:?} uses the reserved prefix \"mcp.\""))
                    .help("discovered tools are named mcp.<server>.<tool>; rename the configured tool"),
            );
        }
        if let Some(first) = seen.get(&name) {
            self.problems.push(
                name_origin
                    .problem(format!(
                        "tool {name:?} is registered twice; first at {}:{}",
                        first.file.display(),
                        first.line.unwrap_or(0)
                    ))
                    .help("remove one of the two entries or rename one"),
            );
            return None;
        }
        seen.insert(name.clone(), name_origin.clone());

        let input_schema = match (raw.input_schema, raw.input_schema_file) {
            (Some(_), Some(file)) => {
                self.problems.push(
                    src.at(&file)
                        .problem(format!(
                            "tool {name:?} has both input_schema and input_schema_file"
                        ))
                        .help("keep one of the two"),
                );
                return None;
            }
            (Some(inline), None) => {
                // Read straight into JSON: a TOML value in between would
                // copy every schema of a large tools file twice more.
                let at = src.at(&inline);
                self.object_schema(&name, inline.into_inner(), &at)?
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
                let value = self.read_json(&path, &at, &name)?;
                self.object_schema(
                    &name,
                    value,
                    &Origin {
                        file: path,
                        line: None,
                    },
                )?
            }
            (None, None) => serde_json::json!({"type": "object", "properties": {}}),
        };

        let unknown_arguments = raw
            .unknown_arguments
            .as_ref()
            .and_then(|u| self.unknown_arguments(src, u, &format!("tool {name:?}")));
        let when = raw.when.as_ref().and_then(|w| self.flag_name(src, w));
        let parameters = raw
            .parameters
            .as_ref()
            .map(|p| self.parameters(src, &name, p, &input_schema, raw.variadic));
        let check = raw
            .check
            .as_ref()
            .and_then(|c| self.check_mode(src, c, &format!("tool {name:?}")));
        Some(ToolDef {
            name,
            description: raw.description,
            input_schema: self.schemas.share(input_schema),
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
    fn object_schema(&mut self, tool: &str, value: Value, at: &Origin) -> Option<Value> {
        if let Some(problem) = input_schema_problem(&value) {
            let help = match problem {
                SchemaProblem::NotObjectType { .. } => {
                    "tool arguments are always an object; wrap the value in a property"
                }
                SchemaProblem::TooDeep { .. } => "flatten the schema or use $ref definitions",
                _ => "give a JSON Schema object with type = \"object\" and an object of properties",
            };
            self.problems.push(
                at.problem(format!("tool {tool:?}: input schema {problem}"))
                    .help(help),
            );
            return None;
        }
        Some(value)
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
                    at.problem(format!(
                        "tool {tool:?}: parameter {name:?} is not a property of its input schema"
                    ))
                    .help("list only properties the schema declares"),
                );
            }
            if names.iter().any(|n| n == name) {
                self.problems.push(
                    at.problem(format!("tool {tool:?}: parameter {name:?} is listed twice"))
                        .help("list each parameter once"),
                );
            }
            let is_required = required.contains(name);
            match (is_required, first_optional) {
                (true, Some(optional)) => self.problems.push(
                    at.problem(format!(
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
                        .problem(format!(
                            "tool {tool:?}: parameters leaves out property {name:?}, so a positional call could not carry it"
                        ))
                        .help("list every property of the input schema, required ones first"),
                );
            }
        }
        if variadic && let Some(optional) = first_optional {
            self.problems.push(
                src.at(params)
                    .problem(format!(
                        "tool {tool:?} is variadic and has optional parameter {optional:?}"
                    ))
                    .help("a variadic tool takes no optional parameters; make them required or drop variadic"),
            );
        }
        names
    }
}
