//! Human-readable output: tables and reports for a terminal.

use muster::contract::{LockCheck, LockStatus, Validation};
use muster::gate::GateResult;
use muster::plan::Plan;
use std::fmt::Write as _;

fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The widest the tool column of a table is padded to, in bytes.
const MAX_NAME_COLUMN: usize = 60;

pub fn plan_table(plan: &Plan<'_>, share: &muster::contract::ContextShare) -> String {
    let cat = plan.catalog;
    let mut out = String::new();
    let profile = match &cat.profile {
        Some(p) => format!("profile {p}"),
        None => "no flag profile".to_string(),
    };
    let flags = if cat.flags.is_empty() {
        "none".to_string()
    } else {
        cat.flags.join(", ")
    };
    let _ = writeln!(
        out,
        "agent {} v{}, {profile}, flags: {flags}, {}{}",
        cat.agent,
        cat.agent_version,
        cat.encoding.name(),
        match cat.provider {
            muster::tokens::Provider::Openai => "",
            muster::tokens::Provider::Anthropic => ", anthropic billing (estimated)",
        }
    );
    let _ = writeln!(
        out,
        "roster: {}/{} items, {}/{} tokens (wrapper {}), {} deferred, {} cut",
        plan.totals.items,
        plan.totals.item_cap,
        thousands(plan.totals.tokens),
        thousands(plan.totals.token_cap),
        if plan.roster.is_empty() {
            0
        } else {
            cat.wrapper_tokens
        },
        plan.deferred.len(),
        plan.cut.len()
    );
    let _ = writeln!(
        out,
        "start-up: {}",
        muster::context::startup_line(plan.roster.len() as u32, share)
    );
    let _ = writeln!(out, "fingerprint: {}", plan.fingerprint());
    // A longer name overflows its column rather than widening every row
    // (and a width over u16::MAX would make the formatter panic).
    let width = cat
        .candidates
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(4)
        .clamp(4, MAX_NAME_COLUMN);
    let _ = writeln!(
        out,
        "\nOFFERED\n{:>4}  {:<width$}  {:<10}  {:>6}  code",
        "rank", "tool", "source", "tokens"
    );
    for &i in &plan.roster {
        let c = &cat.candidates[i];
        let d = &plan.decisions[i];
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:<10}  {:>6}  {}",
            d.rank.unwrap_or(0),
            c.name,
            c.source.as_str(),
            plan.tokens(i),
            d.code
        );
    }
    for (title, list) in [("DEFERRED", &plan.deferred), ("CUT", &plan.cut)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{title}\n{:>4}  {:<width$}  {:<20}  detail",
            "rank", "tool", "code"
        );
        for &i in list {
            let c = &cat.candidates[i];
            let d = &plan.decisions[i];
            let rank = d.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "{rank:>4}  {:<width$}  {:<20}  {}",
                c.name,
                d.code.as_str(),
                plan.detail(i)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nHEADROOM: {} slot(s), {} tokens",
        plan.headroom.slots,
        thousands(plan.headroom.tokens)
    );
    for next in &plan.headroom.next {
        let what = match (next.displaces, next.misses) {
            (Some(j), _) => format!("displaces {}", cat.candidates[j].name),
            (None, true) if cat.deferral => "is deferred itself (nothing ranks lower)".to_string(),
            (None, true) => "is cut itself (nothing ranks lower)".to_string(),
            (None, false) => "fits (a slot is free), tokens permitting".to_string(),
        };
        let _ = writeln!(out, "  one more {} tool {what}", next.tier.label());
    }
    if !plan.warnings.is_empty() {
        let _ = writeln!(out, "\nWARNINGS");
        for w in &plan.warnings {
            let _ = writeln!(out, "  {}: {w}", w.code().as_str());
        }
    }
    out
}

pub fn gate_text(results: &[GateResult]) -> String {
    let mut out = String::new();
    for r in results {
        let _ = writeln!(
            out,
            "{} {} ({}): {}",
            if r.passed { "PASS" } else { "FAIL" },
            r.name,
            r.file,
            r.roster
        );
        if let Some(found) = &r.findability {
            let _ = writeln!(
                out,
                "  findability: recall@{} {} ({}/{} queries), at least {} wanted",
                found.k, found.recall, found.found, found.total, found.min_recall
            );
            for missed in &found.missed {
                let _ = writeln!(out, "    missed {missed}");
            }
        }
        for f in &r.failures {
            let _ = writeln!(out, "  - {f}");
        }
    }
    let failed = results.iter().filter(|r| !r.passed).count();
    let _ = writeln!(out, "{} passed, {failed} failed", results.len() - failed);
    out
}

/// `muster validate`'s text: the counts, then each warning with the plan that raised it.
pub fn validate_text(v: &Validation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: valid ({} configured tools, {} servers listing {} tools, {} agents, {} flag profiles)",
        v.policies, v.configured_tools, v.servers, v.listed_tools, v.agents, v.profiles
    );
    for w in &v.warnings {
        let _ = writeln!(out, "warning: {} [{}]", w.warning, w.context());
    }
    for a in &v.acceptance {
        let profile = a
            .profile
            .as_deref()
            .map_or("no profile".to_string(), |p| format!("profile {p}"));
        let _ = writeln!(
            out,
            "refused: {} [agent {}, {profile}]",
            a.violation, a.agent
        );
    }
    out
}

/// `muster lock --check`: each tool that differs from the lock, at its line.
pub fn drift_text(check: &LockCheck) -> String {
    let mut out = String::new();
    if check.drift.is_empty() {
        let _ = writeln!(out, "lock {}: up to date", check.lock_file);
        return out;
    }
    let _ = writeln!(
        out,
        "lock {}: {} tool(s) differ; review them, then run `muster lock`",
        check.lock_file,
        check.drift.len()
    );
    for d in &check.drift {
        let what = match d.finding.status {
            LockStatus::Unlocked => "new    ",
            LockStatus::Changed => "changed",
            LockStatus::Gone => "gone   ",
            LockStatus::Renamed => "renamed",
        };
        let place = match d.line {
            Some(line) => format!("{}:{line}", d.file),
            None => d.file.clone(),
        };
        let kinds = match muster::snapshot::review::show::kinds(&d.finding) {
            k if k.is_empty() => k,
            k => format!(" ({k})"),
        };
        let _ = writeln!(
            out,
            "  {what} mcp.{}.{}{kinds}  ({place})",
            d.finding.server,
            muster::names::escape(&d.finding.tool)
        );
        for line in muster::snapshot::review::show::of_finding(&d.finding) {
            let _ = writeln!(out, "      {line}");
        }
    }
    out
}
