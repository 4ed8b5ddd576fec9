//! `discover` and `lock` over a policy: which server blocks are meant, how a
//! block becomes a [`ServerSpec`], and the answers the binary renders. The
//! listing rules stay in [`crate::snapshot`]; this module only applies them
//! to the servers a policy declares. It never prints.

use super::{Event, ServerSpec, discover};
use crate::contract::{
    DISCOVER_FORMAT_VERSION, DiscoverAnswer, DiscoverProblem, LOCK_FORMAT_VERSION, LockAnswer,
    LockUpdate, ServerDiscovery,
};
use crate::error::{Error, ErrorKind, Problem};
use crate::lock::Lock;
use crate::policy::{Inputs, Policy, ServerDef};
use crate::snapshot::repeats;

/// The server blocks `names` picks (every block when empty), in declared order.
///
/// # Errors
/// [`ErrorKind::Usage`] naming every name no block declares.
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

/// How to start each picked block that has a command. A block without a
/// command is skipped unless it was named.
///
/// # Errors
/// [`ErrorKind::Policy`] for a named block without a command and for any
/// block without a snapshot path; [`ErrorKind::Usage`] when no block is left.
fn specs(servers: &[&ServerDef], named: bool) -> Result<Vec<ServerSpec>, Error> {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for server in servers {
        if server.command.is_none() && server.url.is_none() {
            if named {
                problems.push(server.origin.problem(format!(
                    "MCP server {:?} has no command to start and no url to reach",
                    server.name
                )));
            }
            continue;
        }
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
        let command = server.command.clone().unwrap_or_default();
        let mut spec = ServerSpec::new(server.name.clone(), command, snapshot.clone());
        spec.url.clone_from(&server.url);
        spec.headers.clone_from(&server.headers);
        spec.oauth.clone_from(&server.oauth);
        spec.timeout = server.timeout;
        spec.env.clone_from(&server.env);
        spec.cwd.clone_from(&server.cwd);
        // Listed as a client that answers every request the policy lets
        // the server send, so tools it offers only to such clients are
        // recorded and reviewed too.
        spec.declare = crate::mcp_client::Declared::all_of(&server.relay);
        specs.push(spec);
    }
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Policy, problems));
    }
    if specs.is_empty() {
        return Err(Error::new(
            ErrorKind::Usage,
            Problem::new("no MCP server has a command to start or a url to reach")
                .help("add command = [\"prog\", \"arg\", ...] or url = \"https://.../mcp\" to a server block in mcp/*.toml"),
        ));
    }
    Ok(specs)
}

fn problems(err: &Error) -> Vec<DiscoverProblem> {
    err.problems()
        .iter()
        .map(|p| DiscoverProblem {
            code: p.code.to_string(),
            message: p.message.clone(),
            file: p.file.as_ref().map(|f| f.display().to_string()),
            line: p.line,
            help: p.help.clone(),
        })
        .collect()
}

/// `muster discover`: lists the tools of every server block in `names`
/// (every block with a command when empty) and records each complete,
/// valid listing as its snapshot (see [`discover`]); with `also_lock`,
/// accepts every recorded listing into the policy's lock file. One server's
/// failure does not stop the others: it is a [`ServerDiscovery::Failed`]
/// with its reason.
///
/// # Errors
/// [`ErrorKind::Usage`] for a name no block declares or when no block has
/// a command; [`ErrorKind::Policy`] for a block that cannot be started as
/// written; the lock's errors when it cannot be read or written.
pub fn discover_policy(
    policy: &Policy,
    names: &[String],
    also_lock: bool,
    on_event: impl FnMut(Event),
) -> Result<DiscoverAnswer, Error> {
    let servers = selected(policy, names)?;
    let specs = specs(&servers, !names.is_empty())?;
    let outcomes = discover(&specs, on_event);
    let mut listed = Vec::new();
    let mut answers = Vec::with_capacity(outcomes.len());
    for (spec, outcome) in specs.iter().zip(outcomes) {
        answers.push(match outcome.result {
            Ok(found) => {
                let answer = ServerDiscovery::Listed {
                    server: outcome.server.clone(),
                    tools: found.tools.len(),
                    pages: found.pages,
                    snapshot: found.snapshot.display().to_string(),
                    snapshot_written: found.snapshot_changed,
                    previous_unreadable: found
                        .previous_unreadable
                        .as_ref()
                        .map(problems)
                        .unwrap_or_default(),
                    diff: found.diff,
                };
                listed.push((outcome.server, found.tools));
                answer
            }
            Err(failed) => ServerDiscovery::Failed {
                server: outcome.server,
                reason: failed.reason,
                problems: problems(&failed.error),
                snapshot_kept: spec.snapshot.exists(),
            },
        });
    }
    let lock = if also_lock {
        let accepted = Lock::update_file(&policy.lock.file, |mut lock| {
            let mut accepted = Vec::new();
            for (server, tools) in &listed {
                let (next, findings) = lock.update(server, tools);
                lock = next;
                accepted.extend(findings);
            }
            Ok((lock, accepted))
        })?;
        Some(LockUpdate {
            lock_file: policy.lock.file.display().to_string(),
            accepted,
        })
    } else {
        None
    };
    let failed = answers
        .iter()
        .filter(|a| matches!(a, ServerDiscovery::Failed { .. }))
        .count();
    Ok(DiscoverAnswer {
        format_version: DISCOVER_FORMAT_VERSION,
        listed: answers.len() - failed,
        failed,
        servers: answers,
        lock,
    })
}

/// `muster lock`: accepts the listings recorded for the server blocks in
/// `names` (every block when empty) into the policy's lock file, and says
/// what it accepted. The lock file is read again here rather than taken
/// from `inputs.lock`: this is its read-modify-write.
///
/// # Errors
/// [`ErrorKind::Usage`] for a name no block declares; [`ErrorKind::Mcp`]
/// naming each tool a snapshot lists twice (there is no single definition to
/// lock); the lock's errors when it cannot be read or written.
pub fn lock_policy(inputs: &Inputs, names: &[String]) -> Result<LockAnswer, Error> {
    let (policy, listings) = (&inputs.policy, &inputs.listings);
    let servers = selected(policy, names)?;
    let problems: Vec<Problem> = servers
        .iter()
        .flat_map(|server| {
            repeats(listings.of(&server.name).iter().map(|t| t.name.as_str()))
                .into_iter()
                .map(|(_, tool)| {
                    server
                        .origin
                        .problem(format!(
                            "MCP server {:?} lists {tool:?} twice; there is no single definition to lock",
                            server.name
                        ))
                        .help("record the snapshot again with `muster discover`, which refuses such listings")
                })
        })
        .collect();
    if !problems.is_empty() {
        return Err(Error::many(ErrorKind::Mcp, problems));
    }
    let accepted = Lock::update_file(&policy.lock.file, |mut lock| {
        let mut accepted = Vec::new();
        for server in servers {
            let (next, findings) = lock.update(&server.name, listings.of(&server.name));
            lock = next;
            accepted.extend(findings);
        }
        Ok((lock, accepted))
    })?;
    Ok(LockAnswer {
        format_version: LOCK_FORMAT_VERSION,
        lock_file: policy.lock.file.display().to_string(),
        accepted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(snapshot: &str) -> (tempfile::TempDir, Inputs) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mcp")).unwrap();
        std::fs::write(
            dir.path().join("mcp/s.toml"),
            "[[mcp]]\nname = \"m\"\nsnapshot = \"m.json\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("mcp/m.json"), snapshot).unwrap();
        let inputs = Inputs::load(dir.path()).unwrap();
        (dir, inputs)
    }

    #[test]
    fn lock_refuses_a_listing_with_a_repeated_name_and_writes_nothing() {
        let t = r#"{"name": "t", "inputSchema": {"type": "object"}}"#;
        let (dir, inputs) = inputs(&format!(r#"{{"tools": [{t}, {t}, {t}]}}"#));
        let err = lock_policy(&inputs, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        assert_eq!(err.problems().len(), 2, "one problem per repeat: {err}");
        assert!(err.problems()[0].file.is_some(), "{err}");
        assert!(!dir.path().join("mcp.lock").exists());
    }

    #[test]
    fn unknown_names_and_servers_without_a_command_are_refused_before_any_start() {
        let (_dir, inputs) = inputs(r#"{"tools": []}"#);
        let policy = &inputs.policy;
        let err =
            discover_policy(policy, &["nope".into(), "also".into()], false, |_| {}).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        assert_eq!(err.problems().len(), 2, "{err}");
        let err = discover_policy(policy, &[], false, |_| {}).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        let err = discover_policy(policy, &["m".into()], false, |_| {}).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Policy,
            "a named block must have a command"
        );
        let answer = lock_policy(&inputs, &[]).unwrap();
        assert!(answer.accepted.is_empty());
    }
}
