//! Reading numbers from JSON numbers and text, as the type model and the casts both do.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The integer a float with no fraction is, when an `i64` or `u64` holds it.
pub(super) fn integral(x: f64) -> Option<Value> {
    if !x.is_finite() || x.fract() != 0.0 {
        return None;
    }
    // 2^63 and 2^64 are exact as floats; the casts below are exact inside these bounds.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        Some(Value::from(x as i64))
    } else if (0.0..18_446_744_073_709_551_616.0).contains(&x) {
        Some(Value::from(x as u64))
    } else {
        None
    }
}

/// The integer the text `s` spells with digits alone, when an `i64` or else a `u64` holds it.
pub(super) fn integer_text(s: &str) -> Option<Value> {
    s.parse::<i64>()
        .map(Value::from)
        .or_else(|_| s.parse::<u64>().map(Value::from))
        .ok()
}

/// Whether `s` is an optional sign and decimal digits only.
pub(super) fn is_digits(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The number the text `s` spells in decimal notation (no `inf` or `NaN`); infinite when it
/// is too large for a float.
pub(super) fn number_text(s: &str) -> Option<f64> {
    let numeric = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    numeric.then(|| s.parse::<f64>().ok()).flatten()
}

/// `value` as forwarded: a double whose bits `written` lists is written as the integer the model
/// wrote ([`super::digits::written_integers`]); everything else as serde_json writes it.
pub(crate) struct AsWritten<'a> {
    pub value: &'a Value,
    pub written: &'a [(u64, Box<str>)],
}

impl Serialize for AsWritten<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let written = self.written;
        if written.is_empty() {
            return self.value.serialize(serializer);
        }
        let each = |value| AsWritten { value, written };
        match self.value {
            Value::Number(number) if number.is_f64() => {
                let bits = number.as_f64().map(f64::to_bits);
                match bits.and_then(|bits| written.binary_search_by_key(&bits, |(b, _)| *b).ok()) {
                    Some(at) => RawValue::from_string(written[at].1.to_string())
                        .map_err(serde::ser::Error::custom)?
                        .serialize(serializer),
                    None => number.serialize(serializer),
                }
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(each)),
            Value::Object(map) => {
                serializer.collect_map(map.iter().map(|(name, value)| (name, each(value))))
            }
            other => other.serialize(serializer),
        }
    }
}
