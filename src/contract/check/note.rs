//! What the check repaired or dropped in one call's arguments
//! (`CallNote`, one code per repair) and the note as a report lists it
//! (`CheckNote`): the data and the sentence `Display` renders from it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// What a JSON string held where a list or object was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Held {
    /// A JSON list.
    List,
    /// A JSON object.
    Object,
}

/// A repair or drop the check made to one call's arguments, as data. Serialized tagged by
/// `code` (kebab-case) with the fields of that code; see `docs/check.md` for every code.
/// `call` is the call's id and `argument` the argument path as problems spell it
/// (`filters[2].date`). `Display` gives the sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum CallNote {
    /// The arguments were a JSON string holding an object; read as that object.
    ArgumentsUnwrapped {
        /// The call's id.
        call: String,
    },
    /// The arguments were blank text; read as no arguments.
    BlankArguments {
        /// The call's id.
        call: String,
    },
    /// A top-level argument declared as a list or object was a JSON string holding one; read as
    /// what it held.
    ArgumentUnwrapped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
        /// What the string held.
        held: Held,
    },
    /// An argument the policy fixes (MCP `params`) was written by the model and dropped; the
    /// policy's value is forwarded instead.
    FixedArgumentDropped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
        /// The value the policy sets.
        value: Value,
    },
    /// An argument outside the tool's `only` list was dropped.
    OutsideOnlyDropped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
        /// The tool's name.
        tool: String,
        /// The arguments `only` lets the model write.
        only: Vec<String>,
    },
    /// Null for an optional argument whose types exclude null was dropped: it is sent as left
    /// out.
    NullOptionalDropped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
    },
    /// An argument the tool does not declare was dropped (`unknown_arguments = "drop"`).
    UndeclaredArgumentDropped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
    },
    /// An argument with no place in the tool's positional form was dropped.
    NotAParameterDropped {
        /// The call's id.
        call: String,
        /// The argument.
        argument: String,
        /// The tool's name.
        tool: String,
    },
}

impl CallNote {
    /// The stable kebab-case code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ArgumentsUnwrapped { .. } => "arguments-unwrapped",
            Self::BlankArguments { .. } => "blank-arguments",
            Self::ArgumentUnwrapped { .. } => "argument-unwrapped",
            Self::FixedArgumentDropped { .. } => "fixed-argument-dropped",
            Self::OutsideOnlyDropped { .. } => "outside-only-dropped",
            Self::NullOptionalDropped { .. } => "null-optional-dropped",
            Self::UndeclaredArgumentDropped { .. } => "undeclared-argument-dropped",
            Self::NotAParameterDropped { .. } => "not-a-parameter-dropped",
        }
    }
}

/// A fixed value as a note shows it: a scalar as JSON (cut at 60 characters), a list or
/// object by its kind.
fn short(value: &Value) -> String {
    let text = match value {
        Value::Array(_) => return "a list".to_string(),
        Value::Object(_) => return "an object".to_string(),
        other => other.to_string(),
    };
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

impl fmt::Display for CallNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ArgumentsUnwrapped { call } => write!(
                f,
                "call \"{call}\": the arguments were a JSON string holding an object; read as that object"
            ),
            Self::BlankArguments { call } => write!(
                f,
                "call \"{call}\": the arguments were blank text; read as no arguments"
            ),
            Self::ArgumentUnwrapped {
                call,
                argument,
                held,
            } => {
                let (a, what) = match held {
                    Held::List => ("a", "list"),
                    Held::Object => ("an", "object"),
                };
                write!(
                    f,
                    "call \"{call}\": argument \"{argument}\" was a JSON string holding {a} {what}; read as that {what}"
                )
            }
            Self::FixedArgumentDropped {
                call,
                argument,
                value,
            } => write!(
                f,
                "call \"{call}\": dropped argument \"{argument}\": the policy sets it to {}",
                short(value)
            ),
            Self::OutsideOnlyDropped {
                call,
                argument,
                tool,
                only,
            } => {
                let only: Vec<String> = only.iter().map(|o| format!("\"{o}\"")).collect();
                write!(
                    f,
                    "call \"{call}\": dropped argument \"{argument}\": tool \"{tool}\" takes only {}",
                    only.join(", ")
                )
            }
            Self::NullOptionalDropped { call, argument } => write!(
                f,
                "call \"{call}\": dropped argument \"{argument}\": null for an optional argument is sent as left out"
            ),
            Self::UndeclaredArgumentDropped { call, argument } => write!(
                f,
                "call \"{call}\": dropped argument \"{argument}\": the tool does not declare it"
            ),
            Self::NotAParameterDropped {
                call,
                argument,
                tool,
            } => write!(
                f,
                "call \"{call}\": dropped argument \"{argument}\": tool \"{tool}\" has no parameter of that name in its positional form"
            ),
        }
    }
}

/// One note of a call as the check report carries it: the typed note, flattened (its `code`
/// and fields), and `message`, its sentence for people. Clients act on the code and fields;
/// the message is never to be parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct CheckNote {
    /// The note as data.
    #[serde(flatten)]
    pub note: CallNote,
    /// The sentence `Display` gives for `note`.
    pub message: String,
}

impl From<CallNote> for CheckNote {
    fn from(note: CallNote) -> Self {
        let message = note.to_string();
        Self { note, message }
    }
}

impl fmt::Display for CheckNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
