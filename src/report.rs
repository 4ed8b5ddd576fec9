//! The figures of the roster report page (`muster report`): the token
//! budget tool by tool against the cap, the item slots, the missed tools
//! with what would let each in, per-server and per-group totals, the
//! roster's share of each known model's context, and the diff against a
//! base plan. The binary renders them as one self-contained HTML file.
//!
//! Everything here is read from the plan's own data ([`PlanView`]), the
//! diff's ([`PlanDiff`]) and a call log's figures ([`calls`]); nothing is
//! re-planned, re-counted or re-judged, nothing is rendered.

mod calls;

pub use calls::{CallLog, ResultSizes, result_sizes};

use crate::context::{self, MODELS};
use crate::contract::{ContextShare, Enabling, PlanDiff, Provider, Reason, Status};
use crate::diff::PlanView;
use crate::error::Error;
use std::collections::BTreeMap;

/// The report's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The plan reported on.
    pub plan: PlanView,
    /// The budget bar: the wrapper, then each offered tool in rank order.
    pub segments: Vec<Segment>,
    /// The largest token figure the bar must hold (cap, tokens, worst
    /// case), so the cap line and every segment fit.
    pub scale: u32,
    /// Deferred then cut tools, each with what would let it in.
    pub missed: Vec<Missed>,
    /// Per MCP server, then `configured` and `control` tools.
    pub servers: Vec<Total>,
    /// Per group of the offered tools (`(none)` for tools in no group).
    pub groups: Vec<Total>,
    /// The roster's share of the chosen model's context.
    pub context: ContextShare,
    /// The share of every model muster knows, in table order.
    pub contexts: Vec<ContextRow>,
    /// The diff against a base plan, when one was given.
    pub diff: Option<PlanDiff>,
    /// Result sizes per tool, when a call log was given ([`result_sizes`]).
    pub results: Option<CallLog>,
}

/// One stretch of the budget bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The tool's name, or `(wrapper)`.
    pub name: String,
    /// Tokens before it.
    pub start: u32,
    /// Its tokens.
    pub tokens: u32,
}

/// A deferred or cut tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    /// Full tool name.
    pub name: String,
    /// Deferred or cut.
    pub status: Status,
    /// Its place in the priority order, if ranked.
    pub rank: Option<u32>,
    /// Its tokens, when counted.
    pub tokens: Option<u32>,
    /// Why, with the facts.
    pub reason: Reason,
    /// What would let it in, in a phrase.
    pub let_in: String,
}

/// Counts for one server or group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Total {
    /// The server, group or source.
    pub name: String,
    /// Tools offered.
    pub offered: u32,
    /// Their tokens.
    pub offered_tokens: u32,
    /// Tools deferred.
    pub deferred: u32,
    /// Tools cut.
    pub cut: u32,
}

/// One row of the context table.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRow {
    /// The model.
    pub model: &'static str,
    /// Whose model.
    pub provider: Provider,
    /// Its context window.
    pub context_tokens: u32,
    /// The tool section's share, in percent.
    pub percent: f64,
    /// Where the window's size was read.
    pub source: &'static str,
}

/// The report on `plan`, measured against `model` (`None`: the plan's
/// provider's default), with `diff` when a base was given.
///
/// # Errors
/// [`crate::ErrorKind::Usage`] for a model muster does not know
/// ([`context::share`]).
pub fn report(
    plan: PlanView,
    model: Option<&str>,
    diff: Option<PlanDiff>,
) -> Result<Report, Error> {
    let t = plan.totals;
    let context = context::share(t.tokens, plan.provider, model)?;
    let mut segments = Vec::with_capacity(plan.roster.len() + 1);
    let mut start = 0;
    if t.wrapper_tokens > 0 {
        segments.push(Segment {
            name: "(wrapper)".into(),
            start,
            tokens: t.wrapper_tokens,
        });
        start += t.wrapper_tokens;
    }
    for tool in &plan.roster {
        segments.push(Segment {
            name: tool.name.clone(),
            start,
            tokens: tool.tokens,
        });
        start = start.saturating_add(tool.tokens);
    }
    let scale = t.token_cap.max(t.tokens).max(start).max(1);
    let missed = plan
        .deferred
        .iter()
        .chain(&plan.cut)
        .map(|m| Missed {
            name: m.name.clone(),
            status: m.status,
            rank: m.rank,
            tokens: m.tokens,
            let_in: let_in(&m.facts),
            reason: m.facts.clone(),
        })
        .collect();
    let mut servers: BTreeMap<String, Total> = BTreeMap::new();
    let mut groups: BTreeMap<String, Total> = BTreeMap::new();
    let bucket = |source: &str, server: Option<&str>| match (source, server) {
        ("mcp", Some(s)) => s.to_string(),
        (other, _) => format!("({other})"),
    };
    for tool in &plan.roster {
        let s = servers
            .entry(bucket(&tool.source, tool.server.as_deref()))
            .or_default();
        s.offered += 1;
        s.offered_tokens += tool.tokens;
        let g = groups
            .entry(tool.group.clone().unwrap_or_else(|| "(none)".into()))
            .or_default();
        g.offered += 1;
        g.offered_tokens += tool.tokens;
    }
    for m in plan.deferred.iter().chain(&plan.cut) {
        let s = servers.entry(bucket(&m.source, m.server())).or_default();
        match m.status {
            Status::Deferred => s.deferred += 1,
            _ => s.cut += 1,
        }
    }
    let named = |map: BTreeMap<String, Total>| {
        map.into_iter()
            .map(|(name, total)| Total { name, ..total })
            .collect()
    };
    let contexts = MODELS
        .iter()
        .map(|m| ContextRow {
            model: m.model,
            provider: m.provider,
            context_tokens: m.context_tokens,
            percent: context::percent(t.tokens, m.context_tokens),
            source: m.source,
        })
        .collect();
    Ok(Report {
        segments,
        scale,
        missed,
        servers: named(servers),
        groups: named(groups),
        context,
        contexts,
        diff,
        results: None,
        plan,
    })
}

/// What would let a missed tool in, read from its facts.
pub fn let_in(reason: &Reason) -> String {
    match reason {
        Reason::ItemCap {
            item_cap_needed,
            displace,
            ..
        } => match displace.as_slice() {
            [] => format!("an item cap of {item_cap_needed}"),
            [one] => format!("an item cap of {item_cap_needed}, or {one} giving up its slot"),
            many => format!(
                "an item cap of {item_cap_needed}, or {} lower-ranked tools ({} … {}) giving up their slots",
                many.len(),
                many[0],
                many[many.len() - 1]
            ),
        },
        Reason::TokenCap {
            short,
            token_cap_needed,
            ..
        } => format!("a token cap of {token_cap_needed}, or a definition {short} tokens smaller"),
        Reason::FlagOff { flag, .. } => format!("turning on flag {flag}"),
        Reason::NotEnabled { agent, by, server } => match by {
            Enabling::DefaultRoster => format!("naming it in agent {agent}'s enabled_tools"),
            Enabling::EnabledTools => format!("adding it to agent {agent}'s enabled_tools"),
            Enabling::Servers => format!(
                "adding server {} to agent {agent}'s servers",
                server.as_deref().unwrap_or("?")
            ),
        },
        Reason::DuplicateName { .. } => "registering it once".into(),
        Reason::InvalidSchema { .. } => {
            "an input schema that is a JSON object of type object".into()
        }
        Reason::Denied { .. } => "removing it from the server block's deny".into(),
        Reason::NotAllowed { .. } => "adding it to the server block's allow".into(),
        Reason::FixedUndeclared { .. } => "fixing only arguments its schema declares".into(),
        Reason::RequiredUnreachable { arguments, .. } => {
            format!("listing {} in only, or fixing them", arguments.join(", "))
        }
        Reason::InvalidName { .. } => "a name without hidden characters".into(),
        Reason::LockMismatch { .. } => "reviewing the definition, then `muster lock`".into(),
        Reason::HintDenied { .. } => "a policy whose deny_hints or require_hints lets it in".into(),
        Reason::LeftToHost => {
            "the host offering it itself: the MCP gateway serves MCP tools only".into()
        }
        Reason::ProviderNameCollision { other, .. } => {
            format!("a name that does not collide with {other} for providers")
        }
        Reason::Required { .. }
        | Reason::Fits { .. }
        | Reason::ControlTool { .. }
        | Reason::Loaded => "nothing: it is offered".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_would_let_a_tool_in_is_read_from_its_facts() {
        let item = |displace: &[&str]| Reason::ItemCap {
            offered_ahead: 30,
            item_cap_needed: 33,
            displace: displace.iter().map(|s| s.to_string()).collect(),
            reserved_for_loads: 0,
        };
        assert_eq!(let_in(&item(&[])), "an item cap of 33");
        assert_eq!(
            let_in(&item(&["a"])),
            "an item cap of 33, or a giving up its slot"
        );
        assert_eq!(
            let_in(&item(&["a", "b", "c"])),
            "an item cap of 33, or 3 lower-ranked tools (a … c) giving up their slots"
        );
        assert_eq!(
            let_in(&Reason::TokenCap {
                tokens: 300,
                room: 100,
                short: 200,
                token_cap_needed: 9_200,
                reserved_for_loads: 0,
            }),
            "a token cap of 9200, or a definition 200 tokens smaller"
        );
        assert_eq!(
            let_in(&Reason::FlagOff {
                flag: "SKILLS".into(),
                server: None
            }),
            "turning on flag SKILLS"
        );
    }
}
