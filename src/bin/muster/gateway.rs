//! `muster mcp`: the gateway over stdio (docs/gateway.md).

use crate::args::McpGateway;
use muster::catalog::Selection;
use muster::check::CheckOptions;
use muster::gateway::{CallRecord, Gateway, Options, stdio};
use muster::policy::Inputs;
use muster::store::{MemoryStore, SessionStore, StoreUrl};
use muster::{Error, ErrorKind, Problem};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// How long a chat kept in a store lives after its last change: a week.
const CHAT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Serves one chat on stdin/stdout until stdin ends; exit 0.
pub(crate) fn run(args: McpGateway) -> Result<u8, Error> {
    let inputs = Inputs::load(&args.policies)?;
    let store: Box<dyn SessionStore> = match &args.sessions {
        Some(url) => StoreUrl::parse(url)?.open()?,
        None => Box::new(MemoryStore::default()),
    };
    let options = Options {
        selection: Selection {
            agent: args.agent.clone(),
            profile: args.profile.clone(),
            flags: args.flag.clone(),
            version: args.agent_version,
            provider: None,
            mcp_only: true,
        },
        keys: crate::session::keys(args.session_key_file.as_deref())?,
        ttl: CHAT_TTL,
        check: CheckOptions::default(),
        log_arguments: args.log_arguments,
    };
    let observer = Box::new(|record: &CallRecord| {
        if let Ok(line) = serde_json::to_string(record) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        }
    });
    let gateway = Gateway::new(inputs, options, store, observer)?;
    let chat = match args.chat {
        Some(id) if gateway.has_chat(&id)? => id,
        id => gateway.open_chat(id, None)?,
    };
    let left = gateway.left_to_host()?;
    let notice = serde_json::json!({
        "event": "gateway-started",
        "chat": chat,
        "left_to_host": left,
    });
    eprintln!("{notice}");
    let runtime = runtime()?;
    let gateway = Arc::new(gateway);
    runtime
        .block_on(async {
            let (input, output) = stdio::standard_streams();
            stdio::serve(gateway, chat, input, output).await
        })
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                Problem::new(format!("the MCP client's connection failed: {e}")),
            )
        })?;
    muster::trace::flush(std::time::Duration::from_secs(2));
    Ok(0)
}

/// The runtime `muster mcp` and `muster call` run the gateway on: two
/// workers, timers and I/O.
///
/// # Errors
/// [`ErrorKind::Io`] when the runtime cannot start.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                Problem::new(format!("cannot start the async runtime: {e}")),
            )
        })
}
