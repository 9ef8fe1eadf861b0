//! Locks by key across processes and machines — a mutex, a reader-writer lock, a counting
//! semaphore and several keys at once — with fencing tokens and a lost-lock signal.
//!
//! A [`LockClient`] hands out [`DistributedGuard`]s by key ([`LockKey`]: a name, an `i64` or
//! an `(i32, i32)`): at most one exclusive guard of a key is alive at a time across every
//! process (and machine) sharing the backend, or any number of shared ones. The backends sit
//! behind the one API:
//!
//! - **File** ([`LockClient::file`], feature `distributed`): one machine, many processes. Each
//!   key is an OS file lock (`flock` on Unix, `LockFileEx` on Windows, through
//!   [`std::fs::File::lock`]) on a file of a lock directory. The kernel releases it when the
//!   holder dies, however it dies; a waiter sleeps in the kernel, it does not poll. Threads of
//!   one process exclude each other too.
//! - **PostgreSQL** ([`LockClient::postgres`], feature `postgres`): many machines. Each held
//!   key is a session advisory lock; held locks of both modes share a bounded set of
//!   connections ([`PostgresOptions::max_connections`]); waiting happens on the server; the
//!   server releases the lock when the holder's connection dies.
//! - **etcd** ([`LockClient::etcd`], feature `etcd`): many machines, on a cluster that
//!   survives the loss of a minority of its members. etcd's own lock algorithm (one lease kept
//!   alive per client, FIFO by create revision, each waiter watching its predecessor), with the
//!   keys of `etcdctl lock NAME`, which it excludes and is excluded by. See [etcd](#etcd).
//!
//! | | exclusive | shared | several keys | permits |
//! |---|---|---|---|---|
//! | wait | [`lock`](LockClient::lock) | [`lock_shared`](LockClient::lock_shared) | [`lock_all`](LockClient::lock_all) → [`DistributedGuards`] | [`semaphore`](LockClient::semaphore)`(key, n)`[`.acquire()`](DistributedSemaphore::acquire) → [`DistributedPermit`] |
//! | don't wait | `try_lock` | `try_lock_shared` | `try_lock_all` | `try_acquire` |
//! | at most a `Duration` | `try_lock_for` | `try_lock_shared_for` | `try_lock_all_for` | `try_acquire_for` |
//! | until an `Instant` | `try_lock_until` | `try_lock_shared_until` | `try_lock_all_until` | `try_acquire_until` |
//!
//! Every method is `async`, with a blocking twin named `blocking_` + the same name
//! (`blocking_lock`, `blocking_try_lock_shared_for`, …) for callers without a runtime. Every
//! acquiring method takes every key kind. `None` from a `try_` form means "held in a
//! conflicting mode (now, or until the wait ended)" and nothing else.
//!
//! Every exclusive acquisition gets a [`FencingToken`] greater than every earlier token of
//! its key, and every guard tells whether its lock was lost ([`DistributedGuard::is_lost`],
//! [`DistributedGuard::lost`]).
//!
//! Transaction-scoped locks ([`xact_lock`] and its forms, PostgreSQL) take the same advisory
//! lock inside the caller's own `tokio_postgres` transaction.
//!
//! **Leader election** on every backend: [`LockClient::campaign`] (and `try_`, `_for`,
//! `_until`, `blocking_`) → a [`Leadership`] with its fencing token, loss signal,
//! [`proclaim`](Leadership::proclaim) and [`resign`](Leadership::resign);
//! [`LockClient::leader`] and [`LockClient::observe`] ([`LeaderWatch`]) without campaigning.
//! On etcd it is etcd's own election (`etcdctl elect`). See
//! [Leader election](#leader-election).
//!
//! # One protocol per backend
//!
//! Each backend implements one internal seam (`backend.rs`: acquire a key in a mode —
//! exclusive or shared — with a deadline, or not waiting; and of a hold: its token, its loss,
//! its release), and everything above is built on it without knowing the backend: the mutex
//! and the reader-writer lock are its two modes, the semaphore is N slots (exclusive locks of
//! derived names), several keys are exclusive locks taken in one global order. Both modes of
//! a backend share one path: the same sessions and bound, deadlines, re-entrancy guard, loss
//! signal and tokens. A new backend (etcd, say) is one new module implementing the seam and
//! one constructor of [`LockClient`].
//!
//! # Names and keys
//!
//! Names are arbitrary strings: `/`, `..`, NUL, non-UTF-8-looking text and megabytes of text are
//! all valid and map to distinct locks. The file backend percent-encodes a name into a file name
//! and replaces all but a prefix of long names by their SHA-256; PostgreSQL uses the first 64
//! bits of the SHA-256 as the advisory key. Two names that collide (a SHA-256 collision for
//! files, odds of about 2⁻⁶⁴ per pair for PostgreSQL) share one lock: they exclude each other,
//! which is safe, never unsafe. On a case-insensitive file system (macOS, Windows by
//! default) the file backend maps `Orders` and `orders` to one file, hence one lock: also safe.
//!
//! Besides names, locks can be taken by the integer keys of PostgreSQL's advisory-lock
//! functions ([`LockKey`]: `i64` and `(i32, i32)`), on every acquiring method of both
//! backends, to share them with SQL or programs in other languages that already use them:
//! `locks.lock(42)` excludes `SELECT pg_advisory_lock(42)` and vice versa, and
//! `locks.lock_shared(42)` is `pg_advisory_lock_shared(42)`. A semaphore of an integer key
//! is named by its display form (`advisory(42)`).
//!
//! # Connections and their lifecycle
//!
//! A PostgreSQL client opens at most [`PostgresOptions::max_connections`] connections (16 by
//! default), whatever it holds or waits for: exclusive holds, shared holds, permits and
//! several keys all share them (one connection holds any number of locks; a semaphore's
//! permits may sit on one connection). A lock wait on the server needs a connection that
//! holds nothing; at the bound, waiters wait in line for one, first come first served, and
//! nothing polls (see [`PostgresOptions::max_connections`] for what that means for a task that
//! holds one key while it waits for another).
//!
//! **Dropping a client:** clones share the connections; the connections stay open while any
//! clone or any guard, permit or [`DistributedGuards`] of the client is alive (a guard's lock
//! lives on them). Once the last clone and the last guard are dropped, every connection the
//! client opened is closed: at once if nothing was being released, otherwise once the release
//! of the last dropped guard ends (within `heartbeat_timeout`, 2 s by default). The server
//! then releases whatever they held. (Tested against `pg_stat_activity`: the slowest close
//! seen was under 150 ms.)
//!
//! # Fairness and bounds
//!
//! - **PostgreSQL:** waiters of a key are served in the server's queue order; a shared
//!   request waits behind an exclusive request queued before it (except a reader joining a
//!   shared hold of its own client on the same connection, which the server grants at once).
//! - **File, reader-writer lock:** writers first. Every waiting acquisition passes the key's
//!   *turnstile* (a second lock file, `<lock file>.turn`, locked exclusively): a waiting
//!   writer holds it until the readers inside have left, so readers arriving after it wait
//!   behind it. A writer's wait is bounded by the holds already inside when it reached the
//!   turnstile, plus its turn there, where each acquirer ahead of it stays only until its own
//!   lock is granted (in order within a process; across processes in the kernel's wake-up
//!   order). Tested with three reader processes holding a key in an overlapping stream (30 ms
//!   each): a writer got it within 40 ms (it starved for seconds without the turnstile).
//!   `try_lock_shared` does not wait and does not pass the turnstile: it may overtake a
//!   waiting writer. A reader that takes a second shared hold of a key while holding one
//!   (recursive read) can deadlock with a waiting writer, as with any writer-preferring lock.
//! - **Semaphore:** no global queue across slots (see [`DistributedSemaphore`]).
//!
//! # Limits
//!
//! - **File backend:** the fencing counter lives in the lock file. Whoever deletes a lock file
//!   (a `tmp` cleaner, a person) restarts its name's tokens at 1: keep the lock directory out of
//!   reach of cleaners. A crash in the middle of the very first token write can leave a 1–7 byte
//!   file, reported as [`Error::CorruptLockFile`] until it is removed.
//! - **File backend, permissions:** new lock files get mode `0660` (owner and group), whatever
//!   the umask; users who share a lock directory share it through a group (a directory of
//!   mode `2770` owned by that group). Links, FIFOs, devices, files with a second hard link
//!   and world-writable files are refused ([`Error::UnsafeLockFile`]), never followed or
//!   written. Anyone who can write to the lock directory can still hold or pre-create a lock
//!   file: do not use a world-writable directory such as `/tmp` across users.
//! - **PostgreSQL:** the server enforces timeouts through `lock_timeout`, at most `i32::MAX`
//!   milliseconds (about 24.8 days): longer timeouts end there. Every wait on the network is
//!   bounded on the client ([`Error::Unresponsive`]): opening a session by `connect_timeout`,
//!   `try_lock` by `heartbeat_timeout`, `try_lock_for(t)` by `t + heartbeat_timeout`
//!   (pool checkout and the line at the bound included), a release by `heartbeat_timeout`.
//!   Only the server-side wait of an unbounded `lock` is unbounded: it relies on TCP
//!   keepalives (about 16 s unless you configured them) to notice a dead peer. The bounds are
//!   listed on [`PostgresOptions`].
//! - **PostgreSQL, a terminated server backend:** when the server ends the session holding a
//!   lock (`pg_terminate_backend`, a crash of that backend), the server frees the lock at
//!   once, and a waiter elsewhere may get it before the holder's connection can tell the
//!   holder (measured: 0.6 ms before the guard said lost). The lost signal cannot be earlier
//!   than the holder learns of it: only the [fencing token](FencingToken) protects the
//!   resource in that window. (A *silent* holder, by contrast, is told first: see
//!   [`DistributedGuard::is_lost`].)
//! - **Dropping a PostgreSQL guard** releases its lock on a background task: an acquisition of
//!   the same key right after the drop may still find it held. Use
//!   [`DistributedGuard::release`] when the next step depends on the key being free.
//! - **Transaction-scoped locks** ([`xact_lock`]) end with the transaction, and also when the
//!   caller rolls back to a savepoint taken before the lock (`ROLLBACK TO SAVEPOINT`).
//!
//! # Examples
//!
//! ```
//! use chainlock::distributed::LockClient;
//!
//! # fn main() -> Result<(), chainlock::distributed::Error> {
//! # let dir = std::env::temp_dir().join(format!("chainlock-doc-mod-{}", std::process::id()));
//! let locks = LockClient::file(&dir)?; // e.g. /run/myapp/locks
//! let guard = locks.blocking_lock("orders")?;
//! // ... append to the orders file, passing `guard.token()` along ...
//! assert!(locks.blocking_try_lock("orders")?.is_none());
//! guard.blocking_release()?;
//! let readers = (locks.blocking_lock_shared(42)?, locks.blocking_lock_shared(42)?);
//! assert!(locks.blocking_try_lock(42)?.is_none(), "readers exclude the writer");
//! # drop(readers);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(()) }
//! ```
//!
//! With Tokio:
//!
//! ```
//! # use chainlock::distributed::LockClient;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), chainlock::distributed::Error> {
//! # let dir = std::env::temp_dir().join(format!("chainlock-doc-mod-async-{}", std::process::id()));
//! let locks = LockClient::file(&dir)?;
//! let guard = locks.lock("orders").await?;
//! println!("holding orders with token {}", guard.token());
//! guard.release().await?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(()) }
//! ```
//!
#![doc = include_str!("../../docs/distributed.md")]

mod backend;
mod election;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
mod fencing;
mod file;
mod guard;
mod multi;
mod mutex;
mod name;
mod observed;
#[cfg(feature = "postgres")]
mod postgres;
mod runtime;
mod rwlock;
mod semaphore;

use backend::{Backend, Mode, Wait};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use election::{Leader, LeaderWatch, Leadership};
pub use error::Error;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use error::Stage;
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
pub use etcd::EtcdOptions;
pub use fencing::FencingToken;
pub use guard::DistributedGuard;
pub use multi::DistributedGuards;
pub use name::LockKey;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PostgresOptions;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{
    blocking_try_xact_lock, blocking_try_xact_lock_for, blocking_try_xact_lock_until,
    blocking_xact_lock, try_xact_lock, try_xact_lock_for, try_xact_lock_until, xact_lock,
};
pub use semaphore::{DistributedPermit, DistributedSemaphore};

/// A client of one lock backend: acquires locks by key ([`LockKey`]: a name or an integer).
///
/// Cloning is cheap and shares the backend (and, for PostgreSQL, its bounded set of
/// connections). Dropping the last clone and the last guard of a PostgreSQL client closes
/// every connection it opened (see the [module docs](self#connections-and-their-lifecycle)).
///
/// The methods are async-first (cancel safe, to use inside a Tokio runtime); each has a
/// blocking twin named `blocking_` + the same name, for callers without a runtime. Every
/// acquiring method takes every key kind: a name (`&str`, `&String`), an `i64` (or `i32`) or
/// an `(i32, i32)` advisory key.
///
/// | wait | exclusive (mutex, writer) | shared (reader) | several keys, all or nothing |
/// |---|---|---|---|
/// | as long as it takes | [`lock`](Self::lock) | [`lock_shared`](Self::lock_shared) | [`lock_all`](Self::lock_all) |
/// | not at all | [`try_lock`](Self::try_lock) | [`try_lock_shared`](Self::try_lock_shared) | [`try_lock_all`](Self::try_lock_all) |
/// | at most a `Duration` | [`try_lock_for`](Self::try_lock_for) | [`try_lock_shared_for`](Self::try_lock_shared_for) | [`try_lock_all_for`](Self::try_lock_all_for) |
/// | until an `Instant` | [`try_lock_until`](Self::try_lock_until) | [`try_lock_shared_until`](Self::try_lock_shared_until) | [`try_lock_all_until`](Self::try_lock_all_until) |
///
/// and a counting semaphore by key, [`semaphore`](Self::semaphore).
#[derive(Clone)]
pub struct LockClient {
    backend: Arc<dyn Backend>,
}

impl fmt::Debug for LockClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("LockClient");
        self.backend.describe(&mut debug);
        debug.finish()
    }
}

impl LockClient {
    /// A client of the file backend, with its lock files in `dir` (created if missing).
    ///
    /// Every process that locks the same names must use the same directory, on a local file
    /// system (file locks over NFS are not reliable). New lock files get mode `0660` (owner
    /// and group may lock), whatever the umask; a symbolic link, FIFO, device, hard-linked or
    /// world-writable file in the directory is refused, never followed or written. Lock files are never deleted: each keeps
    /// the fencing counter of its name. Do not delete them while any process may hold or wait
    /// for a lock (a deleted file would let a newcomer lock a fresh file; chainlock detects
    /// and retries on that for its own waiters, but cannot stop other programs).
    ///
    /// Fencing counters are written with `fdatasync` before the lock is handed out, so tokens
    /// stay increasing across machine crashes.
    ///
    /// A kernel wait cannot be withdrawn: a timed-out or cancelled wait (a `try_lock_for`, a
    /// `try_campaign_until`, a dropped future) leaves a helper thread asleep in the kernel,
    /// which gives the lock back as soon as it is granted. In that instant the name is held: a
    /// `try_` form that asks right after the holder leaves, in any process, may find it taken.
    /// Ask with a deadline (`try_lock_for`) when a wait left behind may be there.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the directory cannot be created.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-file-{}", std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.blocking_lock("../../etc/passwd")?; // any name is safe
    /// # drop(guard); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub fn file(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        Ok(Self {
            backend: Arc::new(file::FileBackend::new(&dir.into())?),
        })
    }

    /// A client of the PostgreSQL backend at `url` (`postgres://user@host:port/db` or
    /// `host=... user=...`), with default [`PostgresOptions`].
    ///
    /// Must be called inside a Tokio runtime (with I/O and time enabled): the client's
    /// connections are driven by tasks spawned on it. Needs PostgreSQL 15 or later.
    ///
    /// The fencing counter (the unlogged sequence `chainlock.token_counter`) and the table
    /// `chainlock.epochs` live in the schema `chainlock`, named in full by every statement,
    /// so clients of every role and `search_path` share them. If they do not exist yet, the
    /// client creates them (which needs `CREATE` on the database); once they exist, a role
    /// needs only `USAGE ON SCHEMA chainlock`, `USAGE, SELECT, UPDATE ON SEQUENCE
    /// chainlock.token_counter` and `SELECT, INSERT, UPDATE ON chainlock.epochs`. Each
    /// session sets its own `statement_timeout`, `idle_session_timeout`, keepalive and
    /// `search_path` settings, so server, database or role defaults cannot change its
    /// bounds.
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] if the URL is invalid or the server refuses (the message says why);
    /// [`Error::Unresponsive`] if the server does not answer within the connect timeout;
    /// [`Error::UnsupportedServer`] if it is older than PostgreSQL 15.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// let locks = chainlock::distributed::LockClient::postgres("postgres://locks@db.internal/app").await?;
    /// let guard = locks.lock("orders").await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn postgres(url: &str) -> Result<Self, Error> {
        Self::postgres_with(PostgresOptions::new(url)?).await
    }

    /// A client of the PostgreSQL backend with the given options; see [`LockClient::postgres`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::postgres`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use chainlock::distributed::{LockClient, PostgresOptions};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// let options = PostgresOptions::new("postgres://locks@db.internal/app")?.max_idle_connections(4);
    /// let locks = LockClient::postgres_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn postgres_with(options: PostgresOptions) -> Result<Self, Error> {
        // Boxed: opening a session (a TLS handshake, preparing statements) is a large future.
        let backend = Box::pin(postgres::PgBackend::connect(
            options,
            tokio::runtime::Handle::current(),
        ))
        .await?;
        Ok(Self {
            backend: Arc::new(backend),
        })
    }

    /// [`LockClient::postgres_with`] for callers without a runtime: the connections are driven
    /// by chainlock's background thread.
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] if the URL is invalid or the server refuses (the message says why);
    /// [`Error::Unresponsive`] if the server does not answer within the connect timeout;
    /// [`Error::UnsupportedServer`] if it is older than PostgreSQL 15.
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use chainlock::distributed::{LockClient, PostgresOptions};
    ///
    /// let locks = LockClient::blocking_postgres_with(PostgresOptions::new("postgres://locks@db.internal/app")?)?;
    /// let guard = locks.blocking_lock("orders")?;
    /// guard.blocking_release()?;
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[track_caller]
    pub fn blocking_postgres_with(options: PostgresOptions) -> Result<Self, Error> {
        let handle = runtime::handle().clone();
        let backend = runtime::block_on(Box::pin(postgres::PgBackend::connect(options, handle)))?;
        Ok(Self {
            backend: Arc::new(backend),
        })
    }

    /// The old name of [`LockClient::blocking_postgres_with`] (the blocking twin of
    /// [`LockClient::postgres_with`]).
    ///
    /// # Errors
    ///
    /// As [`LockClient::blocking_postgres_with`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[deprecated(note = "renamed `blocking_postgres_with`, the twin of `postgres_with`")]
    #[track_caller]
    pub fn blocking_postgres(options: PostgresOptions) -> Result<Self, Error> {
        Self::blocking_postgres_with(options)
    }

    /// A client of the etcd backend at `endpoints` (client URLs of the cluster's members, such
    /// as `http://10.0.0.1:2379`), with default [`EtcdOptions`] (a 10 s lease TTL).
    ///
    /// Locks use etcd's own algorithm, with the key layout of `etcdctl lock NAME` and Go's
    /// `concurrency.Mutex`: they and this client exclude each other on the same name (see the
    /// [module docs](self#etcd)). Must be called inside a Tokio runtime (with I/O and time
    /// enabled).
    ///
    /// # Errors
    ///
    /// [`Error::Etcd`] if an endpoint is invalid; [`Error::EtcdAuthentication`] if the cluster
    /// refuses the credentials of [`EtcdOptions::user`]; `Error::EtcdTls` (feature `etcd-tls`)
    /// if a member's certificate does not verify; [`Error::EtcdUnresponsive`] if no member
    /// answers within the connect timeout (the client connects and asks for a member's status
    /// before it returns).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// let locks = chainlock::distributed::LockClient::etcd(["http://10.0.0.1:2379", "http://10.0.0.2:2379"]).await?;
    /// let guard = locks.lock("orders").await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    pub async fn etcd<I, S>(endpoints: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::etcd_with(EtcdOptions::new(endpoints)).await
    }

    /// A client of the etcd backend with the given options; see [`LockClient::etcd`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::etcd`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use chainlock::distributed::{EtcdOptions, LockClient};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// let options = EtcdOptions::new(["http://10.0.0.1:2379"]).ttl(Duration::from_secs(20));
    /// let locks = LockClient::etcd_with(options).await?;
    /// # drop(locks); Ok(()) }
    /// ```
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    pub async fn etcd_with(options: EtcdOptions) -> Result<Self, Error> {
        let backend = Box::pin(etcd::EtcdBackend::connect(
            options,
            tokio::runtime::Handle::current(),
        ))
        .await?;
        Ok(Self {
            backend: Arc::new(backend),
        })
    }

    /// [`LockClient::etcd_with`] for callers without a runtime: the connection is driven by
    /// chainlock's background thread.
    ///
    /// # Errors
    ///
    /// As [`LockClient::etcd`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use chainlock::distributed::{EtcdOptions, LockClient};
    ///
    /// let locks = LockClient::blocking_etcd_with(EtcdOptions::new(["http://10.0.0.1:2379"]))?;
    /// let guard = locks.blocking_lock("orders")?;
    /// guard.blocking_release()?;
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[track_caller]
    pub fn blocking_etcd_with(options: EtcdOptions) -> Result<Self, Error> {
        let handle = runtime::handle().clone();
        let backend = runtime::block_on(Box::pin(etcd::EtcdBackend::connect(options, handle)))?;
        Ok(Self {
            backend: Arc::new(backend),
        })
    }

    /// The old name of [`LockClient::blocking_etcd_with`] (the blocking twin of
    /// [`LockClient::etcd_with`]).
    ///
    /// # Errors
    ///
    /// As [`LockClient::etcd`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    #[deprecated(note = "renamed `blocking_etcd_with`, the twin of `etcd_with`")]
    #[track_caller]
    pub fn blocking_etcd(options: EtcdOptions) -> Result<Self, Error> {
        Self::blocking_etcd_with(options)
    }

    /// The one acquisition every primitive goes through: `key` in `mode`, as `wait` allows.
    async fn lock_in(
        &self,
        key: LockKey<'_>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Option<DistributedGuard>, Error> {
        let held = observed::acquire(&*self.backend, key, mode, wait).await?;
        Ok(held.map(|(held, telemetry)| DistributedGuard {
            key: key.into(),
            name: key.to_string().into(),
            mode,
            telemetry,
            held: Some(held),
        }))
    }
}
