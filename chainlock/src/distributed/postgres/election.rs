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
//! - **Observe**: every change of a record (campaign, proclaim, resign) notifies the channel
//!   `chainlock_election` in the same statement, with the election's key as the payload
//!   ([`payload`]); the server delivers it once the change is committed. An observer
//!   `LISTEN`s on one of the client's serving sessions (within the client's bound; it keeps
//!   that session, which therefore never waits on the server, so its notifications are
//!   never held up behind a wait), reads the leader, then reads it again at every
//!   notification of its election and every [`RECHECK_EVERY`]: a notification is a reason to
//!   read, never a leader itself, so one lost (the session ended: the observer listens again
//!   on another) or one that arrives late only delays, and the publisher never goes back. A
//!   leader whose session ends without resigning (its process killed, its session lost)
//!   notifies nobody: observers are told of its end by their next periodic read, or at once
//!   by its successor's campaign.

use super::host::Host;
use super::{PgBackend, PgHeld, bounded, sql};
use crate::distributed::backend::{BoxFuture, Hold, Leading, Mode, Wait};
use crate::distributed::election::leader::{Leader, Publisher};
use crate::distributed::name::{LockKey, election_key};
use crate::distributed::{Error, FencingToken, Stage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
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

/// The payload of the notifications of `name`'s election: its key, in hex (a name may be
/// longer than a payload's 8000 bytes, or hold NUL, which a payload cannot).
fn payload(name: &str) -> String {
    format!("{:016x}", election_key(name))
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
        Ok(run(
            &host.client,
            sql::RESIGN,
            &[&name.as_bytes(), &token, &payload(&name)],
        )
        .await?)
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
                    &[
                        &self.name.as_bytes(),
                        &self.token,
                        &value,
                        &payload(&self.name),
                    ],
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
                &[&leading.name.as_bytes(), &token, &value, &payload(name)],
            )
            .await?)
        })
        .await?;
        Ok(Some(leading))
    }

    /// The leader of `name` now (see the module docs), read on a serving session.
    pub(super) async fn leader(&self, name: &str) -> Result<Option<Leader>, Error> {
        let host = self.serving().await?;
        self.leader_on(&host, name).await
    }

    /// A serving session for short statements (one is opened if none is; at the bound, this
    /// waits for one, at most `heartbeat_timeout`).
    async fn serving(&self) -> Result<Arc<Host>, Error> {
        let limit = self.0.options.heartbeat_timeout;
        let pool = &self.0.pool;
        loop {
            let changed = pool.changed();
            if let Some(host) = pool.any_serving() {
                return Ok(host);
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
        }
    }

    /// The leader of `name` now, read on `host`.
    async fn leader_on(&self, host: &Host, name: &str) -> Result<Option<Leader>, Error> {
        let key = election_key(name);
        // `pg_locks` shows a `bigint` key's halves as `oid`s (unsigned).
        let high = i64::from((key.cast_unsigned() >> 32) as u32);
        let low = i64::from(key.cast_unsigned() as u32);
        let rows = bounded(Stage::Acquire, self.0.options.heartbeat_timeout, async {
            Ok(run(&host.client, sql::LEADER, &[&name.as_bytes(), &high, &low]).await?)
        })
        .await?;
        Ok(rows.first().map(|row| Leader {
            value: row.get(0),
            token: FencingToken::new(row.get::<_, i64>(1).cast_unsigned()),
        }))
    }

    /// Publishes the leaders of `name` until every receiver of `publisher` is gone (see the
    /// module docs): listens on a serving session, and on another after a failure of it
    /// (once [`RECHECK_EVERY`] has passed, so a failing server is not asked in a loop).
    pub(super) async fn observe(self, name: String, mut publisher: Publisher) {
        let payload = payload(&name);
        loop {
            tokio::select! {
                () = publisher.closed() => return,
                host = self.serving() => {
                    if let Ok(host) = host {
                        self.observe_on(&host, &name, &payload, &mut publisher).await;
                    }
                }
            }
            tokio::select! {
                () = publisher.closed() => return,
                () = tokio::time::sleep(RECHECK_EVERY) => {}
            }
        }
    }

    /// Listens on `host`, then reads the leader of `name` and publishes it, at once and again
    /// at every notification with `payload` and every [`RECHECK_EVERY`]; returns when the
    /// session is lost, a statement on it fails, or the publisher is closed.
    async fn observe_on(&self, host: &Host, name: &str, payload: &str, publisher: &mut Publisher) {
        // Subscribed before the `LISTEN`, which is before the first read: a change committed
        // after that read is notified to this receiver.
        let mut heard = host.notifications();
        let listened = bounded(Stage::Acquire, self.0.options.heartbeat_timeout, async {
            Ok(host.client.batch_execute(sql::LISTEN).await?)
        })
        .await;
        if listened.is_err() {
            return;
        }
        loop {
            match self.leader_on(host, name).await {
                Ok(leader) => publisher.publish(leader),
                Err(_) => return,
            }
            let notified = async {
                loop {
                    match heard.recv().await {
                        Ok(notification)
                            if notification.channel() == sql::ELECTION_CHANNEL
                                && notification.payload() == payload =>
                        {
                            return;
                        }
                        Ok(_) => {}
                        // Some were dropped, perhaps ours: read.
                        Err(RecvError::Lagged(_)) => return,
                        // The session (which keeps the sender) is gone: its loss says so.
                        Err(RecvError::Closed) => std::future::pending().await,
                    }
                }
            };
            tokio::select! {
                () = publisher.closed() => return,
                () = host.liveness.lost() => return,
                () = notified => {}
                () = tokio::time::sleep(RECHECK_EVERY) => {}
            }
        }
    }
}

/// How often an observer reads the leader without a notification (one lost, or a leader
/// whose session ended without resigning), and waits before listening again after a failure.
const RECHECK_EVERY: Duration = Duration::from_secs(1);
