//! Gates: pinned, production-shaped roster checks for CI.
//!
//! A gate file names the selection production runs with (agent, flag
//! profile, extra flags), the tools that must be offered, an optional
//! minimum headroom and the expected roster in order. A gate fails when a
//! required tool is not offered, the roster differs from the pinned one, or
//! the headroom is below the minimum. Its failures render the plan's own
//! findings. A gate naming a tool no policy registers is bad input, not a
//! failure: it could never pass for the right reason.
//!
//! ```toml
//! flags = "production"
//! require = ["mcp.bland_call.start_call"]
//! min_headroom = { slots = 0, tokens = 500 }
//! roster = ["mcp.bland_call.start_call", "..."]
//! ```

use crate::catalog::{Catalog, Selection};
use crate::error::{Error, ErrorKind, Problem, line_of};
use crate::finding::Status;
use crate::plan::plan;
use crate::policy::{Caps, Policy};
use crate::tokens::TokenCache;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    name: Option<String>,
    agent: Option<String>,
    flags: Option<String>,
    #[serde(default)]
    extra_flags: Vec<String>,
    #[serde(default)]
    require: Vec<Spanned<String>>,
    min_headroom: Option<MinHeadroom>,
    roster: Option<Vec<Spanned<String>>>,
}

/// The least room a gate accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MinHeadroom {
    /// Slots left.
    #[serde(default)]
    pub slots: u32,
    /// Tokens left.
    #[serde(default)]
    pub tokens: u32,
}

/// A parsed gate file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// Its name (the `name` key, or the file stem).
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// The selection it plans.
    pub selection: Selection,
    /// Tools that must be offered, with their lines.
    pub require: Vec<(String, usize)>,
    /// Least headroom.
    pub min_headroom: Option<MinHeadroom>,
    /// The pinned roster, in order, each name with its line.
    pub roster: Option<Vec<(String, usize)>>,
}

/// The outcome of one gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateResult {
    /// Gate name.
    pub name: String,
    /// Gate file.
    pub file: String,
    /// Whether every check passed.
    pub passed: bool,
    /// One line per failed check, rendering the plan's findings.
    pub failures: Vec<String>,
    /// Items and tokens of the planned roster, e.g. `30/30 items, 7043/9000 tokens`.
    pub roster: String,
    /// The planned roster's fingerprint.
    pub fingerprint: String,
}

/// Reads gate files: each path is a `.toml` file or a directory whose
/// `*.toml` files are read in name order.
///
/// # Errors
/// [`ErrorKind::Input`] with every problem found: unreadable or malformed
/// files, unknown keys.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Gate>, Error> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        if path.is_dir() {
            match std::fs::read_dir(path) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                        .collect();
                    found.sort();
                    files.extend(found);
                }
                Err(err) => problems
                    .push(Problem::new(format!("cannot read gate directory: {err}")).in_file(path)),
            }
        } else {
            files.push(path.clone());
        }
    }
    let mut gates = Vec::new();
    for file in files {
        match read_gate(&file) {
            Ok(gate) => gates.push(gate),
            Err(problem) => problems.push(problem),
        }
    }
    if gates.is_empty() && problems.is_empty() {
        problems.push(
            Problem::new("no gate files found")
                .help("pass gate files or a directory holding *.toml gates"),
        );
    }
    if problems.is_empty() {
        Ok(gates)
    } else {
        Err(Error::many(ErrorKind::Input, problems))
    }
}

fn read_gate(file: &Path) -> Result<Gate, Problem> {
    let text = std::fs::read_to_string(file)
        .map_err(|err| Problem::new(format!("cannot read gate file: {err}")).in_file(file))?;
    let raw: RawGate = toml::from_str(&text).map_err(|err| {
        Problem::new(err.message().trim().to_string())
            .in_file(file)
            .at_line(err.span().map(|s| line_of(&text, s.start)))
            .help("gate keys: name, agent, flags, extra_flags, require, min_headroom, roster")
    })?;
    let line = |s: &Spanned<String>| line_of(&text, s.span().start);
    for (key, list) in [
        ("require", Some(&raw.require)),
        ("roster", raw.roster.as_ref()),
    ] {
        let mut seen = std::collections::BTreeSet::new();
        for name in list.into_iter().flatten() {
            if !seen.insert(name.get_ref().as_str()) {
                return Err(
                    Problem::new(format!("{key} lists {:?} twice", name.get_ref()))
                        .in_file(file)
                        .at_line(Some(line(name)))
                        .help("list each tool once"),
                );
            }
        }
    }
    Ok(Gate {
        name: raw.name.unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        file: file.to_path_buf(),
        selection: Selection {
            agent: raw.agent,
            profile: raw.flags,
            flags: raw.extra_flags,
        },
        require: raw
            .require
            .iter()
            .map(|r| (r.get_ref().clone(), line(r)))
            .collect(),
        min_headroom: raw.min_headroom,
        roster: raw.roster.as_ref().map(|names| {
            names
                .iter()
                .map(|n| (n.get_ref().clone(), line(n)))
                .collect()
        }),
    })
}

/// Runs one gate against `policy`. `caps` overrides the policy's caps
/// field by field (for what-if runs such as `--item-cap 2`).
///
/// # Errors
/// [`ErrorKind::Input`] when the gate names a tool no policy registers (in
/// `require` or `roster`); [`ErrorKind::Usage`] when its agent or flag
/// profile does not exist.
pub fn run(
    policy: &Policy,
    gate: &Gate,
    caps: (Option<u32>, Option<u32>),
) -> Result<GateResult, Error> {
    run_cached(policy, gate, caps, &mut TokenCache::in_memory())
}

/// [`run`], taking token counts from `cache` and adding those it lacked;
/// the result is the same as without it.
///
/// # Errors
/// As [`run`].
pub fn run_cached(
    policy: &Policy,
    gate: &Gate,
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
) -> Result<GateResult, Error> {
    let registered = policy.registered_names();
    let mut problems = Vec::new();
    let unknown = |name: &str, line: usize, key: &str| {
        let near = crate::names::closest(name, registered.iter().map(String::as_str), 1);
        Problem::new(format!(
            "gate {:?}: {key} names {name:?}, which no policy registers",
            gate.name
        ))
        .in_file(&gate.file)
        .at_line(Some(line))
        .help(match near.first() {
            Some(best) => format!("did you mean {best:?}?"),
            None => "name a registered tool".to_string(),
        })
    };
    for (name, line) in &gate.require {
        if !registered.contains(name) {
            problems.push(unknown(name, *line, "require"));
        }
    }
    for (name, line) in gate.roster.iter().flatten() {
        if !registered.contains(name) && policy.deferral.control_tool != *name {
            problems.push(unknown(name, *line, "roster"));
        }
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Input, problems));
    }
    let catalog = Catalog::build_cached(policy, &gate.selection, cache).map_err(|err| {
        let problems = err
            .problems()
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.message = format!("gate {:?}: {}", gate.name, p.message);
                p.in_file(&gate.file)
            })
            .collect();
        Error::many(err.kind(), problems)
    })?;
    let caps = Caps {
        items: caps.0.unwrap_or(catalog.caps.items),
        tokens: caps.1.unwrap_or(catalog.caps.tokens),
    };
    let plan = plan(&catalog, caps);
    let mut failures = Vec::new();
    let required: Vec<&str> = gate.require.iter().map(|(n, _)| n.as_str()).collect();
    if required.len() > caps.items as usize {
        failures.push(format!(
            "the gate requires {} tools ({}) but the item cap is {}: they cannot all fit",
            required.len(),
            required.join(", "),
            caps.items
        ));
    }
    for (name, _) in &gate.require {
        match plan.decision(name) {
            Some((i, d)) if d.status != Status::Offered => failures.push(format!(
                "required tool {name} is {} ({}): {}",
                d.status.as_str(),
                d.code,
                plan.detail(i)
            )),
            _ => {}
        }
    }
    if let Some(min) = gate.min_headroom {
        if plan.headroom.slots < min.slots {
            failures.push(format!(
                "headroom is {} slot(s); the gate wants at least {}",
                plan.headroom.slots, min.slots
            ));
        }
        if plan.headroom.tokens < min.tokens {
            failures.push(format!(
                "headroom is {} tokens; the gate wants at least {}",
                plan.headroom.tokens, min.tokens
            ));
        }
    }
    if let Some(pinned) = &gate.roster {
        let line = pinned.first().map_or(1, |(_, line)| *line);
        let pinned: Vec<&str> = pinned.iter().map(|(n, _)| n.as_str()).collect();
        let actual: Vec<&str> = plan
            .roster
            .iter()
            .map(|&i| catalog.candidates[i].name.as_str())
            .collect();
        if actual != pinned {
            failures.push(roster_diff(&plan, &pinned, &actual, &gate.file, line));
        }
    }
    Ok(GateResult {
        name: gate.name.clone(),
        file: gate.file.display().to_string(),
        passed: failures.is_empty(),
        failures,
        roster: format!(
            "{}/{} items, {}/{} tokens",
            plan.totals.items, plan.totals.item_cap, plan.totals.tokens, plan.totals.token_cap
        ),
        fingerprint: plan.fingerprint(),
    })
}

fn roster_diff(
    plan: &crate::plan::Plan<'_>,
    pinned: &[&str],
    actual: &[&str],
    file: &Path,
    line: usize,
) -> String {
    let pinned_set: BTreeSet<&str> = pinned.iter().copied().collect();
    let actual_set: BTreeSet<&str> = actual.iter().copied().collect();
    let mut parts = Vec::new();
    for (i, name) in actual.iter().enumerate() {
        if !pinned_set.contains(name) {
            parts.push(format!("+ {name} (now offered at position {})", i + 1));
        }
    }
    for name in pinned {
        if !actual_set.contains(name) {
            let why = match plan.decision(name) {
                Some((i, d)) => {
                    format!("now {} ({}): {}", d.status.as_str(), d.code, plan.detail(i))
                }
                None => "no longer a candidate".to_string(),
            };
            parts.push(format!("- {name} ({why})"));
        }
    }
    if parts.is_empty() {
        let first = actual
            .iter()
            .zip(pinned)
            .position(|(a, p)| a != p)
            .unwrap_or(0);
        parts.push(format!(
            "order changed from position {}: {} where the pin has {}",
            first + 1,
            actual[first],
            pinned[first]
        ));
    }
    const SHOWN: usize = 5;
    let more = parts.len().saturating_sub(SHOWN);
    parts.truncate(SHOWN);
    if more > 0 {
        parts.push(format!("and {more} more change(s)"));
    }
    format!(
        "roster differs from the one pinned at {}:{line}: {}; if the change is intended, update the pinned roster",
        file.display(),
        parts.join("; ")
    )
}
