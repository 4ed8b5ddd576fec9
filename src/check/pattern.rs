//! The `pattern` keyword as strict checking runs it, in place of the validator's own: a
//! pattern the linear engine takes is matched exactly as the validator matches it (its own
//! validator for `{"pattern": …}`); a pattern that needs the backtracking engine is matched
//! under a ladder of backtracking limits ([`RUNGS`]), each attempt charged to the turn's
//! budget ([`super::budget`]) before it runs. A value that needs more than the last rung, or a
//! turn whose budget is spent, is refused `check-budget-exceeded`: this keyword never decides
//! that a value does not match because matching was cut short. It decides nothing else.

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::Location;
use jsonschema::{Keyword, PatternOptions, ValidationError, Validator};
use serde_json::{Map, Value, json};

/// The backtracking limits a value is matched under, smallest first; each attempt is charged
/// its limit (an upper bound of the steps it took), and the next is tried only when the
/// engine hit the limit. The last is the most one value may take: real servers' patterns need
/// at most a few steps (docs/limits.md), a value needing more than 10,000 is refused.
pub(crate) const RUNGS: [u64; 3] = [64, 1_024, 10_000];

/// The most backtracking steps one value may take, the last of [`RUNGS`].
pub const MAX_VALUE_STEPS: u64 = RUNGS[RUNGS.len() - 1];

/// The message of the error a refused match gives; [`super::strict`] turns it into the
/// `check-budget-exceeded` problem.
pub(crate) const OVER_BUDGET: &str = "muster: check-budget-exceeded";

enum Matcher {
    /// The linear engine takes it: the validator's own `pattern`, never charged.
    Linear(Validator),
    /// The backtracking engine: one validator per rung.
    Backtracking(Vec<(u64, Validator)>),
}

impl<'i> Keyword<'i> for Matcher {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        let ladder = match self {
            Self::Linear(validator) => return validator.validate(instance),
            Self::Backtracking(ladder) => ladder,
        };
        if !instance.is_string() {
            return Ok(());
        }
        for (steps, validator) in ladder {
            if !super::budget::charge(*steps) {
                return Err(ValidationError::custom(OVER_BUDGET));
            }
            match validator.validate(instance) {
                Err(err)
                    if matches!(
                        err.kind(),
                        ValidationErrorKind::BacktrackLimitExceeded { .. }
                    ) => {}
                other => return other,
            }
        }
        super::budget::give_up();
        Err(ValidationError::custom(OVER_BUDGET))
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.validate(instance).is_ok()
    }
}

/// The keyword for the pattern `value` (the factory `jsonschema::options().with_keyword`
/// takes). A pattern that is not a string or does not compile is refused as the validator
/// refuses it, so the schema stays uncheckable for the same reasons as before.
pub(crate) fn keyword<'a>(
    _: &'a Map<String, Value>,
    value: &'a Value,
    _: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let schema = json!({ "pattern": value });
    let build = |limit: u64| {
        jsonschema::options()
            .with_pattern_options(
                PatternOptions::fancy_regex()
                    .backtrack_limit(usize::try_from(limit).unwrap_or(usize::MAX)),
            )
            .build(&schema)
            .map_err(ValidationError::to_owned)
    };
    let matcher = match value.as_str() {
        Some(pattern) if !linear(pattern) => Matcher::Backtracking(
            RUNGS
                .iter()
                .map(|&steps| build(steps).map(|validator| (steps, validator)))
                .collect::<Result<_, _>>()?,
        ),
        _ => Matcher::Linear(build(MAX_VALUE_STEPS)?),
    };
    Ok(Box::new(matcher))
}

/// Whether `pattern` (ECMA-262, as a schema writes it) is matched without backtracking: the
/// `regex` crate's linear engine takes it whole, or takes each part of it when its leading
/// lookaheads are split off, as the validator itself matches such patterns.
pub(crate) fn linear(pattern: &str) -> bool {
    let compiles = |part: &str| {
        jsonschema_regex::to_rust_regex(part)
            .ok()
            .is_some_and(|rust| regex::Regex::new(&rust).is_ok())
    };
    compiles(pattern)
        || jsonschema_regex::split_leading_lookaheads(pattern)
            .is_some_and(|parts| parts.iter().all(|part| compiles(part)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linear_engine_takes_most_patterns_and_lookaround_or_backreferences_need_backtracking() {
        for pattern in [
            "^[a-z]+$",
            "^(?=.*[0-9])[a-z0-9]+$",
            "^\\p{Letter}+$",
            "[0-9]+(\\.[0-9]+){3}",
        ] {
            assert!(linear(pattern), "{pattern}");
        }
        for pattern in [
            "^(a|a)*\\1b$",
            "^(?!\\.)(?!.*\\.\\.)([A-Za-z0-9_'+\\-\\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$",
        ] {
            assert!(!linear(pattern), "{pattern}");
        }
    }
}
