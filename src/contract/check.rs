//! The call check's typed shapes: how a tool's calls are checked (`CheckMode`), as the policy
//! chooses it, the plan carries it and the check reads it back.

mod note;
mod problem;

pub use note::{CallNote, CheckNote, Held};
pub use problem::{CallProblem, CheckProblem, ONE_OF_MORE_THAN_ONE};

use serde::{Deserialize, Serialize};

/// How a tool's calls are judged. Serialized as `"lenient"` or `"strict"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CheckMode {
    /// The argument-check record's rules only: refuse what no tool can read, pass what a tool
    /// commonly reads after a cast, skip what the check cannot judge (the default for
    /// configured tools).
    Lenient,
    /// The lenient rules, then the forwarded arguments validated against the tool's whole
    /// input schema by a JSON Schema validator, as an MCP server validates them (the default for
    /// MCP tools).
    Strict,
}

impl CheckMode {
    /// The mode named `text` in a policy file, when it is one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "lenient" => Some(Self::Lenient),
            "strict" => Some(Self::Strict),
            _ => None,
        }
    }

    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lenient => "lenient",
            Self::Strict => "strict",
        }
    }
}

/// What happens to an argument name a tool's schema does not declare (where the schema does
/// not already exclude it with `additionalProperties: false`). Serialized as `"refuse"`,
/// `"drop"` or `"pass"`; the policy's `unknown_arguments` and the plan's
/// `roster[].unknown_arguments` spell it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum UnknownArguments {
    /// The call is refused naming the argument (the default: ignoring a `limit` the tool does
    /// not have would tell the model a bound applied that did not).
    #[default]
    Refuse,
    /// The argument is dropped and the drop noted.
    Drop,
    /// The argument is forwarded to the tool as given.
    Pass,
}

impl UnknownArguments {
    /// The choice named `text` in a policy file, when it is one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "refuse" => Some(Self::Refuse),
            "drop" => Some(Self::Drop),
            "pass" => Some(Self::Pass),
            _ => None,
        }
    }
}

/// What came where a problem is: the kind of value and, for a scalar, the value itself (text
/// cut to 57 characters, with `cut` set), and for a list or object how many items or members.
///
/// JSON: `{"kind": "string" | "number" | "boolean" | "null" | "array" | "object", "value"?: <the
/// scalar>, "cut"?: true, "len"?: <count>}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Got {
    /// The JSON type of the value.
    pub kind: String,
    /// The scalar, when it is one (strings cut short when long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Whether `value` is text cut short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Items of a list or members of an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<usize>,
}

/// The longest text a problem quotes in full.
const SHOWN_CHARS: usize = 60;

impl Got {
    /// What `value` is, as a problem records it.
    pub fn of(value: &serde_json::Value) -> Self {
        use serde_json::Value;
        let (kind, value, cut, len) = match value {
            Value::Null => ("null", None, false, None),
            Value::Bool(b) => ("boolean", Some(Value::Bool(*b)), false, None),
            Value::Number(n) => ("number", Some(Value::Number(n.clone())), false, None),
            Value::String(s) if s.chars().count() > SHOWN_CHARS => {
                let head: String = s.chars().take(SHOWN_CHARS - 3).collect();
                ("string", Some(Value::String(head)), true, None)
            }
            Value::String(s) => ("string", Some(Value::String(s.clone())), false, None),
            Value::Array(items) => ("array", None, false, Some(items.len())),
            Value::Object(map) => ("object", None, false, Some(map.len())),
        };
        Self {
            kind: kind.to_string(),
            value,
            cut,
            len,
        }
    }

    /// The value as JSON (`"web"`, `5`), or its kind for a container (`a list`).
    pub fn shown(&self) -> String {
        match &self.value {
            Some(value) if self.cut => format!("{value}…"),
            Some(value) => value.to_string(),
            None => article(&self.kind).to_string(),
        }
    }

    /// The value with its kind named (`the text "soon"`, `the number 5.5`, `a list`).
    pub fn phrase(&self) -> String {
        match self.kind.as_str() {
            "string" => format!("the text {}", self.shown()),
            "number" => format!("the number {}", self.shown()),
            "boolean" => format!("the boolean {}", self.shown()),
            _ => self.shown(),
        }
    }

    /// `3 items`, `1 member`, or the phrase for a scalar.
    fn count(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match (self.kind.as_str(), self.len) {
            ("array", Some(n)) => format!("{n} item{}", plural(n)),
            ("object", Some(n)) => format!("{n} member{}", plural(n)),
            _ => self.phrase(),
        }
    }
}

/// "a string", "an integer", … for a JSON Schema type name.
fn article(name: &str) -> &str {
    match name {
        "string" => "a string",
        "number" => "a number",
        "integer" => "an integer",
        "boolean" => "a boolean",
        "array" => "a list",
        "object" => "an object",
        "null" => "null",
        _ => "a value",
    }
}

/// "a string, an integer or null" for type names.
fn expected(types: &[String]) -> String {
    let words: Vec<&str> = types.iter().map(|t| article(t)).collect();
    match words.as_slice() {
        [] => "a value".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn quoted(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Names listed as in "expected only …", with the count of those left out.
fn names_listed(names: &[String], more: usize) -> String {
    let mut out: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    if more > 0 {
        out.push(format!("(and {more} more)"));
    }
    out.join(", ")
}

/// `check --fingerprint`'s answer when the plan the policy makes now is not
/// the plan the model was offered: the policy, the selection or the caps
/// changed since, so the turn is not judged against a roster the model never
/// saw (docs/check.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlanChanged {
    /// Always `plan-changed`.
    pub code: PlanChangedCode,
    /// [`PLAN_CHANGED_FORMAT_VERSION`].
    pub format_version: u32,
    /// The fingerprint the caller sent: the plan the model was offered.
    pub offered: String,
    /// The fingerprint of the plan the policy makes now for that selection.
    pub now: String,
}

/// [`PlanChanged`]'s code: one value, so a client can tell the answer from
/// a check report by its `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum PlanChangedCode {
    /// The named plan is not the one the policy makes now.
    PlanChanged,
}

/// The shape of [`PlanChanged`]; bumped when it changes.
pub const PLAN_CHANGED_FORMAT_VERSION: u32 = 1;

impl std::fmt::Display for PlanChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plan changed: the model was offered the plan {}, but this policy now plans {} for that selection; the turn was not checked. Check it against the offered plan itself (--plan), or plan again and offer the new roster",
            self.offered, self.now
        )
    }
}
