//! The muster binary: parses arguments, calls the library, renders tables
//! or JSON and picks the exit code (0 success, 1 a gate failed or a turn was
//! refused, 2 bad input or usage).

mod args;
mod mcp;
mod render;
mod session;

use args::{Cli, Command, Select, TableOrJson, TextOrJson};
use clap::Parser;
use muster::catalog::{Catalog, Selection};
use muster::policy::{Caps, Policy};
use muster::tokens::{self, TokenCache};
use muster::{Error, ErrorKind, Problem, check, explain, gate, plan};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code for a gate that failed or a turn that was refused.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code for bad input or usage.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let label = match err.kind() {
                ErrorKind::Usage => "usage",
                _ => "error",
            };
            let mut stderr = std::io::stderr().lock();
            for problem in err.problems() {
                let _ = writeln!(stderr, "{label}: {problem}");
            }
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Writes `text` to stdout in one piece; a closed pipe is not an error.
pub(crate) fn emit(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(Error::new(
            ErrorKind::Io,
            Problem::new(format!("cannot write output: {err}")),
        )),
    }
}

/// The selection `select` names.
pub(crate) fn selection(select: &Select) -> Selection {
    Selection {
        agent: select.agent.clone(),
        profile: select.profile.clone(),
        flags: select.flag.clone(),
        version: select.agent_version,
    }
}

fn load(select: &Select) -> Result<(Policy, Catalog), Error> {
    let policy = Policy::load(&select.policies)?;
    let mut cache = token_cache(select.no_cache);
    let catalog = Catalog::build_cached(&policy, &selection(select), &mut cache)?;
    save(&mut cache);
    Ok((policy, catalog))
}

/// The token-count cache: `$MUSTER_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/muster`, else `~/.cache/muster`; in memory only with
/// `--no-cache` or when none of them is set.
fn token_cache(disabled: bool) -> TokenCache {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = var("MUSTER_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("muster")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("muster")));
    match dir {
        Some(dir) if !disabled => TokenCache::open(&dir.join(tokens::cache::FILE_NAME)),
        _ => TokenCache::in_memory(),
    }
}

/// Saves the counts the run added. A cache that cannot be written costs
/// the next run time, not this one its result, so failing is silent.
fn save(cache: &mut TokenCache) {
    let _ = cache.save();
}

fn caps(select: &Select, catalog: &Catalog) -> Caps {
    catalog
        .caps
        .with_overrides(select.item_cap, select.token_cap)
}

fn run(command: Command) -> Result<u8, Error> {
    match command {
        Command::Plan { select, format } => {
            let (_, catalog) = load(&select)?;
            let plan = plan::plan(&catalog, caps(&select, &catalog));
            let text = match format {
                TableOrJson::Json => plan.to_json_string(),
                TableOrJson::Table => render::plan_table(&plan),
            };
            emit(&text)?;
            Ok(0)
        }
        Command::Why {
            tool,
            select,
            format,
        } => {
            let (_, catalog) = load(&select)?;
            let plan = plan::plan(&catalog, caps(&select, &catalog));
            let explanation = explain::why(&plan, &tool);
            let text = match format {
                TextOrJson::Text => explanation.to_string(),
                TextOrJson::Json => json_text(&explanation),
            };
            emit(&text)?;
            Ok(0)
        }
        Command::Gate {
            paths,
            policies,
            item_cap,
            token_cap,
            no_cache,
            format,
        } => {
            let paths = if paths.is_empty() {
                vec!["gates".into()]
            } else {
                paths
            };
            let policy = Policy::load(&policies)?;
            let gates = gate::load(&paths)?;
            let mut results = Vec::new();
            let mut problems = Vec::new();
            let mut cache = token_cache(no_cache);
            for g in &gates {
                match gate::run_cached(&policy, g, (item_cap, token_cap), &mut cache) {
                    Ok(result) => results.push(result),
                    Err(err) => problems.extend(err.problems().iter().cloned()),
                }
            }
            save(&mut cache);
            if !problems.is_empty() {
                return Err(Error::many(ErrorKind::Input, problems));
            }
            let text = match format {
                TextOrJson::Text => render::gate_text(&results),
                TextOrJson::Json => json_text(&results),
            };
            emit(&text)?;
            Ok(if results.iter().all(|r| r.passed) {
                0
            } else {
                EXIT_FAILED
            })
        }
        Command::Discover {
            policies,
            servers,
            lock,
        } => mcp::discover(&policies, &servers, lock),
        Command::Lock { policies, servers } => mcp::lock(&policies, &servers),
        Command::Check {
            plan,
            session,
            policies,
            turn,
            positional,
            format,
        } => {
            let read = |path: &std::path::Path, what: &str| {
                muster::input::read_text(path).map_err(|err| err.into_error(path, what))
            };
            let offered = match (plan, session) {
                (Some(plan), _) => check::OfferedPlan::from_json(&read(&plan, "the plan")?, &plan)?,
                (None, Some(path)) => match session::open(&policies, &path, format)? {
                    // The session's offer has the plan's roster shape.
                    Ok(live) => check::OfferedPlan::from_json(&live.roster_json(), &path)?,
                    Err(code) => return Ok(code),
                },
                (None, None) => {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        Problem::new("give --plan PLAN.json or --session S.json"),
                    ));
                }
            };
            let turn_value = check::Turn::from_json(&read(&turn, "the turn")?, &turn)?;
            let report =
                check::check_turn(&offered, &turn_value, &check::CheckOptions { positional });
            let text = match format {
                TextOrJson::Text => report.render_text(),
                TextOrJson::Json => json_text(&report),
            };
            emit(&text)?;
            Ok(match report.verdict {
                check::Verdict::Run => 0,
                _ => EXIT_FAILED,
            })
        }
        Command::Session(command) => session::run(command),
        Command::Validate { policies } => {
            let policy = Policy::load(&policies)?;
            emit(&render::validate_text(&policy)?)?;
            Ok(0)
        }
    }
}

pub(crate) fn json_text<T: serde::Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}
