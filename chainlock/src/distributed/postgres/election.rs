//! The PostgreSQL backend's leader election: an advisory lock in a key space of its own
//! ([`election_key`](crate::distributed::name::election_key): no lock name's key) and a
//! record of the leader in the unlogged table `chainlock.leaders` (name, token, value, and
//! the session holding the lock: its process id and start time).
//!
//! - **Campaign**: an exclusive acquisition of the election's key, as a lock's (the same
//!   sessions and bound, waits, loss, tokens), then the record, written on the session that
//!   holds the lock.
//! - **Leader**: the record, only if the session it names holds the election's lock now
//!   (`pg_locks`, `pg_stat_activity`): a leader whose session ended, or whose successor has
//!   not written its record yet, is never reported.
//! - **Proclaim**: the record's value, where its token is the leadership's.
//! - **Resign** (and the drop, on a background task): the record deleted, then the lock
//!   released, on the holding session: a later leadership on the same session never meets
//!   this one's record.
//! - **Observe**: asks for the leader every 250 ms (an advisory unlock notifies nobody; a
//!   `LISTEN` would need a connection of its own, outside the client's bound).

use super::{PgBackend, PgHeld, bounded, sql};
use crate::distributed::backend::{BoxFuture, Hold, Leading, Mode, Wait};
use crate::distributed::election::Leader;
use crate::distributed::name::{LockKey, election_key};
use crate::distributed::{Error, FencingToken, Stage};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

/// Runs `statement` with `params` on `client`; if the table of leader records is missing,
/// creates it (once, whoever asks first; a create racing another's may fail: the second run
/// says) and runs the statement again.
async fn run(
    client: &Client,
    statement: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    match client.query(statement, params).await {
        Err(error) if error.code() == Some(&SqlState::UNDEFINED_TABLE) => {
            client.batch_execute(sql::CREATE_LEADERS).await.ok();
            client.query(statement, params).await
        }
        done => done,
    }
}

/// A leading candidacy: the election's lock and the record written for it.
pub(super) struct PgLeading {
    /// `None` once resigned.
    held: Option<PgHeld>,
    name: String,
    token: i64,
}

impl PgLeading {
    fn held(&self) -> &PgHeld {
        self.held.as_ref().expect("a leadership holds its lock")
    }
}

/// Deletes the record of `name` with `token` on `held`'s session, then releases the lock.
async fn resign(held: PgHeld, name: String, token: i64) -> Result<(), Error> {
    let limit = held.backend.0.options.heartbeat_timeout;
    let host = held.host.clone().expect("a held lock has its session");
    let deleted = bounded(Stage::Release, limit, async {
        Ok(run(&host.client, sql::RESIGN, &[&name.as_bytes(), &token]).await?)
    })
    .await;
    drop(host);
    let released = Box::new(held).release().await;
    deleted.and(released)
}

impl Drop for PgLeading {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            let runtime = held.backend.0.runtime.clone();
            let (name, token) = (std::mem::take(&mut self.name), self.token);
            drop(runtime.spawn(async move { resign(held, name, token).await.ok() }));
        }
    }
}

impl Hold for PgLeading {
    fn token(&self) -> FencingToken {
        self.held().token
    }

    fn is_lost(&self) -> bool {
        self.held().is_lost()
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        self.held().lost()
    }

    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let held = self.held.take().expect("a leadership holds its lock");
        let (name, token) = (std::mem::take(&mut self.name), self.token);
        let runtime = held.backend.0.runtime.clone();
        let lost = held.is_lost();
        // On a task of its own: the candidacy is withdrawn even if the caller stops waiting.
        let task = runtime.spawn(async move {
            let resigned = resign(held, name, token).await;
            if lost { Err(Error::Lost) } else { resigned }
        });
        Box::pin(async move { task.await.unwrap_or(Err(Error::Lost)) })
    }
}

impl Leading for PgLeading {
    fn proclaim<'a>(&'a self, value: &'a [u8]) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let held = self.held();
            let limit = held.backend.0.options.heartbeat_timeout;
            let changed = bounded(Stage::Acquire, limit, async {
                Ok(run(
                    &held.host().client,
                    sql::PROCLAIM,
                    &[&self.name.as_bytes(), &self.token, &value],
                )
                .await?)
            })
            .await?;
            if changed.len() == 1 && !held.is_lost() {
                Ok(())
            } else {
                Err(Error::Lost)
            }
        })
    }
}

impl PgBackend {
    /// Campaigns for `name` (see the module docs).
    pub(super) async fn campaign(
        &self,
        name: &str,
        value: &[u8],
        wait: Wait,
    ) -> Result<Option<PgLeading>, Error> {
        let key = LockKey::Int(election_key(name));
        let Some(held) = self.acquire(key, Mode::Exclusive, wait).await? else {
            return Ok(None);
        };
        let token = i64::try_from(held.token.get()).map_err(|_| Error::TokensExhausted)?;
        // Made before the record is written: cancelled meanwhile, its drop deletes the record
        // (the delete runs after the insert on the same session) and releases the lock.
        let leading = PgLeading {
            held: Some(held),
            name: name.to_owned(),
            token,
        };
        let host = leading.held().host.clone().expect("held");
        let limit = self.0.options.heartbeat_timeout;
        bounded(Stage::Acquire, limit, async {
            Ok(run(
                &host.client,
                sql::ELECTED,
                &[&leading.name.as_bytes(), &token, &value],
            )
            .await?)
        })
        .await?;
        Ok(Some(leading))
    }

    /// The leader of `name` now (see the module docs), read on a serving session (one is
    /// opened if none is; at the bound, this waits for one).
    pub(super) async fn leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        let key = election_key(name);
        // `pg_locks` shows a `bigint` key's halves as `oid`s (unsigned).
        let high = i64::from((key.cast_unsigned() >> 32) as u32);
        let low = i64::from(key.cast_unsigned() as u32);
        let limit = self.0.options.heartbeat_timeout;
        let pool = &self.0.pool;
        let host = loop {
            let changed = pool.changed();
            if let Some(host) = pool.any_serving() {
                break host;
            }
            if let Some(slot) = pool.slot() {
                let conn = self.open(slot).await?;
                pool.put(conn);
                continue;
            }
            tokio::time::timeout(limit, changed)
                .await
                .map_err(|_| Error::Unresponsive {
                    stage: Stage::Acquire,
                    after: limit,
                })?;
        };
        let rows = bounded(Stage::Acquire, limit, async {
            Ok(run(&host.client, sql::LEADER, &[&name.as_bytes(), &high, &low]).await?)
        })
        .await?;
        Ok(rows.first().map(|row| Leader {
            value: row.get(0),
            token: FencingToken::new(row.get::<_, i64>(1).cast_unsigned()),
        }))
    }
}

/// How often observers ask for the leader.
pub(super) const OBSERVE_EVERY: Duration = Duration::from_millis(250);
