//! What discovery sees on a stdio server's stdout on its way to the
//! client: how many responses came, the first line
//! that is not JSON, a line nested deeper than muster reads (naming the
//! tool at fault), a line past one message's bytes and a listing past its
//! bytes; and on its stderr, the lines that name an error. It decides what
//! counts as each; it never answers or fails a request itself.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use super::super::{MAX_LISTING_BYTES, MAX_MESSAGE_BYTES};

pub(super) const STDERR_KEEP: usize = 2048;
/// The most stderr lines that hold an error a failure quotes (besides the
/// last 3 lines), each cut to [`STDERR_LINE_CHARS`].
pub const STDERR_ERROR_LINES: usize = 8;
/// The longest stderr line a failure quotes, in characters.
pub const STDERR_LINE_CHARS: usize = 300;
/// The longest stdout line muster holds: a response larger than this is
/// refused, not buffered until memory runs out.
pub(super) const MAX_LINE_BYTES: usize = MAX_MESSAGE_BYTES;
pub(super) use crate::input::JSON_DEPTH_LIMIT;

/// A stdout line nested deeper than [`JSON_DEPTH_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DeepLine {
    /// The tool whose object nests too deep, when the line was a
    /// tools/list page and the tool has a name.
    pub(super) tool: Option<String>,
}

impl DeepLine {
    /// Finds the tool at fault: the page is read again with each tool kept
    /// as raw text (serde_json skips raw text without recursing), and the
    /// first tool that will not read as JSON is named.
    pub(super) fn of(line: &[u8]) -> Self {
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
pub(super) struct Seen {
    pub(super) partial: Vec<u8>,
    /// Responses read (messages with an id and no method); the client
    /// routes them.
    pub(super) responses: usize,
    /// The first line that was not JSON, shortened.
    pub(super) garbage: Option<String>,
    /// A line was JSON nested deeper than serde_json reads; reading stopped.
    pub(super) too_deep: Option<DeepLine>,
    /// A line grew past [`MAX_LINE_BYTES`]; reading stopped.
    pub(super) too_long: bool,
    /// Bytes read from stdout so far.
    pub(super) total: usize,
    /// More than [`MAX_LISTING_BYTES`] came on stdout; reading stopped.
    pub(super) too_much: bool,
}

impl Seen {
    /// Adds bytes read from stdout and handles every line they complete.
    /// Only the new bytes are searched for a newline, so a long line read in
    /// many small pieces costs time linear in its length.
    pub(super) fn take(&mut self, fresh: &[u8]) {
        self.total = self.total.saturating_add(fresh.len());
        if self.total > MAX_LISTING_BYTES {
            self.too_much = true;
            self.partial = Vec::new();
            return;
        }
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
                if !msg.contains_key("method") && msg.contains_key("id") {
                    self.responses = self.responses.saturating_add(1);
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

/// The stderr lines that say what went wrong: the first
/// [`STDERR_ERROR_LINES`] that name an error, an exception, a traceback, a
/// fatal condition or a panic (a stack trace's `at ...` lines after one
/// would push it out of the last 3).
#[derive(Default)]
pub(super) struct ErrorLines {
    pub(super) partial: Vec<u8>,
    pub(super) lines: Vec<String>,
}

impl ErrorLines {
    pub(super) fn take(&mut self, fresh: &[u8]) {
        for &b in fresh {
            if b == b'\n' {
                let line = std::mem::take(&mut self.partial);
                self.line(&String::from_utf8_lossy(&line));
            } else if self.partial.len() < 4 * STDERR_LINE_CHARS {
                self.partial.push(b);
            }
        }
    }

    fn line(&mut self, line: &str) {
        let line = line.trim();
        if self.lines.len() >= STDERR_ERROR_LINES || !names_an_error(line) {
            return;
        }
        self.lines
            .push(line.chars().take(STDERR_LINE_CHARS).collect());
    }
}

/// Whether a stderr line reports an error.
pub(super) fn names_an_error(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["error", "exception", "traceback", "fatal", "panic"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Passes the server's stdout through unchanged, recording what it saw.
pub(super) struct Tap<R> {
    pub(super) inner: R,
    pub(super) seen: Arc<Mutex<Seen>>,
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
            if seen.too_long || seen.too_much {
                // The client buffers the line too: end the stream for
                // both, so the failure is reported at once.
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the server sent more than muster reads",
                )));
            }
            if seen.too_deep.is_some() {
                // The client cannot read the line either and would wait
                // for a response that never comes: end the stream, so the
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
        // The long line, read in 256 pieces, is one response, not garbage.
        assert_eq!(seen.responses, 2);
        assert_eq!(seen.garbage.as_deref(), Some("not json"));
        assert_eq!(seen.partial, b"{\"id\":3");
        seen.take(b"}\n");
        assert!(seen.responses == 3 && seen.partial.is_empty());
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
        assert!(seen.responses == 0 && seen.garbage.is_none());
    }

    #[test]
    fn reading_stops_past_the_listing_bytes() {
        let mut seen = Seen {
            total: MAX_LISTING_BYTES - 3,
            ..Seen::default()
        };
        seen.take(b"{}\n");
        assert!(!seen.too_much);
        seen.take(b"{\"id\":1,\"result\":{}}\n");
        assert!(seen.too_much && seen.responses == 0);
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
