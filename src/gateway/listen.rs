//! The `subscriptions/listen` streams 2026-07-28 clients keep open in this
//! process: which chats have one, told when a load changes their list.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::broadcast;

/// Chats with a 2026-07-28 `subscriptions/listen` stream open in this
/// process, told when a load changes their list.
#[derive(Debug, Default)]
pub struct Watchers {
    chats: Mutex<HashMap<String, broadcast::Sender<()>>>,
}

impl Watchers {
    /// Told (one `()` per change) each time a load changes chat `chat`'s
    /// list in this process; ends when the gateway shuts down.
    pub fn watch(&self, chat: &str) -> broadcast::Receiver<()> {
        let mut watchers = self.lock();
        watchers.retain(|_, tx| tx.receiver_count() > 0);
        watchers
            .entry(chat.to_string())
            .or_insert_with(|| broadcast::channel(16).0)
            .subscribe()
    }

    /// Tells chat `chat`'s streams its list changed.
    pub fn announce(&self, chat: &str) {
        if let Some(tx) = self.lock().get(chat) {
            let _ = tx.send(());
        }
    }

    /// Ends every stream.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, broadcast::Sender<()>>> {
        self.chats.lock().unwrap_or_else(|e| e.into_inner())
    }
}
