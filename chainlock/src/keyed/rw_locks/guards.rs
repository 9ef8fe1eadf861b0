//! The holds of a key of the keyed reader-writer locks: read, write and upgradable guards,
//! their downgrades, and their upgrades in each face.

use std::fmt;
#[cfg(feature = "async")]
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::sharded::Ticket;
use crate::engine::wait::{Deadline, grow_weighted};
use crate::engine::waiter::{Outcome, Wake};
use crate::engine::weighted::{READ, UPGRADABLE, WRITE, Weighted};
use crate::keyed::DefaultHashBuilder;
use crate::keyed::flavor::Blocking;
use crate::keyed::guards::weighted_guard;
#[cfg(feature = "async")]
use {
    crate::engine::claim::{Claim, Grow},
    crate::keyed::flavor::Async,
};

weighted_guard!(
    /// A shared (read) hold of a key of a keyed reader-writer manager, released when it
    /// drops.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let a = locks.read(1);
    /// let b = locks.read(1);
    /// drop((a, b));
    /// assert!(locks.is_empty());
    /// ```
    KeyReadGuard,
    READ
);

weighted_guard!(
    /// An exclusive (write) hold of a key of a keyed reader-writer manager, released when it
    /// drops.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.write(1);
    /// assert!(locks.try_read(1).is_none());
    /// let r = w.downgrade(); // readers may join now
    /// assert!(locks.try_read(1).is_some());
    /// # drop(r);
    /// ```
    KeyWriteGuard,
    WRITE
);

weighted_guard!(
    /// An upgradable read hold of a key: it shares the key with readers but excludes writers
    /// and other upgradable readers, and can become a write hold without letting a writer in
    /// between ([`try_upgrade`](Self::try_upgrade); `upgrade` waits for the readers to
    /// leave, ahead of every queued waiter).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("config");
    /// // ... read, decide to write ...
    /// let w = u.upgrade();
    /// assert!(locks.is_write_locked("config"));
    /// # drop(w);
    /// ```
    KeyUpgradableGuard,
    UPGRADABLE
);

impl<'a, K, S, F> KeyWriteGuard<'a, K, S, F> {
    /// Turns the write hold into a read hold without releasing the key; queued readers at
    /// the front of the queue are let in with it.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.write("k").downgrade();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_write("k").is_none());
    /// # drop(r);
    /// ```
    pub fn downgrade(self) -> KeyReadGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, WRITE - READ);
        KeyReadGuard::new(registry, ticket)
    }

    /// Turns the write hold into an upgradable read hold without releasing the key.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.write("k").downgrade_to_upgradable();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_upgradable_read("k").is_none());
    /// # drop(u);
    /// ```
    pub fn downgrade_to_upgradable(self) -> KeyUpgradableGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, WRITE - UPGRADABLE);
        KeyUpgradableGuard::new(registry, ticket)
    }
}

impl<'a, K, S, F> KeyUpgradableGuard<'a, K, S, F> {
    /// Becomes a write hold if no reader holds the key right now.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if a reader holds the key.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// let r = locks.read("k");
    /// let u = u.try_upgrade().unwrap_err(); // a reader is in
    /// drop(r);
    /// let w = u.try_upgrade().unwrap();
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// ```
    pub fn try_upgrade(self) -> Result<KeyWriteGuard<'a, K, S, F>, Self> {
        match self
            .registry
            .grow(self.ticket, WRITE - UPGRADABLE, None::<fn() -> Wake>)
        {
            Outcome::Held(_) => {
                let (registry, ticket) = self.into_parts();
                Ok(KeyWriteGuard::new(registry, ticket))
            }
            Outcome::Busy => Err(self),
            Outcome::Queued(..) => unreachable!("a try never queues"),
        }
    }

    /// Turns the upgradable hold into a plain read hold, letting another upgradable reader
    /// (or queued readers) in.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.upgradable_read("k").downgrade();
    /// assert!(locks.try_upgradable_read("k").is_some());
    /// # drop(r);
    /// ```
    pub fn downgrade(self) -> KeyReadGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, UPGRADABLE - READ);
        KeyReadGuard::new(registry, ticket)
    }
}

impl<'a, K, S> KeyUpgradableGuard<'a, K, S, Blocking> {
    /// Becomes a write hold, waiting for the readers to leave. The upgrade goes ahead of
    /// every queued waiter (they wait for this holder anyway), and no writer can get in
    /// between.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// std::thread::scope(|s| {
    ///     let r = locks.read("k");
    ///     s.spawn(move || drop(r)); // the reader leaves on another thread
    ///     let w = u.upgrade();
    ///     assert!(locks.is_write_locked("k"));
    ///     drop(w);
    /// });
    /// ```
    pub fn upgrade(self) -> KeyWriteGuard<'a, K, S> {
        self.upgrade_by(Deadline::Forever)
            .unwrap_or_else(|_| unreachable!("an untimed upgrade always succeeds"))
    }

    /// Becomes a write hold within `timeout`.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if readers still held the
    /// key when the time ran out (a grant racing the timeout is taken, never lost).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// let r = locks.read("k");
    /// let u = u.try_upgrade_for(Duration::from_millis(5)).unwrap_err();
    /// drop(r);
    /// assert!(u.try_upgrade_for(Duration::from_millis(5)).is_ok());
    /// ```
    pub fn try_upgrade_for(self, timeout: Duration) -> Result<KeyWriteGuard<'a, K, S>, Self> {
        self.upgrade_by(Deadline::after(timeout))
    }

    /// Becomes a write hold before `deadline`.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if readers still held the
    /// key at the deadline (a grant racing the deadline is taken, never lost).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// let r = locks.read("k");
    /// let u = u.try_upgrade_until(Instant::now() + Duration::from_millis(5)).unwrap_err();
    /// drop(r);
    /// assert!(u.try_upgrade_until(Instant::now() + Duration::from_millis(5)).is_ok());
    /// ```
    pub fn try_upgrade_until(self, deadline: Instant) -> Result<KeyWriteGuard<'a, K, S>, Self> {
        self.upgrade_by(Deadline::At(deadline))
    }

    fn upgrade_by(self, deadline: Deadline) -> Result<KeyWriteGuard<'a, K, S>, Self> {
        if grow_weighted(self.registry, self.ticket, WRITE - UPGRADABLE, deadline) {
            let (registry, ticket) = self.into_parts();
            Ok(KeyWriteGuard::new(registry, ticket))
        } else {
            Err(self)
        }
    }
}

#[cfg(feature = "async")]
impl<'a, K: Eq + Hash, S: BuildHasher> KeyUpgradableGuard<'a, K, S, Async> {
    /// Becomes a write hold once the readers have left, ahead of every queued waiter.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the upgradable hold too (it was moved in): the key is
    /// released whether or not the upgrade had been granted.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let w = locks.upgradable_read("k").await.upgrade().await;
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// # }
    /// ```
    pub async fn upgrade(self) -> AsyncKeyWriteGuard<'a, K, S> {
        // If this future is dropped at the await, `self` drops after the claim: the
        // upgrade's weight (if granted) and then the upgradable hold are given back.
        self.grow().await;
        let (registry, ticket) = self.into_parts();
        KeyWriteGuard::new(registry, ticket)
    }

    /// The claim of the upgrade's extra weight; dropped before its grant completes, it
    /// gives that weight back and leaves this guard as it was.
    fn grow(&self) -> Claim<Grow<'a, K, S>> {
        Claim::grow(self.registry, self.ticket, WRITE - UPGRADABLE)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<'a, K: Eq + Hash, S: BuildHasher> KeyUpgradableGuard<'a, K, S, Async> {
    /// Becomes a write hold within `timeout` (Tokio's timer), ahead of every queued waiter.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if readers still held the
    /// key when the time ran out (a grant racing the timeout is given back, not lost).
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the upgradable hold too (it was moved in), as
    /// [`upgrade`](Self::upgrade).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let u = locks.upgradable_read("k").await;
    /// let r = locks.read("k").await;
    /// let u = u.try_upgrade_for(Duration::from_millis(5)).await.unwrap_err();
    /// drop(r);
    /// assert!(u.try_upgrade_for(Duration::from_millis(5)).await.is_ok());
    /// # }
    /// ```
    pub async fn try_upgrade_for(
        self,
        timeout: Duration,
    ) -> Result<AsyncKeyWriteGuard<'a, K, S>, Self> {
        let granted = within(timeout, self.grow()).await.is_some();
        self.upgraded(granted)
    }

    /// Becomes a write hold before `deadline` (Tokio's timer), ahead of every queued
    /// waiter.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if readers still held the
    /// key at the deadline.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// As [`upgrade`](Self::upgrade).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let u = locks.upgradable_read("k").await;
    /// let w = u.try_upgrade_until(Instant::now() + Duration::from_millis(5)).await.unwrap();
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// # }
    /// ```
    pub async fn try_upgrade_until(
        self,
        deadline: Instant,
    ) -> Result<AsyncKeyWriteGuard<'a, K, S>, Self> {
        let granted = until(deadline, self.grow()).await.is_some();
        self.upgraded(granted)
    }

    fn upgraded(self, granted: bool) -> Result<AsyncKeyWriteGuard<'a, K, S>, Self> {
        if granted {
            let (registry, ticket) = self.into_parts();
            Ok(KeyWriteGuard::new(registry, ticket))
        } else {
            Err(self)
        }
    }
}

/// A read hold of an [`AsyncKeyedRwLocks`](super::AsyncKeyedRwLocks) key.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyReadGuard<'a, K, S = DefaultHashBuilder> = KeyReadGuard<'a, K, S, Async>;

/// A write hold of an [`AsyncKeyedRwLocks`](super::AsyncKeyedRwLocks) key.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyWriteGuard<'a, K, S = DefaultHashBuilder> = KeyWriteGuard<'a, K, S, Async>;

/// An upgradable read hold of an [`AsyncKeyedRwLocks`](super::AsyncKeyedRwLocks) key.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyUpgradableGuard<'a, K, S = DefaultHashBuilder> =
    KeyUpgradableGuard<'a, K, S, Async>;
