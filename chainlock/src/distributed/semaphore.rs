//! The counting semaphore by key: at most N holders of a key at once.
//!
//! Design: N *slots*, each an exclusive lock of the backend (a file lock, an advisory lock) on
//! a name derived from the semaphore's (`<name>`, NUL, `chainlock-semaphore-slot`, NUL, the
//! slot number). A permit is a held slot, so at most N permits exist at once, and everything
//! the mutex guarantees carries over: a killed holder's slot is freed by the kernel or the
//! server (crash release), waits are bounded, the lost signal and fencing tokens (per slot)
//! work as for the mutex.
//!
//! Acquiring takes the first free slot, asking each slot once without waiting (`try_acquire`,
//! in slot order). When all N are held, the acquirer waits on every slot at once (up to
//! `WAIT_ON_AT_MOST` of them, from a random one on), sleeping in the kernel (`flock`) or on
//! the server (`pg_advisory_lock`), takes the first slot granted and cancels the other waits:
//! nothing polls, and a waiter never sleeps behind a long holder while a slot it waits on is
//! free.
//!
//! Fairness: waiters of one slot are served in the server's queue order (PostgreSQL) or in
//! `flock`'s order (none promised); across slots there is no global queue. A newcomer that
//! finds a slot free takes it ahead of queued waiters (barging).

use super::{DistributedGuard, Error, FencingToken, LockClient, LockKey, Mode, Wait, runtime};
use std::fmt;
use std::future::Future as _;
use std::hash::{BuildHasher, RandomState};
use std::task::Poll;
use std::time::{Duration, Instant};

/// How many slots a waiter waits on at once when every slot is held: one wait (a thread in
/// `flock`, or a connection on the server) per slot, so the number is bounded.
const WAIT_ON_AT_MOST: usize = 8;

/// The lock name of slot `slot` of semaphore `name`.
fn slot_name(name: &str, slot: usize) -> String {
    format!("{name}\0chainlock-semaphore-slot\0{slot}")
}

impl LockClient {
    /// The counting semaphore `key` with `permits` permits: at most `permits`
    /// [`DistributedPermit`]s of it are alive at once across every process and machine sharing
    /// the backend.
    ///
    /// `key` is any [`LockKey`]; an integer key's semaphore is named by its display form
    /// (`advisory(42)`). Every user of a key must give the same `permits` (holders never exceed
    /// the largest value in use). The semaphore is N exclusive locks named after the key (see
    /// [`DistributedSemaphore`] for the design and its fairness); they do not exclude the mutex
    /// or the reader-writer lock `key` itself.
    ///
    /// # Panics
    ///
    /// Panics if `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let downloads = locks.semaphore("downloads", 2);
    /// let a = downloads.blocking_acquire()?;
    /// let b = downloads.blocking_acquire()?;
    /// assert!(downloads.blocking_try_acquire()?.is_none(), "two permits at most");
    /// drop(a);
    /// assert!(downloads.blocking_try_acquire()?.is_some());
    /// # drop(b); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    #[track_caller]
    pub fn semaphore<'k>(
        &self,
        key: impl Into<LockKey<'k>>,
        permits: usize,
    ) -> DistributedSemaphore {
        assert!(permits > 0, "a semaphore needs at least one permit");
        DistributedSemaphore {
            client: self.clone(),
            name: key.into().to_string().into(),
            permits,
        }
    }
}

/// A counting semaphore by name, from [`LockClient::semaphore`]: hands out at most
/// [`DistributedSemaphore::permits`] [`DistributedPermit`]s at once, across processes and machines.
///
/// Design: the semaphore is `permits` slots, each an exclusive lock of the backend on a name
/// derived from the semaphore's (`<name>\0chainlock-semaphore-slot\0<slot>`, so do not use
/// such names for anything else); a permit is a held slot. Acquiring takes the first free slot
/// (one `try_acquire` per slot, in slot order); when every slot is held, the acquirer waits on
/// every slot at once (at most 8 of them, from a random one on: one kernel wait, or one wait
/// on the server on a session of the client's bounded set, each while it waits) and takes the first one granted, sleeping in the kernel
/// (file backend) or on the server (PostgreSQL) — nothing polls. A killed holder's slot is freed by the kernel or the server,
/// as for the mutex (crash release).
///
/// Fairness: waiters of one slot are served in the server's queue order (PostgreSQL) or in
/// `flock`'s order (which promises none); across slots there is no global queue: a waiter
/// takes whichever of its slots frees first, and a newcomer that finds a slot free takes it
/// ahead of queued waiters. With more than 8 permits, a waiter waits on 8 of the slots only.
/// Every permit's wait is bounded by the timeout given, as for the mutex.
///
/// Cost: an acquisition makes up to `permits` non-waiting attempts before it waits (one round
/// trip each on PostgreSQL); a permit is one held lock of the backend. On PostgreSQL, held
/// permits share the client's bounded sessions as every hold does (many permits may sit on one
/// session); the waits of one acquisition take up to 8 sessions of the bound while it waits.
#[derive(Clone)]
pub struct DistributedSemaphore {
    client: LockClient,
    name: Box<str>,
    permits: usize,
}

impl fmt::Debug for DistributedSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name: String = self.name.chars().take(64).collect();
        f.debug_struct("DistributedSemaphore")
            .field("name", &name)
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}

impl DistributedSemaphore {
    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert_eq!(locks.semaphore("downloads", 3).name(), "downloads");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many permits may be alive at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert_eq!(locks.semaphore("downloads", 3).permits(), 3);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn permits(&self) -> usize {
        self.permits
    }

    async fn acquire_with(&self, wait: Wait) -> Result<Option<DistributedPermit>, Error> {
        for slot in 0..self.permits {
            let slot_name = slot_name(&self.name, slot);
            let key = LockKey::Name(&slot_name);
            if let Some(guard) = self
                .client
                .lock_in(key, Mode::Exclusive, Wait::Never)
                .await?
            {
                return Ok(Some(self.permit(slot, guard)));
            }
        }
        let wait = wait.now();
        if matches!(wait, Wait::Never) {
            return Ok(None);
        }
        // Wait on several slots at once, so that the first one freed is taken: a waiter never
        // sleeps behind a long holder while another slot is free (among the slots it waits
        // on: all of them up to `WAIT_ON_AT_MOST`).
        let random = RandomState::new().hash_one(std::process::id());
        let first = usize::try_from(random % self.permits as u64).expect("below permits");
        let waits = self.permits.min(WAIT_ON_AT_MOST);
        let mut slots: Vec<_> = (0..waits)
            .map(|offset| {
                let slot = (first + offset) % self.permits;
                let name = slot_name(&self.name, slot);
                Box::pin(async move {
                    let key = LockKey::Name(&name);
                    (slot, self.client.lock_in(key, Mode::Exclusive, wait).await)
                })
            })
            .collect();
        // The first slot to answer decides (all share one deadline: a timeout is everybody's);
        // the others are dropped, which cancels their waits: a cancelled acquisition is
        // released as soon as it is granted, as for the mutex.
        let (slot, outcome) = std::future::poll_fn(|cx| {
            slots
                .iter_mut()
                .find_map(|wait| match wait.as_mut().poll(cx) {
                    Poll::Ready(answer) => Some(answer),
                    Poll::Pending => None,
                })
                .map_or(Poll::Pending, Poll::Ready)
        })
        .await;
        drop(slots);
        Ok(outcome?.map(|guard| self.permit(slot, guard)))
    }

    fn permit(&self, slot: usize, guard: DistributedGuard) -> DistributedPermit {
        DistributedPermit {
            name: self.name.clone(),
            slot,
            guard,
        }
    }

    /// Acquires a permit, waiting as long as it takes.
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
    /// let permit = locks.semaphore("downloads", 4).acquire().await?;
    /// // ... download, at most 4 at once across every process ...
    /// permit.release().await?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<DistributedPermit, Error> {
        let permit = self.acquire_with(Wait::Forever).await?;
        Ok(permit.expect("an unbounded wait ends with a permit"))
    }

    /// Acquires a permit if one is free now; `Ok(None)` if all are held.
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
    /// let single = locks.semaphore("single", 1);
    /// let held = single.try_acquire().await?.expect("free");
    /// assert!(single.try_acquire().await?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<DistributedPermit>, Error> {
        self.acquire_with(Wait::Never).await
    }

    /// Acquires a permit, waiting at most `timeout`; `Ok(None)` if none came by then.
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
    /// let single = locks.semaphore("single", 1);
    /// let held = single.acquire().await?;
    /// assert!(single.try_acquire_for(Duration::from_millis(10)).await?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_for(
        &self,
        timeout: Duration,
    ) -> Result<Option<DistributedPermit>, Error> {
        self.acquire_with(Wait::at_most(timeout)).await
    }

    /// Acquires a permit, waiting until `deadline` at most; `Ok(None)` if none came by then.
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
    /// let single = locks.semaphore(42, 1);
    /// let held = single.acquire().await?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(single.try_acquire_until(deadline).await?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_until(
        &self,
        deadline: Instant,
    ) -> Result<Option<DistributedPermit>, Error> {
        self.acquire_with(Wait::until(deadline)).await
    }

    /// Blocking [`DistributedSemaphore::acquire`].
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
    /// let permit = locks.semaphore("downloads", 4).blocking_acquire()?;
    /// permit.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_acquire(&self) -> Result<DistributedPermit, Error> {
        runtime::block_on(self.acquire())
    }

    /// Blocking [`DistributedSemaphore::try_acquire`].
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
    /// assert!(locks.semaphore("downloads", 1).blocking_try_acquire()?.is_some());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_acquire(&self) -> Result<Option<DistributedPermit>, Error> {
        runtime::block_on(self.try_acquire())
    }

    /// Blocking [`DistributedSemaphore::try_acquire_for`].
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
    /// let single = locks.semaphore("single", 1);
    /// let held = single.blocking_acquire()?;
    /// assert!(single.blocking_try_acquire_for(Duration::from_millis(10))?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_acquire_for(
        &self,
        timeout: Duration,
    ) -> Result<Option<DistributedPermit>, Error> {
        runtime::block_on(self.try_acquire_for(timeout))
    }

    /// Blocking [`DistributedSemaphore::try_acquire_until`].
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
    /// let single = locks.semaphore((7, 42), 1);
    /// let held = single.blocking_acquire()?;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert!(single.blocking_try_acquire_until(deadline)?.is_none());
    /// # drop(held); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_try_acquire_until(
        &self,
        deadline: Instant,
    ) -> Result<Option<DistributedPermit>, Error> {
        runtime::block_on(self.try_acquire_until(deadline))
    }
}

/// One permit of a [`DistributedSemaphore`]; gives it back when dropped.
#[must_use = "if unused the permit will immediately be given back"]
#[clippy::has_significant_drop]
pub struct DistributedPermit {
    name: Box<str>,
    slot: usize,
    guard: DistributedGuard,
}

impl fmt::Debug for DistributedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name: String = self.name.chars().take(64).collect();
        f.debug_struct("DistributedPermit")
            .field("semaphore", &name)
            .field("slot", &self.slot)
            .field("lost", &self.is_lost())
            .finish_non_exhaustive()
    }
}

impl DistributedPermit {
    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert_eq!(locks.semaphore("downloads", 2).blocking_acquire()?.name(), "downloads");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The slot this permit holds, below [`DistributedSemaphore::permits`]; no two live permits of a
    /// semaphore share one.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let downloads = locks.semaphore("downloads", 2);
    /// let (a, b) = (downloads.blocking_acquire()?, downloads.blocking_acquire()?);
    /// assert_ne!(a.slot(), b.slot());
    /// # drop((a, b)); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The fencing token of this permit's slot: greater than the token of every earlier
    /// holder of the same slot (permits of different slots are not ordered).
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// let single = locks.semaphore("single", 1);
    /// let first = single.blocking_acquire()?.token();
    /// assert!(single.blocking_acquire()?.token() > first);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token(&self) -> FencingToken {
        self.guard.token()
    }

    /// Whether the permit is known to be lost; see [`DistributedGuard::is_lost`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let locks = chainlock::distributed::LockClient::file(&dir)?;
    /// assert!(!locks.semaphore("downloads", 2).blocking_acquire()?.is_lost());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Completes when the permit is lost; see [`DistributedGuard::lost`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn download() {}
    /// # async fn demo(locks: chainlock::distributed::LockClient) -> Result<(), chainlock::distributed::Error> {
    /// let permit = locks.semaphore("downloads", 4).acquire().await?;
    /// tokio::select! {
    ///     () = download() => permit.release().await?,
    ///     () = permit.lost() => eprintln!("permit lost: stopped"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.guard.lost().await;
    }

    /// Gives the permit back and reports whether that worked; see
    /// [`DistributedGuard::release`].
    ///
    /// # Errors
    ///
    /// As [`DistributedGuard::release`].
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
    /// let single = locks.semaphore("single", 1);
    /// single.acquire().await?.release().await?;
    /// assert!(single.try_acquire().await?.is_some(), "free right after a release");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<(), Error> {
        self.guard.release().await
    }

    /// Blocking [`DistributedPermit::release`].
    ///
    /// # Errors
    ///
    /// As [`DistributedGuard::release`].
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
    /// locks.semaphore("single", 1).blocking_acquire()?.blocking_release()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[track_caller]
    pub fn blocking_release(self) -> Result<(), Error> {
        runtime::block_on(self.release())
    }
}

#[cfg(test)]
mod tests {
    use super::slot_name;

    #[test]
    fn slot_names_are_the_documented_ones_and_distinct() {
        assert_eq!(
            slot_name("downloads", 0),
            concat!("downloads\0chainlock-semaphore-slot\0", "0")
        );
        assert_ne!(slot_name("a", 1), slot_name("a", 10));
        assert_ne!(
            slot_name("a", 1),
            slot_name(concat!("a\0chainlock-semaphore-slot\0", "1"), 0)
        );
    }
}
