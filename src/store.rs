//! Where sessions live when muster keeps them: one trait, an embedded
//! default (SQLite in a file, write-ahead log) and PostgreSQL for several
//! replicas sharing one database. A host then passes a session id instead
//! of carrying the document.
//!
//! A store keeps the document text muster wrote, its revision and when it
//! expires; it never reads or judges a document (the session module does)
//! and never reads the clock: `now` and expiry times are seconds since the
//! Unix epoch that the caller passes. Every change is a compare-and-swap on
//! the revision, so two writers that read the same revision cannot both
//! land: the second is told the current revision and changes nothing.
//!
//! A store's address may hold a password (`postgres://user:secret@host/db`);
//! it is never written to a message: [`StoreUrl::redacted`] is what errors
//! and logs show.

use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};
use std::fmt;
use std::path::PathBuf;

mod notify;
mod postgres;
mod sqlite;
mod tls;

/// A stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The document as muster wrote it.
    pub document: String,
    /// Its revision.
    pub revision: u64,
}

/// What a compare-and-swap did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swapped {
    /// The new document is stored.
    Done,
    /// The stored revision is not the one expected: nothing changed.
    Stale {
        /// The revision stored now.
        current: u64,
    },
    /// No live session has the id (never created, deleted or expired).
    Missing,
}

/// Sessions kept by id.
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// Stores a new session.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached or the id is
    /// taken.
    fn insert(&self, id: &str, stored: &Stored, expires_at: u64) -> Result<(), Error>;

    /// Stores a new session under `id` unless a live one (not expired at
    /// `now`) has it already: then that one is kept as it is. Whether this
    /// call stored it. Idempotent under races: several processes creating
    /// one id at once all succeed and all see the one session.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached.
    fn create(&self, id: &str, stored: &Stored, now: u64, expires_at: u64) -> Result<bool, Error>;

    /// The session `id`, unless it is missing or expired at `now`.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached.
    fn get(&self, id: &str, now: u64) -> Result<Option<Stored>, Error>;

    /// Replaces session `id` with `stored` if its revision is `expected`
    /// and it has not expired at `now`.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached.
    fn swap(
        &self,
        id: &str,
        expected: u64,
        stored: &Stored,
        now: u64,
        expires_at: u64,
    ) -> Result<Swapped, Error>;

    /// Deletes session `id`; whether there was one.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached.
    fn delete(&self, id: &str) -> Result<bool, Error>;

    /// Deletes every session expired at `now`; how many.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when the store cannot be reached.
    fn purge(&self, now: u64) -> Result<u64, Error>;

    /// Tells every other process sharing this store that chat `id`'s tool
    /// list changed. A store no other process reads has no one to tell.
    fn announce(&self, _id: &str) {}

    /// From now on, calls `heard` with each chat id another process sharing
    /// this store announced. A store no other process reads hears nothing.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when listening cannot start.
    fn hear(&self, _heard: Box<dyn Fn(&str) + Send + Sync>) -> Result<(), Error> {
        Ok(())
    }
}

/// Where sessions are kept: `sqlite:PATH` or `postgres://…`
/// (`postgresql://` too).
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl StoreUrl {
    /// Reads `--sessions`.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`] for anything but `sqlite:PATH` and
    /// `postgres://…`; the message never quotes the text after a scheme it
    /// does not know, which may hold a password.
    pub fn parse(text: &str) -> Result<Self, Error> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(usage("sqlite: names no file"));
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Self::Postgres(text.to_string()));
        }
        Err(usage(
            "the session store is neither sqlite:PATH nor postgres://…",
        ))
    }

    /// The address without a password: what messages and logs show.
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
                let rest = rest.split(['?', '#']).next().unwrap_or(rest);
                match rest.rsplit_once('@') {
                    Some((user, host)) => {
                        let user = user.split(':').next().unwrap_or(user);
                        format!("{scheme}://{user}@{host}")
                    }
                    None => format!("{scheme}://{rest}"),
                }
            }
        }
    }

    /// Opens the store, creating its table when missing.
    ///
    /// # Errors
    /// [`ErrorKind::Store`] when it cannot be opened or reached.
    pub fn open(&self) -> Result<Box<dyn SessionStore>, Error> {
        Ok(match self {
            Self::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            Self::Postgres(url) => Box::new(postgres::Postgres::open(url, self.redacted())?),
        })
    }
}

fn usage(message: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        Problem::coded(code::INVALID_ARGUMENTS, message.to_string())
            .in_file("--sessions")
            .help("give sqlite:PATH for one machine, or postgres://USER@HOST/DB for replicas sharing a database"),
    )
}

/// A store failure, naming the store by its redacted address.
pub(crate) fn failed(store: &str, what: &str, err: &dyn fmt::Display) -> Error {
    Error::new(
        ErrorKind::Store,
        Problem::coded(code::STORE, format!("session store {store}: {what}: {err}"))
            .help("check that the store is reachable and writable; sessions are unchanged"),
    )
}

/// The one table both stores keep.
pub(crate) const TABLE: &str = "muster_sessions";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_and_shown_without_a_password() {
        let url = StoreUrl::parse("postgres://muster:hunter2hunter2@db:5432/chats?sslmode=disable")
            .unwrap();
        assert_eq!(url.redacted(), "postgres://muster@db:5432/chats");
        assert!(!format!("{url:?}").contains("hunter2"));
        assert_eq!(
            StoreUrl::parse("sqlite:/var/lib/muster/s.db").unwrap(),
            StoreUrl::Sqlite("/var/lib/muster/s.db".into())
        );
        let err = StoreUrl::parse("mysql://root:pw@h/db").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        assert!(!err.to_string().contains("pw@"));
        assert!(StoreUrl::parse("sqlite:").is_err());
    }
}

/// The most sessions a [`MemoryStore`] keeps: 100,000 (a gateway chat is
/// about 1.6 KB there). Past it, expired sessions are dropped, and when
/// none has expired a new one is refused as a store error.
pub const MAX_MEMORY_SESSIONS: usize = 100_000;

/// Sessions kept in this process's memory only: what `muster mcp` and the
/// gateway of a `muster serve` without `--sessions` keep chats in. Same
/// rules as the others (compare-and-swap on the revision, expiry), at most
/// [`MAX_MEMORY_SESSIONS`], gone when the process ends.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: std::sync::Mutex<std::collections::HashMap<String, (Stored, u64)>>,
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (Stored, u64)>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SessionStore for MemoryStore {
    fn insert(&self, id: &str, stored: &Stored, expires_at: u64) -> Result<(), Error> {
        let mut sessions = self.lock();
        if sessions.contains_key(id) {
            return Err(failed("memory", "insert", &format!("id {id:?} is taken")));
        }
        if sessions.len() >= MAX_MEMORY_SESSIONS {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            sessions.retain(|_, (_, expires)| *expires > now);
            if sessions.len() >= MAX_MEMORY_SESSIONS {
                return Err(failed(
                    "memory",
                    "insert",
                    &format!("it keeps {MAX_MEMORY_SESSIONS} sessions, none expired"),
                ));
            }
        }
        sessions.insert(id.to_string(), (stored.clone(), expires_at));
        Ok(())
    }

    fn create(&self, id: &str, stored: &Stored, now: u64, expires_at: u64) -> Result<bool, Error> {
        let mut sessions = self.lock();
        if sessions.get(id).is_some_and(|(_, expires)| *expires > now) {
            return Ok(false);
        }
        sessions.remove(id);
        drop(sessions);
        self.insert(id, stored, expires_at).map(|()| true)
    }

    fn get(&self, id: &str, now: u64) -> Result<Option<Stored>, Error> {
        Ok(self
            .lock()
            .get(id)
            .filter(|(_, expires)| *expires > now)
            .map(|(stored, _)| stored.clone()))
    }

    fn swap(
        &self,
        id: &str,
        expected: u64,
        stored: &Stored,
        now: u64,
        expires_at: u64,
    ) -> Result<Swapped, Error> {
        let mut sessions = self.lock();
        let Some((current, expires)) = sessions.get_mut(id).filter(|(_, e)| *e > now) else {
            return Ok(Swapped::Missing);
        };
        if current.revision != expected {
            return Ok(Swapped::Stale {
                current: current.revision,
            });
        }
        *current = stored.clone();
        *expires = expires_at;
        Ok(Swapped::Done)
    }

    fn delete(&self, id: &str) -> Result<bool, Error> {
        Ok(self.lock().remove(id).is_some())
    }

    fn purge(&self, now: u64) -> Result<u64, Error> {
        let mut sessions = self.lock();
        let before = sessions.len();
        sessions.retain(|_, (_, expires)| *expires > now);
        Ok((before - sessions.len()) as u64)
    }
}

/// A new session id: 32 random hex digits.
///
/// # Errors
/// [`ErrorKind::Io`] when the system has no randomness to give.
#[cfg(feature = "serve")]
pub fn new_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| {
        Error::new(
            ErrorKind::Io,
            Problem::new(format!("no randomness for a session id: {err}")),
        )
    })?;
    Ok(crate::canon::hex(&bytes))
}

#[cfg(test)]
mod memory_tests {
    use super::*;

    fn stored() -> Stored {
        Stored {
            document: "{}".into(),
            revision: 0,
        }
    }

    /// A gateway without `--sessions` starts a chat for any new path: the
    /// memory store must not grow without end.
    #[test]
    fn the_memory_store_keeps_at_most_its_bound_and_drops_expired_ones_first() {
        let store = MemoryStore::default();
        for i in 0..MAX_MEMORY_SESSIONS {
            // The first half has expired already (expiry 1 s after the epoch).
            let expires = if i < MAX_MEMORY_SESSIONS / 2 {
                1
            } else {
                u64::MAX
            };
            store.insert(&format!("s{i}"), &stored(), expires).unwrap();
        }
        store.insert("one-more", &stored(), u64::MAX).unwrap();
        assert_eq!(store.lock().len(), MAX_MEMORY_SESSIONS / 2 + 1);
        for i in 0..MAX_MEMORY_SESSIONS / 2 - 1 {
            store.insert(&format!("t{i}"), &stored(), u64::MAX).unwrap();
        }
        let err = store.insert("past-it", &stored(), u64::MAX).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Store);
        assert!(err.to_string().contains("100000 sessions"), "{err}");
    }
}
