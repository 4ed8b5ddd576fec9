//! `discover` and `lock`: the MCP commands.

use crate::args::TextOrJson;
use crate::{EXIT_BAD_INPUT, emit};
use muster::contract::{LOCK_FORMAT_VERSION, LockAnswer};
use muster::discover::{Event, ServerSpec, SnapshotDiff, discover as run_discover};
use muster::lock::{Lock, LockFinding, LockStatus};
use muster::names::escape;
use muster::policy::{Policy, ServerDef};
use muster::{Error, ErrorKind, Problem};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;

fn selected<'p>(policy: &'p Policy, names: &[String]) -> Result<Vec<&'p ServerDef>, Error> {
    let problems: Vec<Problem> = names
        .iter()
        .filter(|n| !policy.servers.iter().any(|s| &s.name == *n))
        .map(|n| {
            Problem::new(format!("no MCP server named {n:?} is declared"))
                .help("declare it in mcp/*.toml, or pick one of the declared servers")
        })
        .collect();
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Usage, problems));
    }
    Ok(policy
        .servers
        .iter()
        .filter(|s| names.is_empty() || names.contains(&s.name))
        .collect())
}

pub fn discover(policies: &Path, names: &[String], also_lock: bool) -> Result<u8, Error> {
    let policy = Policy::load(policies)?;
    let servers = selected(&policy, names)?;
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for server in servers {
        let Some(command) = &server.command else {
            if !names.is_empty() {
                problems.push(server.origin.problem(format!(
                    "MCP server {:?} has no command to start",
                    server.name
                )));
            }
            continue;
        };
        let Some(snapshot) = &server.snapshot else {
            problems.push(
                server
                    .origin
                    .problem(format!("MCP server {:?} has no snapshot path", server.name))
                    .help(format!(
                        "add snapshot = \"{}.json\" to the block",
                        server.name
                    )),
            );
            continue;
        };
        let mut spec = ServerSpec::new(server.name.clone(), command.clone(), snapshot.clone());
        spec.timeout = server.timeout;
        spec.env = server.env.clone();
        specs.push(spec);
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Policy, problems));
    }
    if specs.is_empty() {
        return Err(Error::new(
            ErrorKind::Usage,
            Problem::new("no MCP server has a command to start")
                .help("add command = [\"prog\", \"arg\", ...] to a server block in mcp/*.toml"),
        ));
    }
    let progress = std::io::stderr().is_terminal();
    let outcomes = run_discover(&specs, |event| {
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
    });
    let mut out = String::new();
    let mut failed = 0;
    let mut lock = if also_lock {
        Some(Lock::read_or_empty(&policy.lock.file)?)
    } else {
        None
    };
    let mut accepted = Vec::new();
    for outcome in &outcomes {
        match &outcome.result {
            Ok(found) => {
                let _ = writeln!(
                    out,
                    "ok   {}: {} tools in {} page(s); snapshot {} {}",
                    outcome.server,
                    found.tools.len(),
                    found.pages,
                    found.snapshot.display(),
                    if found.snapshot_changed {
                        "written"
                    } else {
                        "unchanged"
                    }
                );
                render_diff(&mut out, &found.diff);
                if let Some(lock) = &mut lock {
                    let (next, findings) = lock.update(&outcome.server, &found.tools);
                    *lock = next;
                    accepted.extend(findings);
                }
            }
            Err(err) => {
                failed += 1;
                let _ = writeln!(out, "FAIL {}:", outcome.server);
                for problem in err.problems() {
                    let _ = writeln!(out, "  {problem}");
                }
                let kept = specs
                    .iter()
                    .find(|s| s.name == outcome.server)
                    .is_some_and(|s| s.snapshot.exists());
                if kept {
                    let _ = writeln!(out, "  the previous snapshot is kept");
                }
            }
        }
    }
    if let Some(lock) = &lock {
        lock.write(&policy.lock.file)?;
        render_accepted(&mut out, &accepted, &policy.lock.file);
    }
    let _ = writeln!(
        out,
        "{} server(s) listed, {failed} failed",
        outcomes.len() - failed
    );
    emit(&out)?;
    Ok(if failed > 0 { EXIT_BAD_INPUT } else { 0 })
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
    }
}

fn render_accepted(out: &mut String, accepted: &[LockFinding], file: &Path) {
    if accepted.is_empty() {
        let _ = writeln!(out, "lock {}: already up to date", file.display());
        return;
    }
    let _ = writeln!(out, "lock {}: accepted", file.display());
    for f in accepted {
        let verb = match f.status {
            LockStatus::Unlocked => "new    ",
            LockStatus::Changed => "changed",
            LockStatus::Gone => "removed",
        };
        let _ = writeln!(out, "  {verb} mcp.{}.{}", f.server, escape(&f.tool));
    }
}

pub fn lock(policies: &Path, names: &[String], format: TextOrJson) -> Result<u8, Error> {
    let policy = Policy::load(policies)?;
    let servers = selected(&policy, names)?;
    let mut lock = Lock::read_or_empty(&policy.lock.file)?;
    let mut accepted = Vec::new();
    let mut problems = Vec::new();
    for server in &servers {
        let mut seen = std::collections::BTreeSet::new();
        for tool in &server.listed {
            if !seen.insert(tool.name.as_str()) {
                problems.push(
                    server
                        .origin
                        .problem(format!(
                            "MCP server {:?} lists {:?} twice; there is no single definition to lock",
                            server.name, tool.name
                        ))
                        .help("record the snapshot again with `muster discover`, which refuses such listings"),
                );
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Mcp, problems));
    }
    for server in servers {
        let (next, findings) = lock.update(&server.name, &server.listed);
        lock = next;
        accepted.extend(findings);
    }
    lock.write(&policy.lock.file)?;
    let answer = LockAnswer {
        format_version: LOCK_FORMAT_VERSION,
        lock_file: policy.lock.file.display().to_string(),
        accepted,
    };
    emit(&match format {
        TextOrJson::Text => {
            let mut out = String::new();
            render_accepted(&mut out, &answer.accepted, &policy.lock.file);
            out
        }
        TextOrJson::Json => muster::answer::json_text(&answer),
    })?;
    Ok(0)
}
