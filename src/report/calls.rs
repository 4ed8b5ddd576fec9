//! Result sizes per tool, read from a call log (the JSON lines `muster mcp`, `muster call` and
//! `muster serve` write, one per `tools/call`; docs/gateway.md#what-is-logged): how many of
//! each tool's results were counted, their median, 99th percentile and largest `result_tokens`,
//! and how many were cut to their budget (`result-cut`), so a reviewer sees which tools flood
//! the context (docs/results.md).
//!
//! It reads figures the gateway logged; it counts and cuts nothing again, and renders nothing.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Problem};

/// One tool's results over a call log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultSizes {
    /// The tool as the client called it.
    pub tool: String,
    /// The server it was forwarded to.
    pub server: String,
    /// Its forwarded calls whose result was counted.
    pub results: u64,
    /// How many of them were cut to their budget.
    pub cut: u64,
    /// The median of their `result_tokens` (nearest rank).
    pub p50: u64,
    /// The 99th percentile (nearest rank).
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

/// The result sizes of a call log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLog {
    /// Per tool, the largest p99 first (then the largest figure, then by name).
    pub tools: Vec<ResultSizes>,
    /// Call records read (every verdict).
    pub calls: u64,
    /// Lines that were not call records (other events, server output, blank lines).
    pub other_lines: u64,
}

/// The members of a call record this reads; the rest are ignored.
#[derive(Deserialize)]
struct Record {
    tool: String,
    #[serde(default)]
    server: Option<String>,
    verdict: String,
    #[serde(default)]
    codes: Codes,
    #[serde(default)]
    result_tokens: Option<u64>,
}

/// `codes`: a list (every log muster writes), or one comma-separated string (the service log
/// before its call lines took the record's shapes, still read).
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Codes {
    List(Vec<String>),
    Joined(String),
    #[default]
    None,
}

impl Codes {
    fn has(&self, code: &str) -> bool {
        match self {
            Codes::List(codes) => codes.iter().any(|c| c == code),
            Codes::Joined(codes) => codes.split(',').any(|c| c == code),
            Codes::None => false,
        }
    }
}

/// The result sizes per tool of the call log `text`, read from `file`. A line is a call record
/// when it is a JSON object with a `verdict`; other lines are counted and passed over.
///
/// # Errors
/// [`ErrorKind::Input`]: `invalid-json` for a call record whose members are not as logged
/// (with its file and line), `missing-value` for a log with no call record at all.
pub fn result_sizes(text: &str, file: &Path) -> Result<CallLog, Error> {
    let mut tokens: BTreeMap<(String, String), (Vec<u64>, u64)> = BTreeMap::new();
    let (mut calls, mut other_lines) = (0u64, 0u64);
    for (at, line) in text.lines().enumerate() {
        // A call record: its members at the top, or under `fields` (tracing's JSON lines
        // when a host's subscriber does not flatten them).
        let object = line
            .trim_start()
            .starts_with('{')
            .then(|| serde_json::from_str::<serde_json::Map<String, Value>>(line).ok())
            .flatten();
        let members = match object {
            Some(mut o) if !o.contains_key("verdict") => match o.remove("fields") {
                Some(Value::Object(fields)) if fields.contains_key("verdict") => Some(fields),
                _ => None,
            },
            other => other,
        };
        let Some(members) = members else {
            other_lines += 1;
            continue;
        };
        let record: Record = serde_json::from_value(Value::Object(members)).map_err(|err| {
            let problem = Problem::coded(
                "invalid-json",
                format!(
                    "this call record cannot be read: {}",
                    crate::error::json_message(&err)
                ),
            )
            .in_file(file)
            .at_line(Some(at + 1))
            .help("give the call log as muster wrote it: one JSON object per line, with `tool`, `verdict` and, for a forwarded call, `result_tokens` a whole number");
            Error::new(ErrorKind::Input, problem)
        })?;
        calls += 1;
        let (Some(n), "forwarded") = (record.result_tokens, record.verdict.as_str()) else {
            continue;
        };
        let server = record.server.unwrap_or_default();
        let entry = tokens.entry((record.tool, server)).or_default();
        entry.0.push(n);
        entry.1 += u64::from(record.codes.has("result-cut"));
    }
    if calls == 0 {
        let problem = Problem::coded("missing-value", "this file holds no call record")
            .in_file(file)
            .help("give the call log muster mcp, muster call or muster serve wrote (its stderr): one JSON object per tools/call, each with a `verdict`");
        return Err(Error::new(ErrorKind::Input, problem));
    }
    let mut tools: Vec<ResultSizes> = tokens
        .into_iter()
        .map(|((tool, server), (mut figures, cut))| {
            figures.sort_unstable();
            ResultSizes {
                tool,
                server,
                results: figures.len() as u64,
                cut,
                p50: nearest_rank(&figures, 50),
                p99: nearest_rank(&figures, 99),
                max: figures.last().copied().unwrap_or(0),
            }
        })
        .collect();
    tools.sort_by(|a, b| {
        (b.p99, b.max)
            .cmp(&(a.p99, a.max))
            .then_with(|| (&a.tool, &a.server).cmp(&(&b.tool, &b.server)))
    });
    Ok(CallLog {
        tools,
        calls,
        other_lines,
    })
}

/// The `percent`th percentile of `sorted` by nearest rank: the smallest figure at least
/// `percent` % of them do not exceed.
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_by_nearest_rank() {
        let figures: Vec<u64> = (1..=200).collect();
        assert_eq!(nearest_rank(&figures, 50), 100);
        assert_eq!(nearest_rank(&figures, 99), 198);
        assert_eq!(nearest_rank(&[7], 99), 7);
        assert_eq!(nearest_rank(&[1, 2, 3], 50), 2);
        assert_eq!(nearest_rank(&[], 50), 0);
    }

    #[test]
    fn both_log_shapes_are_read_and_other_lines_passed_over() {
        let log = [
            r#"{"event":"gateway-started","chat":"c","left_to_host":[]}"#,
            "a server's own stderr line",
            r#"{"chat":"c","id":"1","tool":"mcp__fs__read","server":"fs","verdict":"forwarded","codes":["result-cut"],"upstream_ms":1.0,"total_ms":2.0,"result_tokens":2000}"#,
            r#"{"chat":"c","id":"2","tool":"mcp__fs__read","server":"fs","verdict":"forwarded","codes":[],"upstream_ms":1.0,"total_ms":2.0,"result_tokens":10}"#,
            r#"{"timestamp":"t","level":"INFO","message":"tools/call","target":"muster::gateway","tool":"mcp__m__get","server":"m","verdict":"forwarded","codes":"a,result-cut","result_tokens":5}"#,
            r#"{"chat":"c","id":"3","tool":"mcp__fs__read","server":null,"verdict":"refused","codes":["unknown-tool"],"total_ms":0.1}"#,
            r#"{"level":"INFO","fields":{"message":"tools/call","tool":"mcp__m__get","server":"m","verdict":"forwarded","codes":"","result_tokens":9}}"#,
        ]
        .join("\n");
        let sizes = result_sizes(&log, Path::new("calls.log")).unwrap();
        assert_eq!((sizes.calls, sizes.other_lines), (5, 2));
        let fs = &sizes.tools[0];
        assert_eq!(
            (fs.tool.as_str(), fs.results, fs.cut, fs.p50, fs.p99, fs.max),
            ("mcp__fs__read", 2, 1, 10, 2000, 2000)
        );
        assert_eq!(
            (sizes.tools[1].tool.as_str(), sizes.tools[1].cut),
            ("mcp__m__get", 1)
        );
    }

    #[test]
    fn a_bad_record_names_its_line_and_an_empty_log_is_refused() {
        let log = "{\"event\":\"x\"}\n{\"tool\":\"t\",\"verdict\":\"forwarded\",\"result_tokens\":\"many\"}\n";
        let err = result_sizes(log, Path::new("calls.log")).unwrap_err();
        let p = &err.problems()[0];
        assert_eq!((p.code, p.line), ("invalid-json", Some(2)));
        let err = result_sizes("nothing here\n", Path::new("calls.log")).unwrap_err();
        assert_eq!(err.problems()[0].code, "missing-value");
    }
}
