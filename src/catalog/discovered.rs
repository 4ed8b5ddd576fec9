//! Discovered tools: each server's listed tools through its block (flag,
//! agent, allow, deny, the lock, the input-schema rule, params and only),
//! with the drift warnings narrowing finds.

use super::build::Builder;
use super::{Candidate, Exclusion, Source};
use crate::contract::{Enabling, Reason, SchemaProblem, Warning, WarningKind};
use crate::narrow::{DriftCode, ExcludeCode, KeepAwayCode, NarrowOutcome, narrow_tool};
use crate::policy::{ListedTool, LockMode, ServerDef, mcp_name};
use std::collections::BTreeSet;

/// A drift warning found while narrowing: code, server, tool, argument.
type Drift = (DriftCode, String, String, String);

impl Builder<'_> {
    pub(super) fn discovered(&mut self) {
        let policy = self.policy;
        let mut drift: BTreeSet<Drift> = BTreeSet::new();
        for server in &policy.servers {
            let listed = self.listings.of(&server.name);
            if server.command.is_some()
                && listed.is_empty()
                && server.snapshot.as_ref().is_none_or(|s| !s.exists())
            {
                self.warnings.push(Warning::at(
                    WarningKind::NoSnapshot {
                        server: server.name.clone(),
                    },
                    &server.origin,
                ));
            }
            let server_used = self.agent.uses(&server.name);
            // Room for the whole listing at once (see `configured`).
            self.candidates.reserve(listed.len());
            for listed in listed {
                // A name with hidden characters is shown, and looked up,
                // with them escaped.
                let hidden = crate::names::first_hidden(&listed.name);
                let name = match hidden {
                    Some(_) => mcp_name(&server.name, &crate::names::escape(&listed.name)),
                    None => mcp_name(&server.name, &listed.name),
                };
                let call = self.call_spec(
                    server.unknown_arguments.unwrap_or(policy.calls.mcp_unknown),
                    server.coerce.unwrap_or(policy.calls.coerce_mcp),
                    server
                        .tool_check
                        .get(&listed.name)
                        .copied()
                        .or(server.check)
                        .unwrap_or(policy.calls.mcp_check),
                );
                let priority = server
                    .tool_priority
                    .get(&listed.name)
                    .copied()
                    .unwrap_or(server.priority);
                let mut c = self.candidate(
                    name,
                    Source::Mcp {
                        server: server.name.clone(),
                        tool: listed.name.clone(),
                    },
                    listed.description.clone().unwrap_or_default(),
                    listed.input_schema.clone(),
                    priority,
                    server.deferrable,
                    call,
                );
                c.hints = crate::catalog::ToolHints::of(listed);
                c.exclusion = match hidden {
                    Some((position, character, hidden)) => Some(Reason::InvalidName {
                        server: server.name.clone(),
                        tool: crate::names::escape(&listed.name),
                        character: crate::names::code_point(character),
                        hidden,
                        position,
                    }),
                    None => self
                        .server_exclusion(server, server_used)
                        .or_else(|| self.hint_exclusion(server, &listed.name, c.hints.as_deref())),
                }
                .map(Box::new);
                // A repeated name is settled before the lock and narrowing,
                // so a second listing is reported as what it is.
                if c.exclusion.is_none() {
                    c.exclusion = self.repeated(&c.name).map(Box::new);
                }
                if c.exclusion.is_none() {
                    c.exclusion = self
                        .narrow(server, listed, &mut c, &mut drift)
                        .map(Box::new);
                }
                self.push(c);
            }
        }
        for (code, server, tool, argument) in drift {
            // Point at the `only` entry the warning is about when there is
            // one, else at the server block.
            let origin = policy
                .servers
                .iter()
                .find(|s| s.name == server)
                .map(|s| s.only_origins.get(&tool).unwrap_or(&s.origin));
            let kind = match code {
                DriftCode::OnlyUndeclared => WarningKind::OnlyUndeclared {
                    server,
                    tool,
                    argument,
                },
                DriftCode::RequiredUnreachable => WarningKind::RequiredUnreachable {
                    server,
                    tool,
                    argument,
                },
            };
            self.warnings.push(match origin {
                Some(origin) => Warning::at(kind, origin),
                None => Warning::new(kind),
            });
        }
    }

    pub(super) fn server_exclusion(
        &self,
        server: &ServerDef,
        server_used: bool,
    ) -> Option<Exclusion> {
        if !self.flag_on(&server.when) {
            return Some(Reason::FlagOff {
                flag: server.when.clone().unwrap_or_default(),
                server: Some(server.name.clone()),
            });
        }
        if !server_used {
            return Some(Reason::NotEnabled {
                agent: self.agent.name.clone(),
                by: Enabling::Servers,
                server: Some(server.name.clone()),
            });
        }
        None
    }

    /// Applies the server block (allow, deny, the lock, params and only) to
    /// one listed tool: either the exclusion that keeps it away, or `c`
    /// narrowed to what the model is shown. Drift warnings are collected
    /// into `drift`, so each is reported once per plan.
    pub(super) fn narrow(
        &mut self,
        server: &ServerDef,
        listed: &ListedTool,
        c: &mut Candidate,
        drift: &mut BTreeSet<Drift>,
    ) -> Option<Exclusion> {
        let tool = listed.name.as_str();
        let outcome = narrow_tool(tool, &listed.input_schema, &server.narrowing);
        if let NarrowOutcome::Excluded { code } = &outcome {
            let (server, tool) = (server.name.clone(), tool.to_string());
            return Some(match code {
                ExcludeCode::Denied => Reason::Denied { server, tool },
                ExcludeCode::NotAllowed => Reason::NotAllowed { server, tool },
            });
        }
        if let Some(exclusion) = self.lock_check(server, listed) {
            return Some(exclusion);
        }
        if let Some(problem) = listed.input_schema.problem() {
            return Some(Reason::InvalidSchema {
                problem: problem.clone(),
            });
        }
        let warnings = match &outcome {
            NarrowOutcome::Offered(o) => &o.warnings,
            NarrowOutcome::KeptAway { warnings, .. } => warnings,
            NarrowOutcome::Excluded { .. } => return None,
        };
        for w in warnings {
            drift.insert((
                w.code,
                server.name.clone(),
                w.tool.clone(),
                w.argument.clone(),
            ));
        }
        match outcome {
            NarrowOutcome::Offered(o) => {
                c.input_schema = o.shown_schema;
                c.call.fixed = o.fixed;
                c.call.only = o.only;
                None
            }
            NarrowOutcome::KeptAway {
                code, arguments, ..
            } => {
                let (server, tool) = (server.name.clone(), tool.to_string());
                Some(match code {
                    KeepAwayCode::FixedUndeclared => Reason::FixedUndeclared {
                        server,
                        tool,
                        arguments,
                    },
                    KeepAwayCode::RequiredUnreachable => Reason::RequiredUnreachable {
                        server,
                        tool,
                        arguments,
                    },
                    KeepAwayCode::SchemaNotObject => Reason::InvalidSchema {
                        problem: SchemaProblem::NotAnObject {
                            found: listed.input_schema.kind().to_string(),
                        },
                    },
                })
            }
            NarrowOutcome::Excluded { .. } => None,
        }
    }

    /// The first rule over safety hints that keeps a tool away: the
    /// server block's, then the agent's; `deny_hints` before
    /// `require_hints`, each in the order written.
    fn hint_exclusion(
        &self,
        server: &ServerDef,
        tool: &str,
        hints: Option<&crate::catalog::ToolHints>,
    ) -> Option<Exclusion> {
        use crate::contract::HintRule;
        let has = |h| crate::catalog::ToolHints::has(hints, h);
        [
            (&server.hints, None),
            (&self.agent.hints, Some(&self.agent.name)),
        ]
        .into_iter()
        .find_map(|(rules, agent)| {
            let denied = rules
                .deny
                .iter()
                .find(|&&h| has(h))
                .map(|&h| (h, HintRule::Deny));
            let missing = || {
                rules
                    .require
                    .iter()
                    .find(|&&h| !has(h))
                    .map(|&h| (h, HintRule::Require))
            };
            denied
                .or_else(missing)
                .map(|(hint, rule)| Reason::HintDenied {
                    server: server.name.clone(),
                    tool: tool.to_string(),
                    hint,
                    rule,
                    agent: agent.cloned(),
                })
        })
    }

    /// With a lock file, a tool whose definition is not the reviewed one is
    /// kept away (`lock.on_mismatch = "cut"`) or warned about.
    pub(super) fn lock_check(
        &mut self,
        server: &ServerDef,
        listed: &ListedTool,
    ) -> Option<Exclusion> {
        let mismatch = self.lock?.check(&server.name, listed)?;
        let reason = Reason::LockMismatch {
            server: server.name.clone(),
            tool: listed.name.clone(),
            locked: mismatch.locked,
            current: mismatch.current,
            lock_file: self.policy.lock.file.display().to_string(),
            changes: mismatch.changes,
        };
        match self.policy.lock.on_mismatch {
            LockMode::Cut => Some(reason),
            LockMode::Warn => {
                self.warnings.push(Warning::new(WarningKind::LockMismatch {
                    name: mcp_name(&server.name, &listed.name),
                    reason,
                }));
                None
            }
        }
    }
}
