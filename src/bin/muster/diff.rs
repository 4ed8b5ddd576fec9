//! `muster diff`: reads or plans the two sides, asks the library what
//! changed, renders it as text, JSON or markdown.

use crate::args::{DiffFormat, Select};
use crate::{ask, emit, save, token_cache};
use muster::contract::{ChangeKind, PlanDiff, RosterChange, Status};
use muster::diff::{PlanView, diff, policies_at};
use muster::policy::Inputs;
use muster::{Error, answer};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One side: a plan file, or a policy directory planned with `select`.
pub fn side(path: &Path, select: &Select) -> Result<PlanView, Error> {
    if path.is_dir() {
        plan_dir(path, select)
    } else {
        let text =
            muster::input::read_text(path).map_err(|err| err.into_error(path, "the plan"))?;
        PlanView::from_json(&text, path)
    }
}

/// The plan the policy directory `dir` makes for `select`.
pub fn plan_dir(dir: &Path, select: &Select) -> Result<PlanView, Error> {
    let inputs = Inputs::load(dir)?;
    let mut cache = token_cache(select.no_cache);
    let json = answer::plan(&inputs, &ask(select), &mut cache)?.json;
    save(&mut cache);
    PlanView::from_json(&json, dir)
}

/// `muster diff`.
pub fn run(
    base: Option<PathBuf>,
    head: Option<PathBuf>,
    base_rev: Option<String>,
    select: &Select,
    format: DiffFormat,
) -> Result<u8, Error> {
    let d = compare(base, head, base_rev, select)?;
    emit(&match format {
        DiffFormat::Text => text(&d),
        DiffFormat::Json => answer::json_text(&d),
        DiffFormat::Markdown => markdown(&d),
    })?;
    Ok(0)
}

/// The diff the arguments name.
pub fn compare(
    base: Option<PathBuf>,
    head: Option<PathBuf>,
    base_rev: Option<String>,
    select: &Select,
) -> Result<PlanDiff, Error> {
    let (base_view, base_source) = match (&base_rev, &base) {
        (Some(rev), _) => {
            let dir = &select.policies;
            let at = policies_at(dir, rev)?;
            (
                plan_dir(at.path(), select)?,
                format!("{}@{rev}", dir.display()),
            )
        }
        (None, Some(path)) => (side(path, select)?, path.display().to_string()),
        (None, None) => unreachable_usage()?,
    };
    let head = match (&base_rev, base, head) {
        (Some(_), _, Some(h)) | (None, _, Some(h)) => h,
        (Some(_), _, None) => select.policies.clone(),
        (None, _, None) => unreachable_usage()?,
    };
    let head_view = side(&head, select)?;
    Ok(diff(
        &base_view,
        &base_source,
        &head_view,
        &head.display().to_string(),
    ))
}

fn unreachable_usage<T>() -> Result<T, Error> {
    Err(Error::new(
        muster::ErrorKind::Usage,
        muster::Problem::new("give two plans (files or policy directories), or --base-rev REV")
            .help("e.g. `muster diff old.json new.json` or `muster diff --base-rev origin/main`"),
    ))
}

fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

fn place(p: Option<&muster::contract::Placement>) -> String {
    match p {
        None => "absent".into(),
        Some(p) => match (p.status, p.rank) {
            (Status::Offered, Some(r)) => format!("offered #{r}"),
            (s, Some(r)) => format!("{} #{r} ({})", s.as_str(), p.code.as_str()),
            (s, None) => format!("{} ({})", s.as_str(), p.code.as_str()),
        },
    }
}

/// Why a tool the head plan misses misses, in one clause.
fn why(c: &RosterChange) -> String {
    let mut out = String::new();
    if let Some(facts) = c.head.as_ref().and_then(|p| p.facts.as_ref()) {
        let _ = write!(out, "{}: {facts}", facts.code().as_str());
    }
    if !c.outranked_by.is_empty() && c.head.as_ref().is_some_and(|p| p.status != Status::Offered) {
        let _ = write!(out, "; outranked by {}", c.outranked_by.join(", "));
    }
    out
}

fn heading(d: &PlanDiff) -> String {
    let who = |s: &muster::contract::DiffSide| {
        format!(
            "{} (agent {} v{}, {})",
            s.source,
            s.agent,
            s.agent_version,
            s.profile
                .as_deref()
                .map(|p| format!("profile {p}"))
                .unwrap_or_else(|| "no profile".into())
        )
    };
    format!("{} -> {}", who(&d.base), who(&d.head))
}

fn totals_line(d: &PlanDiff) -> String {
    let (b, h) = (&d.base.totals, &d.head.totals);
    format!(
        "items {}/{} -> {}/{} ({}), tokens {}/{} -> {}/{} ({}), deferred {} -> {}, cut {} -> {}",
        b.items,
        b.item_cap,
        h.items,
        h.item_cap,
        signed(d.delta.items),
        b.tokens,
        b.token_cap,
        h.tokens,
        h.token_cap,
        signed(d.delta.tokens),
        b.deferred,
        h.deferred,
        b.cut,
        h.cut
    )
}

/// The terminal rendering.
pub fn text(d: &PlanDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "diff: {}", heading(d));
    let _ = writeln!(out, "totals: {}", totals_line(d));
    let _ = writeln!(
        out,
        "roster: {}",
        if d.same_roster {
            "unchanged (same fingerprint)"
        } else {
            "changed"
        }
    );
    for kind in ChangeKind::ALL {
        let rows: Vec<&RosterChange> = d.changes.iter().filter(|c| c.change == kind).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} ({})", kind.as_str().to_uppercase(), rows.len());
        for c in rows {
            let _ = write!(
                out,
                "  {}  {} -> {}  {} tokens",
                c.name,
                place(c.base.as_ref()),
                place(c.head.as_ref()),
                signed(c.tokens_delta)
            );
            let why = why(c);
            if !why.is_empty() {
                let _ = write!(out, "\n      {why}");
            }
            out.push('\n');
        }
    }
    if d.changes.is_empty() {
        out.push_str("\nno tool changed place\n");
    }
    out
}

/// Escapes text for a markdown table cell: the one cell escaper of every markdown rendering
/// (hidden characters are left to [`crate::emit`]'s guard). `&` is escaped too, so an entity
/// a server wrote in a name (`amp&lt;name`) shows as written, not as the character it names.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' | '&' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// `text` as a code span in a markdown table cell: a backquote would end the span and is
/// written `'`; a bar would end the cell even inside the span (GitHub splits the row before
/// reading spans) and is written `\|`, which GitHub shows as `|`; a line break would end the
/// row and is written as a blank.
pub fn md_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('`');
    for ch in text.chars() {
        match ch {
            '`' => out.push('\''),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out.push('`');
    out
}

/// The markdown rendering (a pull-request comment or `$GITHUB_STEP_SUMMARY`).
pub fn markdown(d: &PlanDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### muster diff\n\n{}\n", md(&heading(d)));
    let (b, h) = (&d.base.totals, &d.head.totals);
    let _ = writeln!(out, "| | base | head | change |\n|---|---:|---:|---:|");
    let rows = [
        ("items", b.items, h.items, d.delta.items),
        ("item cap", b.item_cap, h.item_cap, d.delta.item_cap),
        ("tokens", b.tokens, h.tokens, d.delta.tokens),
        ("token cap", b.token_cap, h.token_cap, d.delta.token_cap),
        (
            "deferred",
            b.deferred,
            h.deferred,
            i64::from(h.deferred) - i64::from(b.deferred),
        ),
        ("cut", b.cut, h.cut, i64::from(h.cut) - i64::from(b.cut)),
    ];
    for (label, x, y, delta) in rows {
        let _ = writeln!(out, "| {label} | {x} | {y} | {} |", signed(delta));
    }
    if d.changes.is_empty() {
        let _ = writeln!(out, "\nNo tool changed place.");
        return out;
    }
    let _ = writeln!(
        out,
        "\n| change | tool | base | head | tokens | why |\n|---|---|---|---|---:|---|"
    );
    for c in &d.changes {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            c.change.as_str(),
            md_code(&c.name),
            md(&place(c.base.as_ref())),
            md(&place(c.head.as_ref())),
            signed(c.tokens_delta),
            md(&why(c))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::md;

    #[test]
    fn markdown_cells_show_what_was_written() {
        assert_eq!(md("amp&lt;name"), "amp\\&lt;name");
        assert_eq!(md("a|b_c"), "a\\|b\\_c");
        assert_eq!(md("two\nlines"), "two lines");
    }
}
