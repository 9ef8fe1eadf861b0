//! The reader-writer lock by key: the shared mode, beside the exclusive mode that
//! [`LockClient::lock`] (the mutex) already is.
//!
//! A key has one lock with two modes: any number of shared holders, or one exclusive holder,
//! across every process and machine of the backend. Both modes go through the one acquisition
//! path of the backend ([`Mode`]): the same session sharing and bound (PostgreSQL), the same
//! deadlines, loss signal and tokens. Shared guards are [`DistributedGuard`]s.

use super::{DistributedGuard, Error, LockClient, LockKey, Mode, Wait, runtime};
use std::time::{Duration, Instant};

impl LockClient {
    /// Locks `key` in **shared** mode (a reader), waiting as long as it takes.
    ///
    /// The lock of a key has two modes: shared (this method and its twins) and exclusive
    /// ([`LockClient::lock`], the mutex, is the exclusive mode). Any number of shared
    /// guards of a key may be alive at once, across every process and machine sharing the
    /// backend, but never together with an exclusive one. On PostgreSQL, shared holds take no
    /// connection of their own: they share the client's bounded sessions as exclusive holds
    /// do, and readers of one key in one client may share one session (the server counts
    /// them), so any number of concurrent readers is granted within
    /// [`PostgresOptions::max_connections`](super::PostgresOptions::max_connections).
    ///
    /// Fencing tokens order the writers: an exclusive acquisition's token is greater than the
    /// token of every earlier acquisition of the key, shared or exclusive. A shared guard's
    /// token is at least the token of the last exclusive acquisition before it and less than
    /// the token of every later one: pass it with reads to tell which writer's data they saw.
    /// (The PostgreSQL backend draws a fresh token for every shared acquisition; the file
    /// backend gives the last exclusive holder's token, 0 if there was none, since readers
    /// cannot write the counter they share.)
    ///
    /// Fairness, writers first:
    ///
    /// - **File:** every waiting acquisition passes the key's turnstile (see the
    ///   [module docs](super#fairness-and-bounds)): a waiting writer holds it, so readers that
    ///   arrive after it wait behind it, and the writer waits only for the readers already
    ///   inside. [`try_lock_shared`](Self::try_lock_shared) does not wait and may overtake a
    ///   waiting writer.
    /// - **PostgreSQL:** the server queues requests, and a shared request waits behind an
    ///   exclusive request queued before it. One exception: a reader that joins a shared hold
    ///   of its own client on the same session is granted at once (the server does not queue
    ///   a session behind itself).
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let reader = locks.lock_shared("catalog").await?;
    /// let another = locks.lock_shared("catalog").await?; // readers share
    /// assert!(locks.try_lock("catalog").await?.is_none(), "no writer meanwhile");
    /// reader.release().await?;
    /// another.release().await?;
    /// let writer = locks.try_lock("catalog").await?.expect("free again");
    /// # drop(writer); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn lock_shared<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<DistributedGuard, Error> {
        let guard = self
            .lock_in(key.into(), Mode::Shared, Wait::Forever)
            .await?;
        Ok(guard.expect("an unbounded wait ends with the lock"))
    }

    /// Locks `key` in shared mode if no exclusive holder has it now; `Ok(None)` if one has.
    /// See [`LockClient::lock_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let writer = locks.lock("catalog").await?;
    /// assert!(locks.try_lock_shared("catalog").await?.is_none(), "a writer holds it");
    /// writer.release().await?;
    /// assert!(locks.try_lock_shared("catalog").await?.is_some());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_shared<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Shared, Wait::Never).await
    }

    /// Locks `key` in shared mode, waiting at most `timeout`; `Ok(None)` if an exclusive
    /// holder still has it then. A zero timeout is [`LockClient::try_lock_shared`]. See
    /// [`LockClient::lock_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let writer = locks.lock("catalog").await?;
    /// let reader = locks.try_lock_shared_for("catalog", Duration::from_millis(10)).await?;
    /// assert!(reader.is_none(), "still written after 10 ms");
    /// writer.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_shared_for<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Shared, Wait::at_most(timeout))
            .await
    }

    /// Locks `key` in shared mode, waiting until `deadline` at most; `Ok(None)` if an
    /// exclusive holder still has it then. See [`LockClient::lock_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::{Duration, Instant};
    /// let writer = locks.lock(7).await?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(locks.try_lock_shared_until(7, deadline).await?.is_none());
    /// writer.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_shared_until<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        deadline: Instant,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Shared, Wait::until(deadline))
            .await
    }

    /// Blocking [`LockClient::lock_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
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
    /// let a = locks.blocking_lock_shared("catalog")?;
    /// let b = locks.blocking_lock_shared("catalog")?;
    /// a.blocking_release()?;
    /// b.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_lock_shared<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<DistributedGuard, Error> {
        runtime::block_on(self.lock_shared(key))
    }

    /// Blocking [`LockClient::try_lock_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
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
    /// let reader = locks.blocking_try_lock_shared("catalog")?.expect("free");
    /// assert!(locks.blocking_try_lock("catalog")?.is_none(), "a reader holds it");
    /// drop(reader);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_shared<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock_shared(key))
    }

    /// Blocking [`LockClient::try_lock_shared_for`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
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
    /// use std::time::Duration;
    /// let writer = locks.blocking_lock("catalog")?;
    /// assert!(locks.blocking_try_lock_shared_for("catalog", Duration::from_millis(10))?.is_none());
    /// drop(writer);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_shared_for<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock_shared_for(key, timeout))
    }

    /// Blocking [`LockClient::try_lock_shared_until`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
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
    /// use std::time::{Duration, Instant};
    /// let writer = locks.blocking_lock((1, 2))?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(locks.blocking_try_lock_shared_until((1, 2), deadline)?.is_none());
    /// drop(writer);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_shared_until<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        deadline: Instant,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock_shared_until(key, deadline))
    }
}
