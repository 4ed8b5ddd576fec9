//! `muster report`: the roster as one self-contained HTML page (inline CSS
//! and SVG; no script, font, image or stylesheet from anywhere), readable
//! on a phone and in print. The figures come from the library
//! ([`muster::report`]); this file only writes markup, and writes the same
//! bytes for the same plan.

use crate::args::Select;
use muster::contract::{ChangeKind, PlanDiff, Status};
use muster::report::Report;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Escapes text for HTML content and attribute values. A hidden character
/// (a control, a bidi override, an invisible one: [`muster::names::hidden`])
/// is written as visible `\u{XXXX}`: an HTML character reference would
/// still reverse or hide what follows it in the browser (`gnp.exe` shown as
/// `exe.png`).
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            c if muster::names::hidden(c).is_some() => {
                out.push_str(&muster::names::escape(c.encode_utf8(&mut [0; 4])));
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `6940` as `6,940`.
fn n(value: u32) -> String {
    n64(u64::from(value))
}

/// [`n`] for figures past `u32`.
fn n64(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn signed(v: i64) -> String {
    match v {
        v if v > 0 => format!("+{}", n(v as u32)),
        v if v < 0 => format!("−{}", n(v.unsigned_abs() as u32)),
        _ => "0".into(),
    }
}

/// Width of the drawing area of the bars, in SVG units.
const BAR: u64 = 960;

/// `tokens` on the bar, in SVG units with one decimal (integer arithmetic:
/// the same figures always give the same digits).
fn x(tokens: u32, scale: u32) -> String {
    let tenths = (u64::from(tokens) * BAR * 10 + u64::from(scale) / 2) / u64::from(scale.max(1));
    format!("{}.{}", tenths / 10, tenths % 10)
}

const STYLE: &str = r#"
:root{--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--a:#3b6fb6;--b:#6a9bd8;--wrap:#8c959f;--cap:#cf222e;--in:#1a7f37;--out:#cf222e;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);margin:0 auto;max-width:64rem;padding:1rem;line-height:1.45;font-size:16px}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.meta{color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
.startup{font-size:1.1rem;background:var(--bg);border-left:4px solid var(--a);padding:.5rem .8rem}
.wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--bg)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.tool{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:break-word}
figure{margin:0}
#missed td.tool,#diff td.tool{min-width:16rem}
svg{width:100%;height:auto;display:block}
.s0{fill:var(--a)}.s1{fill:var(--b)}.sw{fill:var(--wrap)}.se{fill:var(--in)}
.slot{fill:#fff;stroke:var(--muted)}.slot.used{fill:var(--a)}
.capline{stroke:var(--cap);stroke-width:3;stroke-dasharray:6 3}
.caplabel{fill:var(--cap);font-size:14px}.axis{fill:var(--muted);font-size:13px}
tr.entered td{background:#dafbe1}tr.cut td,tr.deferred td{background:#ffebe9}tr.left td{background:#fff8c5}
.badge{display:inline-block;font-size:.75rem;padding:0 .35rem;border-radius:.6rem;border:1px solid currentColor;margin-left:.3rem;white-space:nowrap}
.badge.entered{color:var(--in)}.badge.cut,.badge.deferred{color:var(--out)}
tr.chosen td{font-weight:600}
figcaption{color:var(--muted);font-size:.85rem}
@media (max-width:40rem){body{padding:.5rem;font-size:15px}th,td{padding:.2rem .3rem}#missed td.tool,#diff td.tool{min-width:11rem}#budget{min-width:36rem}}
@media print{body{max-width:none;padding:0;font-size:11pt}.wrap{overflow:visible}a{color:inherit;text-decoration:none}tr,figure{break-inside:avoid}h2{break-after:avoid}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"#;

/// The whole page.
pub fn html(report: &Report, source: &str) -> String {
    let plan = &report.plan;
    let t = plan.totals;
    let diff = report.diff.as_ref();
    let changed: BTreeMap<&str, ChangeKind> = diff
        .map(|d| {
            d.changes
                .iter()
                .map(|c| (c.name.as_str(), c.change))
                .collect()
        })
        .unwrap_or_default();
    let profile = plan
        .agent
        .profile
        .as_deref()
        .map(|p| format!("profile {p}"))
        .unwrap_or_else(|| "no flag profile".into());
    let title = format!(
        "muster roster: agent {} v{}, {profile}",
        plan.agent.name, plan.agent.version
    );
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = writeln!(
        o,
        "<h1>Roster: agent {} v{}, {}</h1>",
        esc(&plan.agent.name),
        plan.agent.version,
        esc(&profile)
    );
    let flags = if plan.agent.flags.is_empty() {
        "none".to_string()
    } else {
        plan.agent.flags.join(", ")
    };
    let _ = writeln!(
        o,
        "<p class=\"meta\">from {} · flags: {} · {} tokens ({} billing) · fingerprint <code>{}</code></p>",
        esc(source),
        esc(&flags),
        esc(&plan.encoding),
        plan.provider.as_str(),
        esc(&plan.fingerprint)
    );
    let c = &report.context;
    let _ = writeln!(
        o,
        "<p class=\"startup\" id=\"startup\">{}</p>",
        esc(&muster::context::startup_line(t.offered, &report.context))
    );

    // Totals.
    o.push_str("<h2>Totals</h2>\n<div class=\"wrap\"><table id=\"totals\">\n<tr><th></th><th class=\"num\">used</th><th class=\"num\">cap</th><th class=\"num\">left</th></tr>\n");
    let _ = writeln!(
        o,
        "<tr><td>items</td><td class=\"num\" id=\"total-items\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        n(t.items),
        n(t.item_cap),
        n(plan.headroom.slots)
    );
    let _ = writeln!(
        o,
        "<tr><td>tokens</td><td class=\"num\" id=\"total-tokens\">{}</td><td class=\"num\" id=\"token-cap\">{}</td><td class=\"num\">{}</td></tr>",
        n(t.tokens),
        n(t.token_cap),
        n(plan.headroom.tokens)
    );
    let _ = writeln!(
        o,
        "<tr><td>tools</td><td class=\"num\" colspan=\"3\">{} candidates: {} offered, {} deferred, {} cut (wrapper {} tokens)</td></tr>\n</table></div>",
        n(t.candidates),
        n(t.offered),
        n(t.deferred),
        n(t.cut),
        n(t.wrapper_tokens)
    );

    // The budget bar.
    let scale = report.scale;
    o.push_str("<h2>Token budget</h2>\n<figure>\n<div class=\"wrap\"><svg id=\"budget\" viewBox=\"0 0 1000 86\" role=\"img\" aria-label=\"tokens of each offered tool against the token cap\" xmlns=\"http://www.w3.org/2000/svg\">\n");
    for (i, s) in report.segments.iter().enumerate() {
        let class = if s.name == "(wrapper)" {
            "sw"
        } else if changed.get(s.name.as_str()) == Some(&ChangeKind::Entered) {
            "se"
        } else if i % 2 == 0 {
            "s0"
        } else {
            "s1"
        };
        let _ = writeln!(
            o,
            "<rect class=\"{class}\" x=\"{}\" y=\"22\" width=\"{}\" height=\"34\" data-tool=\"{}\"><title>{}: {} tokens</title></rect>",
            x(s.start, scale),
            x(s.tokens, scale),
            esc(&s.name),
            esc(&s.name),
            n(s.tokens)
        );
    }
    let cap = x(t.token_cap, scale);
    let _ = writeln!(
        o,
        "<line id=\"cap-line\" class=\"capline\" x1=\"{cap}\" y1=\"10\" x2=\"{cap}\" y2=\"68\"/>\n<text class=\"caplabel\" x=\"{cap}\" y=\"84\" text-anchor=\"end\">token cap {}</text>\n<text class=\"axis\" x=\"0\" y=\"16\">0</text>\n<text class=\"axis\" x=\"{}\" y=\"16\" text-anchor=\"middle\">{} used</text>",
        n(t.token_cap),
        x(t.tokens, scale),
        n(t.tokens)
    );
    o.push_str("</svg></div>\n");
    let _ = writeln!(
        o,
        "<figcaption>Each block is one offered tool in rank order (hover for its name; the table below lists them all); grey is the tool section's wrapper{}. The dashed line is the token cap.</figcaption>\n</figure>",
        if diff.is_some() {
            ", green a tool that entered"
        } else {
            ""
        }
    );

    // Item slots.
    o.push_str("<h2>Item slots</h2>\n");
    let _ = writeln!(
        o,
        "<p id=\"slots\">{} of {} slots used, {} left.</p>",
        n(t.items),
        n(t.item_cap),
        n(plan.headroom.slots)
    );
    if t.item_cap <= 400 {
        let cols = t.item_cap.clamp(1, 50);
        let rows = t.item_cap.div_ceil(cols).max(1);
        let cell = 960 / cols;
        let _ = writeln!(
            o,
            "<svg id=\"slot-grid\" viewBox=\"0 0 1000 {}\" role=\"img\" aria-label=\"{} of {} item slots used\" xmlns=\"http://www.w3.org/2000/svg\">",
            rows * cell + 4,
            t.items,
            t.item_cap
        );
        for i in 0..t.item_cap {
            let _ = writeln!(
                o,
                "<rect class=\"slot{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\"/>",
                if i < t.items { " used" } else { "" },
                (i % cols) * cell + 2,
                (i / cols) * cell + 2,
                cell - 4,
                cell - 4
            );
        }
        o.push_str("</svg>\n");
    }

    if let Some(d) = diff {
        changes(&mut o, d);
    }

    // Offered tools.
    o.push_str("<h2>Offered</h2>\n<div class=\"wrap\"><table id=\"offered\">\n<tr><th class=\"num\">rank</th><th>tool</th><th>server / source</th><th>group</th><th class=\"num\">tokens</th><th class=\"num\">% of cap</th></tr>\n");
    for tool in &plan.roster {
        let entered = changed.get(tool.name.as_str()) == Some(&ChangeKind::Entered);
        let _ = writeln!(
            o,
            "<tr{}><td class=\"num\">{}</td><td class=\"tool\">{}{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td></tr>",
            if entered { " class=\"entered\"" } else { "" },
            tool.rank,
            esc(&tool.name),
            if entered {
                "<span class=\"badge entered\">entered</span>"
            } else {
                ""
            },
            esc(tool.server.as_deref().unwrap_or(&tool.source)),
            esc(tool.group.as_deref().unwrap_or("")),
            n(tool.tokens),
            muster::context::percent(tool.tokens, t.token_cap)
        );
    }
    o.push_str("</table></div>\n");

    // Missed tools.
    let _ = writeln!(
        o,
        "<h2>Cut and deferred</h2>\n<p>{} deferred, {} cut.</p>",
        n(t.deferred),
        n(t.cut)
    );
    if !report.missed.is_empty() {
        o.push_str("<div class=\"wrap\"><table id=\"missed\">\n<tr><th class=\"num\">rank</th><th>tool</th><th>status</th><th>code</th><th class=\"num\">tokens</th><th>why</th><th>would get in with</th></tr>\n");
        for m in &report.missed {
            let kind = changed.get(m.name.as_str()).copied();
            let newly = matches!(kind, Some(ChangeKind::Cut | ChangeKind::Deferred));
            let _ = writeln!(
                o,
                "<tr{}><td class=\"num\">{}</td><td class=\"tool\">{}{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                if newly {
                    format!(" class=\"{}\"", m.status.as_str())
                } else {
                    String::new()
                },
                m.rank.map(|r| r.to_string()).unwrap_or_else(|| "–".into()),
                esc(&m.name),
                if newly {
                    format!(
                        "<span class=\"badge {0}\">newly {0}</span>",
                        m.status.as_str()
                    )
                } else {
                    String::new()
                },
                m.status.as_str(),
                m.reason.code().as_str(),
                m.tokens.map(n).unwrap_or_else(|| "–".into()),
                esc(&m.reason.to_string()),
                esc(&m.let_in)
            );
        }
        o.push_str("</table></div>\n");
    }

    // Totals by server and group.
    let totals = |o: &mut String, id: &str, head: &str, rows: &[muster::report::Total]| {
        let _ = writeln!(
            o,
            "<div class=\"wrap\"><table id=\"{id}\">\n<tr><th>{head}</th><th class=\"num\">offered</th><th class=\"num\">tokens</th><th class=\"num\">deferred</th><th class=\"num\">cut</th></tr>"
        );
        for r in rows {
            let _ = writeln!(
                o,
                "<tr><td class=\"tool\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(&r.name),
                n(r.offered),
                n(r.offered_tokens),
                n(r.deferred),
                n(r.cut)
            );
        }
        o.push_str("</table></div>\n");
    };
    o.push_str("<h2>By server</h2>\n");
    totals(&mut o, "by-server", "server", &report.servers);
    o.push_str("<h2>By group</h2>\n<p class=\"meta\">Offered tools by their first group; a plan names groups of offered tools only, so deferred and cut are counted by server above.</p>\n");
    totals(&mut o, "by-group", "group", &report.groups);

    if let Some(log) = &report.results {
        result_sizes(&mut o, log);
    }

    // Context shares.
    let _ = writeln!(
        o,
        "<h2>Share of a model's context</h2>\n<p class=\"meta\">The tool section's {} tokens against each model's context window (standard tier; sizes as read from the sources in {}).</p>",
        n(t.tokens),
        muster::context::CHECKED
    );
    o.push_str("<div class=\"wrap\"><table id=\"contexts\">\n<tr><th>model</th><th>provider</th><th class=\"num\">context</th><th class=\"num\">share</th><th>source</th></tr>\n");
    for row in &report.contexts {
        let chosen = row.model == muster::context::lookup(&c.model).map_or("", |m| m.model);
        let _ = writeln!(
            o,
            "<tr{}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2} %</td><td class=\"meta\">{}</td></tr>",
            if chosen { " class=\"chosen\"" } else { "" },
            row.model,
            row.provider.as_str(),
            n(row.context_tokens),
            row.percent,
            esc(row.source)
        );
    }
    o.push_str("</table></div>\n");
    let _ = writeln!(
        o,
        "<p class=\"meta\">Written by muster {} (<code>muster report</code>); the same plan gives the same page.</p>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    o
}

/// The result sizes section: per tool, from the call log.
fn result_sizes(o: &mut String, log: &muster::report::CallLog) {
    let _ = writeln!(
        o,
        "<h2>Result sizes</h2>\n<p class=\"meta\">Tokens of the results the model got, per tool, from the call log: {} calls, {} other lines passed over. Percentiles by nearest rank; the largest p99 first.</p>",
        n64(log.calls),
        n64(log.other_lines)
    );
    if log.tools.is_empty() {
        o.push_str("<p id=\"result-sizes\">No forwarded call's result was counted.</p>\n");
        return;
    }
    o.push_str("<div class=\"wrap\"><table id=\"result-sizes\">\n<tr><th>tool</th><th>server</th><th class=\"num\">results</th><th class=\"num\">p50 tokens</th><th class=\"num\">p99 tokens</th><th class=\"num\">largest</th><th class=\"num\">cut</th></tr>\n");
    for t in &log.tools {
        let _ = writeln!(
            o,
            "<tr><td class=\"tool\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&t.tool),
            esc(&t.server),
            n64(t.results),
            n64(t.p50),
            n64(t.p99),
            n64(t.max),
            n64(t.cut)
        );
    }
    o.push_str("</table></div>\n");
}

/// The diff section.
fn changes(o: &mut String, d: &PlanDiff) {
    let _ = writeln!(
        o,
        "<h2>Changes against the base</h2>\n<p class=\"meta\">base {} → {}; {}.</p>",
        esc(&d.base.source),
        esc(&d.head.source),
        if d.same_roster {
            "the offered roster is unchanged"
        } else {
            "the offered roster changed"
        }
    );
    let (b, h) = (&d.base.totals, &d.head.totals);
    let _ = writeln!(
        o,
        "<div class=\"wrap\"><table id=\"diff-totals\">\n<tr><th></th><th class=\"num\">base</th><th class=\"num\">now</th><th class=\"num\">change</th></tr>\n<tr><td>items</td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td></tr>\n<tr><td>tokens</td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td></tr>\n<tr><td>deferred, cut</td><td class=\"num\">{}, {}</td><td class=\"num\">{}, {}</td><td class=\"num\"></td></tr>\n</table></div>",
        n(b.items),
        n(b.item_cap),
        n(h.items),
        n(h.item_cap),
        signed(d.delta.items),
        n(b.tokens),
        n(b.token_cap),
        n(h.tokens),
        n(h.token_cap),
        signed(d.delta.tokens),
        n(b.deferred),
        n(b.cut),
        n(h.deferred),
        n(h.cut)
    );
    if d.changes.is_empty() {
        o.push_str("<p>No tool changed place.</p>\n");
        return;
    }
    o.push_str("<div class=\"wrap\"><table id=\"diff\">\n<tr><th>change</th><th>tool</th><th>base</th><th>now</th><th class=\"num\">tokens</th><th>pushed out by</th></tr>\n");
    let place = |p: Option<&muster::contract::Placement>| match p {
        None => "absent".to_string(),
        Some(p) => match (p.status, p.rank) {
            (Status::Offered, Some(r)) => format!("offered #{r}"),
            (s, Some(r)) => format!("{} #{r} ({})", s.as_str(), p.code.as_str()),
            (s, None) => format!("{} ({})", s.as_str(), p.code.as_str()),
        },
    };
    for c in &d.changes {
        let _ = writeln!(
            o,
            "<tr class=\"{}\"><td>{}</td><td class=\"tool\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"tool\">{}</td></tr>",
            c.change.as_str(),
            c.change.as_str(),
            esc(&c.name),
            esc(&place(c.base.as_ref())),
            esc(&place(c.head.as_ref())),
            signed(c.tokens_delta),
            esc(&c.outranked_by.join(", "))
        );
    }
    o.push_str("</table></div>\n");
}

/// `muster report`.
pub fn run(
    plan: Option<std::path::PathBuf>,
    base: Option<std::path::PathBuf>,
    base_rev: Option<String>,
    select: &Select,
    model: Option<String>,
    calls: Option<std::path::PathBuf>,
    out: Option<std::path::PathBuf>,
) -> Result<u8, muster::Error> {
    let head = plan.unwrap_or_else(|| select.policies.clone());
    let view = crate::diff::side(&head, select)?;
    let source = head.display().to_string();
    let diff = match (base, base_rev) {
        (None, None) => None,
        (base, rev) => {
            let d = crate::diff::compare(base, Some(head.clone()), rev, select)?;
            Some(d)
        }
    };
    let mut report = muster::report::report(view, model.as_deref(), diff)?;
    if let Some(log) = calls {
        let text =
            muster::input::read_text(&log).map_err(|err| err.into_error(&log, "the call log"))?;
        report.results = Some(muster::report::result_sizes(&text, &log)?);
    }
    // The same guard for a file as for stdout, so both get the same bytes.
    let page = html(&report, &source);
    let page = muster::names::shown_output(&page, false);
    match out {
        Some(path) => muster::atomic::write_atomic(&path, page.as_bytes())?,
        None => crate::emit(&page)?,
    }
    Ok(0)
}
