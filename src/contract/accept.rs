//! Whether a provider accepts a roster as muster sends it: one
//! [`Violation`] per thing the provider would refuse, with a stable code,
//! where it is, and a fix where one is safe. Data the provider module
//! returns and `validate` / `gate` carry.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a provider would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AcceptCode {
    /// `description-too-long`: a function description over the provider's
    /// limit (OpenAI: 1,024 characters).
    DescriptionTooLong,
    /// `name-invalid`: a name the provider's name rule refuses (Gemini: it
    /// must start with a letter or `_`).
    NameInvalid,
    /// `keyword-unsupported`: a schema keyword outside the provider's schema
    /// subset (Gemini's `parameters`: `additionalProperties`, `const`,
    /// `$schema`, ...; OpenAI strict mode: `allOf`, `oneOf`, `not`, `if`, ...).
    KeywordUnsupported,
    /// `type-list`: `"type"` given as a list, which Gemini's `parameters`
    /// refuses.
    TypeList,
    /// `strict-optional-property`: OpenAI strict mode needs every property
    /// listed in `required`.
    StrictOptionalProperty,
    /// `strict-open-object`: OpenAI strict mode needs
    /// `"additionalProperties": false` on every object.
    StrictOpenObject,
    /// `strict-too-many-tools`: more strict tools than Anthropic takes in
    /// one request (20).
    StrictTooManyTools,
    /// `strict-too-many-optional`: more optional parameters across the
    /// strict tools than Anthropic takes in one request (24).
    StrictTooManyOptional,
    /// `strict-too-many-unions`: more parameters with a union type
    /// (`anyOf`, a type list) across the strict tools than Anthropic takes
    /// in one request (16).
    StrictTooManyUnions,
}

impl AcceptCode {
    /// Every code, in order.
    pub const ALL: [AcceptCode; 9] = [
        AcceptCode::DescriptionTooLong,
        AcceptCode::NameInvalid,
        AcceptCode::KeywordUnsupported,
        AcceptCode::TypeList,
        AcceptCode::StrictOptionalProperty,
        AcceptCode::StrictOpenObject,
        AcceptCode::StrictTooManyTools,
        AcceptCode::StrictTooManyOptional,
        AcceptCode::StrictTooManyUnions,
    ];

    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DescriptionTooLong => "description-too-long",
            Self::NameInvalid => "name-invalid",
            Self::KeywordUnsupported => "keyword-unsupported",
            Self::TypeList => "type-list",
            Self::StrictOptionalProperty => "strict-optional-property",
            Self::StrictOpenObject => "strict-open-object",
            Self::StrictTooManyTools => "strict-too-many-tools",
            Self::StrictTooManyOptional => "strict-too-many-optional",
            Self::StrictTooManyUnions => "strict-too-many-unions",
        }
    }
}

/// A rewrite that makes the provider accept the definition without
/// changing what it means to the model or which calls pass muster's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Fix {
    /// `drop-keyword`: remove the keyword; it only annotates the schema
    /// (`$schema`, `$id`, `$comment`, `examples`).
    DropKeyword,
    /// `const-as-enum`: write `"const": v` as `"enum": [v]`.
    ConstAsEnum,
    /// `nullable`: write `"type": [T, "null"]` as `"type": T,
    /// "nullable": true`.
    Nullable,
}

impl Fix {
    /// The stable kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DropKeyword => "drop-keyword",
            Self::ConstAsEnum => "const-as-enum",
            Self::Nullable => "nullable",
        }
    }
}

/// One thing a provider would refuse in a request muster sends.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
pub struct Violation {
    /// What it is.
    pub code: AcceptCode,
    /// The request shape checked: `openai`, `openai-responses`,
    /// `anthropic` or `gemini`.
    pub format: String,
    /// Whether strict mode was asked for.
    pub strict: bool,
    /// The tool's provider name; absent for a request-wide limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Where in the tool's input schema, as a JSON pointer (`""` for the
    /// schema itself); absent when not in the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The keyword or property at fault, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<String>,
    /// The size found (characters, tools, parameters), for a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u64>,
    /// The provider's limit, for a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// A safe fix, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.strict { " (strict)" } else { "" };
        write!(f, "{}{mode} refuses ", self.format)?;
        if let Some(tool) = &self.tool {
            write!(f, "tool {tool}: ")?;
        }
        let at = |f: &mut fmt::Formatter<'_>| match &self.path {
            Some(p) if !p.is_empty() => write!(f, " at {p}"),
            _ => Ok(()),
        };
        let keyword = self.keyword.as_deref().unwrap_or("");
        let (found, limit) = (self.found.unwrap_or(0), self.limit.unwrap_or(0));
        match self.code {
            AcceptCode::DescriptionTooLong => write!(
                f,
                "its description has {found} characters, over the {limit} allowed"
            )?,
            AcceptCode::NameInvalid => write!(f, "its name breaks the provider's name rule")?,
            AcceptCode::KeywordUnsupported => {
                write!(f, "schema keyword `{keyword}`")?;
                at(f)?;
            }
            AcceptCode::TypeList => {
                write!(f, "a list of types")?;
                at(f)?;
            }
            AcceptCode::StrictOptionalProperty => {
                write!(f, "property `{keyword}` is not in `required`")?;
                at(f)?;
            }
            AcceptCode::StrictOpenObject => {
                write!(f, "an object without \"additionalProperties\": false")?;
                at(f)?;
            }
            AcceptCode::StrictTooManyTools => {
                write!(f, "{found} strict tools in one request, over {limit}")?
            }
            AcceptCode::StrictTooManyOptional => write!(
                f,
                "{found} optional parameters across strict tools, over {limit}"
            )?,
            AcceptCode::StrictTooManyUnions => write!(
                f,
                "{found} union-typed parameters across strict tools, over {limit}"
            )?,
        }
        if let Some(fix) = self.fix {
            write!(f, "; safe fix: {}", fix.as_str())?;
        }
        write!(f, " [{}]", self.code.as_str())
    }
}
