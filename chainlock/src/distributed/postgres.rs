//! The PostgreSQL backend: session advisory locks, one connection per held lock.
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
//!   a heartbeat not answered within `heartbeat_timeout` marks it lost (and closes it). The
//!   session's `idle_session_timeout` (3 × (interval + timeout)) makes the server end a
//!   session whose client fell silent, so a partitioned holder's lock is freed on the server
//!   only after its client has been told.
//!
//! # Fencing tokens without a disk flush per acquisition
//!
//! A durable counter costs a WAL flush (an `fsync`) per commit that advanced it, which is most
//! of an uncontended acquisition's time on an ordinary disk. Tokens therefore come from the
//! *unlogged* sequence `chainlock_token_counter` (`nextval` writes no WAL, takes no
//! transaction id, flushes nothing), made crash safe by epochs:
//!
//! - A token is the counter's value `v`; its *epoch* is `v >> 32` (blocks of 2³² tokens). A token
//!   is handed out only once its epoch is at most the largest epoch in the (logged) table
//!   `chainlock_epochs`, read from a row committed with `synchronous_commit = on` (visible
//!   implies flushed). Otherwise the client records the epoch first, durably, under
//!   `LOCK TABLE chainlock_epochs IN EXCLUSIVE MODE` (once per 2³² tokens).
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

use super::{Error, FencingToken, Wait, name};
use parking_lot::Mutex;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Statement};

/// Options of the PostgreSQL backend (see [`LockClient::postgres_with`](super::LockClient::postgres_with)).
///
/// # Examples
///
/// ```
/// use chainlock::distributed::PostgresOptions;
/// use std::time::Duration;
///
/// let options = PostgresOptions::new("postgres://locks@db.internal/app")?
///     .max_idle_connections(4)
///     .heartbeat_interval(Duration::from_millis(500));
/// # Ok::<(), chainlock::distributed::Error>(())
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    config: Config,
    max_idle: usize,
    heartbeat_interval: Duration,
    heartbeat_timeout: Duration,
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("hosts", &self.config.get_hosts())
            .field("max_idle", &self.max_idle)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresOptions {
    /// Options for the server at `url` (`postgres://user:password@host:port/db` or
    /// `host=... port=... user=...`); TLS is not supported (use a local socket, a tunnel or a
    /// private network).
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] if `url` does not parse.
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self::from_config(Config::from_str(url)?))
    }

    /// Options for a connection configured with `tokio_postgres`'s [`Config`].
    #[must_use]
    pub fn from_config(mut config: Config) -> Self {
        // Without these, a partitioned network leaves a connect or an unbounded lock wait
        // hanging until TCP gives up (hours with the defaults). Values set by the caller win.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_keepalives_idle() == DEFAULT_KEEPALIVES_IDLE {
            config.keepalives_idle(Duration::from_secs(10));
            config.keepalives_interval(Duration::from_secs(2));
            config.keepalives_retries(3);
        }
        Self {
            config,
            max_idle: 16,
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_timeout: Duration::from_secs(2),
        }
    }

    /// How many idle (unlocked) connections the client keeps for later acquisitions
    /// (default 16). Zero connects once per acquisition.
    #[must_use]
    pub fn max_idle_connections(mut self, max: usize) -> Self {
        self.max_idle = max;
        self
    }

    /// How often a connection not waiting for a lock proves it is alive (default 1 s).
    ///
    /// A silently dead connection is reported lost at most `heartbeat_interval +
    /// heartbeat_timeout` after its last sign of life; a closed one at once.
    ///
    /// # Panics
    ///
    /// Panics if `interval` is zero.
    #[must_use]
    #[track_caller]
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        assert!(!interval.is_zero(), "heartbeat interval must not be zero");
        self.heartbeat_interval = interval;
        self
    }

    /// How long a heartbeat may go unanswered before the lock is reported lost (default 2 s).
    ///
    /// # Panics
    ///
    /// Panics if `timeout` is zero.
    #[must_use]
    #[track_caller]
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        assert!(!timeout.is_zero(), "heartbeat timeout must not be zero");
        self.heartbeat_timeout = timeout;
        self
    }

    /// After how long without a word from the client the server ends the session.
    fn idle_session_timeout(&self) -> Duration {
        3 * (self.heartbeat_interval + self.heartbeat_timeout)
    }
}

const LOCK: &str = "WITH timeout AS MATERIALIZED (SELECT set_config('lock_timeout', $2, false)), \
                    locked AS MATERIALIZED (SELECT pg_advisory_lock($1) FROM timeout) \
                    SELECT nextval('chainlock_token_counter') FROM locked";
const TRY_LOCK: &str =
    "SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('chainlock_token_counter') END";
const UNLOCK: &str = "SELECT pg_advisory_unlock($1)";
const DURABLE_EPOCH: &str = "SELECT coalesce(max(epoch), 0) FROM chainlock_epochs";
/// Creates the counter and the epoch table once, however many clients start at once; the
/// two-`int4` key space of this lock is disjoint from the `bigint` keys of named locks.
const SCHEMA: &str = "BEGIN; SELECT pg_advisory_xact_lock(1128811596, 1); \
                      CREATE UNLOGGED SEQUENCE IF NOT EXISTS chainlock_token_counter CACHE 1; \
                      CREATE TABLE IF NOT EXISTS chainlock_epochs \
                      (epoch bigint PRIMARY KEY, recorded timestamptz NOT NULL DEFAULT now()); \
                      COMMIT";
/// Unlogged sequences exist since PostgreSQL 15.
const MIN_SERVER_VERSION: i32 = 15_00_00;
/// `tokio_postgres`'s default `keepalives_idle`: a caller who kept it gets ours.
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_hours(2);
/// A token's epoch is its value shifted right by this.
const EPOCH_SHIFT: u32 = 32;

/// One server session, owned by the pool or by one held lock.
struct Conn {
    session: Session,
    lock: Statement,
    try_lock: Statement,
    unlock: Statement,
    /// An epoch known to be durable on this session's server (a server restart or crash ends
    /// the session, so it stays true for the session's life).
    durable_epoch: i64,
}

impl Conn {
    /// Whether the connection ended or went silent. The driver task sets the flag; if the
    /// task was dropped instead (its runtime shut down), the closed channel says the same.
    fn is_lost(&self) -> bool {
        *self.session.lost.borrow() || self.session.lost.has_changed().is_err()
    }

    /// Whether `drawn` may be handed out as it is (see the module docs).
    fn covers(&self, drawn: i64) -> bool {
        (1..=self.durable_epoch).contains(&(drawn >> EPOCH_SHIFT))
    }

    /// Makes the epoch of `drawn`, a value just drawn while holding a lock, durable, and
    /// returns the token to hand out: `drawn`, or after a crash reset a fresh value.
    async fn record_epoch(&mut self, drawn: i64) -> Result<i64, Error> {
        // Any error leaves the transaction open: the caller then drops the connection.
        let client = &self.session.client;
        client
            .batch_execute(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit = on; SET LOCAL lock_timeout = 0; \
                 LOCK TABLE chainlock_epochs IN EXCLUSIVE MODE",
            )
            .await?;
        let durable: i64 = client.query_one(DURABLE_EPOCH, &[]).await?.get(0);
        let mut token = drawn;
        if token >> EPOCH_SHIFT == 0 {
            // Reset by crash recovery (or new), unless another client repositioned it since.
            token = client
                .query_one("SELECT nextval('chainlock_token_counter')", &[])
                .await?
                .get(0);
            if token >> EPOCH_SHIFT == 0 {
                token = durable
                    .checked_add(1)
                    .and_then(|epoch| epoch.checked_shl(EPOCH_SHIFT))
                    .filter(|&first| first >> EPOCH_SHIFT == durable + 1)
                    .ok_or(Error::TokensExhausted)?;
                client
                    .execute("SELECT setval('chainlock_token_counter', $1)", &[&token])
                    .await?;
            }
        }
        let epoch = token >> EPOCH_SHIFT;
        if epoch > durable {
            client
                .execute(
                    "INSERT INTO chainlock_epochs (epoch) VALUES ($1)",
                    &[&epoch],
                )
                .await?;
        }
        // Synchronous: flushed to disk before the token is handed out.
        client.batch_execute("COMMIT").await?;
        self.durable_epoch = self.durable_epoch.max(durable).max(epoch);
        Ok(token)
    }
}

impl std::ops::Deref for Conn {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

/// A connection and its driver task; dropping it closes the connection.
struct Session {
    client: Arc<Client>,
    /// Set while a statement of ours may wait on the server (heartbeats would queue behind it).
    busy: Arc<AtomicBool>,
    lost: watch::Receiver<bool>,
    driver: AbortHandle,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closes the socket; the server releases everything the session held.
        self.driver.abort();
    }
}

/// Clears `busy` when an acquisition ends, however it ends.
struct Busy<'a>(&'a AtomicBool);

impl<'a> Busy<'a> {
    fn set(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Self(flag)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Polls the connection, sends heartbeats, and reports its end through `lost`.
async fn drive<F>(
    connection: F,
    client: Weak<Client>,
    busy: Arc<AtomicBool>,
    lost: watch::Sender<bool>,
    interval: Duration,
    timeout: Duration,
) where
    F: Future<Output = Result<(), tokio_postgres::Error>>,
{
    let heartbeat = async {
        loop {
            tokio::time::sleep(interval).await;
            if busy.load(Ordering::Acquire) {
                continue;
            }
            let Some(client) = client.upgrade() else {
                return;
            };
            match tokio::time::timeout(timeout, client.simple_query("")).await {
                Ok(Ok(_)) => {}
                // An acquisition started after our `busy` check: the heartbeat queued behind
                // its lock wait, which proves nothing about the connection.
                Err(_) if busy.load(Ordering::Acquire) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    };
    tokio::select! {
        _ = connection => {}
        () = heartbeat => {}
    }
    lost.send_replace(true);
}

struct Shared {
    options: PostgresOptions,
    runtime: Handle,
    idle: Mutex<Vec<Conn>>,
}

#[derive(Clone)]
pub(super) struct PgBackend(Arc<Shared>);

impl PgBackend {
    pub(super) async fn connect(options: PostgresOptions, runtime: Handle) -> Result<Self, Error> {
        let backend = Self(Arc::new(Shared {
            options,
            runtime,
            idle: Mutex::new(Vec::new()),
        }));
        let (client, connection) = backend.0.options.config.connect(NoTls).await?;
        let setup = backend.0.runtime.spawn(connection);
        let schema = async {
            let version: String = client
                .query_one("SELECT current_setting('server_version_num')", &[])
                .await?
                .get(0);
            if version.parse::<i32>().is_ok_and(|v| v < MIN_SERVER_VERSION) {
                return Err(Error::UnsupportedServer(version));
            }
            client.batch_execute(SCHEMA).await?;
            Ok(())
        }
        .await;
        drop(client);
        setup.abort();
        schema?;
        let conn = backend.open().await?;
        backend.check_in(conn);
        Ok(backend)
    }

    /// Opens a session of our own, ready for [`Self::acquire`].
    async fn open(&self) -> Result<Conn, Error> {
        let options = &self.0.options;
        let (client, connection) = options.config.connect(NoTls).await?;
        let client = Arc::new(client);
        let busy = Arc::new(AtomicBool::new(false));
        let (lost_send, lost) = watch::channel(false);
        let driver = self
            .0
            .runtime
            .spawn(drive(
                connection,
                Arc::downgrade(&client),
                Arc::clone(&busy),
                lost_send,
                options.heartbeat_interval,
                options.heartbeat_timeout,
            ))
            .abort_handle();
        // From here on, dropping `session` closes the connection.
        let session = Session {
            client,
            busy,
            lost,
            driver,
        };
        let idle_ms = options
            .idle_session_timeout()
            .as_millis()
            .min(i32::MAX as u128);
        session
            .client
            .batch_execute(&format!(
                "SET application_name = 'chainlock'; SET idle_session_timeout = {idle_ms}; \
                 SET client_connection_check_interval = 250"
            ))
            .await?;
        let lock = session.client.prepare(LOCK).await?;
        let try_lock = session.client.prepare(TRY_LOCK).await?;
        let unlock = session.client.prepare(UNLOCK).await?;
        let durable_epoch = session.client.query_one(DURABLE_EPOCH, &[]).await?.get(0);
        Ok(Conn {
            session,
            lock,
            try_lock,
            unlock,
            durable_epoch,
        })
    }

    async fn check_out(&self) -> Result<Conn, Error> {
        loop {
            let conn = self.0.idle.lock().pop();
            match conn {
                Some(conn) if !conn.is_lost() => return Ok(conn),
                Some(_) => {}
                None => return self.open().await,
            }
        }
    }

    /// Keeps `conn` for later; it must hold no lock.
    fn check_in(&self, conn: Conn) {
        if conn.is_lost() {
            return;
        }
        let mut idle = self.0.idle.lock();
        if idle.len() < self.0.options.max_idle {
            idle.push(conn);
        }
    }

    pub(super) async fn acquire(&self, name: &str, wait: Wait) -> Result<Option<PgHeld>, Error> {
        let key = name::advisory_key(name);
        // Dropped on every error or cancellation below: the server then drops the session's
        // locks, including one granted in a race with the error.
        let mut conn = self.check_out().await?;
        let token: Option<i64> = match wait {
            Wait::Never => conn.client.query_one(&conn.try_lock, &[&key]).await?.get(0),
            Wait::For(_) | Wait::Forever => {
                let timeout_ms = match wait {
                    Wait::For(timeout) => {
                        timeout.as_millis().clamp(1, i32::MAX as u128).to_string()
                    }
                    Wait::Never | Wait::Forever => "0".to_owned(),
                };
                let _busy = Busy::set(&conn.busy);
                let params: [&(dyn ToSql + Sync); 2] = [&key, &timeout_ms];
                let request = conn.client.query_one(&conn.lock, &params);
                // The server enforces the timeout; this bounds the wait when the server or the
                // network does not answer at all. On expiry `conn` is dropped, closing the
                // session and with it any lock granted meanwhile.
                let answer = match wait {
                    Wait::For(timeout) => {
                        let limit = timeout.saturating_add(self.0.options.heartbeat_timeout);
                        tokio::time::timeout(limit, request)
                            .await
                            .map_err(|_| Error::Unresponsive(limit))?
                    }
                    Wait::Never | Wait::Forever => request.await,
                };
                match answer {
                    Ok(row) => Some(row.get(0)),
                    Err(err) if err.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                        // The timeout may have fired just as the lock was granted; the session
                        // then holds it. It holds no other lock, so this makes it clean.
                        conn.client
                            .batch_execute("SELECT pg_advisory_unlock_all()")
                            .await?;
                        None
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        };
        let Some(drawn) = token else {
            self.check_in(conn);
            return Ok(None);
        };
        let token = if conn.covers(drawn) {
            drawn
        } else {
            conn.record_epoch(drawn).await?
        };
        let token = u64::try_from(token).map_err(|_| Error::TokensExhausted)?;
        Ok(Some(PgHeld {
            conn: Some(conn),
            key,
            token: FencingToken::new(token),
            backend: self.clone(),
        }))
    }

    async fn release(&self, conn: Conn, key: i64) -> Result<(), Error> {
        if conn.is_lost() {
            return Err(Error::Lost);
        }
        let released: bool = conn.client.query_one(&conn.unlock, &[&key]).await?.get(0);
        if released {
            self.check_in(conn);
            Ok(())
        } else {
            Err(Error::Lost)
        }
    }
}

/// A held advisory lock; `conn` is `None` only after release took it.
pub(super) struct PgHeld {
    conn: Option<Conn>,
    key: i64,
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
        let mut lost = self.conn().session.lost.clone();
        // An error means the driver is gone, which is a loss too.
        let _ = lost.wait_for(|lost| *lost).await;
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
