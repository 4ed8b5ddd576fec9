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
    numbers(text).find(|literal| loses_digits(literal))
}

/// The number literals of the JSON `text`, in order; numbers inside strings are not numbers.
fn numbers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
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
                    return Some(&text[start..i]);
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// Integers written without a fraction or exponent that serde_json reads as a double, and so
/// would write back otherwise: `-0` (written back `-0.0`) and integers past 64 bits that a
/// double holds exactly (`18446744073709551616`, written back `1.8446744073709552e19`). Each is
/// the double's bits and the literal as written, sorted by bits, found in any of `texts`. A
/// double some literal of `texts` spells with a fraction or exponent too (`-0` and `-0.0`) is
/// left out: which spelling a value came from is then unknown, and serde_json's stands.
pub(crate) fn written_integers<'t>(
    texts: impl IntoIterator<Item = &'t str>,
) -> Vec<(u64, Box<str>)> {
    let mut integers: Vec<(u64, Box<str>)> = Vec::new();
    let mut others: Vec<u64> = Vec::new();
    for literal in texts.into_iter().flat_map(numbers) {
        let integer = !literal.contains(['.', 'e', 'E']);
        // serde_json reads `-0` as the double -0.0, though an i64 holds its value.
        let minus_zero = literal.starts_with('-') && literal[1..].bytes().all(|b| b == b'0');
        if integer
            && !minus_zero
            && (literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok())
        {
            continue;
        }
        match literal.parse::<f64>() {
            Ok(f) if f.is_finite() && integer => integers.push((f.to_bits(), literal.into())),
            Ok(f) => others.push(f.to_bits()),
            Err(_) => {}
        }
    }
    others.sort_unstable();
    integers.retain(|(bits, _)| others.binary_search(bits).is_err());
    integers.sort_unstable();
    integers.dedup_by_key(|(bits, _)| *bits);
    integers
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
            // Two shortest spellings can tie (1963953855025613.25 is as near to …13.2 as to
            // …13.3): serde_json, which writes what the tool receives, picks one and Rust's
            // printer may pick the other, so either is kept.
            let forwarded = serde_json::Number::from_f64(f).map(|n| n.to_string());
            written != decimal(&format!("{f:e}"))
                && forwarded.is_none_or(|text| written != decimal(&text))
                && written != decimal(&format!("{f:.800e}"))
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
            // A tie between two shortest spellings of one double: both are kept.
            "[1963953855025613.2, 1963953855025613.3]",
            r#"{"s": "123456789012345678901234567890", "e": "\"1234567890123456789012\""}"#,
        ] {
            assert_eq!(lossy_number(text), None, "{text}");
        }
    }

    #[test]
    fn integers_a_double_would_write_otherwise_are_kept_as_written() {
        let bits = |x: f64| x.to_bits();
        assert_eq!(
            written_integers([
                r#"{"a": -0, "b": 18446744073709551616, "s": "-0", "c": 1, "d": 1.5}"#
            ]),
            {
                let mut expected: Vec<(u64, Box<str>)> = vec![
                    (bits(-0.0), "-0".into()),
                    (bits(18446744073709551616.0), "18446744073709551616".into()),
                ];
                expected.sort_unstable();
                expected
            }
        );
        // Spelled both ways in one text: which spelling a value came from is unknown.
        assert!(written_integers(["[-0, -0.0, 1e20, 100000000000000000000]"]).is_empty());
        assert!(
            written_integers(["[0, 1, -9223372036854775808, 18446744073709551615]"]).is_empty()
        );
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        // What serde_json writes for a double is what muster forwards, so it is never refused
        // (CI once found 1963953855025613.2, one of two tying shortest spellings).
        #[test]
        fn every_double_serde_json_writes_is_kept(bits in proptest::prelude::any::<u64>()) {
            let x = f64::from_bits(bits);
            if x.is_finite() {
                let text = serde_json::to_string(&x).unwrap();
                proptest::prop_assert!(!loses_digits(&text), "{text}");
            }
        }

        // Between 10^15 and 2^51 a double's step is a quarter, so x.25 and x.75 lie halfway
        // between two 17-digit spellings: every such double is a tie.
        #[test]
        fn a_double_halfway_between_two_shortest_spellings_is_kept(
            whole in 1_000_000_000_000_000u64..(1 << 51),
            three_quarters: bool,
        ) {
            let x = whole as f64 + if three_quarters { 0.75 } else { 0.25 };
            let text = serde_json::to_string(&x).unwrap();
            proptest::prop_assert!(!loses_digits(&text), "{text}");
        }
    }
}
