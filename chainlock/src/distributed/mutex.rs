//! The mutex by key: the exclusive mode of a key's lock (the writer of the reader-writer
//! lock, whose shared mode is `rwlock.rs`), with a [`FencingToken`](super::FencingToken) on
//! every guard.

use super::{DistributedGuard, Error, LockClient, LockKey, Mode, Wait, runtime};
use std::time::{Duration, Instant};

/// The exclusive mode: the mutex (and the writer of the reader-writer lock).
impl LockClient {
    /// Locks `key` exclusively, waiting as long as it takes.
    ///
    /// `key` is a name (`&str`, `&String`) or an integer advisory key (`i64`, `i32`,
    /// `(i32, i32)`): see [`LockKey`]. The same holds for every method taking a `key`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Postgres`] when the backend fails; the lock is then not held.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes leaves the lock unheld (a grant
    /// that races with the cancellation is released at once).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let guard = locks.lock("orders").await?;
    /// // ... work on the orders, passing `guard.token()` to the storage ...
    /// guard.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn lock<'k>(&self, key: impl Into<LockKey<'k>>) -> Result<DistributedGuard, Error> {
        let guard = self
            .lock_in(key.into(), Mode::Exclusive, Wait::Forever)
            .await?;
        Ok(guard.expect("an unbounded wait ends with the lock"))
    }

    /// Locks `key` exclusively if it is free now; `Ok(None)` if it is held (by anyone, this
    /// client included).
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
    /// let held = locks.try_lock("orders").await?.expect("free");
    /// assert!(locks.try_lock("orders").await?.is_none(), "held by `held`");
    /// held.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Exclusive, Wait::Never).await
    }

    /// Locks `key` exclusively, waiting at most `timeout`; `Ok(None)` if it is still held then.
    /// A zero timeout is [`LockClient::try_lock`].
    ///
    /// The PostgreSQL backend waits with the server's `lock_timeout` (whole milliseconds, at
    /// most `i32::MAX`); a grant that races with the timeout is released before this returns
    /// `Ok(None)`.
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
    /// let held = locks.lock("orders").await?;
    /// let late = locks.try_lock_for("orders", Duration::from_millis(10)).await?;
    /// assert!(late.is_none(), "still held after 10 ms");
    /// held.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_for<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Exclusive, Wait::at_most(timeout))
            .await
    }

    /// Locks `key` exclusively, waiting until `deadline` at most; `Ok(None)` if it is still
    /// held then. A deadline already passed is [`LockClient::try_lock`].
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
    /// let held = locks.lock(42).await?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(locks.try_lock_until(42, deadline).await?.is_none());
    /// held.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_until<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        deadline: Instant,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.lock_in(key.into(), Mode::Exclusive, Wait::until(deadline))
            .await
    }

    /// Blocking [`LockClient::lock`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`].
    ///
    /// # Panics
    ///
    /// Panics when called from an asynchronous context (use [`LockClient::lock`] there).
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
    pub fn blocking_lock<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<DistributedGuard, Error> {
        runtime::block_on(self.lock(key))
    }

    /// Blocking [`LockClient::try_lock`].
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
    /// let held = locks.blocking_try_lock("orders")?.expect("free");
    /// assert!(locks.blocking_try_lock("orders")?.is_none());
    /// drop(held);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock(key))
    }

    /// Blocking [`LockClient::try_lock_for`].
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
    /// let held = locks.blocking_lock("orders")?;
    /// assert!(locks.blocking_try_lock_for("orders", Duration::from_millis(10))?.is_none());
    /// drop(held);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_for<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock_for(key, timeout))
    }

    /// Blocking [`LockClient::try_lock_until`].
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
    /// let held = locks.blocking_lock((7, 42))?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(locks.blocking_try_lock_until((7, 42), deadline)?.is_none());
    /// drop(held);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_until<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        deadline: Instant,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_lock_until(key, deadline))
    }
}
