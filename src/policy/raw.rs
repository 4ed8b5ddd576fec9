//! The policy files as written: one struct per file shape, unknown keys
//! refused, spans kept so every later problem can name its line. Nothing
//! here judges meaning; `policy::load` does that.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `muster.toml`: caps, tokenizer, deferral, groups, agents, call policy.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MusterFile {
    #[serde(default)]
    pub caps: Option<Spanned<RawCaps>>,
    #[serde(default)]
    pub tokens: Option<RawTokens>,
    #[serde(default)]
    pub deferral: Option<Spanned<RawDeferral>>,
    #[serde(default)]
    pub calls: Option<RawCalls>,
    #[serde(default)]
    pub lock: Option<RawLock>,
    #[serde(default)]
    pub names: Option<RawNames>,
    #[serde(default)]
    pub results: Option<RawResults>,
    #[serde(default)]
    pub group: Vec<Spanned<RawGroup>>,
    #[serde(default)]
    pub agent: Vec<Spanned<RawAgent>>,
    #[serde(default)]
    pub auth: Option<Spanned<RawAuth>>,
}

/// `[auth]`: who may call `muster serve` (docs/auth.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    pub issuer: Option<Spanned<String>>,
    pub audience: Option<Spanned<String>>,
    pub jwks: Option<Spanned<String>>,
    pub authorization_servers: Option<Spanned<Vec<Spanned<String>>>>,
    pub leeway_secs: Option<Spanned<i64>>,
    pub jwks_refetch_secs: Option<Spanned<i64>>,
    pub metrics: Option<Spanned<String>>,
    #[serde(default)]
    pub grant: Vec<Spanned<RawGrant>>,
    #[serde(default)]
    pub key: Vec<Spanned<RawKey>>,
    pub limits: Option<Spanned<RawLimits>>,
}

/// `[mcp.oauth]`: client credentials for an HTTP server's access token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOAuth {
    pub token_url: Spanned<String>,
    pub client_id: Spanned<String>,
    pub client_secret: Spanned<String>,
    pub scope: Option<Spanned<String>>,
    pub resource: Option<Spanned<String>>,
    pub audience: Option<Spanned<String>>,
    pub auth_method: Option<Spanned<String>>,
}

/// `[[auth.key]]`: a static API key, by name and the SHA-256 of its text.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKey {
    pub name: Spanned<String>,
    pub agents: Spanned<Vec<Spanned<String>>>,
    pub hash: Spanned<String>,
}

/// `[[auth.grant]]`: a scope (or a claim's value) and the agents it opens.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrant {
    pub scope: Option<Spanned<String>>,
    pub claim: Option<Spanned<String>>,
    pub value: Option<Spanned<String>>,
    pub agents: Spanned<Vec<Spanned<String>>>,
}

/// `[auth.limits]`: calls per minute per caller and per (caller, tool).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub calls_per_minute: Option<Spanned<i64>>,
    pub tool_calls_per_minute: Option<Spanned<i64>>,
    pub callers: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCaps {
    pub items: Option<Spanned<i64>>,
    pub tokens: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTokens {
    pub encoding: Option<Spanned<String>>,
    pub provider: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDeferral {
    #[serde(default)]
    pub enabled: bool,
    pub control_tool: Option<Spanned<String>>,
    pub description: Option<String>,
    pub summary_tokens: Option<Spanned<i64>>,
    pub max_loaded: Option<Spanned<i64>>,
    pub max_loaded_tokens: Option<Spanned<i64>>,
    pub per_query: Option<Spanned<i64>>,
    pub loads: Option<Spanned<String>>,
    pub beyond_items: Option<Spanned<i64>>,
    pub beyond_tokens: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCalls {
    pub unknown_arguments: Option<Spanned<String>>,
    pub mcp_unknown_arguments: Option<Spanned<String>>,
    pub coerce_configured: Option<bool>,
    pub coerce_mcp: Option<bool>,
    pub configured_check: Option<Spanned<String>>,
    pub mcp_check: Option<Spanned<String>>,
}

/// `[results]`: budgets and checks on what tools return.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawResults {
    pub max_result_tokens: Option<Spanned<i64>>,
    pub max_turn_result_tokens: Option<Spanned<i64>>,
    pub on_output_mismatch: Option<Spanned<String>>,
}

/// `[names]`: how muster names are spelt for providers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNames {
    pub separator: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLock {
    pub file: Option<String>,
    pub on_mismatch: Option<Spanned<String>>,
    pub chats: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    pub name: Spanned<String>,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub members: Vec<Spanned<String>>,
    pub description: Option<String>,
    #[serde(default)]
    pub defer_together: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub name: Spanned<String>,
    #[serde(default)]
    pub version: Option<Spanned<i64>>,
    #[serde(default)]
    pub default: bool,
    #[serde(default)]
    pub current: bool,
    pub enabled_tools: Option<Vec<Spanned<String>>>,
    pub servers: Option<Vec<Spanned<String>>>,
    pub provider: Option<Spanned<String>>,
    pub max_result_tokens: Option<Spanned<i64>>,
    #[serde(default)]
    pub deny_hints: Vec<Spanned<String>>,
    #[serde(default)]
    pub require_hints: Vec<Spanned<String>>,
}

/// `tools/*.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    #[serde(default)]
    pub tool: Vec<Spanned<RawTool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTool {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    pub input_schema: Option<Spanned<super::finite::TomlJson>>,
    pub input_schema_file: Option<Spanned<String>>,
    pub when: Option<Spanned<String>>,
    #[serde(default = "yes")]
    pub default_roster: bool,
    #[serde(default)]
    pub priority: i64,
    #[serde(default = "yes")]
    pub deferrable: bool,
    pub parameters: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub variadic: bool,
    pub unknown_arguments: Option<Spanned<String>>,
    pub coerce: Option<bool>,
    pub check: Option<Spanned<String>>,
}

/// `mcp/*.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpFile {
    #[serde(default)]
    pub mcp: Vec<Spanned<RawServer>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub name: Spanned<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub defer_together: bool,
    pub command: Option<Spanned<Vec<String>>>,
    pub url: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<Spanned<String>, Spanned<String>>,
    pub oauth: Option<Spanned<RawOAuth>>,
    pub relay: Option<Spanned<Vec<Spanned<String>>>>,
    pub cwd: Option<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<Spanned<String>, Spanned<String>>,
    pub snapshot: Option<Spanned<String>>,
    pub timeout_secs: Option<u64>,
    pub when: Option<Spanned<String>>,
    #[serde(default)]
    pub priority: i64,
    #[serde(default = "yes")]
    pub deferrable: bool,
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    #[serde(default)]
    pub params: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<RawFixed>>>,
    #[serde(default)]
    pub only: BTreeMap<Spanned<String>, Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub tool_priority: BTreeMap<Spanned<String>, i64>,
    pub unknown_arguments: Option<Spanned<String>>,
    pub coerce: Option<bool>,
    pub check: Option<Spanned<String>>,
    pub max_result_tokens: Option<Spanned<i64>>,
    #[serde(default)]
    pub tool_check: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    pub deny_hints: Vec<Spanned<String>>,
    #[serde(default)]
    pub require_hints: Vec<Spanned<String>>,
    #[serde(default = "yes")]
    pub resources: bool,
    #[serde(default = "yes")]
    pub prompts: bool,
}

/// A fixed argument: `{ value = ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFixed {
    pub value: toml::Value,
}

/// `flags/<profile>.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagsFile {
    #[serde(default)]
    pub flags: Vec<Spanned<String>>,
}

fn yes() -> bool {
    true
}

/// At most this many problems are listed per file; past it the rest of the file is not read
/// again (each problem found costs one more read of the file).
pub const MAX_FILE_PROBLEMS: usize = 50;

/// Reads `text` as `T`, listing every wrong type and unknown key rather than the first: after
/// each error the entry it points at (a value of the wrong type, an unknown key, a table
/// missing a required key) is set aside and the rest is read again, so one run of `validate`
/// shows every such problem of the file (at most [`MAX_FILE_PROBLEMS`]). A table whose key was
/// set aside is not also reported as missing that key. Text that is not TOML gives its first
/// syntax error. A file that reads at once is read once.
///
/// # Errors
/// Every error found, in the order found, when `text` is not a valid `T`.
pub fn parse_all<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Vec<toml::de::Error>> {
    let mut err = match toml::from_str::<T>(text) {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    let Ok(mut root) = toml::de::DeTable::parse(text) else {
        return Err(vec![err]);
    };
    let mut errors: Vec<toml::de::Error> = Vec::new();
    let mut set_aside: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    loop {
        let span = err.span();
        // "missing field `k`" for a table whose `k` was set aside repeats an earlier problem.
        let repeat = span.as_ref().is_some_and(|span| {
            set_aside
                .iter()
                .any(|(table, key)| table == span && err.message() == missing(key))
        });
        if !repeat {
            errors.push(err);
        }
        let Some(span) = span else { break };
        if errors.len() >= MAX_FILE_PROBLEMS {
            break;
        }
        let root_span = root.span();
        if !remove_at(root.get_mut(), root_span, &span, &mut set_aside) {
            break;
        }
        match T::deserialize(toml::de::Deserializer::from(root.clone())) {
            Ok(_) => break,
            Err(next) => err = next,
        }
    }
    Err(errors)
}

/// serde's message for a struct missing the field `key`.
fn missing(key: &str) -> String {
    format!("missing field `{key}`")
}

/// Removes from `table` (spanning `table_span`) the entry the error at `span` points at: the
/// deepest key, value or list item with exactly that span (a list of tables spans its first
/// header, so containment cannot be trusted). Records each key removed with its table's span.
/// False when nothing below `table` has the span.
fn remove_at(
    table: &mut toml::de::DeTable<'_>,
    table_span: std::ops::Range<usize>,
    span: &std::ops::Range<usize>,
    set_aside: &mut Vec<(std::ops::Range<usize>, String)>,
) -> bool {
    let keys: Vec<(String, bool)> = table
        .iter()
        .map(|(k, _)| (k.get_ref().to_string(), k.span() == *span))
        .collect();
    for (key, key_hit) in keys {
        let value = table.get_mut(key.as_str()).expect("a key of this table");
        let value_span = value.span();
        if remove_within(value.get_mut(), value_span.clone(), span, set_aside) {
            return true;
        }
        if key_hit || value_span == *span {
            table.remove(key.as_str());
            set_aside.push((table_span, key));
            return true;
        }
    }
    false
}

/// [`remove_at`] for a value: a table's entry, or a list's item.
fn remove_within(
    value: &mut toml::de::DeValue<'_>,
    value_span: std::ops::Range<usize>,
    span: &std::ops::Range<usize>,
    set_aside: &mut Vec<(std::ops::Range<usize>, String)>,
) -> bool {
    use toml::de::{DeArray, DeValue};
    match value {
        DeValue::Table(table) => remove_at(table, value_span, span, set_aside),
        DeValue::Array(items) => {
            for at in 0..items.len() {
                let item = &mut items.as_mut()[at];
                let item_span = item.span();
                if remove_within(item.get_mut(), item_span.clone(), span, set_aside) {
                    return true;
                }
                if item_span == *span {
                    // A list cannot drop an item in place: rebuild it without the item.
                    let mut kept = DeArray::new();
                    for (i, item) in items.iter().enumerate() {
                        if i != at {
                            kept.push(item.clone());
                        }
                    }
                    *items = kept;
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line, message) of each error `parse_all` lists for a tools file.
    fn problems(text: &str) -> Vec<(usize, String)> {
        let errors = parse_all::<ToolsFile>(text).expect_err("the file has problems");
        errors
            .iter()
            .map(|e| {
                let at = e.span().expect("every problem has a place").start;
                (crate::error::line_of(text, at), e.message().to_string())
            })
            .collect()
    }

    /// Issue 13 item 8: only the first wrong type of a file was shown.
    #[test]
    fn every_wrong_type_and_unknown_key_of_a_file_is_listed_once() {
        let text = "[[tool]]\nname = \"a\"\npriority = \"high\"\n\n\
                    [[tool]]\nname = \"b\"\ndefault_roster = 3\nprority = 1\n\n\
                    [[tool]]\nname = 7\n\n\
                    [[tool]]\nname = \"d\"\nparameters = [\"x\", 2]\n";
        let found = problems(text);
        let lines: Vec<usize> = found.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [3, 7, 8, 11, 15], "{found:#?}");
        assert!(
            found[0]
                .1
                .contains("invalid type: string \"high\", expected i64"),
            "{found:#?}"
        );
        assert!(found[2].1.contains("unknown field `prority`"), "{found:#?}");
        // `name = 7` is one problem, not also "missing field `name`".
        assert!(
            found.iter().all(|(_, m)| !m.contains("missing field")),
            "{found:#?}"
        );
    }

    #[test]
    fn a_table_missing_a_key_is_listed_with_the_other_problems() {
        let found =
            problems("[[tool]]\ndescription = \"x\"\n\n[[tool]]\nname = \"b\"\npriority = true\n");
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].1.contains("missing field `name`"), "{found:#?}");
        assert_eq!(found[1].0, 6, "{found:#?}");
    }

    #[test]
    fn a_valid_file_reads_and_a_syntax_error_is_one_problem() {
        let file = parse_all::<ToolsFile>("[[tool]]\nname = \"a\"\npriority = 2\n").unwrap();
        assert_eq!(file.tool[0].get_ref().priority, 2);
        assert_eq!(problems("[[tool]\nname = \"a\"\npriority = \n").len(), 1);
    }

    #[test]
    fn the_list_stops_at_the_limit() {
        let text: String = (0..MAX_FILE_PROBLEMS + 10)
            .map(|i| format!("[[tool]]\nname = \"t{i}\"\npriority = \"x\"\n"))
            .collect();
        assert_eq!(problems(&text).len(), MAX_FILE_PROBLEMS);
    }
}
