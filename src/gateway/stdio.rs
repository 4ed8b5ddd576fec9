//! `muster mcp`: the gateway over stdio, as an MCP client's configuration
//! starts it. One process is one chat. Messages are read one per line;
//! each request is answered as soon as it is done, so a slow tool does not
//! hold up a `ping` (at most [`MAX_IN_FLIGHT`] requests at once; reading
//! waits beyond that). A load that changed the chat's list is followed by
//! `notifications/tools/list_changed`, written before the load's answer.
//! stdout carries protocol messages only; logs go to stderr.

use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Semaphore};

use super::{Gateway, rpc};

/// Most requests answered at once.
pub const MAX_IN_FLIGHT: usize = 64;

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
        tasks.spawn(async move {
            let reply = gateway.handle(&chat, &message).await;
            drop(permit);
            let mut lines = Vec::new();
            if reply.list_changed {
                lines.push(rpc::notification("notifications/tools/list_changed"));
            }
            lines.extend(reply.response);
            write_lines(&output, &lines).await
        });
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
    gateway.shutdown().await;
    Ok(())
}

async fn write_lines<W: tokio::io::AsyncWrite + Unpin>(
    output: &Mutex<W>,
    lines: &[String],
) -> std::io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut out = output.lock().await;
    for line in lines {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
    }
    out.flush().await
}
