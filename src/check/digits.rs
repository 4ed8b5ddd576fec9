//! Numbers that would lose digits. serde_json reads a number no 64-bit
//! integer holds as the nearest double, so `123456789012345678901234567890`
//! would reach the tool as `1.2345678901234568e29`. This module finds such a
//! number in JSON text, so the check refuses the call instead of rounding it
//! silently. It decides nothing else and never changes a value.

/// The first number in the JSON `text` whose value a double would change:
/// one that no `i64`, `u64` or double holds exactly and that the nearest
/// double does not print as (`123456789012345678901234567890`, or a
/// fraction with more significant digits than a double keeps). Numbers
/// inside strings are not numbers. Text that is not JSON is scanned as far
/// as it goes; the parser reports what is wrong with it.
pub(crate) fn lossy_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let literal = &text[start..i];
                if loses_digits(literal) {
                    return Some(literal);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether reading `literal` as serde_json does (or as a double, for text
/// that spells a number) changes its value.
pub(crate) fn loses_digits(literal: &str) -> bool {
    let integer = !literal.contains(['.', 'e', 'E']);
    if integer && (literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok()) {
        return false;
    }
    match literal.parse::<f64>() {
        // Out of range or malformed: serde_json refuses it itself.
        Ok(f) if f.is_finite() => {
            let written = decimal(literal);
            // Kept when the double prints as written, or is exactly what was written (2^64
            // prints shorter, but is the same number). 800 digits spell any double exactly.
            written != decimal(&format!("{f:e}")) && written != decimal(&format!("{f:.800e}"))
        }
        _ => false,
    }
}

/// `literal`'s value as significant digits and the power of ten of the
/// place before the first one (`0.d1d2… × 10^e`): equal for equal values.
fn decimal(literal: &str) -> Option<(String, i64)> {
    let unsigned = literal.trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0');
    let leading = (digits.len() - significant.len()) as i64;
    let significant = significant.trim_end_matches('0');
    if significant.is_empty() {
        return Some((String::new(), 0));
    }
    Some((
        significant.to_string(),
        whole.len() as i64 + exponent - leading,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_a_double_or_a_64_bit_integer_holds_are_kept() {
        for text in [
            r#"{"a": 1, "b": -9223372036854775808, "c": 18446744073709551615}"#,
            r#"[0.1, 1.50, 1e2, 100.0, -0.0, 0e5, 2.5e-3, 100000000000000000000, 1.7976931348623157e308]"#,
            "[18446744073709551616, 0.5000000000000000000000000000000000000]",
            r#"{"s": "123456789012345678901234567890", "e": "\"1234567890123456789012\""}"#,
        ] {
            assert_eq!(lossy_number(text), None, "{text}");
        }
    }

    #[test]
    fn numbers_that_would_be_rounded_are_found() {
        assert_eq!(
            lossy_number(r#"{"n": "x", "m": 123456789012345678901234567890}"#),
            Some("123456789012345678901234567890")
        );
        assert_eq!(
            lossy_number("[18446744073709551617]"),
            Some("18446744073709551617")
        );
        assert_eq!(
            lossy_number("[-9223372036854775809]"),
            Some("-9223372036854775809")
        );
        assert_eq!(
            lossy_number("[1.23456789012345678901]"),
            Some("1.23456789012345678901")
        );
        assert_eq!(
            lossy_number("[0.1000000000000000055511151231257827]"),
            Some("0.1000000000000000055511151231257827")
        );
    }
}
