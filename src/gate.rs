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
use crate::contract::Status;
use crate::contract::{AddedTool, RemovedTool, Reorder, RosterSize};
pub use crate::contract::{FindabilityResult, GateFailure, GateResult, MissedQuery};
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem, line_of};
use crate::plan::plan_counted;
use crate::policy::Inputs;
use crate::tokens::TokenCache;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    name: Option<String>,
    agent: Option<String>,
    agent_version: Option<u64>,
    flags: Option<String>,
    #[serde(default)]
    extra_flags: Vec<String>,
    #[serde(default)]
    require: Vec<Spanned<String>>,
    min_headroom: Option<MinHeadroom>,
    roster: Option<Vec<Spanned<String>>>,
    findability: Option<Spanned<RawFindability>>,
    #[serde(default)]
    loads_within_caps: bool,
    #[serde(default)]
    accepted_by: Vec<Spanned<String>>,
    #[serde(default)]
    accept_strict: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFindability {
    queries: String,
    #[serde(default = "default_k")]
    k: u32,
    min_recall: f64,
}

fn default_k() -> u32 {
    5
}

/// A findability check: the share of labelled queries whose expected tool
/// the control tool's search puts in its top `k`.
#[derive(Debug, Clone, PartialEq)]
pub struct Findability {
    /// The labelled queries: JSON lines `{"query": ..., "expect": [names]}`,
    /// optionally with `"loads": [names]`: exactly what a load of the query
    /// loads (`[]`: nothing).
    pub queries: PathBuf,
    /// How many results count.
    pub k: u32,
    /// The least recall@k the gate accepts, from 0 to 1.
    pub min_recall: f64,
    /// The `[findability]` table's line.
    pub line: usize,
}

/// The least room a gate accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
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
#[derive(Debug, Clone, PartialEq)]
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
    /// The findability check, if any.
    pub findability: Option<Findability>,
    /// Whether the chat's worst case, every allowed load taken, must stay
    /// within the caps (`loads_within_caps = true`).
    pub loads_within_caps: bool,
    /// Provider formats that must accept the request as sent
    /// (`accepted_by = ["openai", "gemini"]`).
    pub accepted_by: Vec<crate::provider::shape::Format>,
    /// Whether they must accept it in strict mode (`accept_strict = true`).
    pub accept_strict: bool,
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
                Err(err) => problems.push(
                    Problem::coded(
                        code::FILE_UNREADABLE,
                        format!("cannot read gate directory: {err}"),
                    )
                    .in_file(path),
                ),
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
            Problem::coded(code::MISSING_VALUE, "no gate files found")
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
    let text = crate::input::read_text(file).map_err(|err| err.problem(file, "gate file"))?;
    let raw: RawGate = toml::from_str(&text).map_err(|err| {
        let code = if err.message().contains("unknown field") {
            code::UNKNOWN_KEY
        } else {
            code::INVALID_TOML
        };
        Problem::coded(code, err.message().trim().to_string())
            .in_file(file)
            .at_line(err.span().map(|s| line_of(&text, s.start)))
            .help("gate keys: name, agent, agent_version, flags, extra_flags, require, min_headroom, roster, findability, loads_within_caps, accepted_by, accept_strict")
    })?;
    let line = |s: &Spanned<String>| line_of(&text, s.span().start);
    for (key, list) in [
        ("require", Some(&raw.require)),
        ("roster", raw.roster.as_ref()),
    ] {
        let mut seen = std::collections::BTreeSet::new();
        for name in list.into_iter().flatten() {
            if !seen.insert(name.get_ref().as_str()) {
                return Err(Problem::coded(
                    code::DUPLICATE,
                    format!("{key} lists {:?} twice", name.get_ref()),
                )
                .in_file(file)
                .at_line(Some(line(name)))
                .help("list each tool once"));
            }
        }
    }
    let mut accepted_by = Vec::new();
    for name in &raw.accepted_by {
        match crate::provider::shape::Format::from_name(name.get_ref()) {
            Some(format) if !accepted_by.contains(&format) => accepted_by.push(format),
            Some(_) => {
                return Err(
                    Problem::new(format!("accepted_by lists {:?} twice", name.get_ref()))
                        .in_file(file)
                        .at_line(Some(line(name)))
                        .help("list each provider format once"),
                );
            }
            None => {
                return Err(Problem::new(format!(
                    "accepted_by names {:?}, which is not a provider format",
                    name.get_ref()
                ))
                .in_file(file)
                .at_line(Some(line(name)))
                .help("provider formats: openai, openai-responses, anthropic, gemini"));
            }
        }
    }
    let findability = match &raw.findability {
        Some(f) => {
            let line = line_of(&text, f.span().start);
            let f = f.get_ref();
            if !(1..=10).contains(&f.k) || !(0.0..=1.0).contains(&f.min_recall) {
                return Err(Problem::coded(
                    code::OUT_OF_RANGE,
                    format!(
                        "findability: k = {} and min_recall = {} are out of range",
                        f.k, f.min_recall
                    ),
                )
                .in_file(file)
                .at_line(Some(line))
                .help("k is 1 to 10 (search returns at most 10), min_recall 0 to 1"));
            }
            Some(Findability {
                queries: file.parent().unwrap_or(Path::new(".")).join(&f.queries),
                k: f.k,
                min_recall: f.min_recall,
                line,
            })
        }
        None => None,
    };
    Ok(Gate {
        findability,
        loads_within_caps: raw.loads_within_caps,
        accepted_by,
        accept_strict: raw.accept_strict,
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
            version: raw.agent_version,
            provider: None,
            mcp_only: false,
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

/// Runs one gate against `inputs`. `caps` overrides the policy's caps
/// field by field (for what-if runs such as `--item-cap 2`).
///
/// # Errors
/// [`ErrorKind::Input`] when the gate names a tool no policy registers (in
/// `require` or `roster`); [`ErrorKind::Usage`] when its agent or flag
/// profile does not exist.
pub fn run(
    inputs: &Inputs,
    gate: &Gate,
    caps: (Option<u32>, Option<u32>),
) -> Result<GateResult, Error> {
    run_cached(inputs, gate, caps, &mut TokenCache::in_memory())
}

/// [`run`], taking token counts from `cache` and adding those it lacked;
/// the result is the same as without it.
///
/// # Errors
/// As [`run`].
pub fn run_cached(
    inputs: &Inputs,
    gate: &Gate,
    caps: (Option<u32>, Option<u32>),
    cache: &mut TokenCache,
) -> Result<GateResult, Error> {
    let registered = inputs.registered_names();
    let mut problems = Vec::new();
    let unknown = |name: &str, line: usize, key: &str| {
        let near = crate::names::closest(name, registered.iter().map(String::as_str), 1);
        Problem::coded(
            code::UNKNOWN_NAME,
            format!(
                "gate {:?}: {key} names {name:?}, which no policy registers",
                gate.name
            ),
        )
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
        if !registered.contains(name) && inputs.policy.deferral.control_tool != *name {
            problems.push(unknown(name, *line, "roster"));
        }
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Input, problems));
    }
    let catalog = Catalog::build_cached(inputs, &gate.selection, cache).map_err(|err| {
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
    let caps = catalog.caps.with_overrides(caps.0, caps.1);
    let plan = plan_counted(&catalog, caps, cache);
    let mut wrong_loads = Vec::new();
    let findability = match &gate.findability {
        Some(f) => Some(findability(&plan, gate, f, &registered, &mut wrong_loads)?),
        None => None,
    };
    let mut failures = Vec::new();
    let required: Vec<String> = gate.require.iter().map(|(n, _)| n.clone()).collect();
    if required.len() > caps.items as usize {
        failures.push(GateFailure::TooManyRequired {
            required,
            item_cap: caps.items,
        });
    }
    for (name, _) in &gate.require {
        match plan.decision(name) {
            Some((i, d)) if d.status != Status::Offered => {
                failures.push(GateFailure::RequiredNotOffered {
                    tool: name.clone(),
                    status: d.status,
                    reason: plan.reason(i),
                })
            }
            _ => {}
        }
    }
    if let Some(min) = gate.min_headroom {
        if plan.headroom.slots < min.slots {
            failures.push(GateFailure::SlotHeadroom {
                slots: plan.headroom.slots,
                min: min.slots,
            });
        }
        if plan.headroom.tokens < min.tokens {
            failures.push(GateFailure::TokenHeadroom {
                tokens: plan.headroom.tokens,
                min: min.tokens,
            });
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
    if gate.loads_within_caps {
        let (items, tokens) = plan.after_loads();
        if items > caps.items || tokens > caps.tokens {
            failures.push(GateFailure::LoadsBeyondCaps {
                items,
                item_cap: caps.items,
                tokens,
                token_cap: caps.tokens,
                loads: catalog.deferral_policy.loads.as_str().to_string(),
            });
        }
    }
    let violations: Vec<crate::contract::Violation> = gate
        .accepted_by
        .iter()
        .flat_map(|&format| {
            crate::provider::accept::check(format, &plan.provider_offer(), gate.accept_strict)
        })
        .collect();
    if !violations.is_empty() {
        failures.push(GateFailure::NotAccepted { violations });
    }
    if let Some(found) = &findability
        && found.recall < found.min_recall
    {
        failures.push(GateFailure::Findability {
            k: found.k,
            found: found.found,
            total: found.total,
            recall: found.recall,
            min_recall: found.min_recall,
        });
    }
    failures.extend(wrong_loads);
    Ok(GateResult {
        findability,
        name: gate.name.clone(),
        file: gate.file.display().to_string(),
        passed: failures.is_empty(),
        failures,
        roster: RosterSize {
            items: plan.totals.items,
            item_cap: plan.totals.item_cap,
            tokens: plan.totals.tokens,
            token_cap: plan.totals.token_cap,
        },
        fingerprint: plan.fingerprint(),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelledQuery {
    query: String,
    expect: Vec<String>,
    /// When given: exactly the tools a load of the query loads (empty:
    /// nothing, as for an ask answered with a choice or nothing found).
    #[serde(default)]
    loads: Option<Vec<String>>,
}

/// Runs the labelled queries of `f` against the deferred tools of `plan`.
/// A query counts as found when an expected tool is offered (the model
/// sees it without searching) or is loaded by one of the top `k` entries.
fn findability(
    plan: &crate::plan::Plan<'_>,
    gate: &Gate,
    f: &Findability,
    registered: &BTreeSet<String>,
    wrong: &mut Vec<GateFailure>,
) -> Result<FindabilityResult, Error> {
    let text = std::fs::read_to_string(&f.queries).map_err(|err| {
        Error::new(
            ErrorKind::Input,
            Problem::coded(
                code::FILE_UNREADABLE,
                format!(
                    "gate {:?}: cannot read the findability queries: {err}",
                    gate.name
                ),
            )
            .in_file(&f.queries)
            .help("queries is a JSON-lines file relative to the gate file"),
        )
    })?;
    let index = crate::search::DeferredIndex::new(plan);
    let catalog = plan.catalog;
    // A `loads` line is decided as the control tool decides, over the
    // offered tools too: an ask the offer serves loads nothing.
    let offered = crate::search::DeferredIndex::offered(catalog, &plan.offered_tools());
    let reach = crate::session::Reach {
        deferred: &index,
        offered: &offered,
    };
    let mut problems = Vec::new();
    let (mut found, mut total) = (0u32, 0u32);
    let mut missed = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let problem = |code: &'static str, message: String, help: &str| {
            Problem::coded(code, message)
                .in_file(&f.queries)
                .at_line(Some(n + 1))
                .help(help)
        };
        let q: LabelledQuery = match serde_json::from_str(line) {
            Ok(q) => q,
            Err(err) => {
                problems.push(problem(
                    code::INVALID_JSON,
                    format!("cannot read the labelled query: {err}"),
                    "one JSON object per line: {\"query\": \"...\", \"expect\": [\"tool\"]}",
                ));
                continue;
            }
        };
        let unknown: Vec<&String> = q
            .expect
            .iter()
            .filter(|e| !registered.contains(*e))
            .collect();
        if q.expect.is_empty() || !unknown.is_empty() {
            problems.push(problem(
                code::UNKNOWN_NAME,
                format!(
                    "the query {:?} expects {}, which no policy registers",
                    q.query,
                    if unknown.is_empty() {
                        "nothing".to_string()
                    } else {
                        format!("{unknown:?}")
                    }
                ),
                "expect lists full names of registered tools",
            ));
            continue;
        }
        total += 1;
        if let Some(expect) = &q.loads {
            let hits = reach.search(&q.query, crate::session::MAX_RESULTS);
            let per_query = catalog.deferral_policy.per_query as usize;
            let ready = |e: usize| reach.is_offered(e);
            let mut loaded: Vec<String> = match crate::session::decide(&hits, per_query, ready) {
                crate::session::Decision::Load(e) => reach
                    .entry(e)
                    .tools
                    .iter()
                    .map(|&i| catalog.candidates[i].name.clone())
                    .collect(),
                _ => Vec::new(),
            };
            let mut want = expect.clone();
            loaded.sort();
            want.sort();
            if loaded != want {
                wrong.push(GateFailure::Loads {
                    line: n + 1,
                    query: q.query.clone(),
                    expect: want,
                    loaded,
                });
            }
        }
        let offered = q.expect.iter().any(|e| {
            plan.decision(e)
                .is_some_and(|(_, d)| d.status == Status::Offered)
        });
        let hits = index.search(&q.query, f.k as usize);
        // A hit counts when the control tool could load it: one too weak to
        // load (below the relevance floors) is not found.
        let hit = hits
            .iter()
            .filter(|h| crate::session::relevant(h))
            .any(|h| {
                index.entries[h.entry]
                    .tools
                    .iter()
                    .any(|&i| q.expect.contains(&catalog.candidates[i].name))
            });
        if offered || hit {
            found += 1;
        } else if missed.len() < 10 {
            missed.push(MissedQuery {
                line: n + 1,
                query: q.query,
                expect: q.expect,
                top: hits
                    .iter()
                    .map(|h| index.entries[h.entry].name.clone())
                    .collect(),
            });
        }
    }
    if total == 0 && problems.is_empty() {
        problems.push(
            Problem::coded(
                code::MISSING_VALUE,
                format!("gate {:?}: the findability queries are empty", gate.name),
            )
            .in_file(&f.queries)
            .help("add labelled queries, one JSON object per line"),
        );
    }
    if !problems.is_empty() {
        let problems = crate::input::cap_problems(problems, &f.queries);
        return Err(Error::many(ErrorKind::Input, problems));
    }
    let recall = (f64::from(found) / f64::from(total) * 10_000.0).round() / 10_000.0;
    Ok(FindabilityResult {
        queries: f.queries.display().to_string(),
        k: f.k,
        found,
        total,
        recall,
        min_recall: f.min_recall,
        missed,
    })
}

fn roster_diff(
    plan: &crate::plan::Plan<'_>,
    pinned: &[&str],
    actual: &[&str],
    file: &Path,
    line: usize,
) -> GateFailure {
    let pinned_set: BTreeSet<&str> = pinned.iter().copied().collect();
    let actual_set: BTreeSet<&str> = actual.iter().copied().collect();
    let added: Vec<AddedTool> = actual
        .iter()
        .enumerate()
        .filter(|(_, name)| !pinned_set.contains(*name))
        .map(|(i, name)| AddedTool {
            name: name.to_string(),
            position: i + 1,
        })
        .collect();
    let removed: Vec<RemovedTool> = pinned
        .iter()
        .filter(|name| !actual_set.contains(*name))
        .map(|name| {
            let decision = plan.decision(name);
            RemovedTool {
                name: name.to_string(),
                status: decision.map(|(_, d)| d.status),
                reason: decision.map(|(i, _)| plan.reason(i)),
            }
        })
        .collect();
    let reordered = (added.is_empty() && removed.is_empty()).then(|| {
        let first = actual
            .iter()
            .zip(pinned)
            .position(|(a, p)| a != p)
            .unwrap_or(0);
        Reorder {
            position: first + 1,
            now: actual.get(first).unwrap_or(&"").to_string(),
            pinned: pinned.get(first).unwrap_or(&"").to_string(),
        }
    });
    GateFailure::RosterDiffers {
        file: file.display().to_string(),
        line,
        added,
        removed,
        reordered,
    }
}
