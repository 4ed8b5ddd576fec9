//! Counting a whole chat request: the input tokens a provider will bill for
//! its messages, its tools and its `tool_choice`, from the provider's own
//! JSON request body.
//!
//! This module decides which provider and model a request is for and reads
//! the body's shape, refusing anything it cannot count with an error that
//! names the field and what to change. The formulas live beside it:
//! [`openai`] (exact on every public API-measured example muster carries)
//! and [`anthropic`] (an estimate: Anthropic publishes no tokenizer). The
//! rendering of one tool definition is [`crate::tokens`]'s, so a request
//! counts its tools as the planner counts them.
//!
//! It reads no file and prints nothing; the binary and the service hand it
//! text.

pub mod anthropic;
pub mod openai;

use crate::contract::{CountReport, Provider};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use serde_json::Value;
use std::path::Path;

/// What the caller says about a request beyond its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountOptions {
    /// Whose billing to follow; `None`: from the model's name.
    pub provider: Option<Provider>,
    /// The model; `None`: the body's `model`.
    pub model: Option<String>,
}

/// Counts the request in `text` (the body's JSON), read from `file` (named
/// in errors; `-` for standard input).
///
/// # Errors
/// [`ErrorKind::Input`] naming the file, the line or field and what to
/// change when the text is not JSON, a field has the wrong shape, or the
/// model is unknown; [`ErrorKind::Usage`] when the provider cannot be told.
///
/// # Example
/// ```
/// use muster::count::{count_text, CountOptions};
/// let body = r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}"#;
/// let report = count_text(body, "request.json".as_ref(), &CountOptions::default()).unwrap();
/// assert_eq!(report.input_tokens, 8);
/// ```
pub fn count_text(text: &str, file: &Path, options: &CountOptions) -> Result<CountReport, Error> {
    // A member named twice (`"model"` twice would switch the provider) is refused.
    let request: Value = crate::unique::from_str(text).map_err(|err| {
        Error::json(
            file,
            "request",
            &err,
            "give the provider's JSON request body: an object with `messages`",
        )
    })?;
    count(&request, options).map_err(|problem| {
        let mut problem = problem.in_file(file);
        if problem.help.is_none() {
            problem = problem.help("correct the request body");
        }
        Error::new(ErrorKind::Input, problem)
    })
}

/// Counts one request body.
///
/// # Errors
/// A [`Problem`] naming the field and what to change.
pub fn count(request: &Value, options: &CountOptions) -> Result<CountReport, Problem> {
    let Some(body) = request.as_object() else {
        return Err(Problem::coded(
            code::INVALID_REQUEST,
            format!("the request is {}, not an object", kind_of(request)),
        )
        .help("give the provider's JSON request body: an object with `messages`"));
    };
    let model = match (&options.model, body.get("model")) {
        (Some(model), _) => model.clone(),
        (None, Some(Value::String(model))) => model.clone(),
        (None, Some(other)) => {
            return Err(field("model", "a string", other));
        }
        (None, None) => {
            return Err(
                Problem::coded(code::INVALID_REQUEST, "the request names no `model`")
                    .help("add \"model\" to the request, or pass --model NAME"),
            );
        }
    };
    let provider = match options.provider {
        Some(p) => p,
        None => provider_of(&model).ok_or_else(|| {
            Problem::coded(
                code::UNKNOWN_NAME,
                format!("cannot tell the provider of model {model:?} from its name"),
            )
            .help("pass --provider openai or --provider anthropic")
        })?,
    };
    match provider {
        Provider::Openai => openai::count(body, &model),
        Provider::Anthropic => anthropic::count(body, &model),
    }
}

/// The provider a model name belongs to, by its family prefix.
pub fn provider_of(model: &str) -> Option<Provider> {
    if model.starts_with("claude-") {
        Some(Provider::Anthropic)
    } else if openai::encoding_of(model).is_some() {
        Some(Provider::Openai)
    } else {
        None
    }
}

/// `field` has the wrong JSON type.
pub(crate) fn field(path: &str, wanted: &str, got: &Value) -> Problem {
    Problem::coded(
        code::INVALID_REQUEST,
        format!("`{path}` is {}, not {wanted}", kind_of(got)),
    )
    .help(format!("make `{path}` {wanted}"))
}

/// "a string", "an array", … for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The string at `key` of `object`, or an error naming `path`.
pub(crate) fn string_at<'a>(
    object: &'a serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, Problem> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(field(&format!("{path}.{key}"), "a string", other)),
    }
}
