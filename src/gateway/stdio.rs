//! `muster mcp`: the gateway over stdio, as an MCP client's configuration
//! starts it. One process is one chat. Messages are read one per line;
//! each request is answered as soon as it is done, so a slow tool does not
//! hold up a `ping` (at most [`MAX_IN_FLIGHT`] requests at once; reading
//! waits beyond that). A load that changed the chat's list is followed by
//! `notifications/tools/list_changed`, written before the load's answer:
//! unasked for a client that did the `initialize` handshake, and for a
//! 2026-07-28 client only on the `subscriptions/listen` requests it keeps
//! open, tagged with each one's id. A call's progress, when the client
//! asked for it, is written as it comes, before the call's answer.
//! stdout carries protocol messages only;
//! logs go to stderr.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::value::RawValue;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Semaphore};

use super::progress::BUFFERED;
use super::{Gateway, rpc};

/// Most requests answered at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// Most `subscriptions/listen` requests kept open at once; past it a new
/// one is answered `-32602`.
pub const MAX_SUBSCRIPTIONS: usize = 16;

/// Serves chat `chat` on `input` and `output` until `input` ends, then
/// waits for the answers in flight and stops the servers it started.
///
/// # Errors
/// Only when `output` cannot be written (the client went away).
pub async fn serve<R, W>(
    gateway: Arc<Gateway>,
    chat: String,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(Mutex::new(output));
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let chat: Arc<str> = chat.into();
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    let subscriptions = Arc::new(Subscriptions::default());
    let in_flight = Arc::new(InFlight::default());
    loop {
        line.clear();
        let read = (&mut reader)
            .take(rpc::MAX_MESSAGE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            break;
        }
        if line.len() > rpc::MAX_MESSAGE_BYTES && !line.ends_with(b"\n") {
            // Skip the rest of the oversized line, then answer it.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let n = (&mut reader)
                    .take(1 << 20)
                    .read_until(b'\n', &mut rest)
                    .await?;
                if n == 0 || rest.ends_with(b"\n") {
                    break;
                }
            }
            let failure = rpc::Failure::new(
                None,
                rpc::PARSE_ERROR,
                format!("the message is over {} bytes", rpc::MAX_MESSAGE_BYTES),
            );
            write_lines(&output, &[failure.to_json()]).await?;
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let message = std::mem::take(&mut line);
        let (gateway, chat, output) = (gateway.clone(), chat.clone(), output.clone());
        let subscriptions = subscriptions.clone();
        let call = rpc::call_id(&message);
        let own = call.clone();
        let calls = in_flight.clone();
        // Held while the task is spawned and kept, so the task's own
        // removal of its id comes after.
        let mut kept = in_flight.lock();
        let handle = tasks.spawn(async move {
            // The call's progress is written as it comes, before its answer.
            let (outbox, mut progress) = tokio::sync::mpsc::channel(BUFFERED);
            let work = gateway.handle_relayed(&chat, &message, None, outbox);
            tokio::pin!(work);
            let reply = loop {
                tokio::select! {
                    reply = &mut work => break reply,
                    Some(line) = progress.recv() => write_lines(&output, &[line]).await?,
                }
            };
            drop(permit);
            if let Some(cancelled) = &reply.cancelled
                && let Some(call) = calls.lock().remove(cancelled)
            {
                // The client gave the call up: it is answered nothing, and
                // dropping it tells its server (`notifications/cancelled`).
                call.abort();
            }
            let mut lines: Vec<String> = std::iter::from_fn(|| progress.try_recv().ok()).collect();
            if reply.modern {
                subscriptions.modern.store(true, Ordering::Release);
            }
            if let Some((id, tools)) = reply.listen {
                if subscriptions.lock().len() >= MAX_SUBSCRIPTIONS {
                    let message = format!(
                        "{MAX_SUBSCRIPTIONS} subscriptions are open on this connection; cancel one first"
                    );
                    let failure = rpc::Failure::new(Some(id), rpc::INVALID_PARAMS, message);
                    lines.push(failure.to_json());
                } else {
                    let asked = if tools {
                        r#"{"toolsListChanged":true}"#
                    } else {
                        "{}"
                    };
                    lines.push(rpc::tagged(
                        "notifications/subscriptions/acknowledged",
                        &id,
                        &format!(r#"{{"notifications":{asked}}}"#),
                    ));
                    subscriptions.open(id, tools);
                }
            }
            if let Some(cancelled) = &reply.cancelled {
                subscriptions.close(cancelled);
            }
            if reply.list_changed {
                lines.extend(subscriptions.list_changed());
            }
            lines.extend(reply.response);
            if let Some(id) = &own {
                calls.lock().remove(id);
            }
            write_lines(&output, &lines).await
        });
        if let Some(id) = call {
            kept.insert(id, handle);
        }
        drop(kept);
        while let Some(done) = tasks.try_join_next() {
            if let Ok(Err(e)) = done {
                return Err(e);
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        if let Ok(Err(e)) = done {
            return Err(e);
        }
    }
    // The subscriptions end with the input: each is answered, as a server
    // closing a subscription does (the client may be gone already).
    let ended: Vec<String> = subscriptions
        .drain()
        .iter()
        .map(|id| rpc::listen_ended(id))
        .collect();
    let _ = write_lines(&output, &ended).await;
    gateway.shutdown().await;
    Ok(())
}

/// The `tools/call` requests being answered, by id, so a client's
/// `notifications/cancelled` can stop one.
#[derive(Default)]
struct InFlight(std::sync::Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>);

impl InFlight {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, tokio::task::AbortHandle>>
    {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `subscriptions/listen` requests a 2026-07-28 client keeps open.
#[derive(Default)]
struct Subscriptions {
    /// Ids of the open ones, and whether each asked for tool list changes.
    open: std::sync::Mutex<Vec<(Box<RawValue>, bool)>>,
    /// The client names 2026-07-28 in its requests: nothing is sent to it
    /// that it did not subscribe to.
    modern: AtomicBool,
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Box<RawValue>, bool)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self, id: Box<RawValue>, tools: bool) {
        self.lock().push((id, tools));
    }

    /// Ends the subscription whose id is `id` (JSON text), when open.
    fn close(&self, id: &str) {
        self.lock().retain(|(open, _)| open.get() != id);
    }

    fn drain(&self) -> Vec<Box<RawValue>> {
        self.lock().drain(..).map(|(id, _)| id).collect()
    }

    /// The `notifications/tools/list_changed` lines to send: one per
    /// subscription that asked for them, or one unasked for a client of
    /// the handshake revisions.
    fn list_changed(&self) -> Vec<String> {
        const METHOD: &str = "notifications/tools/list_changed";
        let open = self.lock();
        if open.is_empty() && !self.modern.load(Ordering::Acquire) {
            return vec![rpc::notification(METHOD)];
        }
        open.iter()
            .filter(|(_, tools)| *tools)
            .map(|(id, _)| rpc::tagged(METHOD, id, "{}"))
            .collect()
    }
}

async fn write_lines<W: tokio::io::AsyncWrite + Unpin>(
    output: &Mutex<W>,
    lines: &[String],
) -> std::io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    // One write for them all: each write to tokio's stdout is a trip to
    // its blocking pool, and a call's answer waited for three.
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let mut out = output.lock().await;
    out.write_all(text.as_bytes()).await?;
    out.flush().await
}

/// The client's end of `muster mcp`: stdin and stdout. When they are pipes
/// (as an MCP client starts a server) they are read and written as the
/// runtime's other pipes are, woken by the kernel; otherwise (a terminal, a
/// file, a socket) through tokio's `stdin()`/`stdout()`, each of whose
/// reads and writes is a trip through the blocking thread pool, about
/// 0.1 ms a call (docs/gateway.md, "Speed"). stdout stays blocking when
/// stderr is the same pipe (`2>&1`), since the log writes there without
/// waiting. Must be called inside the runtime.
#[must_use]
pub fn standard_streams() -> (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
) {
    use std::os::fd::AsFd as _;
    use tokio::net::unix::pipe;
    let input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let stdout = std::io::stdout();
    let shared = same_file(stdout.as_fd(), std::io::stderr().as_fd());
    let output: Box<dyn tokio::io::AsyncWrite + Unpin + Send> =
        match stdout.as_fd().try_clone_to_owned().and_then(|fd| {
            if shared {
                Err(std::io::Error::other("stdout is stderr"))
            } else {
                pipe::Sender::from_owned_fd(fd)
            }
        }) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        };
    (input, output)
}

/// Whether two descriptors name the same file (device and inode).
fn same_file(a: std::os::fd::BorrowedFd<'_>, b: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd as _;
    let stat = |fd: std::os::fd::BorrowedFd<'_>| {
        // Safety: `stat` is a plain C struct for which all zeros is valid,
        // and fstat only writes it for an open descriptor.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // Safety: as above; `fd` is borrowed open for the call.
        (unsafe { libc::fstat(fd.as_raw_fd(), &raw mut stat) } == 0)
            .then_some((stat.st_dev, stat.st_ino))
    };
    match (stat(a), stat(b)) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}
