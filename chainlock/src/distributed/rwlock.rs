//! The reader-writer lock by name: the shared mode, beside the exclusive mode that
//! [`LockClient::acquire`] (the mutex) already is.
//!
//! A name has one lock with two modes: any number of shared holders, or one exclusive holder,
//! across every process and machine of the backend. The file backend locks the name's lock
//! file with `flock(LOCK_SH)` (`file/shared.rs`), PostgreSQL the name's advisory key with
//! `pg_advisory_lock_shared` (`postgres/shared.rs`). Shared guards are [`DistributedGuard`]s:
//! tokens, the lost signal, release and drop work as for the mutex.

use super::{Backend, DistributedGuard, Error, Held, LockClient, Wait, runtime};
use std::time::Duration;

impl LockClient {
    async fn acquire_shared_with(
        &self,
        name: &str,
        wait: Wait,
    ) -> Result<Option<DistributedGuard>, Error> {
        let held = match &self.backend {
            Backend::File(file) => file.acquire_shared(name, wait).await?.map(Held::File),
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => pg
                .acquire_shared(name, wait)
                .await?
                .map(Held::PostgresShared),
        };
        Ok(held.map(|held| DistributedGuard {
            name: name.into(),
            held: Some(held),
        }))
    }

    /// Acquires the lock `name` in **shared** mode (a reader), waiting as long as it takes.
    ///
    /// The lock of a name has two modes: shared (this method and its twins) and exclusive
    /// ([`LockClient::acquire`], the mutex, is the exclusive mode). Any number of shared
    /// guards of a name may be alive at once, across every process and machine sharing the
    /// backend, but never together with an exclusive one.
    ///
    /// Fencing tokens order the writers: an exclusive acquisition's token is greater than the
    /// token of every earlier acquisition of the name, shared or exclusive. A shared guard's
    /// token is at least the token of the last exclusive acquisition before it and less than
    /// the token of every later one: pass it with reads to tell which writer's data they saw.
    /// (The PostgreSQL backend draws a fresh token for every shared acquisition; the file
    /// backend gives the last exclusive holder's token, 0 if there was none, since readers
    /// cannot write the counter they share.)
    ///
    /// Fairness: PostgreSQL queues requests on the server, and a shared request waits behind
    /// an exclusive request queued before it, so a steady stream of readers does not starve a
    /// writer. The file backend has `flock`'s order, which promises none: a steady stream of
    /// overlapping readers can starve a writer.
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::acquire`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let reader = locks.acquire_shared("catalog").await?;
    /// let another = locks.acquire_shared("catalog").await?; // readers share
    /// assert!(locks.try_acquire("catalog").await?.is_none(), "no writer meanwhile");
    /// reader.release().await?;
    /// another.release().await?;
    /// let writer = locks.try_acquire("catalog").await?.expect("free again");
    /// # drop(writer); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn acquire_shared(&self, name: &str) -> Result<DistributedGuard, Error> {
        let guard = self.acquire_shared_with(name, Wait::Forever).await?;
        Ok(guard.expect("an unbounded wait ends with the lock"))
    }

    /// Acquires the lock `name` in shared mode if no exclusive holder has it now; `Ok(None)`
    /// otherwise. See [`LockClient::acquire_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::acquire`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let writer = locks.acquire("catalog").await?;
    /// assert!(locks.try_acquire_shared("catalog").await?.is_none(), "a writer holds it");
    /// writer.release().await?;
    /// assert!(locks.try_acquire_shared("catalog").await?.is_some());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_shared(&self, name: &str) -> Result<Option<DistributedGuard>, Error> {
        self.acquire_shared_with(name, Wait::Never).await
    }

    /// Acquires the lock `name` in shared mode, waiting at most `timeout`; `Ok(None)` if an
    /// exclusive holder still has it then. A zero timeout is
    /// [`LockClient::try_acquire_shared`]. See [`LockClient::acquire_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`LockClient::acquire`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let writer = locks.acquire("catalog").await?;
    /// let reader = locks.acquire_shared_timeout("catalog", Duration::from_millis(10)).await?;
    /// assert!(reader.is_none(), "still written after 10 ms");
    /// writer.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn acquire_shared_timeout(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        self.acquire_shared_with(name, Wait::from_timeout(timeout))
            .await
    }

    /// Blocking [`LockClient::acquire_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
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
    /// let a = locks.blocking_acquire_shared("catalog")?;
    /// let b = locks.blocking_acquire_shared("catalog")?;
    /// a.blocking_release()?;
    /// b.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_acquire_shared(&self, name: &str) -> Result<DistributedGuard, Error> {
        runtime::block_on(self.acquire_shared(name))
    }

    /// Blocking [`LockClient::try_acquire_shared`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
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
    /// let reader = locks.blocking_try_acquire_shared("catalog")?.expect("free");
    /// assert!(locks.blocking_try_acquire("catalog")?.is_none(), "a reader holds it");
    /// drop(reader);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_acquire_shared(
        &self,
        name: &str,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.try_acquire_shared(name))
    }

    /// Blocking [`LockClient::acquire_shared_timeout`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`].
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
    /// let writer = locks.blocking_acquire("catalog")?;
    /// assert!(locks.blocking_acquire_shared_timeout("catalog", Duration::from_millis(10))?.is_none());
    /// drop(writer);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_acquire_shared_timeout(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<DistributedGuard>, Error> {
        runtime::block_on(self.acquire_shared_timeout(name, timeout))
    }
}
