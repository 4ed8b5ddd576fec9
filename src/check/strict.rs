//! Strict checking: after repair, narrowing and the lenient rules, the arguments a call would
//! forward are validated against the tool's whole input schema with the `jsonschema` crate, as
//! an MCP server validates them (`$ref`, `anyOf`, `minimum`, `pattern`, … included; the draft
//! named by `$schema`, 2020-12 when none is; the formats servers enforce asserted with the tests
//! of `format`, the others not; required names with a `default` not required). Each finding is rewritten as a problem the model can act on: the argument path, what
//! was expected, what came.
//!
//! A schema is compiled once, when the plan is read. A schema the validator cannot compile
//! fails closed: every call to the tool is refused, since nothing could say whether the server
//! would take it (the planner warns about such a schema when the plan is made). It must not
//! refuse anything in lenient mode, and never changes what a tool receives.

use std::fmt;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use super::path::{Step, render_steps};
use super::schema::Findings;
use super::wording::not_in_enum;
use crate::contract::{CallProblem, Got};

/// A compiled strict validator, and what the errors it builds for a failing value may cost.
#[derive(Debug)]
pub struct Checker {
    validator: Validator,
    /// The schema's nodes, references expanded, when it holds an `anyOf` or `oneOf`: a
    /// failing alternative copies the value it judged into each branch's error, and again at
    /// each enclosing one ([`super::budget::MAX_CHECK_COPIES`]).
    alternatives: Option<u64>,
}

impl std::ops::Deref for Checker {
    type Target = Validator;
    fn deref(&self) -> &Validator {
        &self.validator
    }
}

/// A tool's schema as strict checking holds it.
pub(crate) enum Strict {
    /// The tool is checked leniently.
    Off,
    /// The compiled validator of the tool's schema.
    On(Box<Checker>),
    /// Why the schema cannot be compiled: every call is refused.
    Broken(String),
}

impl fmt::Debug for Strict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("Off"),
            Self::On(_) => f.write_str("On"),
            Self::Broken(why) => f.debug_tuple("Broken").field(why).finish(),
        }
    }
}

impl PartialEq for Strict {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Off, Self::Off) | (Self::On(_), Self::On(_)) => true,
            (Self::Broken(a), Self::Broken(b)) => a == b,
            _ => false,
        }
    }
}

impl Strict {
    /// The strict form of `schema` when `strict`, compiled now.
    pub(crate) fn new(schema: &Value, strict: bool) -> Self {
        if !strict {
            return Self::Off;
        }
        match compile_strict(schema) {
            Ok(validator) => Self::On(Box::new(validator)),
            Err(why) => Self::Broken(why),
        }
    }
}

/// `schema` compiled as strict checking validates with it, or why it cannot be: the draft
/// named by `$schema` (2020-12 when none is), the formats of [`super::format::ASSERTED`]
/// asserted with muster's own tests and no other, required names with a `default` not
/// required, no remote references fetched. A schema whose references make one call's work unbounded
/// ([`super::expansion::measure`]) is refused here, the one place every strict check, the
/// planner's `uncheckable-schema` warning and the service take a schema's validator from: no
/// validator of an unbounded schema is ever built, so no call is ever validated unboundedly.
pub(crate) fn compile_strict(schema: &Value) -> Result<Checker, String> {
    let expanded = super::expansion::measure(schema, super::expansion::MAX_SCHEMA_EXPANSION)
        .map_err(|why| why.to_string())?;
    if let Some(pattern) = backtracking_pattern_property(schema) {
        return Err(format!(
            "its patternProperties pattern \"{pattern}\" needs the backtracking regex engine, whose work per member name cannot be bounded"
        ));
    }
    let mut prepared = defaults_not_required(schema);
    let alternatives = super::branches::mark(&mut prepared).then_some(expanded);
    // `pattern` is muster's bounded keyword (charged to the turn's budget); the validator's
    // own matching, left only to `patternProperties` keys, stops at the same limit per value.
    let mut options = jsonschema::options()
        .should_validate_formats(true)
        .with_keyword("pattern", super::pattern::keyword)
        .with_keyword(super::branches::KEYWORD, super::branches::keyword)
        .with_pattern_options(jsonschema::PatternOptions::fancy_regex().backtrack_limit(
            usize::try_from(super::pattern::MAX_VALUE_STEPS).unwrap_or(usize::MAX),
        ));
    for name in super::format::ASSERTED {
        let format = super::format::Format::parse(name).expect("every asserted format parses");
        options = options.with_format(name, move |text: &str| format.conforms(text));
    }
    for name in super::format::NOT_ASSERTED {
        options = options.with_format(name, |_: &str| true);
    }
    let built = options.build(&prepared).map_err(|err| err.to_string());
    super::deep::drop_value(prepared);
    built.map(|validator| Checker {
        validator,
        alternatives,
    })
}

/// The nodes of `value` (itself, each item and member, nested), counted up to just past
/// `cap`.
fn nodes_up_to(value: &Value, cap: u64) -> u64 {
    let mut count = 0u64;
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        count += 1;
        if count > cap {
            break;
        }
        match v {
            Value::Array(items) => todo.extend(items),
            Value::Object(members) => todo.extend(members.values()),
            _ => {}
        }
    }
    count
}

/// The first `patternProperties` key of `schema` (at any place, values that are data left
/// out) that needs the backtracking engine. Its matches cannot be charged to the turn's budget
/// (the validator matches member names itself), so such a schema is uncheckable; none of the
/// recorded servers' schemas has a `patternProperties` at all.
fn backtracking_pattern_property(schema: &Value) -> Option<String> {
    let mut todo = vec![schema];
    while let Some(value) = todo.pop() {
        match value {
            Value::Array(items) => todo.extend(items),
            Value::Object(map) => {
                for (key, child) in map {
                    match key.as_str() {
                        "enum" | "const" | "default" | "examples" => {}
                        "patternProperties" => {
                            if let Value::Object(members) = child {
                                if let Some(pattern) =
                                    members.keys().find(|p| !super::pattern::linear(p))
                                {
                                    return Some(pattern.clone());
                                }
                                todo.extend(members.values());
                            }
                        }
                        _ => todo.push(child),
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// `schema` with every `required` name whose member declares a `default` taken out of its
/// `required` ([`crate::schema::filled_by_default`]), at every place of the schema: the server
/// fills such a member, so the validator must not require it of the call. Values that are data
/// (`enum`, `const`, `default`, `examples`) are left as they are. It keeps its own stack.
fn defaults_not_required(schema: &Value) -> Value {
    let mut out = super::deep::clone_value(schema);
    let mut todo: Vec<&mut Value> = vec![&mut out];
    while let Some(value) = todo.pop() {
        match value {
            Value::Array(items) => todo.extend(items.iter_mut()),
            Value::Object(map) => {
                let keep: Option<Vec<Value>> = match map.get("required") {
                    Some(Value::Array(names))
                        if names.iter().any(|n| {
                            n.as_str()
                                .is_some_and(|n| crate::schema::filled_by_default(map, n))
                        }) =>
                    {
                        Some(
                            names
                                .iter()
                                .filter(|n| {
                                    !n.as_str()
                                        .is_some_and(|n| crate::schema::filled_by_default(map, n))
                                })
                                .cloned()
                                .collect(),
                        )
                    }
                    _ => None,
                };
                if let Some(keep) = keep {
                    map.insert("required".into(), Value::Array(keep));
                }
                for (key, child) in map.iter_mut() {
                    match key.as_str() {
                        "enum" | "const" | "default" | "examples" => {}
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" => {
                            if let Value::Object(members) = child {
                                todo.extend(members.values_mut());
                            }
                        }
                        _ => todo.push(child),
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Validates `arguments` (what the call would forward, before fixed values are added) with
/// `validator`, adding one problem per finding of the validator to `found`.
///
/// The `pattern`s that need backtracking are charged to the open turn's budget (one is opened
/// for this call when none is). When a charge is refused during this call, the call gets the
/// one problem `check-budget-exceeded`, naming the argument whose pattern was refused (or,
/// when it was refused under `anyOf`, `oneOf`, `not` or `if`, the place those judge), and no
/// other: the findings of a check cut short are not the schema's answer.
pub(crate) fn validate(validator: &Checker, arguments: &Value, tool: &str, found: &mut Findings) {
    let _turn = super::budget::Turn::open(super::budget::MAX_CHECK_STEPS);
    let Some((saved, too_costly)) = fails(validator, arguments) else {
        return;
    };
    if too_costly {
        // Explaining why would copy more than a check may into errors of alternatives.
        found.problem(|| CallProblem::CheckBudgetExceeded {
            tool: tool.to_string(),
            argument: None,
            budget: super::budget::MAX_CHECK_STEPS,
            per_value: super::pattern::MAX_VALUE_STEPS,
        });
        return;
    }
    super::budget::restore(saved);
    let refused_before = super::budget::refused();
    let errors: Vec<ValidationError<'_>> = validator.iter_errors(arguments).collect();
    if super::budget::refused() > refused_before {
        let over = errors
            .iter()
            .find(|e| over_budget(e))
            .or_else(|| errors.first());
        found.problem(|| CallProblem::CheckBudgetExceeded {
            tool: tool.to_string(),
            argument: over.and_then(|e| {
                let steps = steps_of(e);
                (!steps.is_empty()).then(|| render_steps(&steps))
            }),
            budget: super::budget::MAX_CHECK_STEPS,
            per_value: super::pattern::MAX_VALUE_STEPS,
        });
        return;
    }
    for error in &errors {
        found.problem(|| problem(tool, error));
    }
}

/// Whether `value` fails `checker` (or a budget ran out judging it), judged yes or no first,
/// which builds no error. When it fails, the budget as it stood before, to put back before
/// judging again to explain why (so the turn is charged once), and whether the errors would
/// cost more copies than [`super::budget::MAX_CHECK_COPIES`]; when it passes, `None`, and the
/// turn keeps the charges.
fn fails(checker: &Checker, value: &Value) -> Option<(super::budget::Saved, bool)> {
    let saved = super::budget::save();
    let fails = !checker.is_valid(value) || super::budget::refused() > saved.refused();
    if !fails {
        return None;
    }
    let max = super::budget::MAX_CHECK_COPIES;
    let too_costly = checker
        .alternatives
        .is_some_and(|nodes| nodes.saturating_mul(nodes_up_to(value, max / nodes.max(1))) > max);
    Some((saved, too_costly))
}

/// The findings of `validator` on a tool's result (`structuredContent`), at most `max`: each
/// one's path (`$` for the whole) and the validator's own words, cut to a few hundred
/// characters (the value is the server's). The same compiled validator and the same budget
/// as a call's strict check: a result is judged as its tool's calls are.
pub(crate) fn output_findings(
    validator: &Checker,
    value: &Value,
    max: usize,
) -> Vec<(String, String)> {
    let _turn = super::budget::Turn::open(super::budget::MAX_CHECK_STEPS);
    let Some((saved, too_costly)) = fails(validator, value) else {
        return Vec::new();
    };
    if too_costly {
        return vec![(
            "$".to_string(),
            "the value fails its schema's alternatives (anyOf, oneOf) in more ways than muster lists"
                .to_string(),
        )];
    }
    super::budget::restore(saved);
    validator
        .iter_errors(value)
        .take(max)
        .map(|error| {
            let steps = steps_of(&error);
            let path = if steps.is_empty() {
                "$".to_string()
            } else {
                render_steps(&steps)
            };
            let words: String = error.to_string().chars().take(300).collect();
            (path, words)
        })
        .collect()
}

/// Whether `error` is a `pattern` match muster refused to run or finish.
fn over_budget(error: &ValidationError<'_>) -> bool {
    matches!(error.kind(), ValidationErrorKind::Custom { message, .. } if message == super::pattern::OVER_BUDGET)
}

/// The argument path of `error`'s value.
fn steps_of(error: &ValidationError<'_>) -> Vec<Step> {
    error
        .instance_path()
        .iter()
        .map(|seg| match seg {
            LocationSegment::Property(name) => Step::Key(name.into_owned()),
            LocationSegment::Index(i) => Step::Index(i),
        })
        .collect()
}

/// The problem for one finding of the validator.
fn problem(tool: &str, error: &ValidationError<'_>) -> CallProblem {
    let mut steps = steps_of(error);
    let value = error.instance().as_ref();
    let tool = tool.to_string();
    let path = |steps: &[Step]| (!steps.is_empty()).then(|| render_steps(steps));
    let (keyword, limit, detail): (&str, Option<Value>, Option<String>) = match error.kind() {
        ValidationErrorKind::Required { property } => {
            steps.push(Step::Key(
                property
                    .as_str()
                    .map_or_else(|| property.to_string(), String::from),
            ));
            return CallProblem::MissingArgument {
                tool,
                argument: render_steps(&steps),
                expected: Vec::new(),
            };
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => vec![t.to_string()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
            };
            return CallProblem::WrongType {
                tool,
                argument: path(&steps).unwrap_or_default(),
                expected,
                got: Got::of(value),
            };
        }
        ValidationErrorKind::Enum { options } => {
            let members = options.as_array().map(Vec::as_slice).unwrap_or_default();
            return not_in_enum(tool, path(&steps).unwrap_or_default(), members, value);
        }
        ValidationErrorKind::Format { format } => {
            return CallProblem::WrongFormat {
                tool,
                argument: path(&steps).unwrap_or_default(),
                format: format.clone(),
                got: Got::of(value),
            };
        }
        ValidationErrorKind::Constant { expected_value } => {
            ("const", Some(Value::clone(expected_value)), None)
        }
        ValidationErrorKind::Minimum { limit } => ("minimum", Some(limit.clone()), None),
        ValidationErrorKind::Maximum { limit } => ("maximum", Some(limit.clone()), None),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            ("exclusiveMinimum", Some(limit.clone()), None)
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            ("exclusiveMaximum", Some(limit.clone()), None)
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            ("multipleOf", Some(Value::from(*multiple_of)), None)
        }
        ValidationErrorKind::MinLength { limit } => ("minLength", Some(Value::from(*limit)), None),
        ValidationErrorKind::MaxLength { limit } => ("maxLength", Some(Value::from(*limit)), None),
        ValidationErrorKind::Pattern { pattern } => {
            ("pattern", Some(Value::from(pattern.as_str())), None)
        }
        ValidationErrorKind::MinItems { limit } => ("minItems", Some(Value::from(*limit)), None),
        ValidationErrorKind::MaxItems { limit } => ("maxItems", Some(Value::from(*limit)), None),
        ValidationErrorKind::UniqueItems => ("uniqueItems", Some(Value::Bool(true)), None),
        ValidationErrorKind::MinProperties { limit } => {
            ("minProperties", Some(Value::from(*limit)), None)
        }
        ValidationErrorKind::MaxProperties { limit } => {
            ("maxProperties", Some(Value::from(*limit)), None)
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => (
            "additionalProperties",
            Some(Value::from(unexpected.clone())),
            None,
        ),
        ValidationErrorKind::UnevaluatedProperties { unexpected } => (
            "unevaluatedProperties",
            Some(Value::from(unexpected.clone())),
            None,
        ),
        ValidationErrorKind::AnyOf { context } => ("anyOf", None, cause(&tool, context)),
        ValidationErrorKind::OneOfNotValid { context } => ("oneOf", None, cause(&tool, context)),
        ValidationErrorKind::OneOfMultipleValid { .. } => (
            "oneOf",
            None,
            Some(crate::contract::ONE_OF_MORE_THAN_ONE.to_string()),
        ),
        ValidationErrorKind::Not { .. } => ("not", None, None),
        ValidationErrorKind::FalseSchema => ("false", None, None),
        ValidationErrorKind::Contains => ("contains", None, None),
        _ => (
            error
                .schema_path()
                .iter()
                .last()
                .map_or("schema", |seg| match seg {
                    LocationSegment::Property(name) => {
                        // Interned keyword names live as long as the error; copy to a static set.
                        keyword_name(&name)
                    }
                    LocationSegment::Index(_) => "schema",
                }),
            None,
            Some(error.to_string()),
        ),
    };
    CallProblem::SchemaMismatch {
        tool,
        argument: path(&steps),
        keyword: keyword.to_string(),
        limit,
        got: Got::of(value),
        detail,
    }
}

/// Why no shape under `anyOf` / `oneOf` took the value, from the validator's findings per
/// shape (`context`): when every shape refused only the value's type, the types they take
/// together (`must be an integer or a boolean`); else the first finding of the shape that came
/// closest (its type fits: it found something other than the type, and the fewest things),
/// as its sentence without the tool's name.
fn cause(tool: &str, context: &[Vec<ValidationError<'_>>]) -> Option<String> {
    let type_only = |errors: &Vec<ValidationError<'_>>| {
        errors.len() == 1 && matches!(errors[0].kind(), ValidationErrorKind::Type { .. })
    };
    let strip = |problem: CallProblem| {
        let text = problem.to_string();
        let prefix = format!("tool \"{tool}\": ");
        text.strip_prefix(&prefix)
            .map_or(text.clone(), String::from)
    };
    if !context.is_empty() && context.iter().all(type_only) {
        let mut expected: Vec<String> = Vec::new();
        for errors in context {
            if let ValidationErrorKind::Type { kind } = errors[0].kind() {
                let names: Vec<String> = match kind {
                    TypeKind::Single(t) => vec![t.to_string()],
                    TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
                };
                for name in names {
                    if !expected.contains(&name) {
                        expected.push(name);
                    }
                }
            }
        }
        let first = problem(tool, &context[0][0]);
        return Some(strip(match first {
            CallProblem::WrongType {
                tool,
                argument,
                got,
                ..
            } => CallProblem::WrongType {
                tool,
                argument,
                expected,
                got,
            },
            other => other,
        }));
    }
    let closest = context
        .iter()
        .filter(|errors| !errors.is_empty() && !type_only(errors))
        .min_by_key(|errors| errors.len())
        .or_else(|| context.iter().find(|errors| !errors.is_empty()))?;
    Some(strip(problem(tool, &closest[0])))
}

/// A schema keyword as a problem names it; keywords muster does not phrase are named `schema`
/// unless they are among the few the validator reports through this path.
fn keyword_name(name: &str) -> &'static str {
    match name {
        "propertyNames" => "propertyNames",
        "additionalItems" => "additionalItems",
        "unevaluatedItems" => "unevaluatedItems",
        "format" => "format",
        "contentEncoding" => "contentEncoding",
        "contentMediaType" => "contentMediaType",
        "dependentRequired" => "dependentRequired",
        "dependencies" => "dependencies",
        _ => "schema",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: Value, arguments: Value) -> Vec<String> {
        let validator = compile_strict(&schema).unwrap();
        let mut found = Findings::default();
        validate(&validator, &arguments, "t", &mut found);
        found.problems.into_iter().map(|p| p.message).collect()
    }

    #[test]
    fn each_finding_names_the_path_what_was_expected_and_what_came() {
        let schema = json!({"type": "object", "required": ["q"], "properties": {
            "q": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true},
            "mode": {"const": "fast"},
            "pick": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}
        }, "additionalProperties": false});
        assert_eq!(
            problems(schema.clone(), json!({"q": "ab", "n": 5})),
            Vec::<String>::new()
        );
        let p = problems(
            schema,
            json!({"q": "A", "n": 50, "tags": ["a", "a", "b"], "mode": "slow", "pick": "x", "extra": 1}),
        );
        for expected in [
            "tool \"t\": argument \"q\" must be at least 2 characters long; got the text \"A\"",
            "tool \"t\": argument \"q\" must match the pattern \"^[a-z]+$\"; got the text \"A\"",
            "tool \"t\": argument \"n\" must be at most 10; got the number 50",
            "tool \"t\": argument \"tags\" must have at most 2 items; got 3 items",
            "tool \"t\": argument \"tags\" must not list an item twice; got a list with a repeated item",
            "tool \"t\": argument \"mode\" must be \"fast\"; got \"slow\"",
            "tool \"t\": argument \"pick\" must match at least one of the shapes its schema lists under anyOf; got the text \"x\"; the closest shape says: argument \"pick\" must be an integer or a boolean; got the text \"x\"",
            "tool \"t\": the arguments must not have the members \"extra\"; the schema does not accept them",
        ] {
            assert!(p.iter().any(|s| s == expected), "{expected}\nnot in {p:#?}");
        }
        assert_eq!(p.len(), 8, "{p:#?}");
    }

    /// Issue 21 item 8: a refusal under `anyOf` / `oneOf` names its cause: the finding of the
    /// shape whose type fits.
    #[test]
    fn a_refusal_under_any_of_names_the_closest_shapes_finding() {
        let schema = json!({"type": "object", "properties": {"when": {"anyOf": [
            {"type": "string", "maxLength": 5},
            {"type": "integer", "minimum": 0}
        ]}, "to": {"oneOf": [
            {"type": "object", "required": ["page_id"], "properties": {"page_id": {"type": "string"}}},
            {"type": "null"}
        ]}}});
        let p = problems(schema, json!({"when": -3, "to": {}}));
        assert_eq!(
            p,
            [
                "tool \"t\": argument \"when\" must match at least one of the shapes its schema lists under anyOf; got the number -3; the closest shape says: argument \"when\" must be at least 0; got the number -3",
                "tool \"t\": argument \"to\" must match one of the shapes its schema lists under oneOf; got an object; the closest shape says: argument \"to.page_id\" is required; got nothing",
            ]
        );
    }

    #[test]
    fn a_missing_member_is_named_by_its_path_and_references_are_followed() {
        let schema = json!({"type": "object", "$defs": {"range": {"type": "object",
            "required": ["from"], "properties": {"from": {"type": "integer"}}}},
            "properties": {"r": {"$ref": "#/$defs/range"}, "list": {"type": "array",
            "items": {"$ref": "#/$defs/range"}}}});
        let p = problems(
            schema,
            json!({"r": {}, "list": [{"from": 1}, {"from": "x"}]}),
        );
        assert_eq!(
            p,
            // In the order the schema and the call write the members.
            [
                "tool \"t\": argument \"r.from\" is required; got nothing",
                "tool \"t\": argument \"list[1].from\" must be an integer; got the text \"x\"",
            ]
        );
    }

    #[test]
    fn the_draft_comes_from_dollar_schema_and_only_the_formats_servers_enforce_are_asserted() {
        // Draft 4 reads exclusiveMaximum as a boolean beside maximum; 2020-12 as a number.
        let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#",
            "properties": {"n": {"maximum": 5, "exclusiveMaximum": true}}});
        assert_eq!(problems(draft4, json!({"n": 5})).len(), 1);
        // Issue 21 item 2: date-time, uri, email, … are asserted; hostname is not.
        let formats = json!({"properties": {
            "at": {"type": "string", "format": "date-time"},
            "host": {"type": "string", "format": "hostname"},
            "site": {"type": "string", "format": "url"}}});
        assert_eq!(
            problems(
                formats.clone(),
                json!({"at": "not a date", "host": "-bad-", "site": "example.com"})
            ),
            [
                "tool \"t\": argument \"at\" must be a date and time (RFC 3339, such as 2026-01-31T09:30:00Z) (format \"date-time\"); got the text \"not a date\"",
                "tool \"t\": argument \"site\" must be an absolute URL (format \"url\"); got the text \"example.com\"",
            ]
        );
        assert!(
            problems(
                formats,
                json!({"at": "2026-12-02T01:30:00Z", "site": "https://example.com"})
            )
            .is_empty()
        );
    }

    #[test]
    fn a_schema_the_validator_cannot_compile_is_broken_and_says_why() {
        let strict = Strict::new(
            &json!({"properties": {"x": {"$ref": "https://example.com/s.json"}}}),
            true,
        );
        assert!(matches!(strict, Strict::Broken(_)), "{strict:?}");
        let strict = Strict::new(&json!({"properties": {"x": {"pattern": "("}}}), true);
        assert!(matches!(strict, Strict::Broken(_)), "{strict:?}");
        assert_eq!(Strict::new(&json!({"type": "object"}), false), Strict::Off);
    }
}
