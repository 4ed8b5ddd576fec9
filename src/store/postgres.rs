//! The shared store: one PostgreSQL database that every replica of `muster
//! serve` uses, so a session created or loaded through one is seen by all,
//! and a compare-and-swap refused on one is refused on every other.
//!
//! The driver is tokio-postgres. Its client runs on a runtime of its own, on
//! one thread this store starts, so a caller on any thread (the service's
//! blocking pool, the command line) waits for an answer on a plain channel
//! and never nests one runtime inside another. Queries from many callers
//! are pipelined on the one connection; a connection that broke is opened
//! again on the next call.

use super::tls::{Target, told};
use super::{SessionStore, Stored, Swapped, TABLE, failed};
use crate::error::Error;
use std::sync::mpsc as sync;
use tokio::sync::mpsc;
use tokio_postgres::Client;

type Reply = sync::SyncSender<Result<Answer, String>>;

enum Call {
    Insert(String, Stored, u64),
    Create(String, Stored, u64, u64),
    Get(String, u64),
    Swap(String, u64, Stored, u64, u64),
    Delete(String),
    Purge(u64),
    Notify(String),
}

enum Answer {
    Unit,
    Row(Option<Stored>),
    Swapped(Swapped),
    Count(u64),
}

#[derive(Debug)]
pub(super) struct Postgres {
    name: String,
    calls: mpsc::UnboundedSender<(Call, Reply)>,
    /// The connection string, for the listening connection.
    url: String,
    /// This store's mark on what it announces, so it does not hear itself.
    origin: String,
}

impl Postgres {
    pub(super) fn open(url: &str, name: String) -> Result<Self, Error> {
        let (calls, mut queue) = mpsc::unbounded_channel::<(Call, Reply)>();
        let (ready, started) = sync::sync_channel::<Result<(), String>>(1);
        let origin = super::notify::origin();
        let kept = url.to_string();
        let target = Target::read(url).map_err(|err| failed(&name, "cannot connect", &err))?;
        std::thread::Builder::new()
            .name("muster-postgres".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = ready.send(Err(err.to_string()));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let mut client = match connect(&target).await {
                        Ok(client) => client,
                        Err(err) => {
                            let _ = ready.send(Err(err));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    while let Some((call, reply)) = queue.recv().await {
                        if client.is_closed() {
                            match connect(&target).await {
                                Ok(fresh) => client = fresh,
                                Err(err) => {
                                    let _ = reply.send(Err(err));
                                    continue;
                                }
                            }
                        }
                        let client = client.clone();
                        tokio::spawn(async move {
                            let _ = reply.send(answer(&client, call).await.map_err(|e| told(&e)));
                        });
                    }
                });
            })
            .map_err(|err| failed(&name, "cannot start its client thread", &err))?;
        match started.recv() {
            Ok(Ok(())) => Ok(Self {
                name,
                calls,
                url: kept,
                origin,
            }),
            Ok(Err(err)) => Err(failed(&name, "cannot connect", &err)),
            Err(err) => Err(failed(&name, "cannot connect", &err)),
        }
    }

    fn call(&self, what: &str, call: Call) -> Result<Answer, Error> {
        let (reply, answer) = sync::sync_channel(1);
        self.calls
            .send((call, reply))
            .map_err(|e| failed(&self.name, what, &e))?;
        answer
            .recv()
            .map_err(|e| failed(&self.name, what, &e))?
            .map_err(|e| failed(&self.name, what, &e))
    }
}

/// Connects and makes sure the table exists. The client is shared through
/// an `Arc`, so each call can run on its own task.
async fn connect(target: &Target) -> Result<std::sync::Arc<Client>, String> {
    let client = target.connect(None).await?;
    client
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {TABLE} (
                id TEXT PRIMARY KEY,
                revision BIGINT NOT NULL,
                document TEXT NOT NULL,
                expires_at BIGINT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS {TABLE}_expires ON {TABLE} (expires_at);"
        ))
        .await
        .map_err(|e| told(&e))?;
    Ok(client)
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

async fn answer(client: &Client, call: Call) -> Result<Answer, tokio_postgres::Error> {
    Ok(match call {
        Call::Insert(id, stored, expires_at) => {
            client
                .execute(
                    &format!(
                        "INSERT INTO {TABLE} (id, revision, document, expires_at) VALUES ($1, $2, $3, $4)"
                    ),
                    &[&id, &int(stored.revision), &stored.document, &int(expires_at)],
                )
                .await?;
            Answer::Unit
        }
        Call::Create(id, stored, now, expires_at) => Answer::Count(
            // One statement: a live row is kept, an expired one replaced.
            client
                .execute(
                    &format!(
                        "INSERT INTO {TABLE} (id, revision, document, expires_at) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,
                            document = excluded.document, expires_at = excluded.expires_at
                         WHERE {TABLE}.expires_at <= $5"
                    ),
                    &[
                        &id,
                        &int(stored.revision),
                        &stored.document,
                        &int(expires_at),
                        &int(now),
                    ],
                )
                .await?,
        ),
        Call::Get(id, now) => Answer::Row(
            client
                .query_opt(
                    &format!(
                        "SELECT document, revision FROM {TABLE} WHERE id = $1 AND expires_at > $2"
                    ),
                    &[&id, &int(now)],
                )
                .await?
                .map(|row| Stored {
                    document: row.get(0),
                    revision: row.get::<_, i64>(1) as u64,
                }),
        ),
        Call::Swap(id, expected, stored, now, expires_at) => {
            // One statement: the update lands only on the expected revision,
            // and the current one is read in the same snapshot when it did not.
            let row = client
                .query_one(
                    &format!(
                        "WITH swapped AS (
                            UPDATE {TABLE} SET revision = $1, document = $2, expires_at = $3
                            WHERE id = $4 AND revision = $5 AND expires_at > $6
                            RETURNING 1)
                         SELECT (SELECT count(*) FROM swapped),
                                (SELECT revision FROM {TABLE} WHERE id = $4 AND expires_at > $6)"
                    ),
                    &[
                        &int(stored.revision),
                        &stored.document,
                        &int(expires_at),
                        &id,
                        &int(expected),
                        &int(now),
                    ],
                )
                .await?;
            let swapped: i64 = row.get(0);
            let current: Option<i64> = row.get(1);
            Answer::Swapped(match (swapped, current) {
                (1, _) => Swapped::Done,
                (_, Some(current)) => Swapped::Stale {
                    current: current as u64,
                },
                (_, None) => Swapped::Missing,
            })
        }
        Call::Delete(id) => Answer::Count(
            client
                .execute(&format!("DELETE FROM {TABLE} WHERE id = $1"), &[&id])
                .await?,
        ),
        Call::Purge(now) => Answer::Count(
            client
                .execute(
                    &format!("DELETE FROM {TABLE} WHERE expires_at <= $1"),
                    &[&int(now)],
                )
                .await?,
        ),
        Call::Notify(payload) => {
            client
                .execute("SELECT pg_notify($1, $2)", &[&super::notify::CHANNEL, &payload])
                .await?;
            Answer::Unit
        }
    })
}

fn unexpected(name: &str) -> Error {
    failed(name, "answered out of turn", &"a reply of the wrong kind")
}

impl SessionStore for Postgres {
    fn insert(&self, id: &str, stored: &Stored, expires_at: u64) -> Result<(), Error> {
        match self.call(
            "cannot store a new session",
            Call::Insert(id.to_string(), stored.clone(), expires_at),
        )? {
            Answer::Unit => Ok(()),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn create(&self, id: &str, stored: &Stored, now: u64, expires_at: u64) -> Result<bool, Error> {
        match self.call(
            "cannot store a new session",
            Call::Create(id.to_string(), stored.clone(), now, expires_at),
        )? {
            Answer::Count(n) => Ok(n == 1),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn get(&self, id: &str, now: u64) -> Result<Option<Stored>, Error> {
        match self.call("cannot read a session", Call::Get(id.to_string(), now))? {
            Answer::Row(row) => Ok(row),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn swap(
        &self,
        id: &str,
        expected: u64,
        stored: &Stored,
        now: u64,
        expires_at: u64,
    ) -> Result<Swapped, Error> {
        match self.call(
            "cannot update a session",
            Call::Swap(id.to_string(), expected, stored.clone(), now, expires_at),
        )? {
            Answer::Swapped(swapped) => Ok(swapped),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn delete(&self, id: &str) -> Result<bool, Error> {
        match self.call("cannot delete a session", Call::Delete(id.to_string()))? {
            Answer::Count(n) => Ok(n == 1),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn purge(&self, now: u64) -> Result<u64, Error> {
        match self.call("cannot purge expired sessions", Call::Purge(now))? {
            Answer::Count(n) => Ok(n),
            _ => Err(unexpected(&self.name)),
        }
    }

    fn announce(&self, id: &str) {
        // Not waited for: the chat's own change is stored already, and a
        // replica that misses it hears the next.
        let (reply, _) = sync::sync_channel(1);
        let payload = super::notify::payload(&self.origin, id);
        let _ = self.calls.send((Call::Notify(payload), reply));
    }

    fn hear(&self, heard: Box<dyn Fn(&str) + Send + Sync>) -> Result<(), Error> {
        super::notify::listen(&self.name, &self.url, self.origin.clone(), heard)
    }
}
