//! The PostgreSQL backend: session advisory locks, many per connection, on a bounded set of
//! connections.
//!
//! One concept per file: [`options`] (the options and every bound derived from them), [`sql`]
//! (every statement, the session settings, creating the objects), [`epoch`] (the epoch/token
//! protocol), [`session`] (a connection's driver, heartbeats and loss), [`host`] (a session
//! ready for the statements, and the keys it holds or asks for), [`pool`] (the bounded set of
//! sessions: shared ones holding many locks, and sessions of their own for waits); this
//! file puts them together and implements the seam ([`Backend`], [`Hold`]) for both modes: a
//! shared hold is the same protocol with the `_shared` functions (`sql::SHARED`), on the same
//! sessions, under the same bound. [`xact`] is the transaction-scoped mode (the caller's
//! transaction, no connection of ours).
//!
//! Design, and why it is correct:
//! - Held locks share sessions ([`Host`]): an acquisition first asks on a shared session
//!   (`pg_try_advisory_lock` and the token in one statement). A session never asks for a key
//!   it holds or is asking for (advisory locks are re-entrant per session). The ask runs on a
//!   task of its own, so that a cancelled or timed-out acquisition cannot leave an untracked
//!   lock on a shared session: a guard nobody receives releases its lock when dropped.
//! - Waiting happens on the server (`pg_advisory_lock`), bounded by `lock_timeout`, on a
//!   session of its own that holds nothing ([`Conn`]); a granted lock stays there and the
//!   session serves again. A session that holds locks never waits (their releases would
//!   queue behind the wait). The server may grant the lock in the same instant it raises the
//!   timeout, so a timed-out session runs `pg_advisory_unlock_all()` before it is reused.
//!   Cancelling a wait drops its session, which releases a lock granted meanwhile.
//! - A wait whose session ends before the lock is granted (a heartbeat went unanswered and
//!   the driver gave up on it, an administrator ended it) lost nothing: the session held
//!   nothing of ours, and the server releases a dead session's locks. The waiter drops it and
//!   asks again, on another session, while its wait allows; likewise when a session ends while
//!   it is being set up. A session that ends after a grant is never retried: its guards report
//!   the loss.
//! - At most `max_connections` sessions are open at once; at that bound (or when the server
//!   refuses one more connection: a role's `CONNECTION LIMIT`) waiters wait in line (first
//!   come, first served) for a session that holds nothing; the first in line asks again when
//!   a lock of its client is released, and the first in line for each key every
//!   `heartbeat_interval` (another client's unlock notifies nobody); a timed wait asks once
//!   more at its deadline. See [`PostgresOptions::max_connections`].
//! - Writers first, within a client too: while an exclusive acquisition of the client waits
//!   for a key, new shared asks of it by the client do not join a shared hold of it (the
//!   server would grant them at once, ahead of its queue); they queue behind the writer.
//! - Lifecycle: the client owns the pool, the pool its sessions, a session's driver task its
//!   slot, and the slot refers to the pool weakly: dropping the client's last clone and its
//!   last guard drops the sessions, which aborts their drivers and closes the connections.
//! - A release that fails, goes unanswered or finds the lock not held closes the session: the
//!   server releases everything it held, and the other guards on it report the loss.
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
//!   An unbounded `lock` waits on the server as long as it takes (TCP keepalives notice a
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

mod election;
mod epoch;
mod host;
mod options;
mod pool;
mod session;
mod sql;
mod xact;

pub use options::PostgresOptions;
pub use xact::{
    blocking_try_xact_lock, blocking_try_xact_lock_for, blocking_try_xact_lock_until,
    blocking_xact_lock, try_xact_lock, try_xact_lock_for, try_xact_lock_until, xact_lock,
};

use super::backend::{Backend, BoxFuture, Hold, Leading, Mode, Wait};
use super::election::leader::{Leader, Publisher};
use super::{Error, FencingToken, Stage, name};
use host::Host;
use pool::{Conn, Pick, Pool, Slot};
use session::Busy;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
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

/// Whether `error` says the session ended before answering: the connection closed (a
/// heartbeat went unanswered and the driver gave up on it, the peer went away) or the server
/// ended the session (an administrator, a shutdown, its idle timeout). The server releases
/// everything a session that ended held.
fn session_ended(error: &tokio_postgres::Error) -> bool {
    error.is_closed()
        || error.code().is_some_and(|code| {
            *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::IDLE_SESSION_TIMEOUT
        })
}

/// Whether opening a session failed because the new session ended during its set-up (not
/// because the server could not be reached): it holds nothing, and another may be opened.
fn ended_while_opening(error: &Error) -> bool {
    matches!(error, Error::Postgres(error) if session_ended(error))
}

/// Whether opening a session failed because the server has no room for it: a role's or a
/// database's `CONNECTION LIMIT`, or the server's `max_connections` (they count every client).
fn connection_refused(error: &Error) -> bool {
    matches!(error, Error::Postgres(error) if error.code() == Some(&SqlState::TOO_MANY_CONNECTIONS))
}

/// What one non-waiting ask found.
enum Asked {
    Held(PgHeld),
    /// Held in a conflicting mode: by another client, by a guard of this one, or (for a
    /// shared ask) waited for by an exclusive acquisition of this one.
    NotFree,
    /// No session could ask: the bound is reached, or the server refused a new connection.
    NoSession,
}

/// How a wait on the server ended without an error.
enum Waited {
    Held(PgHeld),
    /// The timeout passed; the session was made clean and went back to the pool.
    TimedOut,
    /// The session ended before a guard had the lock (before the grant, or before its token
    /// was drawn): nothing handed out was lost, and the session was dropped. The error says
    /// why, for the caller that stops asking again ([`SESSION_ENDS_TOLERATED`]).
    Ended(Error),
}

/// How many times one acquisition starts again after a session ended under it (before the
/// grant, or while being opened) before it returns that error: a server that keeps ending
/// sessions fails the call instead of making it reconnect forever.
const SESSION_ENDS_TOLERATED: u32 = 3;

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
            pool: Pool::new(
                options.max_connections,
                options.max_idle,
                options.heartbeat_interval,
            ),
            options,
            runtime,
        }));
        let limit = backend.0.options.connect_timeout();
        bounded(Stage::Connect, limit, async {
            // The set-up connection counts against the bound too.
            let slot = backend
                .0
                .pool
                .slot()
                .expect("a new client has every slot free");
            let (client, connection) = backend.0.options.connect().await?;
            let setup = backend.0.runtime.spawn(session::serve(connection, None));
            let created = sql::ensure_objects(&client).await;
            drop(client);
            setup.abort();
            // Closed before its slot is used again.
            drop(setup.await);
            created?;
            let conn = Conn::open(&backend.0.options, &backend.0.runtime, slot).await?;
            backend.0.pool.put(conn);
            Ok(())
        })
        .await?;
        Ok(backend)
    }

    /// Opens a session in `slot` within `connect_timeout`.
    async fn open(&self, slot: Slot) -> Result<Conn, Error> {
        let options = &self.0.options;
        bounded(
            Stage::Connect,
            options.connect_timeout(),
            // Boxed: opening a session (a TLS handshake above all) is a large future.
            Box::pin(Conn::open(options, &self.0.runtime, slot)),
        )
        .await
    }

    /// Acquires `key` in `mode`. A timed wait (`Never`, `Until`) is bounded as a whole, pool
    /// checkout included, by its timeout plus `heartbeat_timeout`; dropping the work on expiry
    /// closes a session waiting on the server (and with it any lock granted meanwhile), and a
    /// lock granted on a shared session is released by the task that asked for it.
    pub(super) async fn acquire(
        &self,
        key: name::LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<PgHeld>, Error> {
        let key = name::Advisory::from(key);
        let wait = wait.now();
        let heartbeat_timeout = self.0.options.heartbeat_timeout;
        match (wait.remaining(), wait.timeout()) {
            (Some(remaining), Some(timeout)) => {
                // Bounded by the deadline plus `heartbeat_timeout`; reported as the timeout the
                // caller gave plus `heartbeat_timeout`.
                let limit = remaining.saturating_add(heartbeat_timeout);
                tokio::time::timeout(limit, self.acquire_now(key, mode, wait))
                    .await
                    .map_err(|_| Error::Unresponsive {
                        stage: Stage::Acquire,
                        after: timeout.saturating_add(heartbeat_timeout),
                    })?
            }
            _ => self.acquire_now(key, mode, wait).await,
        }
    }

    /// Asks on a shared session first (one round trip when the lock is free); if it is held,
    /// waits on the server on a session of its own; at the bound on connections, where no
    /// session is free for a wait, waits in line ([`Pool::enqueue`]). In line it asks again
    /// on a change of its client (the first in line) and every `heartbeat_interval` (the first
    /// in line for its key): an advisory unlock by another client notifies nobody. A timed
    /// wait in line asks once more at its deadline.
    async fn acquire_now(
        &self,
        key: name::Advisory,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<PgHeld>, Error> {
        let pool = &self.0.pool;
        let queue = !matches!(wait, Wait::Never);
        let mut ticket = None;
        // Set while this is an exclusive acquisition that found its key held: new readers of
        // this client queue behind it.
        let mut writer = None;
        let mut recheck = false;
        let mut next_recheck = None;
        let mut ends = 0;
        loop {
            let changed = pool.changed();
            if pool.may_ask(ticket.as_ref(), recheck) {
                recheck = false;
                match self.try_shared(key, mode, queue).await {
                    Ok(Asked::Held(held)) => return Ok(Some(held)),
                    Ok(Asked::NotFree | Asked::NoSession) => {}
                    // The shared session ended before answering: this acquisition holds
                    // nothing on it (the ask, and a lock granted before its token, died with
                    // it; the other guards on it report the loss). A wait asks again while
                    // it lasts.
                    Err(Error::Postgres(error))
                        if session_ended(&error)
                            && !matches!(wait.now(), Wait::Never)
                            && ends < SESSION_ENDS_TOLERATED =>
                    {
                        ends += 1;
                        continue;
                    }
                    Err(error) => return Err(error),
                }
                let remaining = match wait.now() {
                    Wait::Never => return Ok(None),
                    Wait::Until { .. } => wait.remaining(),
                    Wait::Forever => None,
                };
                if mode == Mode::Exclusive && writer.is_none() {
                    writer = Some(pool.wait_as_writer(key));
                }
                // A session of its own, unless others are in line before this one.
                if pool.is_first(ticket.as_ref()) {
                    let conn = match pool.take(true) {
                        Some(conn) => Some(conn),
                        None => match pool.slot() {
                            Some(slot) => match self.open(slot).await {
                                Ok(conn) => Some(conn),
                                // Nothing held on it: try again while the wait allows.
                                Err(error)
                                    if ended_while_opening(&error)
                                        && ends < SESSION_ENDS_TOLERATED =>
                                {
                                    ends += 1;
                                    continue;
                                }
                                // The server has no room for another connection of ours
                                // (a `CONNECTION LIMIT`): wait in line as at the bound.
                                Err(error) if connection_refused(&error) => {
                                    pool.refused();
                                    None
                                }
                                Err(error) => return Err(error),
                            },
                            None => None,
                        },
                    };
                    if let Some(conn) = conn {
                        // Out of line: the next may go on.
                        ticket = None;
                        match Box::pin(self.wait_on(conn, key, mode, remaining)).await? {
                            Waited::Held(held) => return Ok(Some(held)),
                            Waited::TimedOut => return Ok(None),
                            // The session ended before the lock was granted (a heartbeat
                            // went unanswered under load, an administrator ended it): it held
                            // nothing, so ask again, on another session, while the wait
                            // allows (`wait.now()` above ends it at its deadline).
                            Waited::Ended(error) => {
                                if ends >= SESSION_ENDS_TOLERATED {
                                    return Err(error);
                                }
                                ends += 1;
                                continue;
                            }
                        }
                    }
                }
            }
            // At the bound: every session holds locks or waits. Wait in line for a change (a
            // lock released, a session freed, the one before leaving the line) or the next
            // re-check; `changed` was created before the checks above, so no change in
            // between is missed.
            if ticket.is_none() {
                ticket = Some(pool.enqueue(key));
            }
            let recheck_at = *next_recheck.get_or_insert_with(|| {
                tokio::time::Instant::now() + self.0.options.heartbeat_interval
            });
            let deadline = match wait.now() {
                Wait::Never => return self.last_ask(key, mode).await,
                Wait::Until { deadline, .. } => Some(tokio::time::Instant::from_std(deadline)),
                Wait::Forever => None,
            };
            let expired = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(recheck_at) => {
                    recheck = true;
                    next_recheck = None;
                }
                () = expired => return self.last_ask(key, mode).await,
            }
        }
    }

    /// The ask of a timed wait at its deadline: the lock if it is free now (another client
    /// may have released it since the last ask; nothing told us), else `None`.
    async fn last_ask(&self, key: name::Advisory, mode: Mode) -> Result<Option<PgHeld>, Error> {
        match self.try_shared(key, mode, true).await? {
            Asked::Held(held) => Ok(Some(held)),
            Asked::NotFree | Asked::NoSession => Ok(None),
        }
    }

    /// `pg_try_advisory_lock` of `key` on a shared session (opening one if none can ask and
    /// the bound allows): the guard, or why not. When no session can ask, a waiting
    /// acquisition (`queue`) returns [`Asked::NoSession`] to wait in line; a non-waiting one
    /// waits for a session (bounded by its caller).
    async fn try_shared(
        &self,
        key: name::Advisory,
        mode: Mode,
        queue: bool,
    ) -> Result<Asked, Error> {
        let mut ends = 0;
        let host = loop {
            let changed = self.0.pool.changed();
            match self.0.pool.pick(key, mode) {
                Pick::Host(host) => break host,
                Pick::HeldHere => return Ok(Asked::NotFree),
                Pick::Open(slot) => match self.open(slot).await {
                    Ok(conn) => break self.0.pool.share(conn, key, mode),
                    // It held nothing: open another (a few times: see SESSION_ENDS_TOLERATED).
                    Err(error) if ended_while_opening(&error) && ends < SESSION_ENDS_TOLERATED => {
                        ends += 1;
                    }
                    Err(error) if queue && connection_refused(&error) => {
                        self.0.pool.refused();
                        return Ok(Asked::NoSession);
                    }
                    Err(error) => return Err(error),
                },
                Pick::Full if queue => return Ok(Asked::NoSession),
                Pick::Full => changed.await,
            }
        };
        // Bounded by the caller (`acquire`, below its timeout); a session that stops answering is closed by its
        // driver once a heartbeat goes unanswered, which fails this ask.
        Ok(match self.ask(host, key, mode).await? {
            Some(held) => Asked::Held(held),
            None => Asked::NotFree,
        })
    }

    /// Asks for `key` on the shared `host` (where it is reserved) and draws the token, on a
    /// task of its own: whoever gives up waiting for the answer (a cancellation, a timeout),
    /// the task ends the ask cleanly, and a guard nobody receives releases its lock when
    /// dropped. A failed statement closes the session (its state is unknown).
    async fn ask(
        &self,
        host: Arc<Host>,
        key: name::Advisory,
        mode: Mode,
    ) -> Result<Option<PgHeld>, Error> {
        let (answer, answered) = oneshot::channel();
        let backend = self.clone();
        drop(self.0.runtime.spawn(async move {
            let outcome = backend.ask_now(host, key, mode).await;
            drop(answer.send(outcome));
        }));
        answered.await.map_err(|_| Error::Lost)?
    }

    async fn ask_now(
        &self,
        host: Arc<Host>,
        key: name::Advisory,
        mode: Mode,
    ) -> Result<Option<PgHeld>, Error> {
        let sent = Instant::now();
        let drawn = match host.try_lock(key, mode).await {
            Ok(Some(drawn)) => drawn,
            Ok(None) => {
                host.liveness.contact(sent);
                self.0.pool.forget(host, key, false);
                return Ok(None);
            }
            Err(error) => {
                self.0.pool.close(&host);
                if host.liveness.unanswered() {
                    // The driver closed the session: a heartbeat went unanswered.
                    return Err(Error::Unresponsive {
                        stage: Stage::Acquire,
                        after: self.0.options.heartbeat_timeout,
                    });
                }
                return Err(error.into());
            }
        };
        host.liveness.contact(sent);
        // From here on, the guard owns the lock: dropping it releases the lock.
        let mut held = PgHeld {
            host: Some(host),
            key,
            mode,
            token: FencingToken::new(0),
            backend: self.clone(),
        };
        let host = held.host();
        let token = if epoch::covers(host.durable_epoch(), drawn) {
            drawn
        } else {
            // One epoch transaction at a time on a session (other acquirers' short statements
            // may run inside it: they take session locks and draw from a sequence, which no
            // transaction changes). Another may have recorded the epoch meanwhile: `record`
            // draws again if `drawn` is in epoch 0.
            let _recording = host.recording.lock().await;
            let recorded = Instant::now();
            match bounded(
                Stage::Acquire,
                self.0.options.heartbeat_timeout,
                epoch::record(&host.client, drawn),
            )
            .await
            {
                Ok((token, durable)) => {
                    host.record_durable(durable);
                    host.liveness.contact(recorded);
                    token
                }
                Err(error) => {
                    // The session may be left in the epoch's transaction.
                    self.0.pool.close(held.host.as_ref().expect("held"));
                    return Err(error);
                }
            }
        };
        held.token = FencingToken::new(u64::try_from(token).map_err(|_| Error::TokensExhausted)?);
        Ok(Some(held))
    }

    /// Waits for `key` on the server on `conn`, a session of its own, at most `remaining`
    /// (`None`: as long as it takes). A granted lock stays on the session, which then serves
    /// other acquirers; after a timeout the session is made clean and goes back to the pool.
    /// Dropped on an error or a cancellation, the session closes, which releases a lock
    /// granted in a race with it.
    async fn wait_on(
        &self,
        mut conn: Conn,
        key: name::Advisory,
        mode: Mode,
        remaining: Option<Duration>,
    ) -> Result<Waited, Error> {
        let options = &self.0.options;
        // Until the session is fresh again below: no heartbeat behind a lock wait, and no
        // loss while the server runs our statement (a running statement is not idle).
        let busy = Busy::set(&conn.busy);
        let sent = Instant::now();
        let timeout_ms = remaining.map_or_else(
            || "0".to_owned(),
            |timeout| timeout.as_millis().clamp(1, i32::MAX as u128).to_string(),
        );
        let drawn = match conn.lock(key, mode, &timeout_ms).await {
            Ok(drawn) => drawn,
            Err(err) if err.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                // The timeout may have fired just as the lock was granted; the session then
                // holds it. It holds no other lock, so this makes it clean.
                let unlocked = Instant::now();
                let cleaned = bounded(Stage::Acquire, options.heartbeat_timeout, async {
                    Ok(conn.client.batch_execute(sql::UNLOCK_ALL).await?)
                })
                .await;
                match cleaned {
                    Ok(()) => {}
                    // Timed out, and the session ended with whatever it held: dropped.
                    Err(Error::Postgres(err)) if session_ended(&err) => {
                        return Ok(Waited::TimedOut);
                    }
                    Err(error) => return Err(error),
                }
                conn.liveness.contact(unlocked);
                drop(busy);
                self.0.pool.put(conn);
                return Ok(Waited::TimedOut);
            }
            // Not granted, and the session is gone with whatever it held: it held nothing of
            // ours (a `Conn` is taken holding nothing), so no guard loses anything.
            Err(err) if session_ended(&err) || conn.is_lost() => {
                return Ok(Waited::Ended(err.into()));
            }
            Err(err) => return Err(err.into()),
        };
        conn.liveness.contact(sent);
        let token = if epoch::covers(conn.durable_epoch, drawn) {
            drawn
        } else {
            let recorded = Instant::now();
            let (token, durable) = match bounded(
                Stage::Acquire,
                options.heartbeat_timeout,
                epoch::record(&conn.client, drawn),
            )
            .await
            {
                Ok(recorded) => recorded,
                // Granted, but no guard has it yet: the session ended with the lock, and
                // nobody lost anything. Ask again.
                Err(Error::Postgres(err)) if session_ended(&err) => {
                    return Ok(Waited::Ended(Error::Postgres(err)));
                }
                Err(error) => return Err(error),
            };
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
        Ok(Waited::Held(PgHeld {
            host: Some(self.0.pool.share(conn, key, mode)),
            key,
            mode,
            token: FencingToken::new(token),
            backend: self.clone(),
        }))
    }

    /// Unlocks `key` on `host` within `heartbeat_timeout`; on any failure the session is
    /// closed, which releases the lock on the server (and loses the other locks it held).
    async fn release(&self, host: Arc<Host>, key: name::Advisory, mode: Mode) -> Result<(), Error> {
        if host.is_lost() {
            self.0.pool.close(&host);
            return Err(Error::Lost);
        }
        let sent = Instant::now();
        let released = bounded(Stage::Release, self.0.options.heartbeat_timeout, async {
            Ok(host.unlock(key, mode).await?)
        })
        .await;
        match released {
            Ok(true) => {
                host.liveness.contact(sent);
                self.0.pool.forget(host, key, true);
                Ok(())
            }
            Ok(false) => {
                self.0.pool.close(&host);
                Err(Error::Lost)
            }
            Err(error) => {
                self.0.pool.close(&host);
                Err(error)
            }
        }
    }
}

impl Backend for PgBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn acquire<'a>(
        &'a self,
        key: name::LockKey<'a>,
        mode: Mode,
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Hold>>, Error>> {
        Box::pin(async move {
            Ok(PgBackend::acquire(self, key, mode, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Hold>))
        })
    }

    fn describe(&self, f: &mut std::fmt::DebugStruct<'_, '_>) {
        let (open, in_line) = self.0.pool.occupancy();
        f.field("backend", &"postgres")
            .field("max_connections", &self.0.options.max_connections)
            .field("open", &open)
            .field("in_line", &in_line);
    }

    fn campaign<'a>(
        &'a self,
        name: &'a str,
        value: &'a [u8],
        wait: Wait,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Leading>>, Error>> {
        Box::pin(async move {
            Ok(PgBackend::campaign(self, name, value, wait)
                .await?
                .map(|held| Box::new(held) as Box<dyn Leading>))
        })
    }

    fn leader<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Leader>, Error>> {
        Box::pin(PgBackend::leader(self, name))
    }

    /// Told of changes by `LISTEN`/`NOTIFY` (see `election.rs`).
    fn observe(self: Arc<Self>, name: String, publisher: Publisher) -> BoxFuture<'static, ()> {
        Box::pin(PgBackend::observe((*self).clone(), name, publisher))
    }
}

/// A held advisory lock, on a session it may share with other held locks of its client;
/// `host` is `None` only after release took it.
pub(super) struct PgHeld {
    host: Option<Arc<Host>>,
    key: name::Advisory,
    mode: Mode,
    token: FencingToken,
    backend: PgBackend,
}

impl PgHeld {
    fn host(&self) -> &Host {
        self.host.as_ref().expect("a held lock has its session")
    }
}

impl Hold for PgHeld {
    fn token(&self) -> FencingToken {
        self.token
    }

    fn is_lost(&self) -> bool {
        self.host().is_lost()
    }

    fn lost(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.host().liveness.lost())
    }

    /// Unlocks on a task of its own, so that the lock is released even if the caller stops
    /// waiting for the outcome.
    fn release(mut self: Box<Self>) -> BoxFuture<'static, Result<(), Error>> {
        let host = self.host.take().expect("a held lock has its session");
        let (backend, key, mode) = (self.backend.clone(), self.key, self.mode);
        let task = self
            .backend
            .0
            .runtime
            .spawn(async move { backend.release(host, key, mode).await });
        Box::pin(async move { task.await.unwrap_or(Err(Error::Lost)) })
    }
}

impl Drop for PgHeld {
    fn drop(&mut self) {
        if let Some(host) = self.host.take() {
            let (backend, key, mode) = (self.backend.clone(), self.key, self.mode);
            // Unlocks; if the runtime is gone, its sessions are gone too, which unlocks.
            drop(
                self.backend
                    .0
                    .runtime
                    .spawn(async move { backend.release(host, key, mode).await }),
            );
        }
    }
}
