//! The type model: the JSON types a schema node declares, and which values a tool can read
//! as each type, as sent or after a cast.

use serde_json::Value;

use super::numbers::{integer_text, is_digits, number_text};

/// A declared JSON type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
    Null,
}

impl Ty {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            "object" => Self::Object,
            "null" => Self::Null,
            _ => return None,
        })
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The JSON Schema name of the type.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Array => "array",
            Self::Object => "object",
            Self::Null => "null",
        }
    }

    /// Whether a tool can read `value` as this type, possibly after a cast: the value already
    /// is this type, or a cast a tool commonly makes reads it as one ("5" and 5.0 for an
    /// integer, a number for text, "true", 1 and 0 for a boolean). A scalar no such cast reads
    /// ("soon" or 5.5 for an integer, "maybe" for a boolean, a boolean for text, anything but
    /// null for null) is not admitted, nor is a container where a scalar is declared, nor
    /// anything but a list where a list is declared: Pydantic's lax mode, zod and JSON Schema
    /// all refuse a lone scalar for a list and a boolean for text (issue 21).
    pub(crate) fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::String, Value::String(_) | Value::Number(_)) => true,
            (Self::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
            }
            (Self::Integer, Value::String(s)) => {
                let s = s.trim();
                // Digits beyond every integer type still spell an integer; the cast refuses them
                // as out of range.
                is_digits(s) || number_text(s).is_some_and(|x| x.is_infinite() || x.fract() == 0.0)
            }
            (Self::Number, Value::Number(_)) => true,
            (Self::Number, Value::String(s)) => {
                let s = s.trim();
                integer_text(s).is_some() || number_text(s).is_some_and(f64::is_finite)
            }
            (Self::Boolean, Value::Bool(_)) => true,
            (Self::Boolean, Value::String(s)) => {
                let s = s.trim();
                s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false")
            }
            (Self::Boolean, Value::Number(n)) => {
                matches!(n.as_f64(), Some(x) if x == 1.0 || x == 0.0)
            }
            (Self::Null, Value::Null) => true,
            (Self::Array, Value::Array(_)) => true,
            (Self::Object, Value::Object(_)) => true,
            _ => false,
        }
    }

    /// Whether `value` already is this type, needing no cast.
    pub(crate) fn holds(self, value: &Value) -> bool {
        match (self, value) {
            (Self::String, Value::String(_))
            | (Self::Number, Value::Number(_))
            | (Self::Boolean, Value::Bool(_))
            | (Self::Array, Value::Array(_))
            | (Self::Object, Value::Object(_))
            | (Self::Null, Value::Null) => true,
            (Self::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        }
    }
}

/// The types a schema node declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Declared {
    /// No `type` keyword: any kind.
    #[default]
    Any,
    /// A set of known types (bits of [`Ty::bit`]).
    Types(u8),
    /// A type the check cannot read (an unknown name or a malformed `type`).
    Unreadable,
}

impl Declared {
    pub(crate) fn of(type_keyword: Option<&Value>) -> Self {
        match type_keyword {
            None => Self::Any,
            Some(Value::String(name)) => {
                Ty::parse(name).map_or(Self::Unreadable, |t| Self::Types(t.bit()))
            }
            Some(Value::Array(names)) if !names.is_empty() => {
                let mut bits = 0;
                for name in names {
                    match name.as_str().and_then(Ty::parse) {
                        Some(t) => bits |= t.bit(),
                        None => return Self::Unreadable,
                    }
                }
                Self::Types(bits)
            }
            Some(_) => Self::Unreadable,
        }
    }

    /// The types of the schema node `schema`, without judging whether the node is skipped.
    pub(crate) fn of_schema(schema: &Value) -> Self {
        match schema {
            Value::Object(node) => Self::of(node.get("type")),
            _ => Self::Any,
        }
    }

    pub(crate) fn has(self, ty: Ty) -> bool {
        matches!(self, Self::Types(bits) if bits & ty.bit() != 0)
    }

    /// Whether null is excluded: only a readable type list without "null" excludes it.
    pub(super) fn excludes_null(self) -> bool {
        matches!(self, Self::Types(_)) && !self.has(Ty::Null)
    }
}
