//! `discover` and `lock`: the MCP commands.

use crate::args::TextOrJson;
use crate::{EXIT_BAD_INPUT, emit};
use muster::Error;
use muster::catalog::Selection;
use muster::contract::{DiscoverAnswer, LockFinding, LockStatus, ServerDiscovery, SnapshotDiff};
use muster::discover::{Event, discover_policy, lock_policy};
use muster::names::escape;
use muster::policy::Inputs;
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
        render_details(out, &change.details);
    }
}

/// What a reviewer reads under a changed tool: the description word by
/// word (`[-removed-]{+added+}`, long unchanged runs shortened), the
/// schema's paths, the hints, the other members; server text escaped.
fn render_details(out: &mut String, details: &muster::contract::ChangeDetails) {
    use muster::contract::SpanOp;
    if !details.description.is_empty() {
        let text: String = details
            .description
            .iter()
            .map(|s| match s.op {
                SpanOp::Same => shortened(&escape(&s.text)),
                SpanOp::Removed => format!("[-{}-]", escape(&s.text)),
                SpanOp::Added => format!("{{+{}+}}", escape(&s.text)),
            })
            .collect();
        let _ = writeln!(out, "         description: {text}");
    }
    if !details.schema_paths.is_empty() {
        let paths: Vec<String> = details.schema_paths.iter().map(|p| escape(p)).collect();
        let more = match details.schema_paths_more {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        let _ = writeln!(out, "         input schema at: {}{more}", paths.join(", "));
    }
    for hint in &details.hints {
        let _ = writeln!(
            out,
            "         {}: {} -> {}",
            hint.hint, hint.before, hint.after
        );
    }
    if !details.members.is_empty() {
        let members: Vec<String> = details.members.iter().map(|m| escape(m)).collect();
        let _ = writeln!(out, "         also changed: {}", members.join(", "));
    }
}

/// An unchanged run of a description, its middle left out when long.
fn shortened(text: &str) -> String {
    const KEEP: usize = 30;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 2 * KEEP + 1 {
        return text.to_string();
    }
    let head: String = chars[..KEEP].iter().collect();
    let tail: String = chars[chars.len() - KEEP..].iter().collect();
    format!("{head}…{tail}")
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
        let mut kinds: Vec<String> = f.changes.iter().map(|c| c.to_string()).collect();
        if let Some(previous) = &f.previous {
            kinds.push(format!("was {}", escape(previous)));
        }
        let kinds = if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        };
        let _ = writeln!(out, "  {verb} mcp.{}.{}{kinds}", f.server, escape(&f.tool));
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
