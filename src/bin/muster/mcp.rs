//! `discover` and `lock`: the MCP commands.

use crate::args::TextOrJson;
use crate::{EXIT_BAD_INPUT, emit};
use muster::Error;
use muster::catalog::Selection;
use muster::contract::{DiscoverAnswer, LockFinding, LockStatus, ServerDiscovery, SnapshotDiff};
use muster::discover::{Event, discover_policy, lock_policy};
use muster::names::escape;
use muster::policy::Inputs;
use muster::snapshot::review::show;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;

/// `muster discover`: the library discovers, this renders.
pub fn discover(
    policies: &Path,
    names: &[String],
    also_lock: bool,
    format: TextOrJson,
) -> Result<u8, Error> {
    let inputs = Inputs::load(policies)?;
    let progress = std::io::stderr().is_terminal();
    let answer = discover_policy(&inputs.policy, names, also_lock, |event| {
        if !progress {
            return;
        }
        let line = match event {
            Event::Starting { server } => format!("{server}: starting"),
            Event::Initialized { server, .. } => format!("{server}: initialized"),
            Event::Page {
                server,
                page,
                tools_so_far,
            } => format!("{server}: page {page}, {tools_so_far} tools"),
            Event::Finished { server, ok } => {
                format!("{server}: {}", if ok { "done" } else { "failed" })
            }
            _ => return,
        };
        eprintln!("{line}");
    })?;
    emit(&match format {
        TextOrJson::Text => discover_text(&answer),
        TextOrJson::Json => muster::answer::json_text(&answer),
    })?;
    if answer.listed > 0 {
        warm_recorded(policies);
    }
    Ok(if answer.failed > 0 { EXIT_BAD_INPUT } else { 0 })
}

fn discover_text(answer: &DiscoverAnswer) -> String {
    let mut out = String::new();
    for server in &answer.servers {
        match server {
            ServerDiscovery::Listed {
                server,
                tools,
                pages,
                snapshot,
                snapshot_written,
                diff,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "ok   {server}: {tools} tools in {pages} page(s); snapshot {snapshot} {}",
                    if *snapshot_written {
                        "written"
                    } else {
                        "unchanged"
                    }
                );
                render_diff(&mut out, diff);
            }
            ServerDiscovery::Failed {
                server,
                problems,
                snapshot_kept,
                ..
            } => {
                let _ = writeln!(out, "FAIL {server}:");
                for problem in problems {
                    let _ = writeln!(out, "  {problem}");
                }
                if *snapshot_kept {
                    let _ = writeln!(out, "  the previous snapshot is kept");
                }
            }
        }
    }
    if let Some(lock) = &answer.lock {
        render_accepted(&mut out, &lock.accepted, &lock.lock_file);
    }
    let _ = writeln!(
        out,
        "{} server(s) listed, {} failed",
        answer.listed, answer.failed
    );
    out
}

fn render_diff(out: &mut String, diff: &SnapshotDiff) {
    for name in &diff.added {
        let _ = writeln!(out, "     + {}", escape(name));
    }
    for name in &diff.removed {
        let _ = writeln!(out, "     - {}", escape(name));
    }
    for change in &diff.changed {
        let mut what = Vec::new();
        if change.description {
            what.push("description");
        }
        if change.input_schema {
            what.push("input schema");
        }
        if change.other {
            what.push("other fields");
        }
        let _ = writeln!(
            out,
            "     ~ {} ({} changed)",
            escape(&change.name),
            what.join(", ")
        );
        render_lines(out, show::lines(&change.details));
    }
}

/// What a reviewer reads under a changed tool or a lock line, indented.
fn render_lines(out: &mut String, lines: Vec<String>) {
    for line in lines {
        let _ = writeln!(out, "         {line}");
    }
}

fn render_accepted(out: &mut String, accepted: &[LockFinding], file: &str) {
    if accepted.is_empty() {
        let _ = writeln!(out, "lock {file}: already up to date");
        return;
    }
    let _ = writeln!(out, "lock {file}: accepted");
    for f in accepted {
        let verb = match f.status {
            LockStatus::Unlocked => "new    ",
            LockStatus::Changed => "changed",
            LockStatus::Gone => "removed",
            LockStatus::Renamed => "renamed",
        };
        let kinds = match show::kinds(f) {
            k if k.is_empty() => k,
            k => format!(" ({k})"),
        };
        let _ = writeln!(out, "  {verb} mcp.{}.{}{kinds}", f.server, escape(&f.tool));
        for line in show::of_finding(f) {
            let _ = writeln!(out, "      {line}");
        }
    }
}

/// `muster lock`: the library accepts, this renders.
pub fn lock(policies: &Path, names: &[String], format: TextOrJson) -> Result<u8, Error> {
    let inputs = Inputs::load(policies)?;
    let answer = lock_policy(&inputs, names)?;
    emit(&match format {
        TextOrJson::Text => {
            let mut out = String::new();
            render_accepted(&mut out, &answer.accepted, &answer.lock_file);
            out
        }
        TextOrJson::Json => muster::answer::json_text(&answer),
    })?;
    warm_recorded(policies);
    Ok(0)
}

/// Encodes for search the tools the policy now records
/// ([`crate::warm`]), read again since the listing was written; a policy
/// that no longer loads is left to the next command to report.
fn warm_recorded(policies: &Path) {
    let Ok(inputs) = Inputs::load(policies) else {
        return;
    };
    let mut cache = crate::token_cache(false);
    crate::warm(&inputs, &Selection::default(), &mut cache);
    crate::save(&mut cache);
}
