//! Errors as `application/problem+json` (RFC 9457): muster's [`Error`] with
//! a stable type per [`ErrorKind`], plus the few the HTTP layer adds (body
//! too large, timeout, not found, internal). Never a sentence a client must
//! parse: `type` and `status` decide, `problems` carries each problem's
//! fields.

use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The `type` of every problem: `urn:muster:problem:` and a kebab-case code.
pub const TYPE_PREFIX: &str = "urn:muster:problem:";

/// The problem types the HTTP layer adds to [`ErrorKind`]'s codes.
pub const HTTP_CODES: [&str; 16] = [
    "session-not-found",
    "body-too-large",
    "timeout",
    "not-found",
    "method-not-allowed",
    "overloaded",
    "unauthorized",
    "admin-disabled",
    "origin-refused",
    "host-refused",
    "unsupported-media-type",
    "internal",
    "token-missing",
    "token-invalid",
    "insufficient-scope",
    "rate-limited",
];

/// A problem+json body.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProblemDocument {
    /// `urn:muster:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// One line for the type.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// Every problem as text: where, what, and what to change.
    pub detail: String,
    /// Each problem's fields: the first [`MAX_PROBLEMS`].
    pub problems: Vec<ProblemEntry>,
    /// How many problems past the first [`MAX_PROBLEMS`] are left out of
    /// `problems` and `detail` (absent when none are).
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: usize,
    /// The policy generation that answered (or, for a failed reload, the
    /// one still serving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// For `tool-pin-mismatch` (409): the resume report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<crate::contract::ResumeReport>,
    /// For `plan-changed` (409): the offered and current fingerprints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_changed: Option<crate::contract::PlanChanged>,
    /// For `stale-revision` (409): the revision expected and the current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_revision: Option<crate::contract::StaleRevision>,
}

/// Why a request was answered 409: every 409 is a problem document of this
/// one shape, its `type` naming the conflict and one member carrying its
/// facts.
#[derive(Debug, Clone, PartialEq)]
pub enum Conflict {
    /// The session's pin no longer holds (`tool-pin-mismatch`).
    Resume(crate::contract::ResumeReport),
    /// The plan a fingerprint names is not the one this generation makes
    /// (`plan-changed`).
    PlanChanged(crate::contract::PlanChanged),
    /// The session moved on since it was read (`stale-revision`).
    StaleRevision(crate::contract::StaleRevision),
}

/// The problem types of the 409 answers.
pub const CONFLICT_CODES: [&str; 3] = ["tool-pin-mismatch", "plan-changed", "stale-revision"];

impl Conflict {
    /// The 409 problem.
    pub fn into_problem(self) -> ApiError {
        let (code, title, message, help) = match &self {
            Conflict::Resume(report) => (
                CONFLICT_CODES[0],
                "the session's pinned tools are not what the policy gives now",
                report
                    .changes
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
                "start a new session; `resume` lists every change",
            ),
            Conflict::PlanChanged(changed) => (
                CONFLICT_CODES[1],
                "the plan the fingerprint names is not the one the policy makes now",
                changed.to_string(),
                "check against the offered plan itself, or plan again and offer the new roster",
            ),
            Conflict::StaleRevision(stale) => (
                CONFLICT_CODES[2],
                "the session changed since it was read",
                stale.to_string(),
                "read the session again and retry against its current revision",
            ),
        };
        let mut error = ApiError::http(
            StatusCode::CONFLICT,
            code,
            title,
            Problem::new(message).help(help),
        );
        error.conflict = Some(Box::new(self));
        error
    }
}

/// The most problems a problem+json lists; the rest are counted in
/// `omitted`, so a body full of mistakes cannot make an answer many times
/// its size.
pub const MAX_PROBLEMS: usize = 100;

/// The most characters of a problem's `message` or `help` a problem+json
/// carries; a longer one (quoting a long input) is cut, ending in `…`.
pub const MAX_PROBLEM_CHARS: usize = 4096;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `text`, cut to [`MAX_PROBLEM_CHARS`] characters.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_PROBLEM_CHARS) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// One problem of a [`ProblemDocument`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ProblemEntry {
    /// What kind of problem this is: a stable kebab-case code, one of
    /// those `docs/problems.md` lists (`name-too-long`, `invalid-json`, …).
    /// Decide on this, not on `message`.
    pub code: String,
    /// The request field the problem is in (`body`, `turn`, `session`, …),
    /// or the policy file for a failed reload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 1-based line inside that field's JSON or that file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What to change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl From<&Problem> for ProblemEntry {
    fn from(p: &Problem) -> Self {
        Self {
            code: p.code.to_string(),
            field: p.file.as_ref().map(|f| clip(&f.display().to_string())),
            line: p.line,
            message: clip(&p.message),
            help: p.help.as_deref().map(clip),
        }
    }
}

/// An error answered as problem+json.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    title: &'static str,
    error: Error,
    generation: Option<u64>,
    conflict: Option<Box<Conflict>>,
}

impl ApiError {
    /// A problem of the HTTP layer's own (see [`HTTP_CODES`]).
    pub fn http(
        status: StatusCode,
        code: &'static str,
        title: &'static str,
        problem: Problem,
    ) -> Self {
        // The problem's own code is the type's, unless it has a finer one.
        let problem = match problem.code {
            "" => problem.with_code(code),
            _ => problem,
        };
        Self {
            status,
            code,
            title,
            error: Error::new(ErrorKind::Input, problem),
            generation: None,
            conflict: None,
        }
    }

    /// The 500 for an answer that panicked: a bug in muster, never bad
    /// input.
    pub fn internal() -> Self {
        Self::http(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "muster failed while answering",
            Problem::coded(
                code::INTERNAL,
                "the answer could not be computed; this is a bug in muster",
            )
            .help("report the request that caused it"),
        )
    }

    /// muster's error, with the status its kind maps to: bad input and
    /// requests for things that do not exist are 422, a policy that fails
    /// validation on reload 422, the service's own I/O 500.
    pub fn new(error: Error) -> Self {
        let status = match error.kind() {
            ErrorKind::Input | ErrorKind::Usage | ErrorKind::Policy | ErrorKind::Session => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            // The store is down or refused: nothing changed, try again.
            ErrorKind::Store => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::with_status(error, status)
    }

    /// muster's error with an explicit status (400 for unreadable JSON).
    pub fn with_status(error: Error, status: StatusCode) -> Self {
        let kind = error.kind();
        Self {
            status,
            code: kind.code(),
            title: kind.title(),
            error,
            generation: None,
            conflict: None,
        }
    }

    /// Names the policy generation in the body.
    pub fn generation(mut self, generation: u64) -> Self {
        self.generation = Some(generation);
        self
    }

    /// The body: every problem+json the service sends is rendered here,
    /// so here the problems are capped ([`MAX_PROBLEMS`],
    /// [`MAX_PROBLEM_CHARS`]).
    pub fn document(&self) -> ProblemDocument {
        let all = self.error.problems();
        let shown = &all[..all.len().min(MAX_PROBLEMS)];
        let omitted = all.len() - shown.len();
        let mut detail = shown
            .iter()
            .map(|p| {
                // As the CLI prints it, but clipped as `problems` is.
                Problem {
                    code: p.code,
                    file: p.file.clone(),
                    line: p.line,
                    message: clip(&p.message),
                    help: p.help.as_deref().map(clip),
                }
                .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n");
        if omitted > 0 {
            detail.push_str(&format!(
                "\n… and {omitted} more problem(s), left out (at most {MAX_PROBLEMS} are listed)"
            ));
        }
        ProblemDocument {
            kind: format!("{TYPE_PREFIX}{}", self.code),
            title: self.title.to_string(),
            status: self.status.as_u16(),
            detail,
            problems: shown.iter().map(ProblemEntry::from).collect(),
            omitted,
            generation: self.generation,
            resume: match self.conflict.as_deref() {
                Some(Conflict::Resume(report)) => Some(report.clone()),
                _ => None,
            },
            plan_changed: match self.conflict.as_deref() {
                Some(Conflict::PlanChanged(changed)) => Some(changed.clone()),
                _ => None,
            },
            stale_revision: match self.conflict.as_deref() {
                Some(Conflict::StaleRevision(stale)) => Some(stale.clone()),
                _ => None,
            },
        }
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        Self::new(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = crate::answer::json_text(&self.document());
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if crate::trace::enabled() {
            // For the request's span (serve/traced.rs).
            let codes = self
                .error
                .problems()
                .iter()
                .map(|p| p.code)
                .filter(|c| !c.is_empty());
            response.extensions_mut().insert(super::traced::Answered {
                kind: self.code,
                codes: codes.take(MAX_PROBLEMS).collect(),
            });
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_lists_at_most_max_problems_and_counts_the_rest() {
        let problems: Vec<Problem> = (0..MAX_PROBLEMS + 250)
            .map(|i| Problem::new(format!("problem {i}")).in_file("gates"))
            .collect();
        let doc = ApiError::new(Error::many(ErrorKind::Usage, problems)).document();
        assert_eq!(doc.problems.len(), MAX_PROBLEMS);
        assert_eq!(doc.omitted, 250);
        assert_eq!(doc.problems[MAX_PROBLEMS - 1].message, "problem 99");
        assert_eq!(doc.detail.lines().count(), MAX_PROBLEMS + 1);
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["omitted"], 250);

        let few = ApiError::new(Error::new(ErrorKind::Usage, Problem::new("one"))).document();
        assert_eq!(few.omitted, 0);
        assert!(serde_json::to_value(&few).unwrap().get("omitted").is_none());
    }

    #[test]
    fn a_long_message_is_clipped() {
        let long = "é".repeat(MAX_PROBLEM_CHARS * 3);
        let doc = ApiError::new(Error::new(
            ErrorKind::Input,
            Problem::new(long.clone()).help(long),
        ))
        .document();
        let entry = &doc.problems[0];
        assert_eq!(entry.message.chars().count(), MAX_PROBLEM_CHARS + 1);
        assert!(entry.message.ends_with('…'));
        assert_eq!(entry.help, Some(entry.message.clone()));
        assert!(doc.detail.len() < 4 * MAX_PROBLEM_CHARS * 2 + 64);
    }
}
