//! The embedded store: one SQLite file in write-ahead-log mode, so several
//! processes on one machine may share it; a writer waits up to five
//! seconds for another's lock.

use super::{SessionStore, Stored, Swapped, TABLE, failed};
use crate::error::Error;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::Mutex;

#[derive(Debug)]
pub(super) struct Sqlite {
    name: String,
    connection: Mutex<Connection>,
}

impl Sqlite {
    pub(super) fn open(path: &Path) -> Result<Self, Error> {
        let name = format!("sqlite:{}", path.display());
        let fail = |what: &str, err: rusqlite::Error| failed(&name, what, &err);
        let connection = Connection::open(path).map_err(|e| fail("cannot open", e))?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| fail("cannot configure", e))?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| fail("cannot turn on the write-ahead log", e))?;
        connection
            .execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {TABLE} (
                    id TEXT PRIMARY KEY,
                    revision INTEGER NOT NULL,
                    document TEXT NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX IF NOT EXISTS {TABLE}_expires ON {TABLE} (expires_at);"
            ))
            .map_err(|e| fail("cannot create its table", e))?;
        Ok(Self {
            name,
            connection: Mutex::new(connection),
        })
    }

    fn with<T>(
        &self,
        what: &str,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        work(&connection).map_err(|e| failed(&self.name, what, &e))
    }
}

/// SQLite keeps signed 64-bit integers.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl SessionStore for Sqlite {
    fn insert(&self, id: &str, stored: &Stored, expires_at: u64) -> Result<(), Error> {
        self.with("cannot store a new session", |c| {
            c.execute(
                &format!(
                    "INSERT INTO {TABLE} (id, revision, document, expires_at) VALUES (?1, ?2, ?3, ?4)"
                ),
                params![id, int(stored.revision), stored.document, int(expires_at)],
            )
            .map(drop)
        })
    }

    fn create(&self, id: &str, stored: &Stored, now: u64, expires_at: u64) -> Result<bool, Error> {
        // One statement: a live row is kept, an expired one replaced.
        self.with("cannot store a new session", |c| {
            c.execute(
                &format!(
                    "INSERT INTO {TABLE} (id, revision, document, expires_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,
                        document = excluded.document, expires_at = excluded.expires_at
                     WHERE {TABLE}.expires_at <= ?5"
                ),
                params![
                    id,
                    int(stored.revision),
                    stored.document,
                    int(expires_at),
                    int(now)
                ],
            )
            .map(|n| n == 1)
        })
    }

    fn get(&self, id: &str, now: u64) -> Result<Option<Stored>, Error> {
        self.with("cannot read a session", |c| {
            c.query_row(
                &format!(
                    "SELECT document, revision FROM {TABLE} WHERE id = ?1 AND expires_at > ?2"
                ),
                params![id, int(now)],
                |row| {
                    Ok(Stored {
                        document: row.get(0)?,
                        revision: row.get::<_, i64>(1)? as u64,
                    })
                },
            )
            .optional()
        })
    }

    fn swap(
        &self,
        id: &str,
        expected: u64,
        stored: &Stored,
        now: u64,
        expires_at: u64,
    ) -> Result<Swapped, Error> {
        self.with("cannot update a session", |c| {
            let changed = c.execute(
                &format!(
                    "UPDATE {TABLE} SET revision = ?1, document = ?2, expires_at = ?3
                     WHERE id = ?4 AND revision = ?5 AND expires_at > ?6"
                ),
                params![
                    int(stored.revision),
                    stored.document,
                    int(expires_at),
                    id,
                    int(expected),
                    int(now)
                ],
            )?;
            if changed == 1 {
                return Ok(Swapped::Done);
            }
            let current: Option<i64> = c
                .query_row(
                    &format!("SELECT revision FROM {TABLE} WHERE id = ?1 AND expires_at > ?2"),
                    params![id, int(now)],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(match current {
                Some(current) => Swapped::Stale {
                    current: current as u64,
                },
                None => Swapped::Missing,
            })
        })
    }

    fn delete(&self, id: &str) -> Result<bool, Error> {
        self.with("cannot delete a session", |c| {
            c.execute(&format!("DELETE FROM {TABLE} WHERE id = ?1"), params![id])
                .map(|n| n == 1)
        })
    }

    fn purge(&self, now: u64) -> Result<u64, Error> {
        self.with("cannot purge expired sessions", |c| {
            c.execute(
                &format!("DELETE FROM {TABLE} WHERE expires_at <= ?1"),
                params![int(now)],
            )
            .map(|n| n as u64)
        })
    }
}
