//! All-or-nothing acquisition of several names within one deadline.
//!
//! The names are taken one at a time in one global order (ascending by their UTF-8 bytes, each
//! once: `lock_order::ascending_unique`), the order every multi-name acquirer of every process
//! uses. Two acquirers whose sets overlap therefore meet first on the lowest name they share:
//! one waits there without holding anything the other still needs above it, so they never
//! deadlock one another. Every step waits only for what is left of the one deadline; when a
//! step fails (timeout or error), the names taken so far are released before the call returns.

use super::{DistributedGuard, Error, FencingToken, LockClient, Wait, runtime};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;

impl LockClient {
    async fn acquire_all_with<S: AsRef<str>>(
        &self,
        names: &[S],
        wait: Wait,
    ) -> Result<Option<MultiGuard>, Error> {
        let order = crate::lock_order::ascending_unique(names.iter().map(AsRef::as_ref));
        let deadline = match wait {
            Wait::For(timeout) => Instant::now().checked_add(timeout),
            Wait::Never | Wait::Forever => None,
        };
        let mut guards = Vec::with_capacity(order.len());
        for name in order {
            let step = match (wait, deadline) {
                (Wait::Never, _) => Wait::Never,
                (_, Some(deadline)) => {
                    Wait::from_timeout(deadline.saturating_duration_since(Instant::now()))
                }
                (_, None) => Wait::Forever,
            };
            match self.acquire_with(name, step).await {
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
        Ok(Some(MultiGuard { guards }))
    }

    /// Acquires every lock of `names` (exclusive, as [`LockClient::acquire`]), waiting as
    /// long as it takes; all of them or, on error, none.
    ///
    /// The names are taken in one global order (ascending by their bytes, duplicates once), so
    /// callers of every process that lock overlapping sets this way never deadlock one
    /// another, whatever order they list the names in. Mixing this with nested single-name
    /// acquisitions in another order can still deadlock, as with any locks.
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire`]; the names acquired before the error are released before
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
    /// let both = locks.acquire_all(&["account-7", "account-3"]).await?;
    /// assert_eq!(both.names().collect::<Vec<_>>(), ["account-3", "account-7"]);
    /// assert!(locks.try_acquire("account-7").await?.is_none());
    /// both.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn acquire_all<S: AsRef<str>>(&self, names: &[S]) -> Result<MultiGuard, Error> {
        let guard = self.acquire_all_with(names, Wait::Forever).await?;
        Ok(guard.expect("an unbounded wait ends with the locks"))
    }

    /// Acquires every lock of `names` if each is free now; `Ok(None)`, holding none, if one
    /// is held. See [`LockClient::acquire_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire_all`].
    ///
    /// # Cancel safety
    ///
    /// As [`LockClient::acquire_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let held = locks.acquire("b").await?;
    /// assert!(locks.try_acquire_all(&["a", "b", "c"]).await?.is_none());
    /// assert!(locks.try_acquire("a").await?.is_some(), "nothing stays held");
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_all<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<Option<MultiGuard>, Error> {
        self.acquire_all_with(names, Wait::Never).await
    }

    /// Acquires every lock of `names` within one deadline, `timeout` from now; `Ok(None)`,
    /// holding none, if they could not all be taken by then. See [`LockClient::acquire_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire_all`].
    ///
    /// # Cancel safety
    ///
    /// As [`LockClient::acquire_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), chainlock::distributed::Error> {
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// use std::time::Duration;
    /// let held = locks.acquire("z").await?;
    /// let all = locks.acquire_all_timeout(&["a", "z"], Duration::from_millis(10)).await?;
    /// assert!(all.is_none(), "`z` stayed held; `a` was released again");
    /// assert!(locks.try_acquire("a").await?.is_some());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn acquire_all_timeout<S: AsRef<str>>(
        &self,
        names: &[S],
        timeout: Duration,
    ) -> Result<Option<MultiGuard>, Error> {
        self.acquire_all_with(names, Wait::from_timeout(timeout))
            .await
    }

    /// Blocking [`LockClient::acquire_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire_all`].
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
    /// let all = locks.blocking_acquire_all(&["x", "y", "x"])?;
    /// assert_eq!(all.len(), 2, "duplicates are taken once");
    /// all.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_acquire_all<S: AsRef<str>>(&self, names: &[S]) -> Result<MultiGuard, Error> {
        runtime::block_on(self.acquire_all(names))
    }

    /// Blocking [`LockClient::try_acquire_all`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire_all`].
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
    /// let all = locks.blocking_try_acquire_all(&["x", "y"])?.expect("free");
    /// assert!(locks.blocking_try_acquire_all(&["y", "z"])?.is_none());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_acquire_all<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<Option<MultiGuard>, Error> {
        runtime::block_on(self.try_acquire_all(names))
    }

    /// Blocking [`LockClient::acquire_all_timeout`].
    ///
    /// # Errors
    ///
    /// As [`LockClient::acquire_all`].
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
    /// let all = locks.blocking_acquire_all_timeout(&["x", "y"], Duration::from_secs(1))?;
    /// assert!(all.is_some());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_acquire_all_timeout<S: AsRef<str>>(
        &self,
        names: &[S],
        timeout: Duration,
    ) -> Result<Option<MultiGuard>, Error> {
        runtime::block_on(self.acquire_all_timeout(names, timeout))
    }
}

/// Releases `guards`, last taken first, ignoring errors: a failed release closes the file or
/// the connection, which releases the lock too.
async fn release_all(guards: Vec<DistributedGuard>) {
    for guard in guards.into_iter().rev() {
        drop(guard.release().await);
    }
}

/// Proof of holding every lock of a [`LockClient::acquire_all`] call; releases them all when
/// dropped.
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MultiGuard {
    /// In acquisition order (ascending names).
    guards: Vec<DistributedGuard>,
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.guards).finish()
    }
}

impl MultiGuard {
    /// The held names, in the order they were taken (ascending, each once).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let all = locks.blocking_acquire_all(&["b", "a", "b"])?;
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
    /// let none = locks.blocking_acquire_all::<&str>(&[])?;
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
    /// assert!(!locks.blocking_acquire_all(&["a"])?.is_empty());
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
    /// let all = locks.blocking_acquire_all(&["a", "b"])?;
    /// for guard in all.guards() {
    ///     println!("{} fenced by {}", guard.name(), guard.token());
    /// }
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    pub fn guards(&self) -> &[DistributedGuard] {
        &self.guards
    }

    /// The fencing token of `name`, if it is one of the held names.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let all = locks.blocking_acquire_all(&["a", "b"])?;
    /// assert!(all.token("a").is_some());
    /// assert!(all.token("c").is_none());
    /// # drop(all); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token(&self, name: &str) -> Option<FencingToken> {
        self.guards
            .binary_search_by(|guard| guard.name().cmp(name))
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
    /// assert!(!locks.blocking_acquire_all(&["a", "b"])?.is_lost());
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
    /// let both = locks.acquire_all(&["account-3", "account-7"]).await?;
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
    /// locks.acquire_all(&["a", "b"]).await?.release().await?;
    /// assert!(locks.try_acquire_all(&["a", "b"]).await?.is_some());
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

    /// Blocking [`MultiGuard::release`].
    ///
    /// # Errors
    ///
    /// As [`MultiGuard::release`].
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
    /// locks.blocking_acquire_all(&["a", "b"])?.blocking_release()?;
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
    /// let mut guards = locks.blocking_acquire_all(&["a", "b"])?.into_guards();
    /// guards.pop().expect("b").blocking_release()?; // keep `a` a little longer
    /// # drop(guards); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<DistributedGuard> {
        self.guards
    }
}
