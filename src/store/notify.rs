//! Chats announced across replicas: when one process sharing a PostgreSQL
//! store changes a chat's tool list (a load, a re-pin), it says so with
//! `NOTIFY` on [`CHANNEL`], and every other process `LISTEN`s there and
//! tells the listen streams it holds for that chat. It decides only the
//! channel, the payload (`<origin> <chat id>`, the origin marking the
//! process so none hears itself) and the listening connection's life: one
//! connection of its own per process, opened again after it breaks
//! ([`RETRY`]); what is announced while it is down is not heard (a client
//! lists again on its next request anyway).

use std::time::Duration;

use crate::error::Error;

/// The channel chats are announced on.
pub(super) const CHANNEL: &str = "muster_chats";
/// How long the listening connection waits before it connects again.
pub const RETRY: Duration = Duration::from_secs(1);

/// A mark for this process's announcements.
pub(super) fn origin() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:x}.{nanos:x}", std::process::id())
}

/// What is announced for chat `id`.
pub(super) fn payload(origin: &str, id: &str) -> String {
    format!("{origin} {id}")
}

/// The chat another process announced in `payload`; `None` for this
/// process's own and for what is not an announcement.
fn announced<'a>(origin: &str, payload: &'a str) -> Option<&'a str> {
    let (from, id) = payload.split_once(' ')?;
    (from != origin && crate::session::is_session_id(id)).then_some(id)
}

/// Starts the listening connection on a thread of its own: each chat
/// another process announces is given to `heard`.
///
/// # Errors
/// [`crate::ErrorKind::Store`] when the thread cannot start.
pub(super) fn listen(
    name: &str,
    url: &str,
    origin: String,
    heard: Box<dyn Fn(&str) + Send + Sync>,
) -> Result<(), Error> {
    let url = url.to_string();
    std::thread::Builder::new()
        .name("muster-listen".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                loop {
                    let _ = hear_until_broken(&url, &origin, &*heard).await;
                    tokio::time::sleep(RETRY).await;
                }
            });
        })
        .map(|_| ())
        .map_err(|err| super::failed(name, "cannot start its listening thread", &err))
}

/// One listening connection, until it breaks.
async fn hear_until_broken(
    url: &str,
    origin: &str,
    heard: &(dyn Fn(&str) + Send + Sync),
) -> Result<(), String> {
    let target = super::tls::Target::read(url)?;
    let (tx, mut messages) = tokio::sync::mpsc::unbounded_channel();
    let client = target.connect(Some(tx)).await?;
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(|e| super::tls::told(&e))?;
    while let Some(message) = messages.recv().await {
        if let tokio_postgres::AsyncMessage::Notification(n) = message
            && n.channel() == CHANNEL
            && let Some(id) = announced(origin, n.payload())
        {
            heard(id);
        }
    }
    Err("the listening connection closed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_hears_others_not_itself() {
        let me = origin();
        assert_eq!(announced(&me, &payload("other", "chat-1")), Some("chat-1"));
        assert_eq!(announced(&me, &payload(&me, "chat-1")), None);
        assert_eq!(announced(&me, "other bad id!"), None);
        assert_eq!(announced(&me, "nothing"), None);
    }
}
