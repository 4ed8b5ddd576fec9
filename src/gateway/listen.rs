//! The `subscriptions/listen` streams 2026-07-28 clients keep open over
//! HTTP in this process: which chats have one, told when a load changes
//! their list; how many may be open (per chat and in all); and the stop
//! signal every stream selects on, so a stopping service ends them at once.
//!
//! It decides only whether a stream may open and when it must end; how a
//! stream is written (events, keep-alives) is the transport's. A stream's
//! place is held by its [`Stream`] and given back when that is dropped,
//! whoever drops it: the client going away, the stop, or the transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

/// Most listen streams open at once in one process; past it a new one is
/// refused (the open ones are kept).
pub const MAX_STREAMS: usize = 256;
/// Most listen streams open at once on one chat; past it a new one is
/// refused (the open ones are kept).
pub const MAX_STREAMS_PER_CHAT: usize = 8;
/// How often an open HTTP listen stream writes a keep-alive comment: a
/// client that went away fails the write, which ends its stream.
pub const KEEPALIVE: Duration = Duration::from_secs(2);

/// One chat's open streams.
#[derive(Debug)]
struct Chat {
    changes: broadcast::Sender<()>,
    open: usize,
}

#[derive(Debug, Default)]
struct Open {
    chats: HashMap<String, Chat>,
    total: usize,
}

/// The open listen streams of a gateway, by chat.
#[derive(Debug)]
pub struct Watchers {
    open: Mutex<Open>,
    stop: watch::Sender<bool>,
}

impl Default for Watchers {
    fn default() -> Self {
        Self {
            open: Mutex::default(),
            stop: watch::channel(false).0,
        }
    }
}

/// Why a new stream was refused: a bound was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// Which bound: `"chat"` ([`MAX_STREAMS_PER_CHAT`]) or `"process"`
    /// ([`MAX_STREAMS`]).
    pub scope: &'static str,
    /// The bound.
    pub limit: usize,
}

impl Full {
    /// The stable code of the refusal.
    pub const CODE: &'static str = "too-many-listen-streams";

    /// One sentence saying what to do.
    pub fn sentence(&self) -> String {
        match self.scope {
            "chat" => format!(
                "this chat has {} listen streams open, the most muster keeps per chat; close one (or send notifications/cancelled naming it) first",
                self.limit
            ),
            _ => format!(
                "muster has {} listen streams open, the most it keeps; try again later",
                self.limit
            ),
        }
    }
}

/// One open stream: told of each change of its chat's list, of the stop,
/// and when a keep-alive is due. Its place is given back when it is
/// dropped.
#[derive(Debug)]
pub struct Stream {
    changes: broadcast::Receiver<()>,
    stop: watch::Receiver<bool>,
    beat: Option<tokio::time::Interval>,
    place: Place,
}

/// What an open stream is to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A load changed the chat's list (or several did).
    Changed,
    /// [`KEEPALIVE`] passed: write a keep-alive.
    Beat,
    /// The gateway stops: answer the listen request and end.
    Stopped,
}

impl Stream {
    /// Waits for what comes first: the stop (it wins a tie), a change of
    /// the chat's list, or the next keep-alive.
    pub async fn next(&mut self) -> Next {
        let beat = self.beat.get_or_insert_with(|| {
            let first = tokio::time::Instant::now() + KEEPALIVE;
            tokio::time::interval_at(first, KEEPALIVE)
        });
        tokio::select! {
            biased;
            _ = self.stop.wait_for(|stopped| *stopped) => Next::Stopped,
            changed = self.changes.recv() => match changed {
                Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => Next::Changed,
                Err(broadcast::error::RecvError::Closed) => Next::Stopped,
            },
            _ = beat.tick() => Next::Beat,
        }
    }

    /// The chat the stream listens on.
    pub fn chat(&self) -> &str {
        &self.place.chat
    }
}

#[derive(Debug)]
struct Place {
    watchers: Arc<Watchers>,
    chat: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.watchers.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(chat) = open.chats.get_mut(&self.chat) {
            chat.open = chat.open.saturating_sub(1);
            if chat.open == 0 {
                open.chats.remove(&self.chat);
            }
        }
    }
}

impl Watchers {
    /// Opens a stream on chat `chat`.
    ///
    /// # Errors
    /// [`Full`] when the chat has [`MAX_STREAMS_PER_CHAT`] open, or the
    /// process [`MAX_STREAMS`]; nothing is opened then.
    pub fn open(self: &Arc<Self>, chat: &str) -> Result<Stream, Full> {
        let mut open = self.lock();
        if open.total >= MAX_STREAMS {
            return Err(Full {
                scope: "process",
                limit: MAX_STREAMS,
            });
        }
        let entry = open.chats.entry(chat.to_string()).or_insert_with(|| Chat {
            changes: broadcast::channel(16).0,
            open: 0,
        });
        if entry.open >= MAX_STREAMS_PER_CHAT {
            return Err(Full {
                scope: "chat",
                limit: MAX_STREAMS_PER_CHAT,
            });
        }
        entry.open += 1;
        let changes = entry.changes.subscribe();
        open.total += 1;
        Ok(Stream {
            changes,
            stop: self.stop.subscribe(),
            beat: None,
            place: Place {
                watchers: self.clone(),
                chat: chat.to_string(),
            },
        })
    }

    /// How many streams are open now.
    pub fn count(&self) -> usize {
        self.lock().total
    }

    /// Tells chat `chat`'s streams its list changed.
    pub fn announce(&self, chat: &str) {
        if let Some(chat) = self.lock().chats.get(chat) {
            let _ = chat.changes.send(());
        }
    }

    /// Ends every stream, now and from now on: each sees
    /// [`Stream::stopped`] resolve.
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_bounded_per_chat_and_give_their_place_back() {
        let watchers = Arc::new(Watchers::default());
        let kept: Vec<Stream> = (0..MAX_STREAMS_PER_CHAT)
            .map(|_| watchers.open("a").unwrap())
            .collect();
        assert_eq!(
            watchers.open("a").unwrap_err(),
            Full {
                scope: "chat",
                limit: MAX_STREAMS_PER_CHAT
            }
        );
        let other = watchers.open("b").unwrap();
        assert_eq!(watchers.count(), MAX_STREAMS_PER_CHAT + 1);
        drop(kept);
        drop(other);
        assert_eq!(watchers.count(), 0);
        assert!(watchers.lock().chats.is_empty());
    }

    #[test]
    fn streams_are_bounded_in_all() {
        let watchers = Arc::new(Watchers::default());
        let kept: Vec<Stream> = (0..MAX_STREAMS)
            .map(|n| watchers.open(&format!("c{n}")).unwrap())
            .collect();
        assert_eq!(watchers.open("new").unwrap_err().scope, "process");
        drop(kept);
        assert!(watchers.open("new").is_ok());
    }

    #[tokio::test]
    async fn a_stop_reaches_open_streams_and_later_ones() {
        let watchers = Arc::new(Watchers::default());
        let mut open = watchers.open("a").unwrap();
        watchers.announce("a");
        assert_eq!(open.next().await, Next::Changed);
        watchers.stop();
        assert_eq!(open.next().await, Next::Stopped);
        assert_eq!(watchers.open("a").unwrap().next().await, Next::Stopped);
    }
}
