//! The PostgreSQL backend: session advisory locks, one connection per held lock.
//!
//! One concept per file: [`options`] (the options and every bound derived from them), [`sql`]
//! (every statement, the session settings, creating the objects), [`epoch`] (the epoch/token
//! protocol), [`session`] (a connection's driver, heartbeats and loss), [`pool`] (sessions
//! ready for an acquisition, and the idle ones); this file puts them together. [`xact`] is the
//! transaction-scoped mode (the caller's transaction, no connection of ours).
//!
//! Design, and why it is correct:
//! - A held lock owns its connection ([`Conn`]); a connection holds at most one advisory lock,
//!   and goes back to the pool of idle connections only after the server confirmed it holds
//!   none (`pg_advisory_unlock` returned true, `pg_advisory_unlock_all()` succeeded, or
//!   `pg_try_advisory_lock` returned false). Anything else closes it, and the server releases
//!   whatever it held with the session.
//! - Waiting happens on the server (`pg_advisory_lock`), bounded by `lock_timeout`. The
//!   server may grant the lock in the same instant it raises the timeout, so a timed-out
//!   session runs `pg_advisory_unlock_all()` before it is reused.
//! - Lock, timeout and fencing token take one round trip: one statement sets `lock_timeout`,
//!   waits for the lock, then draws the token from the counter (see below).
//! - A driver task per connection polls the connection and, while no statement of ours is
//!   waiting on it, sends a heartbeat query every `heartbeat_interval`. The connection ending or
//!   a heartbeat not answered within `heartbeat_timeout` marks it lost (and closes it). Loss
//!   is also a function of the clock alone: a session whose last confirmed contact is
//!   `2 × (interval + timeout)` old is lost, whether or not its tasks could run (a paused
//!   process, a blocked runtime). The session's `idle_session_timeout` (3 × (interval +
//!   timeout)) makes the server end a session whose client fell silent, so a silent holder's
//!   lock is freed on the server only after its guard says it is lost.
//! - Every network wait is bounded on the client: opening a session by `connect_timeout`,
//!   a timed acquisition by its timeout plus `heartbeat_timeout` (pool checkout included),
//!   every statement that does not wait for a lock (and a release) by `heartbeat_timeout`.
//!   An unbounded `acquire` waits on the server as long as it takes (TCP keepalives notice a
//!   dead peer).
//!
//! # Fencing tokens without a disk flush per acquisition
//!
//! A durable counter costs a WAL flush (an `fsync`) per commit that advanced it, which is most
//! of an uncontended acquisition's time on an ordinary disk. Tokens therefore come from the
//! *unlogged* sequence `chainlock.token_counter` (`nextval` writes no WAL, takes no
//! transaction id, flushes nothing), made crash safe by epochs:
//!
//! - A token is the counter's value `v`; its *epoch* is `v >> 32` (blocks of 2³² tokens). A token
//!   is handed out only once its epoch is at most the largest epoch in the (logged) table
//!   `chainlock.epochs`, read from a row committed with `synchronous_commit = on` (visible
//!   implies flushed). Otherwise the client records the epoch first, durably, under
//!   `LOCK TABLE chainlock.epochs IN EXCLUSIVE MODE` (once per 2³² tokens).
//! - An unlogged sequence survives a clean shutdown (the shutdown checkpoint writes it) and is
//!   reset to 1 (epoch 0) by crash recovery: after `kill -9` of the server, an OS crash, or a
//!   single backend crashing (which makes the postmaster reinitialize without restarting, so
//!   `pg_postmaster_start_time()` does *not* change and cannot detect it). Epoch 0 is never
//!   handed out: a client that draws it takes the table lock, draws again (someone may have
//!   repositioned the counter meanwhile) and, if still in epoch 0, records epoch
//!   `max + 1` durably and moves the counter to `(max + 1) << 32`.
//! - Monotonicity per name: the advisory lock orders the holders of a name, and each draws
//!   after it holds the lock. Within one server lifetime the counter only moves forward
//!   (`nextval`, `CACHE 1`; the reset branch only leaves epoch 0). Across a crash, every
//!   earlier token's epoch is at most a durable epoch `max`, and every later token is at least
//!   `(max + 1) << 32`. Across a clean restart nothing is lost.
//! - Tokens of one name increase but skip values (one counter for all names); the epochs allow
//!   2³¹ crashes or 2³² · 2³¹ acquisitions. Out of scope: failover to an asynchronously
//!   replicated standby (it may lack the newest epoch, and advisory locks are not replicated
//!   anyway), restoring a backup (point-in-time recovery rewinds the epochs), `fsync = off`, and
//!   anyone else writing to these two objects.

mod epoch;
mod options;
mod pool;
mod session;
mod sql;
mod xact;

pub use options::PostgresOptions;
pub use xact::{xact_lock, xact_lock_timeout, xact_try_lock};

use super::{Error, FencingToken, Stage, Wait, name};
use pool::{Conn, Pool};
use session::Busy;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio_postgres::error::SqlState;

/// `future`, or [`Error::Unresponsive`] once `limit` has passed.
async fn bounded<T>(
    stage: Stage,
    limit: Duration,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout(limit, future)
        .await
        .map_err(|_| Error::Unresponsive {
            stage,
            after: limit,
        })?
}

struct Shared {
    options: PostgresOptions,
    runtime: Handle,
    pool: Pool,
}

#[derive(Clone)]
pub(super) struct PgBackend(Arc<Shared>);

impl PgBackend {
    /// Checks the server, creates the objects if needed and opens one idle session, all
    /// within `connect_timeout`.
    pub(super) async fn connect(options: PostgresOptions, runtime: Handle) -> Result<Self, Error> {
        let backend = Self(Arc::new(Shared {
            pool: Pool::new(options.max_idle),
            options,
            runtime,
        }));
        let limit = backend.0.options.connect_timeout();
        bounded(Stage::Connect, limit, async {
            let (client, connection) = backend.0.options.connect().await?;
            let setup = backend.0.runtime.spawn(connection);
            let created = sql::ensure_objects(&client).await;
            drop(client);
            setup.abort();
            created?;
            let conn = Conn::open(&backend.0.options, &backend.0.runtime).await?;
            backend.0.pool.put(conn);
            Ok(())
        })
        .await?;
        Ok(backend)
    }

    /// An idle session, or a new one opened within `connect_timeout`.
    async fn check_out(&self) -> Result<Conn, Error> {
        if let Some(conn) = self.0.pool.take() {
            return Ok(conn);
        }
        let options = &self.0.options;
        bounded(
            Stage::Connect,
            options.connect_timeout(),
            // Boxed: opening a session (a TLS handshake above all) is a large future.
            Box::pin(Conn::open(options, &self.0.runtime)),
        )
        .await
    }

    /// Acquires `name`. A timed wait (`Never`, `For`) is bounded as a whole, pool checkout
    /// included, by its timeout plus `heartbeat_timeout`; dropping the work on expiry closes
    /// the session and with it any lock granted meanwhile.
    pub(super) async fn acquire(
        &self,
        key: name::LockKey<'_>,
        wait: Wait,
    ) -> Result<Option<PgHeld>, Error> {
        let key = name::Advisory::from(key);
        let heartbeat_timeout = self.0.options.heartbeat_timeout;
        match wait {
            Wait::Never => {
                bounded(
                    Stage::Acquire,
                    heartbeat_timeout,
                    self.acquire_now(key, wait),
                )
                .await
            }
            Wait::For(timeout) => {
                let limit = timeout.saturating_add(heartbeat_timeout);
                bounded(Stage::Acquire, limit, self.acquire_now(key, wait)).await
            }
            Wait::Forever => self.acquire_now(key, wait).await,
        }
    }

    async fn acquire_now(&self, key: name::Advisory, wait: Wait) -> Result<Option<PgHeld>, Error> {
        let options = &self.0.options;
        // Dropped on every error or cancellation below: the server then drops the session's
        // locks, including one granted in a race with the error.
        let mut conn = self.check_out().await?;
        // Until the session is fresh again below: no heartbeat behind a lock wait, and no
        // loss while the server runs our statement (a running statement is not idle).
        let busy = Busy::set(&conn.busy);
        let sent = Instant::now();
        let drawn: Option<i64> = match wait {
            // Bounded as a whole by `acquire`.
            Wait::Never => conn.try_lock(key).await?,
            Wait::For(_) | Wait::Forever => {
                let timeout_ms = match wait {
                    Wait::For(timeout) => {
                        timeout.as_millis().clamp(1, i32::MAX as u128).to_string()
                    }
                    Wait::Never | Wait::Forever => "0".to_owned(),
                };
                match conn.lock(key, &timeout_ms).await {
                    Ok(drawn) => Some(drawn),
                    Err(err) if err.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                        // The timeout may have fired just as the lock was granted; the session
                        // then holds it. It holds no other lock, so this makes it clean.
                        let unlocked = Instant::now();
                        bounded(Stage::Acquire, options.heartbeat_timeout, async {
                            Ok(conn.client.batch_execute(sql::UNLOCK_ALL).await?)
                        })
                        .await?;
                        conn.liveness.contact(unlocked);
                        None
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        };
        conn.liveness.contact(sent);
        let Some(drawn) = drawn else {
            drop(busy);
            self.0.pool.put(conn);
            return Ok(None);
        };
        let token = if epoch::covers(conn.durable_epoch, drawn) {
            drawn
        } else {
            let recorded = Instant::now();
            let (token, durable) = bounded(
                Stage::Acquire,
                options.heartbeat_timeout,
                epoch::record(&conn.client, drawn),
            )
            .await?;
            conn.durable_epoch = conn.durable_epoch.max(durable);
            conn.liveness.contact(recorded);
            token
        };
        // A long wait: the server's idle clock started when it answered, which we cannot see;
        // a fresh round trip gives the guard a contact it can count from.
        if sent.elapsed() > options.heartbeat_interval
            && conn.ping(options.heartbeat_timeout).await.is_err()
        {
            return Err(Error::Unresponsive {
                stage: Stage::Acquire,
                after: options.heartbeat_timeout,
            });
        }
        drop(busy);
        let token = u64::try_from(token).map_err(|_| Error::TokensExhausted)?;
        Ok(Some(PgHeld {
            conn: Some(conn),
            key,
            token: FencingToken::new(token),
            backend: self.clone(),
        }))
    }

    /// Unlocks `key` within `heartbeat_timeout` and recycles the connection; on any failure the
    /// connection is closed, which releases the lock on the server.
    async fn release(&self, conn: Conn, key: name::Advisory) -> Result<(), Error> {
        if conn.is_lost() {
            return Err(Error::Lost);
        }
        let released: bool = bounded(Stage::Release, self.0.options.heartbeat_timeout, async {
            Ok(conn.unlock(key).await?)
        })
        .await?;
        if released {
            self.0.pool.put(conn);
            Ok(())
        } else {
            Err(Error::Lost)
        }
    }
}

/// A held advisory lock; `conn` is `None` only after release took it.
pub(super) struct PgHeld {
    conn: Option<Conn>,
    key: name::Advisory,
    token: FencingToken,
    backend: PgBackend,
}

impl PgHeld {
    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("a held lock has its connection")
    }

    pub(super) fn token(&self) -> FencingToken {
        self.token
    }

    pub(super) fn is_lost(&self) -> bool {
        self.conn().is_lost()
    }

    pub(super) async fn lost(&self) {
        self.conn().liveness.lost().await;
    }

    pub(super) async fn release(mut self) -> Result<(), Error> {
        let conn = self.conn.take().expect("a held lock has its connection");
        self.backend.release(conn, self.key).await
    }
}

impl Drop for PgHeld {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let (backend, key) = (self.backend.clone(), self.key);
            // Unlocks and recycles the connection; if the runtime is gone, dropping the
            // connection with the task closes the session, which unlocks too.
            drop(
                self.backend
                    .0
                    .runtime
                    .spawn(async move { backend.release(conn, key).await }),
            );
        }
    }
}
