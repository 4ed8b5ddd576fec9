//! Argument paths: recorded as a tree while the walk runs, spelled out (`filters[2].date`,
//! `m["c.d"]`) only when a problem or an edit needs one.

use serde_json::Value;

/// One step of an argument path: a name or a list index.
#[derive(Clone, Copy)]
pub(super) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// A path step that outlives the arguments it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// Argument paths as a tree in one vector: each entry points at its parent, so a path is
/// spelled out only when a problem or edit needs it.
pub(super) struct Paths<'a> {
    pub(super) entries: Vec<(usize, Seg<'a>)>,
}

pub(super) const ROOT: usize = usize::MAX;

impl<'a> Paths<'a> {
    pub(super) fn push(&mut self, parent: usize, seg: Seg<'a>) -> usize {
        self.entries.push((parent, seg));
        self.entries.len() - 1
    }

    fn segs(&self, mut at: usize, last: Option<Seg<'a>>) -> Vec<Seg<'a>> {
        let mut segs: Vec<Seg<'a>> = Vec::new();
        if let Some(last) = last {
            segs.push(last);
        }
        while at != ROOT {
            let (parent, seg) = self.entries[at];
            segs.push(seg);
            at = parent;
        }
        segs.reverse();
        segs
    }

    pub(super) fn steps(&self, at: usize, last: Option<Seg<'a>>) -> Vec<Step> {
        self.segs(at, last)
            .into_iter()
            .map(|seg| match seg {
                Seg::Key(key) => Step::Key(key.to_string()),
                Seg::Index(index) => Step::Index(index),
            })
            .collect()
    }

    pub(super) fn render(&self, at: usize, last: Option<Seg<'a>>) -> String {
        render_segs(&self.segs(at, last))
    }
}

/// An argument path as problems and notes spell it: `filters[2].date`, `m["c.d"]`.
pub(crate) fn render_steps(steps: &[Step]) -> String {
    let segs: Vec<Seg<'_>> = steps
        .iter()
        .map(|step| match step {
            Step::Key(key) => Seg::Key(key),
            Step::Index(index) => Seg::Index(*index),
        })
        .collect();
    render_segs(&segs)
}

fn render_segs(segs: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(key) if !plain(key) => push_quoted_key(&mut out, key),
            Seg::Key(key) if i == 0 => out.push_str(key),
            Seg::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Seg::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Whether `key` can stand in an argument path as written: a plain identifier
/// (`[A-Za-z_][A-Za-z0-9_-]*`), which no `.`, `[`, `"` or emptiness can make ambiguous.
fn plain(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `key` as a path step in brackets, quoted and escaped as a JSON string: `["c.d"]`.
fn push_quoted_key(out: &mut String, key: &str) {
    out.push('[');
    // Writing a string into a String cannot fail.
    let _ = std::fmt::Write::write_fmt(out, format_args!("{}", Value::from(key)));
    out.push(']');
}

/// A top-level argument name as an argument path renders it: as written when it is a plain
/// identifier, else quoted in brackets (`["c.d"]`).
pub(crate) fn render_name(name: &str) -> std::borrow::Cow<'_, str> {
    if plain(name) {
        std::borrow::Cow::Borrowed(name)
    } else {
        let mut out = String::new();
        push_quoted_key(&mut out, name);
        std::borrow::Cow::Owned(out)
    }
}
