//! [`DistributedGuard`]: the proof of one hold, whatever the backend.

use super::backend::{Hold, Mode};
use super::{Error, FencingToken, LockKey, name, runtime};
use crate::telemetry::hooks::Held;
use std::fmt;

/// Proof of holding a lock of a [`LockClient`](super::LockClient) (exclusive or shared); releases it when dropped.
///
/// Dropping releases without reporting errors (the PostgreSQL backend unlocks on a background
/// task); [`DistributedGuard::release`](super::DistributedGuard::release) reports them.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct DistributedGuard {
    pub(super) key: name::OwnedKey,
    pub(super) name: Box<str>,
    pub(super) mode: Mode,
    /// The telemetry's record of the hold (zero-sized without the `telemetry` feature);
    /// declared before `held` so that it ends before the backend's hold drops.
    pub(super) telemetry: Held,
    /// `None` only after an explicit release took it.
    pub(super) held: Option<Box<dyn Hold>>,
}

impl fmt::Debug for DistributedGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name: String = self.name.chars().take(64).collect();
        f.debug_struct("DistributedGuard")
            .field("name", &name)
            .field("shared", &self.is_shared())
            .field("token", &self.token())
            .field("lost", &self.is_lost())
            .finish_non_exhaustive()
    }
}

impl DistributedGuard {
    fn held(&self) -> &dyn Hold {
        self.held.as_deref().expect("a live guard holds its lock")
    }

    /// The key this guard holds.
    pub(crate) fn key(&self) -> LockKey<'_> {
        self.key.as_key()
    }

    /// The name this guard holds; for an integer key, its [`LockKey`]'s display form
    /// (`advisory(42)`, `advisory(7, 42)`), a label for humans and logs.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.blocking_lock("orders")?;
    /// assert_eq!(guard.name(), "orders");
    /// let numbered = locks.blocking_lock((7, 42))?;
    /// assert_eq!(numbered.name(), "advisory(7, 42)");
    /// # drop(guard); drop(numbered);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a shared hold ([`LockClient::lock_shared`](super::LockClient::lock_shared)) rather than an exclusive
    /// one.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert!(locks.blocking_lock_shared("catalog")?.is_shared());
    /// assert!(!locks.blocking_lock("orders")?.is_shared());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_shared(&self) -> bool {
        self.mode == Mode::Shared
    }

    /// The fencing token of this acquisition: greater than the token of every earlier
    /// exclusive acquisition of this key (see [`LockClient::lock_shared`](super::LockClient::lock_shared) for shared holds).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let first = locks.blocking_lock("orders")?.token();
    /// let second = locks.blocking_lock("orders")?.token();
    /// assert!(second > first);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token(&self) -> FencingToken {
        self.held().token()
    }

    /// Whether the lock is known to be lost (another holder may have it now). Once `true`, it
    /// stays `true`.
    ///
    /// File locks are never lost while the process lives, so this is always `false` for the
    /// file backend. For PostgreSQL, it becomes `true` as soon as the holding connection is
    /// seen closed (server restart or crash, backend terminated, connection reset), when a
    /// heartbeat goes unanswered, and — computed from the clock alone, whether or not any task
    /// of the process could run (a paused process, a blocked runtime, a partition) — once the
    /// last confirmed contact with the server is [`PostgresOptions::loss_after`](super::PostgresOptions::loss_after) old (6 s by
    /// default). The server may release the lock of a silent client only
    /// [`PostgresOptions::server_release_after`](super::PostgresOptions::server_release_after) after that contact (9 s), so a silent
    /// holder's guard says `true` at least `heartbeat_interval + heartbeat_timeout` (3 s)
    /// before anyone else can hold the name. A contact counts from the instant its request was
    /// sent; a healthy connection confirms one every `heartbeat_interval`.
    ///
    /// **Not before the server acts:** when the server ends the holding session itself (an
    /// administrator's `pg_terminate_backend`, a crash of that backend), the server frees the
    /// lock at once, and a waiter elsewhere may hold it *before* this guard can see the
    /// connection closed (a fraction of a millisecond to a round trip later). Only the
    /// [fencing token](Self::token) protects the resource in that window.
    ///
    /// For etcd, it becomes `true` once the client's lease is lost: `TTL − margin` after the
    /// last confirmed keep-alive was sent (on the clock alone, as above), or at once when the
    /// server says the lease is gone. The lease is the client's, shared by all its holds, so
    /// every hold of the client is lost at once, each told.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.blocking_lock("orders")?;
    /// assert!(!guard.is_lost(), "file locks are lost only with the process");
    /// # drop(guard);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.held().is_lost()
    }

    /// Completes when the lock is lost (see [`DistributedGuard::is_lost`](super::DistributedGuard::is_lost)); never completes for
    /// the file backend. Race it against the work done under the lock to stop that work.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn write_report() {}
    /// # async fn demo(locks: chainlock::distributed::LockClient) -> Result<(), chainlock::distributed::Error> {
    /// let guard = locks.lock("report").await?;
    /// tokio::select! {
    ///     () = write_report() => guard.release().await?,
    ///     () = guard.lost() => eprintln!("lock lost: stopped writing"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.held().lost().await;
    }

    /// Releases the lock and reports whether that worked.
    ///
    /// # Errors
    ///
    /// [`Error::Lost`] if the lock had been lost before; [`Error::Io`], [`Error::Postgres`] or
    /// [`Error::Unresponsive`] (after `heartbeat_timeout`) if unlocking failed (the lock is
    /// then released by the kernel or the server when the file or connection is closed, which
    /// this does).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe in the sense that the outcome is unknown when the future is dropped; the
    /// lock is released either way.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.lock("orders").await?;
    /// guard.release().await?;
    /// assert!(locks.try_lock("orders").await?.is_some(), "free right after a release");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<(), Error> {
        std::mem::take(&mut self.telemetry).released();
        self.held
            .take()
            .expect("a live guard holds its lock")
            .release()
            .await
    }

    /// Blocking [`DistributedGuard::release`](super::DistributedGuard::release).
    ///
    /// # Errors
    ///
    /// As [`DistributedGuard::release`](super::DistributedGuard::release).
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.blocking_lock("orders")?;
    /// guard.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_release(self) -> Result<(), Error> {
        runtime::block_on(self.release())
    }
}
