//! One live session with a stdio MCP server: start it, initialize with
//! rmcp, list every tool page by page (or, for [`super::call`], call one
//! tool), close it.
//!
//! The child is spawned here rather than through rmcp's `TokioChildProcess`
//! so its stdout can pass through [`Tap`] on the way to rmcp's stdio
//! transport. The tap keeps each response exactly as the server sent it
//! (rmcp's typed `Tool` drops fields it does not model, and a non-object
//! `inputSchema` makes rmcp discard the whole page, losing which tool was
//! at fault) and notices lines that are not JSON, which rmcp skips
//! silently. rmcp still runs the protocol: handshake, ids, framing.

use std::collections::{BTreeSet, HashMap};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use super::{Event, ServerSpec};
use crate::contract::FailureReason;
use crate::snapshot::{ListedTool, check_tools};

/// A page count no honest server reaches; stops a server that hands out
/// cursors forever before the timeout does, with a clearer message.
const MAX_PAGES: usize = 10_000;
const STDERR_KEEP: usize = 2048;
/// The longest stdout line muster holds: a response larger than any input
/// muster reads is refused, not buffered until memory runs out.
const MAX_LINE_BYTES: usize = crate::input::MAX_INPUT_BYTES as usize;
/// How deep serde_json reads JSON before it refuses: its recursion limit.
const JSON_DEPTH_LIMIT: usize = 128;

/// A stdout line nested deeper than [`JSON_DEPTH_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct DeepLine {
    /// The tool whose object nests too deep, when the line was a
    /// tools/list page and the tool has a name.
    tool: Option<String>,
}

impl DeepLine {
    /// Finds the tool at fault: the page is read again with each tool kept
    /// as raw text (serde_json skips raw text without recursing), and the
    /// first tool that will not read as JSON is named.
    fn of(line: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            result: Option<Tools<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Tools<'a> {
            #[serde(borrow, default)]
            tools: Vec<&'a serde_json::value::RawValue>,
        }
        #[derive(serde::Deserialize)]
        struct Named {
            name: Option<String>,
        }
        let tool = serde_json::from_slice::<Page<'_>>(line)
            .ok()
            .and_then(|page| page.result)
            .and_then(|result| {
                result
                    .tools
                    .into_iter()
                    .find(|raw| serde_json::from_str::<Value>(raw.get()).is_err())
            })
            .and_then(|raw| serde_json::from_str::<Named>(raw.get()).ok()?.name);
        Self { tool }
    }
}

/// What the tap saw on the server's stdout.
#[derive(Default)]
struct Seen {
    partial: Vec<u8>,
    /// Responses by their JSON-encoded id.
    responses: HashMap<String, Value>,
    /// The first line that was not JSON, shortened.
    garbage: Option<String>,
    /// A line was JSON nested deeper than serde_json reads; reading stopped.
    too_deep: Option<DeepLine>,
    /// A line grew past [`MAX_LINE_BYTES`]; reading stopped.
    too_long: bool,
}

impl Seen {
    /// Adds bytes read from stdout and handles every line they complete.
    /// Only the new bytes are searched for a newline, so a long line read in
    /// many small pieces costs time linear in its length.
    fn take(&mut self, fresh: &[u8]) {
        let mut partial = std::mem::take(&mut self.partial);
        let mut start = 0;
        let mut from = partial.len();
        partial.extend_from_slice(fresh);
        while let Some(at) = partial[from..].iter().position(|&b| b == b'\n') {
            let nl = from + at;
            self.line(&partial[start..nl]);
            start = nl + 1;
            from = start;
        }
        partial.drain(..start);
        if partial.len() > MAX_LINE_BYTES {
            self.too_long = true;
            partial = Vec::new();
        }
        self.partial = partial;
    }

    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(msg)) => {
                if !msg.contains_key("method")
                    && let Some(id) = msg.get("id")
                {
                    self.responses.insert(id.to_string(), Value::Object(msg));
                }
            }
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                if self.too_deep.is_none() {
                    self.too_deep = Some(DeepLine::of(line));
                }
            }
            Ok(_) | Err(_) => {
                if self.garbage.is_none() {
                    let text = String::from_utf8_lossy(line);
                    self.garbage = Some(text.chars().take(120).collect());
                }
            }
        }
    }
}

/// Passes the server's stdout through unchanged, recording what it saw.
struct Tap<R> {
    inner: R,
    seen: Arc<Mutex<Seen>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = poll {
            let fresh = &buf.filled()[before..];
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.take(fresh);
            if seen.too_long {
                // rmcp buffers the line too: end the stream for both.
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a stdout line is longer than muster reads",
                )));
            }
            if seen.too_deep.is_some() {
                // rmcp cannot read the line either and would wait for a
                // response that never comes: end the stream, so the
                // failure is reported at once instead of at the timeout.
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a stdout line is nested deeper than muster reads",
                )));
            }
        }
        poll
    }
}

/// Why a session failed, in words that name what the server did.
pub(super) struct Failure {
    /// What kind of failure, for discovery's answer.
    pub reason: FailureReason,
    pub message: String,
    pub help: Option<String>,
    /// One entry per tool that breaks the listing rules, when that is the failure.
    pub tools: Vec<String>,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            reason: FailureReason::BadResponse,
            message: message.into(),
            help: None,
            tools: Vec::new(),
        }
    }
}

/// Shared with the caller so a timeout can say what the session was doing
/// and what the server printed.
#[derive(Default)]
pub(super) struct Progress {
    pub phase: &'static str,
    pub pages: usize,
}

pub(super) struct Listing {
    pub tools: Vec<ListedTool>,
    pub pages: usize,
    pub server_info: Option<Value>,
}

/// Handles the caller keeps so it can explain a failure after the session
/// future is dropped by a timeout.
#[derive(Clone, Default)]
pub(super) struct Watch {
    pub progress: Arc<Mutex<Progress>>,
    seen: Arc<Mutex<Seen>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Watch {
    /// Records what the session is doing, for a timeout to report.
    pub fn set_phase(&self, phase: &'static str) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .phase = phase;
    }

    /// The failure for a server that sent a line nested deeper than muster
    /// reads, naming the tool when one is at fault; `None` when it did not.
    pub fn too_deep(&self) -> Option<Failure> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let deep = seen.too_deep.as_ref()?;
        let help = Some(format!(
            "fix the server so no tool's definition nests more than {JSON_DEPTH_LIMIT} levels deep (flatten the schema or use $ref definitions)"
        ));
        Some(match &deep.tool {
            Some(tool) => Failure {
                reason: FailureReason::InvalidListing,
                help,
                tools: vec![format!(
                    "tool `{tool}` is nested more than {JSON_DEPTH_LIMIT} levels deep, deeper than muster reads JSON"
                )],
                ..Failure::new(format!("listed tool `{tool}` nested too deep"))
            },
            // The evidence says what was too deep.
            None => Failure {
                help,
                ..Failure::new("stopped being read")
            },
        })
    }

    /// Facts to append to a failure: non-JSON output and the tail of stderr.
    pub fn evidence(&self) -> String {
        let mut out = String::new();
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.too_long {
            out.push_str(&format!(
                "; it printed a line longer than {} MiB on stdout, more than muster reads",
                MAX_LINE_BYTES >> 20
            ));
        }
        if seen.too_deep.is_some() {
            out.push_str(&format!(
                "; it sent a JSON-RPC message nested more than {JSON_DEPTH_LIMIT} levels deep, which muster cannot read"
            ));
        }
        if let Some(g) = &seen.garbage {
            out.push_str(&format!(
                "; it printed a line that is not JSON-RPC on stdout: `{g}`"
            ));
        }
        drop(seen);
        let err = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let tail = String::from_utf8_lossy(&err);
        let tail = tail.trim();
        if !tail.is_empty() {
            let last: Vec<&str> = tail.lines().rev().take(3).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            out.push_str(&format!("; its stderr ends with: {}", last.join(" | ")));
        }
        out
    }
}

/// A started server that completed the MCP handshake. Discovery lists its
/// tools and [`super::call`] calls one; both end with [`Open::close`].
pub(super) struct Open {
    pub client: RunningService<RoleClient, ()>,
    child: tokio::process::Child,
    /// Kills the server's whole process group when the session ends.
    _group: ProcessGroup,
    /// `serverInfo` from the initialize result.
    pub server_info: Option<Value>,
}

impl Open {
    /// Stops the server: closing stdin is how a stdio server is told to
    /// stop; a kill (and kill_on_drop) is the backstop for one that ignores it.
    pub async fn close(mut self, watch: &Watch) {
        watch.set_phase("closing");
        let _ = self.client.cancel().await;
        if tokio::time::timeout(std::time::Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// Sends one request and returns the server's response exactly as it sent
/// it (`result` or `error` included), read from the tap. `what` names the
/// request in failures (`tools/list page 2`).
///
/// rmcp may fail to type a response muster can still read, so only a
/// transport or protocol error, or a JSON-RPC error response, ends here.
pub(super) async fn request_raw(
    client: &RunningService<RoleClient, ()>,
    watch: &Watch,
    request: ClientRequest,
    what: &str,
) -> Result<Value, Failure> {
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| Failure::new(format!("cannot send {what}: {e}")))?;
    let id = serde_json::to_value(&handle.id)
        .map(|v| v.to_string())
        .unwrap_or_default();
    if let Err(e) = handle.await_response().await {
        use rmcp::service::ServiceError;
        if !matches!(e, ServiceError::UnexpectedResponse) {
            return Err(Failure::new(format!("{what} failed: {e}")));
        }
    }
    let response = watch
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .responses
        .remove(&id);
    response.ok_or_else(|| Failure::new(format!("gave no readable response to {what}")))
}

/// Starts the server in `spec` and completes the MCP handshake.
pub(super) async fn open(spec: &ServerSpec, watch: &Watch) -> Result<Open, Failure> {
    watch.set_phase("starting");
    let Some((program, args)) = spec.command.split_first() else {
        return Err(Failure {
            reason: FailureReason::CannotStart,
            help: Some("give `command = [\"program\", \"arg\", ...]`".into()),
            ..Failure::new("has an empty command")
        });
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so whatever the server starts (a wrapper such
    // as `sh -c` or `npx` runs the real server as a child) ends with it.
    #[cfg(unix)]
    cmd.process_group(0);
    // A mark every process the server starts inherits, so one that leaves
    // the group (`setsid`, a daemon's double fork) is still found.
    let mark = ProcessGroup::new_mark();
    cmd.env(MARK_VAR, &mark);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| Failure {
        reason: FailureReason::CannotStart,
        help: Some("check the block's `command`".into()),
        ..Failure::new(format!("cannot start `{program}`: {e}"))
    })?;
    let group = ProcessGroup {
        leader: child.id(),
        mark,
    };
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Failure {
            reason: FailureReason::CannotStart,
            ..Failure::new("started without piped stdio")
        });
    };
    let stderr_buf = watch.stderr.clone();
    let stderr_reader = tokio::spawn(async move {
        let mut chunk = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let mut buf = stderr_buf.lock().unwrap_or_else(|e| e.into_inner());
            buf.extend_from_slice(&chunk[..n]);
            let excess = buf.len().saturating_sub(STDERR_KEEP);
            buf.drain(..excess);
        }
    });

    let tap = Tap {
        inner: stdout,
        seen: watch.seen.clone(),
    };
    watch.set_phase("initializing");
    let client = match ().serve((tap, stdin)).await {
        Ok(c) => c,
        Err(e) => {
            // Give an exiting child a moment to be reaped so the status is known.
            let status = tokio::time::timeout(std::time::Duration::from_millis(500), child.wait())
                .await
                .ok()
                .and_then(Result::ok);
            // And its stderr a moment to drain, so the failure can quote it.
            let _ =
                tokio::time::timeout(std::time::Duration::from_millis(500), stderr_reader).await;
            let message = match status {
                Some(s) => format!("exited during initialize ({s})"),
                None => format!("failed to initialize: {e}"),
            };
            return Err(Failure {
                reason: FailureReason::HandshakeFailed,
                ..Failure::new(message)
            });
        }
    };
    let server_info = client
        .peer_info()
        .and_then(|info| serde_json::to_value(&info.server_info).ok());
    Ok(Open {
        client,
        child,
        _group: group,
        server_info,
    })
}

pub(super) async fn run(
    spec: &ServerSpec,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<Listing, Failure> {
    let open = open(spec, watch).await?;
    let _ = events.send(Event::Initialized {
        server: spec.name.clone(),
        server_info: open.server_info.clone(),
    });
    watch.set_phase("listing tools");
    let result = list_all(spec, &open.client, watch, events).await;
    let server_info = open.server_info.clone();
    open.close(watch).await;
    let (tools, pages) = result?;
    Ok(Listing {
        tools,
        pages,
        server_info,
    })
}

async fn list_all(
    spec: &ServerSpec,
    client: &RunningService<RoleClient, ()>,
    watch: &Watch,
    events: &UnboundedSender<Event>,
) -> Result<(Vec<ListedTool>, usize), Failure> {
    let mut raw_tools: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut cursors = BTreeSet::new();
    let mut pages = 0;
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let response = request_raw(
            client,
            watch,
            request,
            &format!("tools/list page {}", pages + 1),
        )
        .await?;
        let Some(result) = response.get("result").and_then(Value::as_object) else {
            return Err(Failure::new(format!(
                "answered tools/list page {} without a result object: {}",
                pages + 1,
                response.get("error").unwrap_or(&response)
            )));
        };
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return Err(Failure::new(format!(
                "answered tools/list page {} without a `tools` array",
                pages + 1
            )));
        };
        raw_tools.extend(tools.iter().cloned());
        pages += 1;
        watch
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pages = pages;
        let _ = events.send(Event::Page {
            server: spec.name.clone(),
            page: pages,
            tools_so_far: raw_tools.len(),
        });
        cursor = match result.get("nextCursor") {
            None | Some(Value::Null) => break,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                return Err(Failure::new(format!(
                    "gave a nextCursor that is not a string: {other}"
                )));
            }
        };
        let c = cursor.clone().unwrap_or_default();
        if !cursors.insert(c.clone()) || pages >= MAX_PAGES {
            return Err(Failure::new(format!(
                "keeps paginating (cursor `{c}` after {pages} pages)"
            )));
        }
    }
    let tools = check_tools(raw_tools).map_err(|problems| Failure {
        reason: FailureReason::InvalidListing,
        message: problems.join("; "),
        help: Some("fix the server, or pin a version that lists valid tools".into()),
        tools: problems,
    })?;
    Ok((tools, pages))
}

/// The environment variable that marks every process a server starts.
pub(super) const MARK_VAR: &str = "MUSTER_DISCOVER_MARK";

/// The process group of a started server (its leader's pid), and the mark
/// in its environment. Dropping it kills the whole group and then every
/// process still carrying the mark: a timed-out, failed, closed or
/// interrupted server leaves nothing running, grandchildren that called
/// `setsid` included. Only a process that clears its own environment
/// escapes.
pub(super) struct ProcessGroup {
    leader: Option<u32>,
    mark: String,
}

impl ProcessGroup {
    /// A mark no other server of any muster process has.
    fn new_mark() -> String {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-{n}-{nanos}", std::process::id())
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.leader.and_then(|p| i32::try_from(p).ok())
            && pid > 0
        {
            // SAFETY: kill(2) with a negative pid signals the group the
            // server was started in (process_group(0) made it the leader);
            // it touches no memory of ours.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        #[cfg(target_os = "linux")]
        kill_marked(&format!("{MARK_VAR}={}", self.mark));
    }
}

/// Kills every process whose environment holds `entry` (`NAME=value`),
/// looking again while the last look found one: a process may fork while
/// it is being killed.
#[cfg(target_os = "linux")]
fn kill_marked(entry: &str) {
    let me = std::process::id();
    for _ in 0..5 {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for pid in dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
        {
            // A zombie's environment reads empty; one that is not ours
            // cannot be read at all.
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|e| e == entry.as_bytes())
                && let Ok(pid) = i32::try_from(pid)
            {
                found = true;
                // SAFETY: kill(2) on a pid we just found; touches no memory.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if !found {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_reads_are_each_seen_once() {
        let long = "d".repeat(2 << 20);
        let text = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"d\":\"{long}\"}}}}\r\n\n  \nnot json\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}}}\n{{\"id\":3"
        );
        let mut seen = Seen::default();
        for chunk in text.as_bytes().chunks(8192) {
            seen.take(chunk);
        }
        assert_eq!(seen.responses.len(), 2);
        assert_eq!(
            seen.responses["1"]["result"]["d"].as_str().unwrap().len(),
            long.len()
        );
        assert!(seen.responses.contains_key("2"));
        assert_eq!(seen.garbage.as_deref(), Some("not json"));
        assert_eq!(seen.partial, b"{\"id\":3");
        seen.take(b"}\n");
        assert!(seen.responses.contains_key("3") && seen.partial.is_empty());
    }

    #[test]
    fn a_deep_line_is_told_apart_from_one_that_is_not_json() {
        let mut seen = Seen::default();
        let deep = format!("{}{}\n", "[".repeat(200), "]".repeat(200));
        seen.take(deep.as_bytes());
        assert_eq!(seen.too_deep, Some(DeepLine { tool: None }));
        assert!(seen.garbage.is_none());
    }

    #[test]
    fn a_deep_tools_list_page_names_the_tool_at_fault() {
        let deep = format!("{}\"x\"{}", "[".repeat(200), "]".repeat(200));
        let page = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[{{\"name\":\"fine\",\"inputSchema\":{{}}}},{{\"inputSchema\":{{\"default\":{deep}}},\"name\":\"sunk\"}}]}}}}\n"
        );
        let mut seen = Seen::default();
        seen.take(page.as_bytes());
        assert_eq!(
            seen.too_deep,
            Some(DeepLine {
                tool: Some("sunk".into())
            })
        );
        assert!(seen.responses.is_empty() && seen.garbage.is_none());
    }

    #[test]
    fn a_line_past_the_cap_is_dropped_and_marked() {
        let mut seen = Seen::default();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(MAX_LINE_BYTES >> 20) {
            seen.take(&chunk);
        }
        assert!(seen.too_long);
        assert!(seen.partial.len() <= MAX_LINE_BYTES);
    }
}
