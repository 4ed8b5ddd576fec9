//! What a CI system is shown: the outcome of `gate`, `validate` and
//! `lock --check` (or the error that stopped them) as checks with findings,
//! each finding with its rule, level, message and the file and line to
//! annotate. The binary renders a [`CiReport`] as GitHub workflow
//! commands, SARIF 2.1.0, JUnit XML or a markdown summary (`docs/ci.md`).
//!
//! This module maps answers to findings; it decides no outcome of its own
//! (a gate's failures, a lock's drift and an error's problems are taken as
//! they are) and renders nothing.

use crate::contract::{GateFailure, GateResult, LockCheck, LockStatus, Validation};
use crate::error::Error;
use crate::gate::Gate;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// It fails its check.
    Error,
    /// Worth a reviewer's look; the check still passes.
    Warning,
}

impl Level {
    /// `error` or `warning`: the GitHub command and the SARIF level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// One thing a check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The stable kebab-case code: a gate failure's, a warning's, a lock
    /// status as `lock-<status>`, or an error kind's.
    pub rule: String,
    /// How serious.
    pub level: Level,
    /// The sentence muster prints for it.
    pub message: String,
    /// What to change, when muster knows.
    pub help: Option<String>,
    /// The file to annotate, as muster was given it.
    pub file: Option<String>,
    /// Its 1-based line, when known.
    pub line: Option<usize>,
    /// What a reviewer reads beside the message (a changed tool's
    /// description diff, paths and hints), as lines of escaped text; empty
    /// when there is nothing more.
    pub details: Vec<String>,
    /// The same as typed data (`docs/policy.md`), for formats that carry
    /// data (SARIF's property bag).
    pub data: Option<serde_json::Value>,
}

/// One check: a gate, the policy validation, the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// What was checked.
    pub name: String,
    /// The file it reads, when one.
    pub file: Option<String>,
    /// Facts a dashboard shows beside it (the roster's size), in order.
    pub properties: Vec<(String, String)>,
    /// What it found.
    pub findings: Vec<Finding>,
}

impl Case {
    /// Whether any finding is an error.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }
}

/// A command's outcome for CI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiReport {
    /// The command: `gate`, `validate` or `lock`.
    pub command: &'static str,
    /// Its checks, in the order they ran.
    pub cases: Vec<Case>,
}

impl CiReport {
    /// Every finding, check by check.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.cases.iter().flat_map(|c| &c.findings)
    }

    /// Checks that failed.
    pub fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.failed()).count()
    }
}

/// The gates `gates` ran, with their `results` (in the same order).
pub fn of_gates(gates: &[Gate], results: &[GateResult]) -> CiReport {
    let cases = results
        .iter()
        .map(|r| {
            let gate = gates
                .iter()
                .find(|g| g.name == r.name && g.file.display().to_string() == r.file);
            let findings = r
                .failures
                .iter()
                .map(|f| Finding {
                    rule: failure_code(f),
                    level: Level::Error,
                    message: format!("gate {}: {f}", r.name),
                    help: None,
                    file: Some(match f {
                        GateFailure::RosterDiffers { file, .. } => file.clone(),
                        _ => r.file.clone(),
                    }),
                    line: gate.and_then(|g| failure_line(g, f)),
                    details: Vec::new(),
                    data: None,
                })
                .collect();
            Case {
                name: r.name.clone(),
                file: Some(r.file.clone()),
                properties: vec![
                    (
                        "items".into(),
                        format!("{}/{}", r.roster.items, r.roster.item_cap),
                    ),
                    (
                        "tokens".into(),
                        format!("{}/{}", r.roster.tokens, r.roster.token_cap),
                    ),
                    ("fingerprint".into(), r.fingerprint.clone()),
                ],
                findings,
            }
        })
        .collect();
    CiReport {
        command: "gate",
        cases,
    }
}

/// A gate failure's code, as its JSON tags it.
fn failure_code(f: &GateFailure) -> String {
    serde_json::to_value(f)
        .ok()
        .and_then(|v| v.get("code")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "gate".into())
}

/// The line of the gate entry a failure is about, when the gate has one.
fn failure_line(g: &Gate, f: &GateFailure) -> Option<usize> {
    match f {
        GateFailure::RequiredNotOffered { tool, .. } => g
            .require
            .iter()
            .find(|(name, _)| name == tool)
            .map(|(_, line)| *line),
        GateFailure::TooManyRequired { .. } => g.require.first().map(|(_, line)| *line),
        GateFailure::RosterDiffers { line, .. } => Some(*line),
        GateFailure::Findability { .. } => g.findability.as_ref().map(|f| f.line),
        _ => None,
    }
}

/// A validation: one check that passes, with each warning at its place,
/// once for every plan that raised it (the plans named in the message).
pub fn of_validation(v: &Validation) -> CiReport {
    let mut findings: Vec<Finding> = Vec::new();
    let mut plans: Vec<Vec<String>> = Vec::new();
    for w in &v.warnings {
        let rule = w.warning.code().as_str().to_string();
        let same = findings.iter().position(|f| {
            f.rule == rule
                && f.message == w.warning.message
                && f.file == w.warning.file
                && f.line == w.warning.line
        });
        match same {
            Some(i) => plans[i].push(w.context()),
            None => {
                findings.push(Finding {
                    rule,
                    level: Level::Warning,
                    message: w.warning.message.clone(),
                    help: None,
                    file: w.warning.file.clone(),
                    line: w.warning.line,
                    details: Vec::new(),
                    data: None,
                });
                plans.push(vec![w.context()]);
            }
        }
    }
    for (f, p) in findings.iter_mut().zip(plans) {
        f.message = format!("{} ({})", f.message, p.join("; "));
    }
    CiReport {
        command: "validate",
        cases: vec![Case {
            name: format!("policies {}", v.policies),
            file: None,
            properties: vec![
                ("configured_tools".into(), v.configured_tools.to_string()),
                ("servers".into(), v.servers.to_string()),
                ("agents".into(), v.agents.to_string()),
            ],
            findings,
        }],
    }
}

/// The lock's drift: one check that fails when any tool differs.
pub fn of_lock(check: &LockCheck) -> CiReport {
    let findings = check
        .drift
        .iter()
        .map(|d| {
            let f = &d.finding;
            let (rule, what) = match f.status {
                LockStatus::Unlocked => ("lock-unlocked", "is listed but not in the lock"),
                LockStatus::Changed => (
                    "lock-changed",
                    "differs from the definition the lock records",
                ),
                LockStatus::Gone => ("lock-gone", "is in the lock but no longer listed"),
                LockStatus::Renamed => (
                    "lock-renamed",
                    "is listed under a new name for a definition the lock holds under another",
                ),
            };
            Finding {
                rule: rule.into(),
                level: Level::Error,
                message: match crate::snapshot::review::show::kinds(f) {
                    k if k.is_empty() => format!(
                        "{} {what} ({})",
                        crate::names::escape(&f.key()),
                        check.lock_file
                    ),
                    k => format!(
                        "{} {what} ({}): {k}",
                        crate::names::escape(&f.key()),
                        check.lock_file
                    ),
                },
                help: Some("review the definition, then run `muster lock`".into()),
                file: Some(d.file.clone()),
                line: d.line,
                details: crate::snapshot::review::show::of_finding(f),
                data: f
                    .details
                    .as_ref()
                    .and_then(|details| serde_json::to_value(details).ok()),
            }
        })
        .collect();
    CiReport {
        command: "lock",
        cases: vec![Case {
            name: format!("lock {}", check.lock_file),
            file: Some(check.lock_file.clone()),
            properties: vec![("drift".into(), check.drift.len().to_string())],
            findings,
        }],
    }
}

/// The error that stopped `command`: one failed check, a finding per problem.
pub fn of_error(command: &'static str, err: &Error) -> CiReport {
    let findings = err
        .problems()
        .iter()
        .map(|p| Finding {
            rule: err.kind().code().to_string(),
            level: Level::Error,
            message: p.message.clone(),
            help: p.help.clone(),
            file: p.file.as_ref().map(|f| f.display().to_string()),
            line: p.line,
            details: Vec::new(),
            data: None,
        })
        .collect();
    CiReport {
        command,
        cases: vec![Case {
            name: format!("muster {command}"),
            file: None,
            properties: Vec::new(),
            findings,
        }],
    }
}
