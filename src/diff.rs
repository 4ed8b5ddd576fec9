//! What one plan changes against another: the tools that entered the
//! roster, were cut or deferred (with the reason and what outranked them),
//! left, moved or changed size, and the totals' deltas against the caps.
//!
//! Both plans are read from their JSON ([`PlanView`]), so a plan file
//! written by `muster plan --format json`, a policy directory planned now
//! and a policy directory at a git revision ([`policies_at`]) compare the
//! same way. This module compares decisions; it never re-plans or
//! re-judges them, and it never prints.
//!
//! ```no_run
//! use muster::diff::{PlanView, diff};
//! let base = PlanView::from_json(&std::fs::read_to_string("base.json")?, "base.json".as_ref())?;
//! let head = PlanView::from_json(&std::fs::read_to_string("head.json")?, "head.json".as_ref())?;
//! let d = diff(&base, "base.json", &head, "head.json");
//! println!("{} changes, {:+} tokens", d.changes.len(), d.delta.tokens);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod git;
mod view;

pub use git::policies_at;
pub use view::{AgentView, HeadroomView, MissView, OfferedView, PlanView, TotalsView};

use crate::contract::{
    ChangeKind, DIFF_FORMAT_VERSION, DiffSide, Placement, PlanDiff, Reason, RosterChange,
    SideTotals, Status, TotalsDelta,
};
use std::collections::{BTreeMap, BTreeSet};

/// Compares `head` against `base`; `base_source` and `head_source` say
/// where each came from.
pub fn diff(base: &PlanView, base_source: &str, head: &PlanView, head_source: &str) -> PlanDiff {
    let before: BTreeMap<&str, Placement> = base.placements().collect();
    let after: BTreeMap<&str, Placement> = head.placements().collect();
    let moved = moved(base, head);
    let names: BTreeSet<&str> = before.keys().chain(after.keys()).copied().collect();
    // Tools that entered the roster, by head rank: a cap miss names those
    // ranked ahead of it.
    let entered: Vec<(u32, &str)> = head
        .roster
        .iter()
        .filter(|t| before.get(t.name.as_str()).map(|p| p.status) != Some(Status::Offered))
        .map(|t| (t.rank, t.name.as_str()))
        .collect();
    let mut changes = Vec::new();
    for name in names {
        let (b, a) = (before.get(name), after.get(name));
        let Some(change) = kind(b, a, moved.contains(name)) else {
            continue;
        };
        let offered_tokens = |p: Option<&Placement>| match p {
            Some(p) if p.status == Status::Offered => i64::from(p.tokens.unwrap_or(0)),
            _ => 0,
        };
        let outranked_by = match a.and_then(|p| p.facts.as_ref()) {
            Some(Reason::ProviderNameCollision { other, .. }) => vec![other.clone()],
            Some(Reason::ItemCap { .. } | Reason::TokenCap { .. }) => {
                let rank = a.and_then(|p| p.rank).unwrap_or(u32::MAX);
                entered
                    .iter()
                    .filter(|(r, _)| *r < rank)
                    .map(|(_, n)| n.to_string())
                    .collect()
            }
            _ => Vec::new(),
        };
        changes.push(RosterChange {
            name: name.to_string(),
            change,
            rank_delta: match (b.and_then(|p| p.rank), a.and_then(|p| p.rank)) {
                (Some(x), Some(y)) => Some(i64::from(y) - i64::from(x)),
                _ => None,
            },
            tokens_delta: offered_tokens(a) - offered_tokens(b),
            base: b.cloned(),
            head: a.cloned(),
            outranked_by,
        });
    }
    let order = |c: &RosterChange| {
        let place = if c.change == ChangeKind::Left {
            &c.base
        } else {
            &c.head
        };
        (
            c.change,
            place.as_ref().and_then(|p| p.rank).unwrap_or(u32::MAX),
        )
    };
    changes.sort_by(|x, y| order(x).cmp(&order(y)).then_with(|| x.name.cmp(&y.name)));
    let (bt, ht) = (totals(base), totals(head));
    let d = |x: u32, y: u32| i64::from(y) - i64::from(x);
    PlanDiff {
        format_version: DIFF_FORMAT_VERSION,
        base: side(base, base_source),
        head: side(head, head_source),
        same_roster: base.fingerprint == head.fingerprint,
        delta: TotalsDelta {
            items: d(bt.items, ht.items),
            item_cap: d(bt.item_cap, ht.item_cap),
            tokens: d(bt.tokens, ht.tokens),
            token_cap: d(bt.token_cap, ht.token_cap),
            wrapper_tokens: d(bt.wrapper_tokens, ht.wrapper_tokens),
            slots_left: d(base.headroom.slots, head.headroom.slots),
            tokens_left: d(base.headroom.tokens, head.headroom.tokens),
        },
        changes,
    }
}

/// The change between two placements, if any.
fn kind(b: Option<&Placement>, a: Option<&Placement>, moved: bool) -> Option<ChangeKind> {
    let status = |p: Option<&Placement>| p.map(|p| p.status);
    Some(match (status(b), status(a)) {
        (_, None) => ChangeKind::Left,
        (x, Some(y)) if x != Some(y) => match y {
            Status::Offered => ChangeKind::Entered,
            Status::Cut => ChangeKind::Cut,
            Status::Deferred => ChangeKind::Deferred,
        },
        (_, Some(Status::Offered)) if moved => ChangeKind::Moved,
        (_, Some(Status::Offered)) if b?.tokens != a?.tokens => ChangeKind::Resized,
        (_, Some(_)) if b?.code != a?.code => ChangeKind::ReasonChanged,
        _ => return None,
    })
}

/// The tools offered in both plans that moved: those outside a longest
/// run that keeps its base order in the head (the fewest moves that turn
/// one order into the other).
fn moved<'a>(base: &'a PlanView, head: &PlanView) -> BTreeSet<&'a str> {
    let at: BTreeMap<&str, usize> = head
        .roster
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let common: Vec<(&str, usize)> = base
        .roster
        .iter()
        .filter_map(|t| at.get(t.name.as_str()).map(|&i| (t.name.as_str(), i)))
        .collect();
    let kept = longest_increasing(&common.iter().map(|c| c.1).collect::<Vec<_>>());
    common
        .iter()
        .enumerate()
        .filter(|(i, _)| !kept.contains(i))
        .map(|(_, c)| c.0)
        .collect()
}

/// Indices of one longest strictly increasing subsequence of `xs`
/// (patience sorting, O(n log n)); the earliest such run on ties.
fn longest_increasing(xs: &[usize]) -> BTreeSet<usize> {
    let mut tails: Vec<usize> = Vec::new(); // index into xs of the smallest tail per length
    let mut prev = vec![usize::MAX; xs.len()];
    for (i, &x) in xs.iter().enumerate() {
        let len = tails.partition_point(|&t| xs[t] < x);
        if len > 0 {
            prev[i] = tails[len - 1];
        }
        if len == tails.len() {
            tails.push(i);
        } else {
            tails[len] = i;
        }
    }
    let mut kept = BTreeSet::new();
    let mut at = tails.last().copied();
    while let Some(i) = at {
        kept.insert(i);
        at = (prev[i] != usize::MAX).then_some(prev[i]);
    }
    kept
}

fn totals(plan: &PlanView) -> SideTotals {
    let t = &plan.totals;
    SideTotals {
        items: t.items,
        item_cap: t.item_cap,
        tokens: t.tokens,
        token_cap: t.token_cap,
        wrapper_tokens: t.wrapper_tokens,
        offered: t.offered,
        deferred: t.deferred,
        cut: t.cut,
    }
}

fn side(plan: &PlanView, source: &str) -> DiffSide {
    DiffSide {
        source: source.to_string(),
        agent: plan.agent.name.clone(),
        agent_version: plan.agent.version,
        profile: plan.agent.profile.clone(),
        provider: plan.provider,
        fingerprint: plan.fingerprint.clone(),
        totals: totals(plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tool_moved_ahead_is_the_only_move() {
        // Base a b c d e, head e a b c d: only e moved.
        let kept = longest_increasing(&[1, 2, 3, 4, 0]);
        assert_eq!(kept, BTreeSet::from([0, 1, 2, 3]));
        assert_eq!(longest_increasing(&[]), BTreeSet::new());
        assert_eq!(longest_increasing(&[2, 1, 0]).len(), 1);
    }
}
