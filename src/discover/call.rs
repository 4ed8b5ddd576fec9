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
//! The server is started as discovery starts it (its own process group, tied to muster), but
//! the exchange is muster's own JSON-RPC over the server's stdio, not rmcp's: rmcp's request
//! carries the arguments as a `serde_json` map, in which an integer past `u64`
//! (`18446744073709551616`) becomes a double (`1.8446744073709552e19`) and `-0` becomes
//! `-0.0`. Here the arguments are text, sent byte for byte as the check wrote them
//! ([`crate::check::CallReport::arguments_text`]), as the gateway's upstream client sends
//! them. One call starts and stops the server: this is a forwarder for checked calls and a
//! proof, not a pool.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{MAX_MESSAGE_BYTES, ServerSpec, mcp_error};
use crate::error::Error;
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::mcp_client::{self as session, Failure};

/// The protocol revision asked for in `initialize`; a server answering another it supports
/// is taken at its word (a `tools/call` reads the same in each).
const PROTOCOL_VERSION: &str = "2025-06-18";
/// How much of the server's stderr is kept to quote when it fails.
const STDERR_KEEP: usize = 4096;

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
/// sends a line over [`MAX_MESSAGE_BYTES`], stops, or runs past the
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
        let phase = Arc::new(Mutex::new("starting"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let evidence = |stderr: &Mutex<Vec<u8>>| {
            let err = stderr.lock().unwrap_or_else(|e| e.into_inner());
            let tail = String::from_utf8_lossy(&err);
            let last: Vec<&str> = tail.trim().lines().rev().take(3).collect();
            if last.is_empty() {
                String::new()
            } else {
                let last: Vec<&str> = last.into_iter().rev().collect();
                format!(
                    "; its stderr ends with: {}",
                    crate::names::escape(&last.join(" | "))
                )
            }
        };
        let once = call_once(spec, tool, arguments, &phase, &stderr);
        match tokio::time::timeout(spec.timeout, once).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(f)) => Err(mcp_error(
                &spec.name,
                format!("tool `{tool}`: {}{}", f.message, evidence(&stderr)),
                f.help,
            )),
            Err(_) => {
                let doing = *phase.lock().unwrap_or_else(|e| e.into_inner());
                Err(mcp_error(
                    &spec.name,
                    format!(
                        "tool `{tool}`: timed out after {:?} while {doing}{}",
                        spec.timeout,
                        evidence(&stderr)
                    ),
                    Some(
                        "check that `command` starts an MCP server on stdio, or raise its timeout"
                            .into(),
                    ),
                ))
            }
        }
    })
}

async fn call_once(
    spec: &ServerSpec,
    tool: &str,
    arguments: &str,
    phase: &Mutex<&'static str>,
    stderr_buf: &Arc<Mutex<Vec<u8>>>,
) -> Result<Value, Failure> {
    let set = |now: &'static str| *phase.lock().unwrap_or_else(|e| e.into_inner()) = now;
    let session::Spawned {
        mut child,
        mut stdin,
        stdout,
        stderr,
        group: _group,
    } = session::spawn(spec)?;
    let stderr_reader = session::keep_stderr(stderr, stderr_buf.clone(), STDERR_KEEP, |_| {});
    let mut stdout = BufReader::new(stdout);
    set("initializing");
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"muster","version":"{}"}}}}}}"#,
        env!("CARGO_PKG_VERSION")
    );
    let outcome = async {
        send(&mut stdin, &initialize).await?;
        let init = answer(&mut stdout, &mut stdin, 1, "initialize").await?;
        if init.get("result").is_none_or(|r| !r.is_object()) {
            return Err(Failure::new(format!(
                "answered initialize without a result object: {}",
                crate::names::escape(&init.get("error").unwrap_or(&init).to_string())
            )));
        }
        send(
            &mut stdin,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await?;
        set("calling the tool");
        let name = serde_json::to_string(tool).unwrap_or_default();
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":{name},"arguments":{arguments}}}}}"#
        );
        send(&mut stdin, &call).await?;
        answer(&mut stdout, &mut stdin, 2, "tools/call").await
    }
    .await;
    set("closing");
    // Closing stdin is how a stdio server is told to stop; the process
    // group's kill is the backstop for one that ignores it.
    drop(stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await;
    if status.is_err() {
        let _ = child.kill().await;
    }
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), stderr_reader).await;
    match outcome {
        Ok(response) => result_of(response),
        Err(mut f) => {
            // A server that closed its pipes and exited is told as what it did.
            if let Ok(Ok(status)) = status
                && (f.message.starts_with("closed its stdout")
                    || f.message.starts_with("closed its stdin"))
            {
                f.message = format!("exited ({status}): {}", f.message);
            }
            Err(f)
        }
    }
}

/// Writes one JSON-RPC message, a line.
async fn send(stdin: &mut tokio::process::ChildStdin, line: &str) -> Result<(), Failure> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    stdin
        .write_all(&bytes)
        .await
        .and(stdin.flush().await)
        .map_err(|e| Failure::new(format!("closed its stdin ({e})")))
}

/// Reads lines until the response to request `id`, answering a `ping` the
/// server sends meanwhile and refusing any other request of its own;
/// notifications are skipped. A line over [`MAX_MESSAGE_BYTES`] or that is
/// not JSON ends the session.
async fn answer(
    stdout: &mut BufReader<tokio::process::ChildStdout>,
    stdin: &mut tokio::process::ChildStdin,
    id: u64,
    what: &str,
) -> Result<Value, Failure> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(MAX_MESSAGE_BYTES).unwrap_or(u64::MAX) + 1;
        let read = (&mut *stdout)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| {
                Failure::new(format!("could not be read while waiting for {what}: {e}"))
            })?;
        if read == 0 {
            return Err(Failure::new(format!(
                "closed its stdout before answering {what}"
            )));
        }
        if line.len() > MAX_MESSAGE_BYTES {
            return Err(Failure::new(format!(
                "sent a line over {MAX_MESSAGE_BYTES} bytes while muster waited for {what}"
            )));
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let message: Value = serde_json::from_str(text.trim()).map_err(|_| {
            Failure::new(format!(
                "printed a line that is not JSON-RPC on stdout: `{}`",
                crate::names::escape(&text.chars().take(200).collect::<String>())
            ))
        })?;
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            // A request of the server's own: a ping is answered, others refused.
            (Some(method), Some(theirs)) => {
                let reply = if method == "ping" {
                    serde_json::json!({"jsonrpc": "2.0", "id": theirs, "result": {}})
                } else {
                    serde_json::json!({"jsonrpc": "2.0", "id": theirs,
                        "error": {"code": -32601, "message": "muster does not serve this method"}})
                };
                send(stdin, &reply.to_string()).await?;
            }
            (Some(_), None) => {}
            (None, Some(theirs)) if theirs.as_u64() == Some(id) => return Ok(message),
            (None, Some(theirs)) => {
                return Err(Failure::new(format!(
                    "answered {what} under id {}, not the request's id {id}",
                    crate::names::escape(&theirs.to_string())
                )));
            }
            (None, None) => {
                return Err(Failure::new(format!(
                    "sent a message that is neither a request nor a response while muster waited for {what}"
                )));
            }
        }
    }
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
