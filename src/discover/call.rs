//! One `tools/call` on a stdio MCP server, for whoever holds arguments
//! `muster check` let through.
//!
//! It exists for two reasons. A host that keeps muster between the model
//! and its MCP servers needs to forward a checked call, and should not have
//! to speak MCP itself to do so. And narrowing is only proven once a real
//! server has run a call with what the check forwarded (the fixed values in
//! place, the dropped arguments gone, coerced values accepted); the end to
//! end tests in `tests/e2e_call.rs` do exactly that against the reference
//! servers.
//!
//! The server is reached through the one MCP client ([`crate::mcp_client`]), as the gateway
//! and discovery reach it: the same start (its own process group, tied to muster), the same
//! handshake and protocol-version policy, the same rule for a server that dies. The arguments
//! are text, sent byte for byte as the check wrote them
//! ([`crate::check::CallReport::arguments_text`]): a map of `serde_json` values would turn an
//! integer past `u64` into a double and `-0` into `-0.0`. One call starts and stops the
//! server: this is a forwarder for checked calls and a proof, not a pool.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use super::{ServerSpec, mcp_error};
use crate::contract::FailureReason;
use crate::error::Error;
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::mcp_client::{self, Conn, Failure, UpstreamError};

/// How much longer than the session's deadline one request may wait, so the
/// deadline (which names the phase) is what ends a silent server's session.
const GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Starts the server in `spec`, initializes, calls `tool` with `arguments`
/// (the text of a JSON object, sent byte for byte), shuts the server down
/// and returns the call's result as the server sent it (a
/// `CallToolResult`: `content`, `isError`, `structuredContent`, …, fields
/// muster does not model included).
///
/// Pass [`crate::check::CallReport::arguments_text`] of an `ok` call from
/// [`crate::check::check_turn`], so every number reaches the server as the
/// model wrote it, and `tool` as the server names it (`search_files`, not
/// `mcp.fs.search_files`).
///
/// A result with `"isError": true` is still `Ok`: the server ran the call
/// and answered, and that answer is the model's to read (the reference
/// servers report invalid arguments this way).
///
/// Builds its own tokio runtime, so call it from synchronous code. The
/// whole session (start, initialize, call, close) is bounded by
/// `spec.timeout`; `spec.snapshot` is not read or written.
///
/// # Errors
/// [`ErrorKind::Mcp`], naming the server and the tool, when `arguments` is
/// not the text of a JSON object, when the server cannot be started or
/// initialized, answers with a JSON-RPC error or without a result object,
/// sends a line over [`super::MAX_MESSAGE_BYTES`], stops, or runs past the
/// timeout; and when this is called from inside an async runtime. Never
/// panics on server misbehaviour.
pub fn call_tool(spec: &ServerSpec, tool: &str, arguments: &str) -> Result<Value, Error> {
    let fail = |message: String, help: Option<String>| {
        Err(mcp_error(
            &spec.name,
            format!("tool `{tool}`: {message}"),
            help,
        ))
    };
    match serde_json::from_str::<&RawValue>(arguments) {
        Ok(raw) if raw.get().trim_start().starts_with('{') => {}
        _ => {
            return fail(
                "the arguments are not the text of a JSON object".into(),
                Some("pass `CallReport::arguments_text()` of an ok call".into()),
            );
        }
    }
    // block_on inside a runtime would panic; say what is wrong instead.
    if tokio::runtime::Handle::try_current().is_ok() {
        return fail(
            "call_tool was called from inside an async runtime".into(),
            None,
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}"), None),
    };
    runtime.block_on(async {
        let conn = match mcp_client::open(spec) {
            Ok(conn) => conn,
            Err(message) => {
                return fail(
                    message,
                    Some("check the block's `command` (or `url`) and `env`".into()),
                );
            }
        };
        let phase = Mutex::new("initializing");
        let once = call_once(spec, &conn, tool, arguments, &phase);
        let outcome = tokio::time::timeout(spec.timeout, once).await;
        let doing = *phase.lock().unwrap_or_else(|e| e.into_inner());
        let evidence = conn.stderr_evidence();
        // The server is stopped whatever happened: the one client's close
        // (its process group killed, an HTTP session ended).
        conn.close("the call is over").await;
        let secrets = secrets_of(spec);
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(f)) => Err(mcp_error(
                &spec.name,
                secrets
                    .redact(&format!("tool `{tool}`: {}", f.message))
                    .into_owned(),
                f.help,
            )),
            Err(_) => Err(mcp_error(
                &spec.name,
                secrets
                    .redact(&format!(
                        "tool `{tool}`: timed out after {:?} while {doing}{evidence}",
                        spec.timeout,
                    ))
                    .into_owned(),
                Some(
                    "check that `command` starts an MCP server on stdio, or raise its timeout"
                        .into(),
                ),
            )),
        }
    })
}

/// The secrets muster fills into what it sends `spec`'s server, never quoted.
fn secrets_of(spec: &ServerSpec) -> crate::secrets::Secrets {
    crate::secrets::Secrets::of_written(spec.written_secrets())
}

/// The handshake (the one client's version policy) and the call, on `conn`.
async fn call_once(
    spec: &ServerSpec,
    conn: &Arc<Conn>,
    tool: &str,
    arguments: &str,
    phase: &Mutex<&'static str>,
) -> Result<Value, Failure> {
    let started = std::time::Instant::now();
    let prefix = format!("MCP server `{}` ", spec.name);
    let words = |sentence: String| match sentence.strip_prefix(&prefix) {
        Some(rest) => rest.to_string(),
        None => sentence,
    };
    // The caller's deadline bounds the whole session and says what it was
    // doing when it passed; the requests' own waits run a little longer.
    let mut waits = spec.clone();
    waits.timeout = spec.timeout + GRACE;
    mcp_client::negotiate(&waits, conn.clone())
        .await
        .map_err(|message| Failure {
            reason: FailureReason::HandshakeFailed,
            ..Failure::new(words(message))
        })?;
    *phase.lock().unwrap_or_else(|e| e.into_inner()) = "calling the tool";
    let name = serde_json::to_string(tool).unwrap_or_default();
    let params = format!(r#"{{"name":{name},"arguments":{arguments}}}"#);
    let left = spec.timeout.saturating_sub(started.elapsed()) + GRACE;
    let response = match conn.request("tools/call", &params, left).await {
        Ok(raw) => {
            let result: Value = serde_json::from_str(raw.get()).map_err(|e| {
                Failure::new(format!(
                    "answered tools/call with a result muster cannot read ({e})"
                ))
            })?;
            serde_json::json!({ "result": result })
        }
        Err(UpstreamError::Rpc { code, message }) => {
            serde_json::json!({ "error": { "code": code, "message": message } })
        }
        Err(e) => {
            return Err(Failure {
                reason: match e {
                    UpstreamError::Exited { .. } => FailureReason::Exited,
                    _ => FailureReason::BadResponse,
                },
                ..Failure::new(words(e.sentence(&spec.name)))
            });
        }
    };
    result_of(response)
}

/// The `result` object of a raw `tools/call` response.
fn result_of(response: Value) -> Result<Value, Failure> {
    match response.get("result") {
        Some(result @ Value::Object(_)) => Ok(result.clone()),
        _ => Err(Failure::new(format!(
            "answered tools/call without a result object: {}",
            crate::names::escape(&response.get("error").unwrap_or(&response).to_string())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;
    use std::time::Duration;

    fn spec(command: &[&str]) -> ServerSpec {
        let mut s = ServerSpec::new(
            "srv",
            command.iter().map(|c| c.to_string()).collect(),
            "unused.json".into(),
        );
        s.timeout = Duration::from_secs(10);
        s
    }

    #[test]
    fn a_result_object_is_returned_as_sent() {
        let r = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "x-extra": 1}});
        assert_eq!(
            result_of(r).ok(),
            Some(json!({"content": [], "x-extra": 1}))
        );
    }

    #[test]
    fn a_response_without_a_result_object_names_the_error() {
        let r = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "nope"}});
        let f = result_of(r).unwrap_err();
        assert!(
            f.message.contains("without a result object"),
            "{}",
            f.message
        );
        assert!(f.message.contains("nope"), "{}", f.message);
        let f = result_of(json!({"jsonrpc": "2.0", "id": 1, "result": 5})).unwrap_err();
        assert!(
            f.message.contains("without a result object"),
            "{}",
            f.message
        );
    }

    #[test]
    fn an_empty_command_is_an_mcp_error_naming_server_and_tool() {
        let err = call_tool(&spec(&[]), "t", "{}").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
        assert!(text.contains("empty command"), "{text}");
    }

    #[test]
    fn a_program_that_cannot_start_is_an_mcp_error() {
        let err = call_tool(&spec(&["/no/such/muster-server"]), "t", "{}").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(text.contains("cannot start"), "{text}");
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn a_server_that_exits_at_once_is_an_mcp_error() {
        let err = call_tool(&spec(&["sh", "-c", "echo bye >&2"]), "t", "{}").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
        assert!(text.contains("bye"), "stderr is quoted: {text}");
    }

    #[cfg(unix)]
    #[test]
    fn a_silent_server_times_out_naming_the_phase() {
        let mut s = spec(&["sleep", "30"]);
        s.timeout = Duration::from_millis(300);
        let err = call_tool(&s, "t", "{}").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(
            text.contains("timed out") && text.contains("initializing"),
            "{text}"
        );
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
    }

    /// Issue 24, defect 9: arguments are text, so a number no map of
    /// `serde_json` values carries as written is never rewritten; text
    /// that is not an object is refused before any server starts.
    #[test]
    fn arguments_that_are_not_an_object_are_refused_before_starting() {
        for text in ["[1]", "not json", "5", ""] {
            let err = call_tool(&spec(&["/no/such/muster-server"]), "t", text).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Mcp);
            assert!(
                err.to_string().contains("not the text of a JSON object"),
                "{err}"
            );
        }
    }

    #[test]
    fn inside_a_runtime_it_reports_instead_of_panicking() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt
            .block_on(async { call_tool(&spec(&["true"]), "t", "{}") })
            .unwrap_err();
        assert!(err.to_string().contains("inside an async runtime"), "{err}");
    }
}
