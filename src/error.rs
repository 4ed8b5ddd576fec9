//! The one public error type. An error carries every problem found, each
//! naming the file (and line), the tool or argument involved and what to
//! change, so a user fixes all of them in one pass.

pub mod code;

use std::fmt;
use std::path::{Path, PathBuf};

/// Whether `code` is kebab-case: lowercase ASCII words of letters and
/// digits joined by single hyphens.
pub fn is_kebab(code: &str) -> bool {
    !code.is_empty()
        && code.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// What went wrong, in broad strokes; the binary maps every kind to exit 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Occurs when a policy file is malformed or its entries contradict each other.
    Policy,
    /// Occurs when a file muster must read or write cannot be.
    Io,
    /// Occurs when a plan, turn or gate given to muster is malformed.
    Input,
    /// Occurs when an MCP server cannot be started, listed or understood.
    Mcp,
    /// Occurs when the command line asks for something muster cannot do.
    Usage,
    /// Occurs when a session document is not one muster wrote as it
    /// stands: a missing or wrong signature, or claims (loads, bounds,
    /// digests) that the policy it was pinned under cannot give.
    Session,
    /// Occurs when the session store cannot be reached or refuses a write.
    Store,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Policy,
        ErrorKind::Io,
        ErrorKind::Input,
        ErrorKind::Mcp,
        ErrorKind::Usage,
        ErrorKind::Session,
        ErrorKind::Store,
    ];

    /// A stable kebab-case name for the kind: the service's problem type
    /// (`urn:muster:problem:<code>`), documented in `docs/serve.md`.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Policy => "policy",
            ErrorKind::Io => "io",
            ErrorKind::Input => "input",
            ErrorKind::Mcp => "mcp",
            ErrorKind::Usage => "usage",
            ErrorKind::Session => "session-tampered",
            ErrorKind::Store => "store",
        }
    }

    /// A one-line title for the kind.
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::Policy => "the policies are invalid",
            ErrorKind::Io => "a file could not be read or written",
            ErrorKind::Input => "the input cannot be read",
            ErrorKind::Mcp => "an MCP server failed",
            ErrorKind::Usage => "the request asks for something muster cannot do",
            ErrorKind::Session => "the session document is not one muster wrote as it stands",
            ErrorKind::Store => "the session store failed",
        }
    }
}

/// One problem: what kind it is, where it is, what is wrong, what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A stable kebab-case code saying what kind of problem this is: one of
    /// [`code::ALL`] (`name-too-long`, `outside-policy-directory`, …).
    /// Decide on this, not on `message`. A problem made without one takes
    /// its error's [`ErrorKind::code`] when it is put in an [`Error`].
    pub code: &'static str,
    /// The file the problem is in, when it is in one.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// What is wrong, naming the tool or argument involved.
    pub message: String,
    /// What to change, when there is a clear fix.
    pub help: Option<String>,
}

impl Problem {
    /// A problem with a message and nothing else; its code is its error's
    /// kind until [`Problem::with_code`] gives one (prefer [`Problem::coded`]).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            code: "",
            file: None,
            line: None,
            message: message.into(),
            help: None,
        }
    }

    /// A problem of kind `code` (one of [`code::ALL`]) with a message.
    pub fn coded(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(message).with_code(code)
    }

    /// Gives the problem its code (one of [`code::ALL`]).
    pub fn with_code(mut self, code: &'static str) -> Self {
        debug_assert!(is_kebab(code), "problem code {code:?} is not kebab-case");
        self.code = code;
        self
    }

    /// Attaches the file the problem is in.
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        self.file = Some(file.as_ref().to_path_buf());
        self
    }

    /// Attaches a 1-based line number.
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    /// Attaches what to change.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            _ => {}
        }
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// muster's error: a kind and every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    problems: Vec<Problem>,
}

impl Error {
    /// An error of `kind` with one problem.
    pub fn new(kind: ErrorKind, problem: Problem) -> Self {
        Self::many(kind, vec![problem])
    }

    /// An error of `kind` with several problems; `problems` must not be
    /// empty. A problem without a code takes the kind's.
    pub fn many(kind: ErrorKind, mut problems: Vec<Problem>) -> Self {
        debug_assert!(!problems.is_empty());
        for problem in &mut problems {
            if problem.code.is_empty() {
                problem.code = kind.code();
            }
            debug_assert!(
                code::ALL.iter().any(|(c, _)| *c == problem.code),
                "problem code {:?} is not listed in error::code::ALL",
                problem.code
            );
        }
        Self { kind, problems }
    }

    /// A file that could not be read or written.
    pub fn io(path: &Path, err: &std::io::Error) -> Self {
        Self::new(
            ErrorKind::Io,
            Problem::coded(
                code::FILE_UNREADABLE,
                format!("cannot access {}: {err}", path.display()),
            )
            .in_file(path),
        )
    }

    /// An [`ErrorKind::Input`] error for JSON in `file` that cannot be read
    /// as `what`, with the line serde_json found the problem on.
    pub fn json(file: &Path, what: &str, err: &serde_json::Error, help: &str) -> Self {
        // serde_json appends " at line L column C"; the line goes in its own field instead.
        let message = json_message(err);
        let line = (err.line() > 0).then_some(err.line());
        Error::new(
            ErrorKind::Input,
            Problem::coded(
                code::INVALID_JSON,
                format!("cannot read the {what}: {message}"),
            )
            .in_file(file)
            .at_line(line)
            .help(help),
        )
    }

    /// The broad kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Every problem, in the order found.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// The 1-based line holding byte `offset` of `text`. Scans from the start:
/// for more than a few offsets into one text use [`LineIndex`].
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Where each line of a text starts, so that many byte offsets (every span
/// of a policy file) turn into lines in O(log n) each rather than each
/// scanning from the start of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, b)| b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        Self { starts }
    }

    /// The 1-based line holding byte `offset`; the same as [`line_of`].
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }
}

/// serde_json's reason for `err` without the " at line L column C" it
/// appends (the place is given apart), and "recursion limit exceeded" said
/// plainly.
pub(crate) fn json_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) if err.line() > 0 => &text[..at],
        _ => text.as_str(),
    };
    match message {
        "recursion limit exceeded" => {
            "JSON text nested too deep (more than 128 levels)".to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_kebab_case_listed_once_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for (c, meaning) in code::ALL {
            assert!(is_kebab(c), "{c:?}");
            assert!(seen.insert(*c), "{c:?} is listed twice");
            assert!(!meaning.is_empty());
        }
        for kind in ErrorKind::ALL {
            assert!(seen.contains(kind.code()), "{kind:?}");
        }
        // The problem codes' table; the result codes' table after it is
        // `contract::ResultCode::ALL`'s.
        let docs = include_str!("../docs/problems.md");
        let docs = docs.split("\n## Result codes").next().unwrap_or(docs);
        let documented: Vec<&str> = docs
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        let listed: Vec<&str> = code::ALL.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            documented, listed,
            "docs/problems.md lists the codes of error::code::ALL, in order"
        );
        for bad in ["", "Name", "a--b", "-a", "a-", "a_b", "a b"] {
            assert!(!is_kebab(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_problem_without_a_code_takes_its_errors_kind() {
        let err = Error::many(
            ErrorKind::Mcp,
            vec![Problem::new("x"), Problem::coded(code::NAME_TOO_LONG, "y")],
        );
        assert_eq!(err.problems()[0].code, "mcp");
        assert_eq!(err.problems()[1].code, "name-too-long");
    }

    #[test]
    fn the_index_agrees_with_line_of_at_every_offset() {
        for text in ["", "a", "\n", "a\nb", "a\n\nb\n", "\r\n\r\nx", "é\n🙂\n"] {
            let index = LineIndex::new(text);
            for offset in 0..=text.len() + 2 {
                assert_eq!(
                    index.line(offset),
                    line_of(text, offset),
                    "{text:?} {offset}"
                );
            }
        }
    }
}
