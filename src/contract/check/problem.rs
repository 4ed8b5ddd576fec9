//! What is wrong with one call (`CallProblem`, one code per kind of
//! problem) and the problem as a report lists it (`CheckProblem`): the data
//! and the sentence `Display` renders from it.

use super::{Got, article, expected, names_listed, quoted};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What is wrong with one call, as data. Serialized tagged by `code` (kebab-case) with the
/// fields of that code; see `docs/check.md` for every code. `Display` gives the sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum CallProblem {
    /// The call names a tool the plan did not offer, and did not defer.
    UnknownTool {
        /// The name the call gave.
        tool: String,
        /// Up to three offered tools with the closest names, closest first.
        closest: Vec<String>,
        /// Whether the turn was offered no tools at all.
        roster_empty: bool,
    },
    /// The call names a deferred tool, which must be loaded first.
    DeferredTool {
        /// The deferred tool.
        tool: String,
        /// The control tool that loads it; null when the plan has none.
        control_tool: Option<String>,
    },
    /// The call's arguments are not readable JSON.
    UnreadableArguments {
        /// The tool called.
        tool: String,
        /// serde_json's reason and where it stopped.
        reason: String,
    },
    /// The call's arguments hold a number no `i64`, `u64` or double holds exactly, which muster
    /// would forward rounded (`123456789012345678901234567890` as `1.2345678901234568e29`).
    LossyNumber {
        /// The tool called.
        tool: String,
        /// The first such number, as written.
        number: String,
    },
    /// The call's arguments are not an object (or a string holding one).
    ArgumentsNotObject {
        /// The tool called.
        tool: String,
        /// What came.
        got: Got,
        /// For text that opens JSON but cannot be read: serde_json's reason.
        reason: Option<String>,
    },
    /// A required argument is missing, or null where its types exclude it.
    MissingArgument {
        /// The tool called.
        tool: String,
        /// The argument path (`filters[2].date`).
        argument: String,
        /// The declared types, when known (`["string"]`).
        expected: Vec<String>,
    },
    /// A value no declared type admits, even after a cast a tool commonly makes.
    WrongType {
        /// The tool called.
        tool: String,
        /// The argument path.
        argument: String,
        /// The declared types, in the order written.
        expected: Vec<String>,
        /// What came.
        got: Got,
    },
    /// An integer no `i64` or `u64` holds, for a tool whose values are cast.
    IntegerOutOfRange {
        /// The tool called.
        tool: String,
        /// The argument path.
        argument: String,
        /// What came.
        got: Got,
    },
    /// Text that is not of the `format` its schema declares, for a format servers enforce
    /// (`uri`, `url`, `email`, `date-time`, `date`, `uuid`, `ipv4`, `ipv6`).
    WrongFormat {
        /// The tool called.
        tool: String,
        /// The argument path.
        argument: String,
        /// The format, as the schema writes it.
        format: String,
        /// What came.
        got: Got,
    },
    /// A value matching no member of its `enum` (after the casts a tool makes).
    NotInEnum {
        /// The tool called.
        tool: String,
        /// The argument path.
        argument: String,
        /// The first ten members.
        allowed: Vec<serde_json::Value>,
        /// How many members are not listed.
        more: usize,
        /// What came.
        got: Got,
    },
    /// A name the schema excludes with `additionalProperties: false`.
    NotAccepted {
        /// The tool called.
        tool: String,
        /// The argument path.
        argument: String,
        /// The first ten names the object accepts.
        accepted: Vec<String>,
        /// How many accepted names are not listed.
        more: usize,
    },
    /// A top-level name the schema does not declare, refused by the tool's policy.
    UndeclaredArgument {
        /// The tool called.
        tool: String,
        /// The argument name.
        argument: String,
        /// The first ten declared names.
        declared: Vec<String>,
        /// How many declared names are not listed.
        more: usize,
    },
    /// A finding of strict checking's JSON Schema validator the codes above do not cover.
    SchemaMismatch {
        /// The tool called.
        tool: String,
        /// The argument path; null when the finding is about the arguments as a whole.
        argument: Option<String>,
        /// The schema keyword that failed (`minimum`, `pattern`, `anyOf`, …).
        keyword: String,
        /// The keyword's value in the schema (`10` for `maximum: 10`), when it has one.
        limit: Option<serde_json::Value>,
        /// What came.
        got: Got,
        /// The validator's own words, for a keyword muster does not phrase itself.
        detail: Option<String>,
    },
    /// Strict checking cannot compile the tool's schema, so no call to it is sent.
    UncheckableSchema {
        /// The tool called.
        tool: String,
        /// The validator's reason.
        reason: String,
    },
    /// Matching a `pattern` that needs the backtracking regex engine would take more work than
    /// one check may do: more than `per_value` steps for this value, or past the `budget` of
    /// steps the whole turn may spend. Nothing of the call is judged or sent.
    CheckBudgetExceeded {
        /// The tool called.
        tool: String,
        /// The argument whose pattern was refused; null when it was refused under a keyword
        /// that judges the arguments as a whole.
        argument: Option<String>,
        /// The backtracking steps one check (the whole turn) may spend.
        budget: u64,
        /// The backtracking steps one value may take.
        per_value: u64,
    },
    /// The count of problems past the ten listed.
    MoreProblems {
        /// The tool called.
        tool: String,
        /// How many more.
        more: usize,
    },
    /// The call fits but is not run because other calls of the turn were refused.
    NotRun {
        /// The tool this call names.
        tool: String,
        /// The first three refused calls' ids (each cut at 64 characters).
        refused: Vec<String>,
        /// How many refused calls are not named.
        more: usize,
    },
}

impl fmt::Display for CallProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool {
                tool,
                closest,
                roster_empty,
            } => {
                if *roster_empty {
                    write!(
                        f,
                        "tool \"{tool}\" was not offered, and this turn was offered no tools"
                    )
                } else if closest.is_empty() {
                    write!(
                        f,
                        "tool \"{tool}\" was not offered, and no offered tool has a similar name; call one of the tools you were offered"
                    )
                } else {
                    write!(
                        f,
                        "tool \"{tool}\" was not offered; expected an offered tool such as {}",
                        quoted(closest)
                    )
                }
            }
            Self::DeferredTool { tool, control_tool } => match control_tool {
                Some(control) => write!(
                    f,
                    "tool \"{tool}\" is deferred, not loaded; call \"{control}\" to load it first, then call it in a later turn"
                ),
                None => write!(
                    f,
                    "tool \"{tool}\" is deferred and this plan offers no tool to load it; use an offered tool instead"
                ),
            },
            Self::UnreadableArguments { tool, reason } => write!(
                f,
                "tool \"{tool}\": the arguments cannot be read as JSON: {reason}; send them again as valid JSON"
            ),
            Self::LossyNumber { tool, number } => write!(
                f,
                "tool \"{tool}\": the number {number} has more digits than muster forwards exactly (a double would round it); send it as a string, or with at most 17 significant digits"
            ),
            Self::ArgumentsNotObject { tool, got, reason } => {
                write!(f, "tool \"{tool}\": the arguments must be an object; got ")?;
                match (reason, got.kind.as_str()) {
                    (Some(reason), _) => {
                        write!(f, "a string that cannot be read as JSON: {reason}")
                    }
                    (None, "string") => f.write_str("a string that is not a JSON object"),
                    (None, kind) => f.write_str(article(kind)),
                }
            }
            Self::MissingArgument {
                tool,
                argument,
                expected: types,
            } => {
                write!(f, "tool \"{tool}\": argument \"{argument}\" is required")?;
                if !types.is_empty() {
                    write!(f, " and must be {}", expected(types))?;
                }
                f.write_str("; got nothing")
            }
            Self::WrongType {
                tool,
                argument,
                expected: types,
                got,
            } => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" must be {}; got {}",
                expected(types),
                got.phrase()
            ),
            Self::IntegerOutOfRange {
                tool,
                argument,
                got,
            } => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" must be an integer from {} to {}; got {}",
                i64::MIN,
                u64::MAX,
                got.shown()
            ),
            Self::WrongFormat {
                tool,
                argument,
                format,
                got,
            } => {
                let what = match format.as_str() {
                    "uri" | "url" => "an absolute URL",
                    "email" => "an email address",
                    "date-time" => "a date and time (RFC 3339, such as 2026-01-31T09:30:00Z)",
                    "date" => "a date (YYYY-MM-DD)",
                    "uuid" => "a UUID",
                    "ipv4" => "an IPv4 address",
                    "ipv6" => "an IPv6 address",
                    _ => "text",
                };
                write!(
                    f,
                    "tool \"{tool}\": argument \"{argument}\" must be {what} (format \"{format}\"); got {}",
                    got.phrase()
                )
            }
            Self::NotInEnum {
                tool,
                argument,
                allowed,
                more,
                got,
            } => {
                let mut members: Vec<String> = allowed.iter().map(|m| Got::of(m).shown()).collect();
                if members.len() == 1 && *more == 0 {
                    return write!(
                        f,
                        "tool \"{tool}\": argument \"{argument}\" must be {}; got {}",
                        members[0],
                        got.shown()
                    );
                }
                if *more > 0 {
                    members.push(format!("(and {more} more)"));
                }
                write!(
                    f,
                    "tool \"{tool}\": argument \"{argument}\" must be one of {}; got {}",
                    members.join(", "),
                    got.shown()
                )
            }
            Self::NotAccepted {
                tool,
                argument,
                accepted,
                more,
            } if accepted.is_empty() => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" is not accepted; the schema accepts no members there"
            ),
            Self::NotAccepted {
                tool,
                argument,
                accepted,
                more,
            } => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" is not accepted; expected only {}",
                names_listed(accepted, *more)
            ),
            Self::UndeclaredArgument {
                tool,
                argument,
                declared,
                more,
            } if declared.is_empty() => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" is not declared; the tool takes no arguments"
            ),
            Self::UndeclaredArgument {
                tool,
                argument,
                declared,
                more,
            } => write!(
                f,
                "tool \"{tool}\": argument \"{argument}\" is not declared; expected only {}",
                names_listed(declared, *more)
            ),
            Self::SchemaMismatch {
                tool,
                argument,
                keyword,
                limit,
                got,
                detail,
            } => {
                match argument {
                    Some(argument) => write!(f, "tool \"{tool}\": argument \"{argument}\" ")?,
                    None => write!(f, "tool \"{tool}\": the arguments ")?,
                }
                let limit_text = limit.as_ref().map(ToString::to_string).unwrap_or_default();
                let came = got.phrase();
                match keyword.as_str() {
                    "const" => {
                        let member = limit
                            .as_ref()
                            .map(|l| Got::of(l).shown())
                            .unwrap_or_default();
                        write!(f, "must be {member}; got {}", got.shown())
                    }
                    "minimum" => write!(f, "must be at least {limit_text}; got {came}"),
                    "maximum" => write!(f, "must be at most {limit_text}; got {came}"),
                    "exclusiveMinimum" => {
                        write!(f, "must be greater than {limit_text}; got {came}")
                    }
                    "exclusiveMaximum" => write!(f, "must be less than {limit_text}; got {came}"),
                    "multipleOf" => write!(f, "must be a multiple of {limit_text}; got {came}"),
                    "minLength" => {
                        write!(
                            f,
                            "must be at least {limit_text} characters long; got {came}"
                        )
                    }
                    "maxLength" => {
                        write!(
                            f,
                            "must be at most {limit_text} characters long; got {came}"
                        )
                    }
                    "pattern" => write!(f, "must match the pattern {limit_text}; got {came}"),
                    "minItems" => write!(
                        f,
                        "must have at least {limit_text} items; got {}",
                        got.count()
                    ),
                    "maxItems" => write!(
                        f,
                        "must have at most {limit_text} items; got {}",
                        got.count()
                    ),
                    "minProperties" => {
                        write!(
                            f,
                            "must have at least {limit_text} members; got {}",
                            got.count()
                        )
                    }
                    "maxProperties" => {
                        write!(
                            f,
                            "must have at most {limit_text} members; got {}",
                            got.count()
                        )
                    }
                    "uniqueItems" => {
                        f.write_str("must not list an item twice; got a list with a repeated item")
                    }
                    "additionalProperties" | "unevaluatedProperties" => {
                        let names: Vec<String> = limit
                            .as_ref()
                            .and_then(serde_json::Value::as_array)
                            .map(|n| n.iter().map(ToString::to_string).collect())
                            .unwrap_or_default();
                        write!(
                            f,
                            "must not have the members {}; the schema does not accept them",
                            names.join(", ")
                        )
                    }
                    "anyOf" => {
                        write!(
                            f,
                            "must match at least one of the shapes its schema lists under anyOf; got {came}"
                        )?;
                        closest(f, detail.as_deref())
                    }
                    "oneOf" if detail.as_deref() == Some(ONE_OF_MORE_THAN_ONE) => write!(
                        f,
                        "must match exactly one of the shapes its schema lists under oneOf; got {came}, which matches more than one"
                    ),
                    "oneOf" => {
                        write!(
                            f,
                            "must match one of the shapes its schema lists under oneOf; got {came}"
                        )?;
                        closest(f, detail.as_deref())
                    }
                    "not" => write!(
                        f,
                        "must not match the shape its schema gives under not; got {came}"
                    ),
                    "false" => write!(f, "is not accepted here; got {came}"),
                    "contains" => f.write_str(
                        "must contain an item matching the schema under contains; got none",
                    ),
                    _ => write!(
                        f,
                        "does not match its schema ({keyword}): {}",
                        detail.as_deref().unwrap_or("no detail")
                    ),
                }
            }
            Self::UncheckableSchema { tool, reason } => write!(
                f,
                "tool \"{tool}\": its input schema cannot be compiled for strict checking ({reason}), so no call to it can be judged and none is sent; use another tool"
            ),
            Self::CheckBudgetExceeded {
                tool,
                argument,
                budget,
                per_value,
            } => {
                let at = argument.as_ref().map_or_else(
                    || "the arguments".to_string(),
                    |a| format!("argument \"{a}\""),
                );
                write!(
                    f,
                    "tool \"{tool}\": matching {at} against its schema's pattern needs more work than a check may do (at most {per_value} backtracking steps per value and {budget} per turn), so the call is not judged and not sent; send shorter values, or fewer in one turn"
                )
            }
            Self::MoreProblems { tool, more } => write!(
                f,
                "tool \"{tool}\": and {more} more problem{} not listed here",
                if *more == 1 { "" } else { "s" }
            ),
            Self::NotRun {
                tool,
                refused,
                more,
            } => {
                let plural = if refused.len() + more == 1 { "" } else { "s" };
                let ids = if *more > 0 {
                    let named: Vec<String> = refused.iter().map(|n| format!("\"{n}\"")).collect();
                    format!("{} and {more} more", named.join(", "))
                } else {
                    quoted(refused)
                };
                write!(
                    f,
                    "tool \"{tool}\": not run because call{plural} {ids} of this turn did not fit; send this call again together with the corrected call{plural}"
                )
            }
        }
    }
}

impl CallProblem {
    /// The stable kebab-case code, as serialized.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown-tool",
            Self::DeferredTool { .. } => "deferred-tool",
            Self::UnreadableArguments { .. } => "unreadable-arguments",
            Self::LossyNumber { .. } => "lossy-number",
            Self::ArgumentsNotObject { .. } => "arguments-not-object",
            Self::MissingArgument { .. } => "missing-argument",
            Self::WrongType { .. } => "wrong-type",
            Self::IntegerOutOfRange { .. } => "integer-out-of-range",
            Self::WrongFormat { .. } => "wrong-format",
            Self::NotInEnum { .. } => "not-in-enum",
            Self::NotAccepted { .. } => "not-accepted",
            Self::UndeclaredArgument { .. } => "undeclared-argument",
            Self::SchemaMismatch { .. } => "schema-mismatch",
            Self::UncheckableSchema { .. } => "uncheckable-schema",
            Self::CheckBudgetExceeded { .. } => "check-budget-exceeded",
            Self::MoreProblems { .. } => "more-problems",
            Self::NotRun { .. } => "not-run",
        }
    }
}

/// The `detail` of a `oneOf` mismatch whose value matches more than one shape.
pub const ONE_OF_MORE_THAN_ONE: &str = "more than one shape matches";

/// The cause of an `anyOf` / `oneOf` mismatch, when the validator named one.
fn closest(f: &mut fmt::Formatter<'_>, cause: Option<&str>) -> fmt::Result {
    match cause {
        Some(cause) => write!(f, "; the closest shape says: {cause}"),
        None => Ok(()),
    }
}

/// One problem of a call as the check report carries it: the typed problem, flattened (its
/// `code` and fields), and `message`, its sentence for people. Clients act on the code and
/// fields; the message is never to be parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct CheckProblem {
    /// The problem as data.
    #[serde(flatten)]
    pub problem: CallProblem,
    /// The sentence `Display` gives for `problem`.
    pub message: String,
}

impl From<CallProblem> for CheckProblem {
    fn from(problem: CallProblem) -> Self {
        let message = problem.to_string();
        Self { problem, message }
    }
}

impl fmt::Display for CheckProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
