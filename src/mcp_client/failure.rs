//! Why a session with a server failed, in words that name what the server
//! did: the failure discovery, lock and `muster call` report. It decides
//! nothing; it carries the reason, the message and the help line.

use crate::contract::FailureReason;

/// Why a session failed, in words that name what the server did.
pub(crate) struct Failure {
    /// What kind of failure, for discovery's answer.
    pub reason: FailureReason,
    pub message: String,
    pub help: Option<String>,
    /// One entry per tool that breaks the listing rules, when that is the failure.
    pub tools: Vec<String>,
    /// The problem code, when finer than the error kind's (`env-var-unset`).
    pub code: &'static str,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            reason: FailureReason::BadResponse,
            message: message.into(),
            help: None,
            tools: Vec::new(),
            code: "",
        }
    }

    /// A server that cannot be reached because of `err` (from
    /// [`crate::policy::expand_vars`]): its message without the server's
    /// name, which the caller adds.
    pub fn unexpanded(server: &str, err: &crate::error::Error) -> Self {
        let p = &err.problems()[0];
        let prefix = format!("mcp server `{server}`: ");
        Self {
            reason: FailureReason::CannotStart,
            help: p.help.clone(),
            code: p.code,
            ..Self::new(p.message.strip_prefix(&prefix).unwrap_or(&p.message))
        }
    }
}
