//! `why`: answers "why is tool X missing (or present)?" from a plan's own
//! decisions. It renders the facts the planner recorded; it never re-plans.

use crate::catalog::Source;
use crate::contract::{Reason, Status};
use crate::plan::Plan;

pub use crate::contract::{Explanation, Remedy, WhyStatus};

/// Explains the decision about `name` in `plan`.
pub fn why(plan: &Plan<'_>, name: &str) -> Explanation {
    let cat = plan.catalog;
    let Some((i, d)) = plan.decision(name) else {
        return unknown(plan, name);
    };
    let c = &cat.candidates[i];
    let facts = plan.reason(i);
    let mut reasons = Vec::new();
    let mut to_fit = Vec::new();
    let mut outranked_by = Vec::new();
    let mut offered_after = Vec::new();
    let ranked = cat.ranked.len();
    let rank_text = d
        .rank
        .map(|r| format!("rank {r} of {ranked}"))
        .unwrap_or_else(|| "not ranked".to_string());
    let summary = format!("{name} is {} ({}): {facts}", d.status.as_str(), d.code);
    match &facts {
        Reason::Required { .. }
        | Reason::Fits { .. }
        | Reason::ControlTool { .. }
        | Reason::Loaded => {
            reasons.push(format!(
                "offered at {rank_text}: {}; {} tokens",
                d.code.description(),
                plan.tokens(i)
            ));
            if let Some(group) = &c.group {
                reasons.push(format!("member of group {group}"));
            }
        }
        Reason::ItemCap {
            offered_ahead,
            item_cap_needed,
            displace,
            reserved_for_loads,
        } => {
            reasons.push(format!(
                "item cap {}: the roster was full when its turn came at {rank_text}",
                plan.caps.items
            ));
            outranked_by = plan
                .roster
                .iter()
                .map(|&j| cat.candidates[j].name.clone())
                .collect();
            reasons.push(format!(
                "outranked by all {offered_ahead} offered tools: {}",
                outranked_by.join(", ")
            ));
            if *reserved_for_loads > 0 {
                reasons.push(format!(
                    "{reserved_for_loads} slots are reserved for loads (deferral.loads = \"within-caps\")"
                ));
            }
            reasons.push(priority_rule(c));
            to_fit.push(Remedy::RaiseItemCap {
                to: *item_cap_needed,
            });
            if !displace.is_empty() {
                to_fit.push(Remedy::Displace {
                    tools: displace.clone(),
                });
            }
            if !c.required {
                to_fit.push(Remedy::RaisePriority);
            }
        }
        Reason::TokenCap {
            tokens,
            room,
            short,
            token_cap_needed,
            reserved_for_loads,
        } => {
            if *reserved_for_loads > 0 {
                reasons.push(format!(
                    "{reserved_for_loads} tokens are reserved for loads (deferral.loads = \"within-caps\")"
                ));
            }
            reasons.push(format!(
                "token cap {}: its definition costs {tokens} tokens and only {room} were left when its turn came at {rank_text}",
                plan.caps.tokens
            ));
            offered_after = plan
                .roster
                .iter()
                .filter(|&&j| plan.decisions[j].rank > d.rank)
                .map(|&j| cat.candidates[j].name.clone())
                .collect();
            if !offered_after.is_empty() {
                reasons.push(format!(
                    "a tool that misses the token cap is skipped, not a stop: smaller tools ranked after it were still offered: {}",
                    offered_after.join(", ")
                ));
            }
            if *room > 0 {
                to_fit.push(Remedy::ShrinkDefinition { tokens: *short });
            }
            to_fit.push(Remedy::RaiseTokenCap {
                to: *token_cap_needed,
            });
        }
        excluded => {
            reasons.push(format!("{}: {}", d.code, d.code.description()));
            reasons.push(excluded.to_string());
            to_fit.extend(exclusion_fix(excluded));
        }
    }
    let load_with = (d.status == Status::Deferred)
        .then(|| cat.control_tool.clone())
        .flatten();
    if let Some(control) = &load_with {
        reasons.push(format!(
            "deferred, not lost: the model can load it by calling {control} with its name or what it is for"
        ));
    }
    Explanation {
        name: name.to_string(),
        status: d.status.into(),
        code: Some(d.code),
        facts: Some(facts),
        rank: d.rank,
        tokens: c.exclusion.is_none().then_some(plan.tokens(i)),
        tier: d.rank.map(|_| c.tier().label()),
        outranked_by,
        offered_after,
        load_with,
        summary,
        reasons,
        to_fit,
        closest: Vec::new(),
    }
}

fn priority_rule(c: &crate::catalog::Candidate) -> String {
    let tier = c.tier();
    let within = match c.source {
        Source::Configured => "within it, configured tools rank in declared order",
        Source::Mcp { .. } => "within it, discovered tools rank by full name",
        Source::Control => "the control tool ranks before every tier",
    };
    format!(
        "its tier is {}: required tools rank first, then higher priority, then configured before discovered; {within}",
        tier.label()
    )
}

/// What would undo an exclusion, from its facts.
fn exclusion_fix(reason: &Reason) -> Vec<Remedy> {
    match reason {
        Reason::FlagOff { flag, .. } => vec![Remedy::TurnOnFlag { flag: flag.clone() }],
        Reason::NotEnabled { agent, server, .. } => vec![Remedy::Enable {
            agent: agent.clone(),
            server: server.clone(),
        }],
        Reason::DuplicateName { .. } => vec![Remedy::Rename],
        Reason::InvalidSchema { .. } => vec![Remedy::FixSchema],
        Reason::Denied { server, tool } => vec![Remedy::Undeny {
            server: server.clone(),
            tool: tool.clone(),
        }],
        Reason::NotAllowed { server, tool } => vec![Remedy::Allow {
            server: server.clone(),
            tool: tool.clone(),
        }],
        Reason::FixedUndeclared { arguments, .. } => vec![Remedy::Unfix {
            arguments: arguments.clone(),
        }],
        Reason::RequiredUnreachable { arguments, .. } => vec![Remedy::Reach {
            arguments: arguments.clone(),
        }],
        Reason::LockMismatch { server, .. } => vec![Remedy::Relock {
            server: server.clone(),
        }],
        Reason::InvalidName { server, .. } => vec![Remedy::RenameOnServer {
            server: server.clone(),
        }],
        Reason::ProviderNameCollision { other, .. } => vec![Remedy::SpellApart {
            other: other.clone(),
        }],
        _ => Vec::new(),
    }
}

fn unknown(plan: &Plan<'_>, name: &str) -> Explanation {
    let closest: Vec<String> = crate::names::closest(
        name,
        plan.catalog.candidates.iter().map(|c| c.name.as_str()),
        3,
    )
    .into_iter()
    .map(String::from)
    .collect();
    let summary = if closest.is_empty() {
        format!("{name} is unknown: no policy registers a tool of that name")
    } else {
        format!(
            "{name} is unknown: no policy registers a tool of that name; closest: {}",
            closest.join(", ")
        )
    };
    Explanation {
        name: name.to_string(),
        status: WhyStatus::Unknown,
        code: None,
        facts: None,
        rank: None,
        tokens: None,
        tier: None,
        outranked_by: Vec::new(),
        offered_after: Vec::new(),
        load_with: None,
        summary,
        reasons: vec!["not a configured tool and not listed by any server snapshot".to_string()],
        to_fit: vec![Remedy::Register],
        closest,
    }
}
