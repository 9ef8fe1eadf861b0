//! All-or-nothing acquisition of several keys within one deadline.
//!
//! The keys are taken one at a time in one global order (the order of [`LockKey`]: names
//! ascending by their UTF-8 bytes, then `bigint` keys, then pairs; each once:
//! `lock_order::ascending_unique`), the order every multi-key acquirer of every process
//! uses. Two acquirers whose sets overlap therefore meet first on the lowest name they share:
//! one waits there without holding anything the other still needs above it, so they never
//! deadlock one another. Every step waits only for what is left of the one deadline; when a
//! step fails (timeout or error), the names taken so far are released before the call returns.

use super::{DistributedGuard, Error, FencingToken, LockClient, LockKey, Mode, Wait, runtime};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

impl LockClient {
    async fn lock_all_in<'k, I>(
        &self,
        keys: I,
        wait: Wait,
    ) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        let order = crate::lock_order::ascending_unique(keys.into_iter().map(Into::into));
        let mut guards = Vec::with_capacity(order.len());
        for key in order {
            // Every step waits for what is left of the one deadline.
            match self.lock_in(key, Mode::Exclusive, wait.now()).await {
                Ok(Some(guard)) => guards.push(guard),
                Ok(None) => {
                    release_all(guards).await;
                    return Ok(None);
                }
                Err(err) => {
                    release_all(guards).await;
                    return Err(err);
                }
            }
        }
        Ok(Some(DistributedGuards { guards }))
    }

    /// Locks every key of `keys` (exclusive, as [`LockClient::lock`]), waiting as long as it
    /// takes; all of them or, on error, none. `keys` is anything iterable over keys of any
    /// kind: `["a", "b"]`, `&["a", "b"]`, `[1_i64, 2]`, `[(7, 1), (7, 2)]`, a `Vec<LockKey>`.
    ///
    /// The keys are taken in one global order (the order of [`LockKey`]: names ascending by
    /// their bytes, then integer keys, then pairs; duplicates once), so
    /// callers of every process that lock overlapping sets this way never deadlock one
    /// another, whatever order they list the names in. Mixing this with nested single-name
    /// acquisitions in another order can still deadlock, as with any locks.
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock`]; the names acquired before the error are released before
    /// this returns.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the guards taken so far (the PostgreSQL backend
    /// then unlocks them on a background task, as a dropped guard does).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// // A transfer between two accounts: another transfer listing them the other way round
    /// // takes them in the same order, so the two never deadlock.
    /// let both = locks.lock_all(&["account-7", "account-3"]).await?;
    /// assert_eq!(both.names().collect::<Vec<_>>(), ["account-3", "account-7"]);
    /// assert!(locks.try_lock("account-7").await?.is_none());
    /// both.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn lock_all<'k, I>(&self, keys: I) -> Result<DistributedGuards, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        let guard = self.lock_all_in(keys, Wait::Forever).await?;
        Ok(guard.expect("an unbounded wait ends with the locks"))
    }

    /// Locks every key of `keys` if each is free now; `Ok(None)`, holding none, if one
    /// is held. See [`LockClient::lock_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Cancel safety
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let held = locks.lock("b").await?;
    /// assert!(locks.try_lock_all(&["a", "b", "c"]).await?.is_none());
    /// assert!(locks.try_lock("a").await?.is_some(), "nothing stays held");
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_all<'k, I>(&self, keys: I) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        self.lock_all_in(keys, Wait::Never).await
    }

    /// Locks every key of `keys` within one deadline, `timeout` from now; `Ok(None)`,
    /// holding none, if they could not all be taken by then. See [`LockClient::lock_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Cancel safety
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let held = locks.lock("z").await?;
    /// let all = locks.try_lock_all_for(&["a", "z"], Duration::from_millis(10)).await?;
    /// assert!(all.is_none(), "`z` stayed held; `a` was released again");
    /// assert!(locks.try_lock("a").await?.is_some());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_all_for<'k, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        self.lock_all_in(keys, Wait::at_most(timeout)).await
    }

    /// Locks every key of `keys` by `deadline`; `Ok(None)`, holding none, if they could not
    /// all be taken by then. See [`LockClient::lock_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Cancel safety
    ///
    /// As [`LockClient::lock_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::{Duration, Instant};
    /// let held = locks.lock(2).await?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(locks.try_lock_all_until([1_i64, 2, 3], deadline).await?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_all_until<'k, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        self.lock_all_in(keys, Wait::until(deadline)).await
    }

    /// Blocking [`LockClient::lock_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
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
    /// let all = locks.blocking_lock_all(&["x", "y", "x"])?;
    /// assert_eq!(all.len(), 2, "duplicates are taken once");
    /// all.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_lock_all<'k, I>(&self, keys: I) -> Result<DistributedGuards, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        runtime::block_on(self.lock_all(keys))
    }

    /// Blocking [`LockClient::try_lock_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
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
    /// let all = locks.blocking_try_lock_all(&["x", "y"])?.expect("free");
    /// assert!(locks.blocking_try_lock_all(&["y", "z"])?.is_none());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_all<'k, I>(&self, keys: I) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        runtime::block_on(self.try_lock_all(keys))
    }

    /// Blocking [`LockClient::try_lock_all_for`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
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
    /// let all = locks.blocking_try_lock_all_for(&["x", "y"], Duration::from_secs(1))?;
    /// assert!(all.is_some());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_all_for<'k, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        runtime::block_on(self.try_lock_all_for(keys, timeout))
    }

    /// Blocking [`LockClient::try_lock_all_until`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::lock_all`].
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
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// let all = locks.blocking_try_lock_all_until([(7, 1), (7, 2)], deadline)?;
    /// assert_eq!(all.map(|all| all.len()), Some(2));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_lock_all_until<'k, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Result<Option<DistributedGuards>, Error>
    where
        I: IntoIterator,
        I::Item: Into<LockKey<'k>>,
    {
        runtime::block_on(self.try_lock_all_until(keys, deadline))
    }
}

/// Releases `guards`, last taken first, ignoring errors: a failed release closes the file or
/// the connection, which releases the lock too.
async fn release_all(guards: Vec<DistributedGuard>) {
    for guard in guards.into_iter().rev() {
        drop(guard.release().await);
    }
}

/// Proof of holding every lock of a [`LockClient::lock_all`] call (the plural of
/// [`DistributedGuard`]); releases them all when dropped.
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct DistributedGuards {
    /// In acquisition order (ascending names).
    guards: Vec<DistributedGuard>,
}

impl fmt::Debug for DistributedGuards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.guards).finish()
    }
}

impl DistributedGuards {
    /// The held names, in the order they were taken (ascending, each once).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let all = locks.blocking_lock_all(&["b", "a", "b"])?;
    /// assert_eq!(all.names().collect::<Vec<_>>(), ["a", "b"]);
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.guards.iter().map(DistributedGuard::name)
    }

    /// How many distinct names are held.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let none = locks.blocking_lock_all::<[&str; 0]>([])?;
    /// assert!(none.is_empty());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no name is held (an empty list was asked for).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert!(!locks.blocking_lock_all(&["a"])?.is_empty());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The guards, one per name, in the order they were taken.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let all = locks.blocking_lock_all(&["a", "b"])?;
    /// for guard in all.guards() {
    ///     println!("{} fenced by {}", guard.name(), guard.token());
    /// }
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    pub fn guards(&self) -> &[DistributedGuard] {
        &self.guards
    }

    /// The fencing token of `key`, if it is one of the held keys.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let all = locks.blocking_lock_all(&["a", "b"])?;
    /// assert!(all.token("a").is_some());
    /// assert!(all.token("c").is_none());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token<'k>(&self, key: impl Into<LockKey<'k>>) -> Option<FencingToken> {
        let key = key.into();
        self.guards
            .binary_search_by(|guard| guard.key().cmp(&key))
            .ok()
            .map(|index| self.guards[index].token())
    }

    /// Whether any of the locks is known to be lost (see [`DistributedGuard::is_lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert!(!locks.blocking_lock_all(&["a", "b"])?.is_lost());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(DistributedGuard::is_lost)
    }

    /// Completes when any of the locks is lost (see [`DistributedGuard::lost`]); never
    /// completes for an empty set or the file backend.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn transfer() {}
    /// # async fn demo(locks: chainlock::distributed::LockClient) -> Result<(), chainlock::distributed::Error> {
    /// let both = locks.lock_all(&["account-3", "account-7"]).await?;
    /// tokio::select! {
    ///     () = transfer() => both.release().await?,
    ///     () = both.lost() => eprintln!("a lock was lost: stopped"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        let mut waits: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = self
            .guards
            .iter()
            .map(|guard| Box::pin(guard.lost()) as Pin<Box<dyn Future<Output = ()> + Send>>)
            .collect();
        std::future::poll_fn(|cx| {
            if waits
                .iter_mut()
                .any(|wait| wait.as_mut().poll(cx).is_ready())
            {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }

    /// Releases every lock (last taken first) and reports the first failure.
    ///
    /// # Errors
    ///
    /// The first error of [`DistributedGuard::release`] among the locks; every lock is
    /// released either way.
    ///
    /// # Cancel safety
    ///
    /// As [`DistributedGuard::release`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// locks.lock_all(&["a", "b"]).await?.release().await?;
    /// assert!(locks.try_lock_all(&["a", "b"]).await?.is_some());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<(), Error> {
        let mut first = Ok(());
        for guard in self.guards.into_iter().rev() {
            let released = guard.release().await;
            if first.is_ok() {
                first = released;
            }
        }
        first
    }

    /// Blocking [`DistributedGuards::release`].
    ///
    /// # Errors
    ///
    /// As [`DistributedGuards::release`].
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
    /// locks.blocking_lock_all(&["a", "b"])?.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_release(self) -> Result<(), Error> {
        runtime::block_on(self.release())
    }

    /// The guards, to release one at a time.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let mut guards = locks.blocking_lock_all(&["a", "b"])?.into_guards();
    /// guards.pop().expect("b").blocking_release()?; // keep `a` a little longer
    /// # drop(guards); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<DistributedGuard> {
        self.guards
    }
}
