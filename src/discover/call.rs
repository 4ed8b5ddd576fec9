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
//! The session is discovery's (start, initialize, close, timeout, evidence
//! from stderr); only the request differs. One call starts and stops the
//! server: this is a forwarder for checked calls and a proof, not a pool.

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use serde_json::{Map, Value};

use super::session::{self, Watch};
use super::{ServerSpec, mcp_error, timed_out};
use crate::error::Error;
#[cfg(doc)]
use crate::error::ErrorKind;

/// Starts the server in `spec`, initializes, calls `tool` with `arguments`
/// as given, shuts the server down and returns the call's result as the
/// server sent it (a `CallToolResult`: `content`, `isError`,
/// `structuredContent`, …, fields muster does not model included).
///
/// The arguments are sent unchanged: pass the `arguments` of an `ok` call
/// from [`crate::check::check_turn`], and `tool` as the server names it
/// (`search_files`, not `mcp.fs.search_files`).
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
/// [`ErrorKind::Mcp`], naming the server and the tool, when the server
/// cannot be started or initialized, answers with a JSON-RPC error or
/// without a result object, stops, or runs past the timeout; and when this
/// is called from inside an async runtime. Never panics on server
/// misbehaviour.
pub fn call_tool(
    spec: &ServerSpec,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, Error> {
    let fail = |message: String| {
        Err(mcp_error(
            &spec.name,
            format!("tool `{tool}`: {message}"),
            None,
        ))
    };
    // block_on inside a runtime would panic; say what is wrong instead.
    if tokio::runtime::Handle::try_current().is_ok() {
        return fail("call_tool was called from inside an async runtime".into());
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async {
        let watch = Watch::default();
        match tokio::time::timeout(spec.timeout, call_once(spec, &watch, tool, arguments)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(f)) => Err(mcp_error(
                &spec.name,
                format!("tool `{tool}`: {}{}", f.message, watch.evidence()),
                f.help,
            )),
            Err(_) => Err(timed_out(spec, &watch, Some(tool))),
        }
    })
}

async fn call_once(
    spec: &ServerSpec,
    watch: &Watch,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, session::Failure> {
    let mut open = session::open(spec, watch).await?;
    watch.set_phase("calling the tool");
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let response = open.request(watch, request, "tools/call").await;
    open.close(watch).await;
    result_of(response?)
}

/// The `result` object of a raw `tools/call` response.
fn result_of(response: Value) -> Result<Value, session::Failure> {
    match response.get("result") {
        Some(result @ Value::Object(_)) => Ok(result.clone()),
        _ => Err(session::Failure::new(format!(
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
        let err = call_tool(&spec(&[]), "t", Map::new()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
        assert!(text.contains("empty command"), "{text}");
    }

    #[test]
    fn a_program_that_cannot_start_is_an_mcp_error() {
        let err = call_tool(&spec(&["/no/such/muster-server"]), "t", Map::new()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(text.contains("cannot start"), "{text}");
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn a_server_that_exits_at_once_is_an_mcp_error() {
        let err = call_tool(&spec(&["sh", "-c", "echo bye >&2"]), "t", Map::new()).unwrap_err();
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
        let err = call_tool(&s, "t", Map::new()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mcp);
        let text = err.to_string();
        assert!(
            text.contains("timed out") && text.contains("initializing"),
            "{text}"
        );
        assert!(text.contains("`srv`") && text.contains("`t`"), "{text}");
    }

    #[test]
    fn inside_a_runtime_it_reports_instead_of_panicking() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt
            .block_on(async { call_tool(&spec(&["true"]), "t", Map::new()) })
            .unwrap_err();
        assert!(err.to_string().contains("inside an async runtime"), "{err}");
    }
}
