//! `why`: answers "why is tool X missing (or present)?" from a plan's own
//! decisions. It renders the facts the planner recorded; it never re-plans.

use crate::catalog::Source;
use crate::contract::{Code, Status};
use crate::plan::{Facts, Plan};
use serde::Serialize;

/// The answer for one tool name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The name asked about.
    pub name: String,
    /// `offered`, `deferred`, `cut` or `unknown`.
    pub status: String,
    /// The decision's code; `None` for an unknown name.
    pub code: Option<Code>,
    /// 1-based place in the priority order, when it was ranked.
    pub rank: Option<u32>,
    /// Tokens of its definition, when counted.
    pub tokens: Option<u32>,
    /// One line: the decision and its main fact.
    pub summary: String,
    /// The reason chain, most important first.
    pub reasons: Vec<String>,
    /// What would change the outcome, each a concrete edit.
    pub to_fit: Vec<String>,
    /// For an unknown name: the closest registered names.
    pub closest: Vec<String>,
}

/// Explains the decision about `name` in `plan`.
pub fn why(plan: &Plan<'_>, name: &str) -> Explanation {
    let cat = plan.catalog;
    let Some((i, d)) = plan.decision(name) else {
        return unknown(plan, name);
    };
    let c = &cat.candidates[i];
    let mut reasons = Vec::new();
    let mut to_fit = Vec::new();
    let ranked = cat.ranked.len();
    let rank_text = d
        .rank
        .map(|r| format!("rank {r} of {ranked}"))
        .unwrap_or_else(|| "not ranked".to_string());
    let summary = format!(
        "{name} is {} ({}): {}",
        d.status.as_str(),
        d.code,
        plan.detail(i)
    );
    match (&d.facts, d.code) {
        (_, Code::Required | Code::Fits | Code::ControlTool) => {
            reasons.push(format!(
                "offered at {rank_text}: {}; {} tokens",
                d.code.description(),
                plan.tokens(i)
            ));
            if let Some(group) = &c.group {
                reasons.push(format!("member of group {group}"));
            }
        }
        (
            Facts::ItemCap {
                offered_ahead,
                item_cap_needed,
                displace,
            },
            _,
        ) => {
            reasons.push(format!(
                "item cap {}: the roster was full when its turn came at {rank_text}",
                plan.caps.items
            ));
            let ahead: Vec<&str> = plan
                .roster
                .iter()
                .map(|&j| cat.candidates[j].name.as_str())
                .collect();
            reasons.push(format!(
                "outranked by all {offered_ahead} offered tools: {}",
                ahead.join(", ")
            ));
            reasons.push(priority_rule(c));
            to_fit.push(format!(
                "raise the item cap to {item_cap_needed} (--item-cap {item_cap_needed}), tokens permitting"
            ));
            if !displace.is_empty() {
                let names: Vec<&str> = displace
                    .iter()
                    .map(|&j| cat.candidates[j].name.as_str())
                    .collect();
                to_fit.push(format!(
                    "drop {} from the roster (the lowest-ranked slot-holder{} not required)",
                    names.join(", "),
                    if names.len() > 1 { "s" } else { "" }
                ));
            }
            if !c.required {
                to_fit.push(
                    "add it to a required group, or give it a higher priority than the tools it must pass"
                        .to_string(),
                );
            }
        }
        (
            Facts::TokenCap {
                tokens,
                room,
                token_cap_needed,
            },
            _,
        ) => {
            let short = tokens - room;
            reasons.push(format!(
                "token cap {}: its definition costs {tokens} tokens and only {room} were left when its turn came at {rank_text}",
                plan.caps.tokens
            ));
            let later: Vec<&str> = plan
                .roster
                .iter()
                .filter(|&&j| plan.decisions[j].rank > d.rank)
                .map(|&j| cat.candidates[j].name.as_str())
                .collect();
            if !later.is_empty() {
                reasons.push(format!(
                    "a tool that misses the token cap is skipped, not a stop: smaller tools ranked after it were still offered: {}",
                    later.join(", ")
                ));
            }
            if *room > 0 {
                to_fit.push(format!("make its definition {short} tokens smaller"));
            }
            to_fit.push(format!(
                "raise the token cap to {token_cap_needed} (--token-cap {token_cap_needed})"
            ));
        }
        (Facts::None, code) => {
            reasons.push(format!("{code}: {}", code.description()));
            if let Some(ex) = &c.exclusion {
                reasons.push(ex.to_string());
            }
            to_fit.extend(exclusion_fix(code, plan, i));
        }
    }
    if d.status == Status::Deferred {
        reasons.push(format!(
            "deferred, not lost: the model can load it by calling {} with name = {name:?}",
            cat.control_tool.as_deref().unwrap_or("the control tool")
        ));
    }
    Explanation {
        name: name.to_string(),
        status: d.status.as_str().to_string(),
        code: Some(d.code),
        rank: d.rank,
        tokens: c.exclusion.is_none().then_some(plan.tokens(i)),
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

fn exclusion_fix(code: Code, plan: &Plan<'_>, i: usize) -> Vec<String> {
    let cat = plan.catalog;
    let c = &cat.candidates[i];
    match code {
        Code::FlagOff => vec![
            "turn its flag on: --flag NAME, or add it to the flag profile (see the detail)"
                .to_string(),
        ],
        Code::NotEnabled => vec![format!(
            "name it in agent {}'s enabled_tools (or its server in the agent's servers)",
            cat.agent
        )],
        Code::DuplicateName => vec!["rename one of the tools that share the name".to_string()],
        Code::InvalidSchema => {
            vec![
                "fix the server's inputSchema: it must be a JSON object with type \"object\""
                    .to_string(),
            ]
        }
        Code::Denied => vec![format!(
            "remove it from the server block's deny list ({})",
            server_of(&c.source)
        )],
        Code::NotAllowed => vec![format!(
            "add it to the server block's allow list ({})",
            server_of(&c.source)
        )],
        Code::FixedUndeclared => {
            vec!["remove the fixed argument from params, or have the server declare it".to_string()]
        }
        Code::RequiredUnreachable => {
            vec!["list the required argument in only, or fix it in params".to_string()]
        }
        Code::InvalidName => vec![format!(
            "have server {} rename the tool; a name must hold no control, bidi or invisible character",
            server_of(&c.source)
        )],
        Code::LockMismatch => {
            vec!["review the changed definition, then accept it with `muster lock`".to_string()]
        }
        _ => Vec::new(),
    }
}

fn server_of(source: &Source) -> &str {
    match source {
        Source::Mcp { server, .. } => server,
        _ => "-",
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
        status: "unknown".to_string(),
        code: None,
        rank: None,
        tokens: None,
        summary,
        reasons: vec!["not a configured tool and not listed by any server snapshot".to_string()],
        to_fit: vec![
            "register it in tools/*.toml, or discover the server that lists it".to_string(),
        ],
        closest,
    }
}

impl Explanation {
    /// The explanation as text lines for a terminal.
    pub fn render_text(&self) -> String {
        let mut out = format!("{}\n", self.summary);
        for reason in &self.reasons {
            out.push_str(&format!("  because: {reason}\n"));
        }
        for fix in &self.to_fit {
            out.push_str(&format!("  to fit:  {fix}\n"));
        }
        if !self.closest.is_empty() {
            out.push_str(&format!("  did you mean: {}\n", self.closest.join(", ")));
        }
        out
    }
}
