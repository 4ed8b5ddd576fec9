//! Casts a tool commonly makes ("5" for 5, 1 for true, "NOTES" for "notes") and JSON Schema's
//! equality of values, for the walk, the quick pass and `enum`.

use serde_json::{Number, Value};

use super::numbers::{integer_text, integral, is_digits, number_text};
use super::ty::Ty;

pub(super) fn cast_to(value: &Value, ty: Ty) -> Option<Value> {
    match (ty, value) {
        (Ty::String, Value::Number(n)) => Some(Value::String(n.to_string())),
        (Ty::Integer, Value::Number(n)) => integral(n.as_f64()?),
        (Ty::Integer, Value::String(s)) => {
            let s = s.trim();
            match integer_text(s) {
                Some(i) => Some(i),
                // Digits alone that fit no integer type are out of range, not a float.
                None if is_digits(s) => None,
                None => integral(number_text(s)?),
            }
        }
        (Ty::Number, Value::String(s)) => {
            let s = s.trim();
            // Integers first, so a large one keeps every digit; text a double would round
            // is not cast at all.
            integer_text(s).or_else(|| {
                (!super::digits::loses_digits(s))
                    .then(|| Number::from_f64(number_text(s)?).map(Value::Number))
                    .flatten()
            })
        }
        (Ty::Boolean, Value::String(s)) => {
            if s.trim().eq_ignore_ascii_case("true") {
                Some(Value::Bool(true))
            } else if s.trim().eq_ignore_ascii_case("false") {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        (Ty::Boolean, Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `value`, given where an integer is declared and cast to nothing, is an integer no
/// `i64` or `u64` holds: digits beyond their range, or a number with no fraction beyond it
/// (`1e20`, `"1e400"`).
pub(super) fn integer_out_of_range(value: &Value) -> bool {
    let x = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if is_digits(s.trim()) => return integer_text(s.trim()).is_none(),
        Value::String(s) => number_text(s.trim()),
        _ => None,
    };
    x.is_some_and(|x| x.is_infinite() || (x.fract() == 0.0 && integral(x).is_none()))
}

/// The enum member `value` stands for: the member equal to it when there is one, else the first
/// it matches after a cast (see [`enum_matches`]), so `"A"` stays `"A"` in `["a", "A"]`.
///
/// Each scan of the members is charged to the open turn's branch budget
/// ([`super::budget::charge_branches`]), as the strict check's are: a long enum judged for
/// many values is a product no other bound sees (a hostile probe: 40,000 values against a
/// 40,000-member enum, 25 s of CPU). Once the budget is spent nothing is found, and the caller
/// reads the refusal from the budget ([`super::budget::refused`]), not as `not-in-enum`.
pub(super) fn enum_member<'m>(members: &'m [Value], value: &Value) -> Option<&'m Value> {
    let branches = members.len() as u64;
    if !super::budget::charge_branches(branches) {
        return None;
    }
    if let Some(member) = members.iter().find(|m| json_equal(m, value)) {
        return Some(member);
    }
    if !super::budget::charge_branches(branches) {
        return None;
    }
    members.iter().find(|m| enum_matches(m, value))
}

/// Whether `value` is the enum member `member`, allowing the casts a tool commonly makes:
/// 2 for "2" and back, and text in another letter case.
fn enum_matches(member: &Value, value: &Value) -> bool {
    if json_equal(member, value) {
        return true;
    }
    match (member, value) {
        (Value::String(m), Value::String(v)) => {
            m.eq_ignore_ascii_case(v)
                || m.chars()
                    .flat_map(char::to_lowercase)
                    .eq(v.chars().flat_map(char::to_lowercase))
        }
        (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
            text_number(s.trim()).is_some_and(|t| same_number(&t, n))
        }
        (Value::String(s), Value::Bool(b)) | (Value::Bool(b), Value::String(s)) => s
            .trim()
            .eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        _ => false,
    }
}

/// Whether `a` and `b` are equal as JSON Schema compares values (`enum`, `const`): numbers by
/// their mathematical value (0 is 0.0), lists item by item, objects member by member in any
/// order. It keeps its own stack, so any nesting compares.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    let mut todo = vec![(a, b)];
    while let Some((a, b)) = todo.pop() {
        let same = match (a, b) {
            (Value::Number(x), Value::Number(y)) => same_number(x, y),
            (Value::Array(x), Value::Array(y)) => {
                todo.extend(x.iter().zip(y));
                x.len() == y.len()
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter().all(|(k, v)| match y.get(k) {
                        Some(w) => {
                            todo.push((v, w));
                            true
                        }
                        None => false,
                    })
            }
            _ => a == b,
        };
        if !same {
            return false;
        }
    }
    true
}

/// Whether two JSON numbers are the same number: exactly when either is an integer (a double
/// past 2^53 stands for many integers, so doubles never decide between integers), else as
/// doubles.
fn same_number(x: &Number, y: &Number) -> bool {
    match (exact_integer(x), exact_integer(y)) {
        (Some(a), Some(b)) => a == b,
        (None, None) => x.as_f64() == y.as_f64(),
        // An integer and a number with a fraction, or one no i128 holds.
        _ => false,
    }
}

/// The integer `n` is exactly: an `i64` or `u64`, or a double with no fraction that an
/// `i128` holds (every such double converts exactly).
fn exact_integer(n: &Number) -> Option<i128> {
    if let Some(i) = n.as_i128() {
        return Some(i);
    }
    let x = n.as_f64()?;
    // 2^127 is exact as a double; every double with no fraction below it is an i128.
    let bound = 170_141_183_460_469_231_731_687_303_715_884_105_728.0_f64;
    (x.fract() == 0.0 && (-bound..bound).contains(&x)).then_some(x as i128)
}

/// The number the text `s` spells, read so that its value is kept: digits as an integer, other
/// decimal text as a double only when the double is exactly what was written.
fn text_number(s: &str) -> Option<Number> {
    if let Some(Value::Number(n)) = integer_text(s) {
        return Some(n);
    }
    if is_digits(s) || super::digits::loses_digits(s) {
        return None;
    }
    Number::from_f64(number_text(s)?)
}
