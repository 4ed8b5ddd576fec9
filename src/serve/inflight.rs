//! The `tools/call` requests `/mcp` is answering, by chat and request id, so
//! a client's `notifications/cancelled` (a POST of its own) stops one, as
//! it does over stdio: the call's work is dropped, which tells its server
//! (`notifications/cancelled` upstream), and the POST still waiting for it
//! is answered `-32800` with nothing of a result. A POST whose client went
//! away drops its call the same way. It decides nothing about what a call
//! does; it only keeps the handles to stop one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use tokio::task::AbortHandle;

/// Calls kept cancellable at once; past it a call runs all the same, only
/// not by a cancellation's id (its POST going away still stops it).
pub const MAX_CANCELLABLE: usize = 4096;

/// The calls being answered, by (chat, request id as JSON text).
#[derive(Default)]
pub struct InFlight(Mutex<HashMap<(String, String), AbortHandle>>);

/// Aborts the call's task when the POST's handler is dropped (its client
/// went away) before the call ended.
struct StopOnDrop(AbortHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), AbortHandle>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work`, call `id` of `chat`, until it ends (`Some` of its
    /// output) or the client cancels it (`None`).
    pub async fn run<F>(&self, chat: &str, id: String, work: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = tokio::spawn(work);
        let stop = StopOnDrop(task.abort_handle());
        let key = (chat.to_string(), id);
        {
            let mut calls = self.lock();
            if calls.len() < MAX_CANCELLABLE {
                calls.insert(key.clone(), task.abort_handle());
            }
        }
        let ended = task.await;
        self.lock().remove(&key);
        drop(stop);
        match ended {
            Ok(output) => Some(output),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => None,
        }
    }

    /// Cancels call `id` of `chat`; whether one was running.
    pub fn cancel(&self, chat: &str, id: &str) -> bool {
        match self.lock().remove(&(chat.to_string(), id.to_string())) {
            Some(task) => {
                task.abort();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_call_ends_without_output_and_others_are_untouched() {
        let calls = std::sync::Arc::new(InFlight::default());
        let hung = {
            let calls = calls.clone();
            tokio::spawn(async move {
                calls
                    .run("chat", "7".into(), std::future::pending::<u8>())
                    .await
            })
        };
        while calls.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(!calls.cancel("other-chat", "7"), "keyed by chat too");
        assert!(calls.cancel("chat", "7"));
        assert_eq!(hung.await.unwrap(), None);
        assert_eq!(calls.run("chat", "8".into(), async { 3 }).await, Some(3));
        assert!(calls.lock().is_empty(), "nothing is kept after a call");
    }
}
