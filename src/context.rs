//! How large a model's context window is, and what share of it a roster's
//! tool section takes: the start-up line ("30 tools, 6,940 tokens, 5.42 %
//! of gpt-4o's 128,000-token context") and the report's context table.
//!
//! The sizes are data with their sources (the provider's own model pages,
//! as read on the date in [`CHECKED`]); `docs/report.md` prints the same
//! table. This module decides nothing about the roster and reads no file.

use crate::contract::{ContextShare, Provider};
use crate::error::{Error, ErrorKind, Problem};

/// When the sizes below were last read from their sources.
pub const CHECKED: &str = "2026-12";

/// One model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelContext {
    /// The model's API name; a dated snapshot of it (`NAME-YYYYMMDD`,
    /// `NAME-YYYY-MM-DD`) has the same window.
    pub model: &'static str,
    /// Whose model it is.
    pub provider: Provider,
    /// Tokens the context window holds (input and output together), at
    /// the provider's standard tier: no beta header, no long-context plan.
    pub context_tokens: u32,
    /// Where the figure was read.
    pub source: &'static str,
}

const ANTHROPIC_WINDOWS: &str =
    "https://platform.claude.com/docs/en/build-with-claude/context-windows";

/// The models muster knows the window of, each provider's default first.
pub const MODELS: &[ModelContext] = &[
    ModelContext {
        model: "gpt-4o",
        provider: Provider::Openai,
        context_tokens: 128_000,
        source: "https://platform.openai.com/docs/models/gpt-4o",
    },
    ModelContext {
        model: "gpt-4o-mini",
        provider: Provider::Openai,
        context_tokens: 128_000,
        source: "https://platform.openai.com/docs/models/gpt-4o-mini",
    },
    ModelContext {
        model: "gpt-4.1",
        provider: Provider::Openai,
        context_tokens: 1_047_576,
        source: "https://platform.openai.com/docs/models/gpt-4.1",
    },
    ModelContext {
        model: "gpt-4.1-mini",
        provider: Provider::Openai,
        context_tokens: 1_047_576,
        source: "https://platform.openai.com/docs/models/gpt-4.1-mini",
    },
    ModelContext {
        model: "o3",
        provider: Provider::Openai,
        context_tokens: 200_000,
        source: "https://platform.openai.com/docs/models/o3",
    },
    ModelContext {
        model: "o4-mini",
        provider: Provider::Openai,
        context_tokens: 200_000,
        source: "https://platform.openai.com/docs/models/o4-mini",
    },
    ModelContext {
        model: "gpt-5",
        provider: Provider::Openai,
        context_tokens: 400_000,
        source: "https://platform.openai.com/docs/models/gpt-5",
    },
    ModelContext {
        model: "claude-sonnet-4-5",
        provider: Provider::Anthropic,
        context_tokens: 200_000,
        source: ANTHROPIC_WINDOWS,
    },
    ModelContext {
        model: "claude-sonnet-4",
        provider: Provider::Anthropic,
        context_tokens: 200_000,
        source: ANTHROPIC_WINDOWS,
    },
    ModelContext {
        model: "claude-opus-4-1",
        provider: Provider::Anthropic,
        context_tokens: 200_000,
        source: ANTHROPIC_WINDOWS,
    },
    ModelContext {
        model: "claude-haiku-4-5",
        provider: Provider::Anthropic,
        context_tokens: 200_000,
        source: ANTHROPIC_WINDOWS,
    },
];

/// The model a roster is measured against when none is named: the first
/// of `provider`'s in [`MODELS`].
pub fn default_for(provider: Provider) -> &'static ModelContext {
    MODELS
        .iter()
        .find(|m| m.provider == provider)
        .expect("every provider has a model in the table")
}

/// The window of `model`: an exact name of [`MODELS`], or a dated snapshot
/// of one (the longest name it starts with, followed by `-` and a date).
pub fn lookup(model: &str) -> Option<&'static ModelContext> {
    MODELS
        .iter()
        .filter(|m| {
            model == m.model
                || model
                    .strip_prefix(m.model)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(is_date)
        })
        .max_by_key(|m| m.model.len())
}

fn is_date(text: &str) -> bool {
    let digits: String = text.chars().filter(|c| *c != '-').collect();
    digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The share of `model`'s window (`None`: the provider's default) that
/// `tokens` take.
///
/// # Errors
/// [`ErrorKind::Usage`] when `model` is not in [`MODELS`]; the problem
/// lists the models muster knows.
///
/// # Example
/// ```
/// use muster::contract::Provider;
/// let share = muster::context::share(6_940, Provider::Openai, None)?;
/// assert_eq!((share.model.as_str(), share.context_tokens, share.percent), ("gpt-4o", 128_000, 5.42));
/// # Ok::<(), muster::Error>(())
/// ```
pub fn share(tokens: u32, provider: Provider, model: Option<&str>) -> Result<ContextShare, Error> {
    let known = match model {
        None => default_for(provider),
        Some(name) => lookup(name).ok_or_else(|| {
            let names: Vec<&str> = MODELS.iter().map(|m| m.model).collect();
            Error::new(
                ErrorKind::Usage,
                Problem::new(format!(
                    "muster does not know the context window of model {name:?}"
                ))
                .help(format!(
                    "name one of {} (or a dated snapshot of one)",
                    names.join(", ")
                )),
            )
        })?,
    };
    Ok(ContextShare {
        model: model.unwrap_or(known.model).to_string(),
        context_tokens: known.context_tokens,
        tokens,
        percent: percent(tokens, known.context_tokens),
        source: known.source.to_string(),
    })
}

/// The share of the provider's default model's window that `tokens` take.
pub fn default_share(tokens: u32, provider: Provider) -> ContextShare {
    let known = default_for(provider);
    ContextShare {
        model: known.model.to_string(),
        context_tokens: known.context_tokens,
        tokens,
        percent: percent(tokens, known.context_tokens),
        source: known.source.to_string(),
    }
}

/// The start-up line: `N tools ≈ X tokens ≈ Y % of MODEL's C-token context`.
pub fn startup_line(tools: u32, share: &ContextShare) -> String {
    format!(
        "{tools} tools ≈ {} tokens ≈ {:.2} % of {}'s {}-token context",
        thousands(share.tokens),
        share.percent,
        share.model,
        thousands(share.context_tokens)
    )
}

fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `part` of `whole` in percent, rounded half up to two decimals (exact
/// integer arithmetic, so the same counts always print the same digits).
pub fn percent(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    let hundredths = (u64::from(part) * 10_000 * 2 + u64::from(whole)) / (2 * u64::from(whole));
    hundredths as f64 / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_snapshots_find_their_model() {
        assert_eq!(lookup("gpt-4o-2024-08-06").unwrap().model, "gpt-4o");
        assert_eq!(
            lookup("gpt-4o-mini-2024-07-18").unwrap().model,
            "gpt-4o-mini"
        );
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").unwrap().model,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            lookup("claude-sonnet-4-20250514").unwrap().model,
            "claude-sonnet-4"
        );
        assert!(lookup("gpt-4o-audio").is_none());
        assert!(lookup("gpt-4").is_none());
    }

    #[test]
    fn every_provider_has_a_default_and_every_row_a_source() {
        assert_eq!(default_for(Provider::Openai).model, "gpt-4o");
        assert_eq!(default_for(Provider::Anthropic).model, "claude-sonnet-4-5");
        for m in MODELS {
            assert!(m.source.starts_with("https://"), "{}", m.model);
            assert!(m.context_tokens > 0);
        }
    }

    #[test]
    fn percent_rounds_half_up_to_two_decimals() {
        assert_eq!(percent(6_940, 128_000), 5.42);
        assert_eq!(percent(1, 200_000), 0.0);
        assert_eq!(percent(1, 20_000), 0.01);
        assert_eq!(percent(128_000, 128_000), 100.0);
        assert_eq!(percent(5, 0), 0.0);
    }

    #[test]
    fn the_startup_line_states_tools_tokens_and_share() {
        let share = default_share(6_940, Provider::Openai);
        assert_eq!(
            startup_line(30, &share),
            "30 tools ≈ 6,940 tokens ≈ 5.42 % of gpt-4o's 128,000-token context"
        );
        assert_eq!(share, super::share(6_940, Provider::Openai, None).unwrap());
    }

    #[test]
    fn an_unknown_model_is_a_usage_error_naming_the_known_ones() {
        let err = share(10, Provider::Openai, Some("gpt-9")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        assert!(
            err.problems()[0]
                .help
                .as_deref()
                .unwrap()
                .contains("gpt-4o")
        );
    }
}
