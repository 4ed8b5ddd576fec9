//! What `POST /v1/call` and `muster call` answer: a turn checked, then its
//! MCP calls forwarded and their results, by call id (docs/call.md).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `format_version` of [`CallAnswer`]'s JSON.
pub const CALL_FORMAT_VERSION: u32 = 1;

/// A turn checked and run: the check's report whole, and one result per
/// call in the turn's order.
///
/// JSON: `{"format_version", "outcome", "check", "results"}`.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CallAnswer {
    /// [`CALL_FORMAT_VERSION`].
    pub format_version: u32,
    /// What came of the turn as a whole.
    pub outcome: TurnOutcome,
    /// The check report, as `POST /v1/check` answers it for the same turn
    /// (docs/check.md): each call's problems, notes, forwarded arguments
    /// and resolved tool.
    #[cfg_attr(feature = "serve", schema(value_type = Object))]
    pub check: Box<RawValue>,
    /// One per call of the turn, in its order (`results[i]` answers
    /// `check.calls[i]`).
    pub results: Vec<CallResult>,
}

/// What came of a turn. Serialized as `"ran"`, `"refused"` or `"failed"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TurnOutcome {
    /// Every call passed the check; every MCP call got its server's result
    /// (an `isError` result included: the tool ran and said so) and every
    /// other call is the host's to run.
    Ran,
    /// At least one call did not pass the check, so no call ran: a turn is
    /// all or nothing.
    Refused,
    /// The turn passed the check and was forwarded, but at least one MCP
    /// call got no result from its server (its `error` says why).
    Failed,
}

/// What became of one call.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CallResult {
    /// The call's id, as the turn gave it.
    pub id: String,
    /// What became of it.
    pub status: ResultStatus,
    /// The MCP server it was forwarded to (`forwarded`, `failed`).
    pub server: Option<String>,
    /// The tool's name on that server (`forwarded`, `failed`).
    pub tool: Option<String>,
    /// The arguments the host runs the tool with (`host` only: as the
    /// check forwards them, fixed values in and unlisted arguments out).
    #[cfg_attr(feature = "serve", schema(value_type = Option<Object>))]
    pub arguments: Option<Box<RawValue>>,
    /// The server's `tools/call` result exactly as it sent it (`content`,
    /// `structuredContent`, `isError`, ...) (`forwarded` only).
    #[cfg_attr(feature = "serve", schema(value_type = Option<Object>))]
    pub result: Option<Box<RawValue>>,
    /// Why the server gave no result (`failed` only).
    pub error: Option<UpstreamFailure>,
}

/// What became of one call. Serialized as `"forwarded"`, `"failed"`,
/// `"host"` or `"not-run"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema), schema(as = CallResultStatus))]
#[serde(rename_all = "kebab-case")]
pub enum ResultStatus {
    /// Forwarded to its MCP server; `result` is the server's answer.
    Forwarded,
    /// Forwarded, but the server gave no result; `error` says why.
    Failed,
    /// Not an MCP tool (a configured tool or the control tool): checked,
    /// and the host runs it with `arguments`.
    Host,
    /// Not run: the turn was refused (the check report says which calls
    /// and why).
    NotRun,
}

/// Why a forwarded call got no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpstreamFailure {
    /// The stable code.
    pub code: UpstreamCode,
    /// The server.
    pub server: String,
    /// The JSON-RPC error code, when the server answered with an error.
    pub rpc_code: Option<i64>,
    /// For `upstream-changed`: what kind of change the server made to the
    /// tool since it was planned (empty when it no longer lists it, and
    /// for every other code).
    pub changes: Vec<super::LockChange>,
    /// For `upstream-changed`: what changed, as `muster lock` shows it to a
    /// reviewer (docs/policy.md, "What changed in a tool"); `null` for
    /// every other code, and when the tool is gone.
    #[cfg_attr(feature = "serve", schema(value_type = Option<Object>))]
    pub details: Option<super::ChangeDetails>,
    /// One sentence naming the server and what happened.
    pub message: String,
}

/// Why a forwarded call got no result, as a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "serve", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamCode {
    /// The server could not be started or initialized.
    UpstreamCannotStart,
    /// The server is down after a failure, waiting out its backoff.
    UpstreamDown,
    /// The server exited or closed its stdout with the call in flight.
    UpstreamExited,
    /// No answer within the server's timeout.
    UpstreamTimedOut,
    /// Every slot of the server was busy for the whole timeout.
    UpstreamBusy,
    /// The server answered with a JSON-RPC error.
    UpstreamError,
    /// The server answered something that is not a result object.
    UpstreamBadResponse,
    /// The server lists the tool differently from the definition the turn
    /// was planned with, and `lock.on_mismatch` is `cut`: nothing was sent.
    UpstreamChanged,
}

impl UpstreamCode {
    /// Every code, in documentation order.
    pub const ALL: [UpstreamCode; 8] = [
        UpstreamCode::UpstreamCannotStart,
        UpstreamCode::UpstreamDown,
        UpstreamCode::UpstreamExited,
        UpstreamCode::UpstreamTimedOut,
        UpstreamCode::UpstreamBusy,
        UpstreamCode::UpstreamError,
        UpstreamCode::UpstreamBadResponse,
        UpstreamCode::UpstreamChanged,
    ];

    /// The stable kebab-case string.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamCode::UpstreamCannotStart => "upstream-cannot-start",
            UpstreamCode::UpstreamDown => "upstream-down",
            UpstreamCode::UpstreamExited => "upstream-exited",
            UpstreamCode::UpstreamTimedOut => "upstream-timed-out",
            UpstreamCode::UpstreamBusy => "upstream-busy",
            UpstreamCode::UpstreamError => "upstream-error",
            UpstreamCode::UpstreamBadResponse => "upstream-bad-response",
            UpstreamCode::UpstreamChanged => "upstream-changed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_strings() {
        for code in UpstreamCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::from(code.as_str())
            );
        }
    }
}
