//! One key of the keyed reader-writer locks: the `try_` methods of the core (both
//! faces), then each face's waiting ones.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::{KeyReadGuard, KeyUpgradableGuard, KeyWriteGuard, RwLockManager};
#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::sharded::Ticket;
use crate::engine::wait::{Deadline, acquire_weighted};
use crate::engine::weighted::{READ, UPGRADABLE, WRITE};
use crate::keyed::flavor::{Blocking, Flavor};
use crate::telemetry::hooks::Held;
#[cfg(feature = "async")]
use {
    super::{AsyncKeyReadGuard, AsyncKeyUpgradableGuard, AsyncKeyWriteGuard},
    crate::engine::claim::Claim,
    crate::keyed::flavor::Async,
};

impl<K: Eq + Hash, S: BuildHasher, F: Flavor> RwLockManager<K, S, F> {
    /// Read-locks `key` if that is possible right now without overtaking a waiter; never
    /// waits.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read("k");
    /// assert!(locks.try_read("k").is_some()); // readers share
    /// assert!(locks.try_write("k").is_none());
    /// # drop(r);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read(&self, key: K) -> Option<KeyReadGuard<'_, K, S, F>> {
        self.try_claim(key, READ)
            .map(|(ticket, held)| KeyReadGuard::with_held(&self.registry, ticket, held))
    }

    /// Write-locks `key` if it is free right now; never waits.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.try_write("k").expect("a free key");
    /// assert!(locks.try_read("k").is_none());
    /// drop(w);
    /// assert!(locks.is_empty());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write(&self, key: K) -> Option<KeyWriteGuard<'_, K, S, F>> {
        self.try_claim(key, WRITE)
            .map(|(ticket, held)| KeyWriteGuard::with_held(&self.registry, ticket, held))
    }

    /// Takes an upgradable read lock of `key` if possible right now: it shares the key with
    /// readers, but not with writers or another upgradable reader.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.try_upgradable_read("k").unwrap();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_upgradable_read("k").is_none());
    /// # drop(u);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_upgradable_read(&self, key: K) -> Option<KeyUpgradableGuard<'_, K, S, F>> {
        self.try_claim(key, UPGRADABLE)
            .map(|(ticket, held)| KeyUpgradableGuard::with_held(&self.registry, ticket, held))
    }

    /// Takes `weight` of `key` if possible now.
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn try_claim(&self, key: K, weight: u64) -> Option<(Ticket, Held)> {
        self.registry.try_acquire(key, weight, !F::PER_THREAD)
    }
}

impl<K: Eq + Hash, S: BuildHasher> RwLockManager<K, S, Blocking> {
    /// Read-locks `key`, blocking until no writer holds it and no earlier waiter is queued.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let (a, b) = (locks.read(1), locks.read(1));
    /// assert!(locks.try_write(1).is_none());
    /// # drop((a, b));
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn read(&self, key: K) -> KeyReadGuard<'_, K, S> {
        self.read_by(key, Deadline::Forever)
            .expect("an untimed lock always succeeds")
    }

    /// Write-locks `key`, blocking until it is free and every earlier waiter was served.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.write("k");
    /// assert!(locks.try_read("k").is_none());
    /// drop(w);
    /// assert!(locks.is_empty());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn write(&self, key: K) -> KeyWriteGuard<'_, K, S> {
        self.write_by(key, Deadline::Forever)
            .expect("an untimed lock always succeeds")
    }

    /// Takes an upgradable read lock of `key`, blocking until no writer or other upgradable
    /// reader holds it and no earlier waiter is queued.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// assert!(locks.try_read("k").is_some());
    /// # drop(u);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn upgradable_read(&self, key: K) -> KeyUpgradableGuard<'_, K, S> {
        self.upgradable_read_by(key, Deadline::Forever)
            .expect("an untimed lock always succeeds")
    }

    /// Read-locks `key`, waiting at most `timeout`; `None` if the time ran out. A grant
    /// that races the timeout is taken, never lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let _w = locks.write(1);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(locks.try_read_for(1, Duration::from_millis(5)).is_none()));
    /// });
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_for(&self, key: K, timeout: Duration) -> Option<KeyReadGuard<'_, K, S>> {
        self.read_by(key, Deadline::after(timeout))
    }

    /// Write-locks `key`, waiting at most `timeout`; `None` if the time ran out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let _r = locks.read(1);
    /// assert!(locks.try_write_for(1, Duration::from_millis(5)).is_none());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_for(&self, key: K, timeout: Duration) -> Option<KeyWriteGuard<'_, K, S>> {
        self.write_by(key, Deadline::after(timeout))
    }

    /// Takes an upgradable read lock of `key`, waiting at most `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let _u = locks.upgradable_read(1);
    /// assert!(locks.try_upgradable_read_for(1, Duration::from_millis(5)).is_none());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_upgradable_read_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<KeyUpgradableGuard<'_, K, S>> {
        self.upgradable_read_by(key, Deadline::after(timeout))
    }

    /// Read-locks `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(locks.try_read_until("k", deadline).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_until(&self, key: K, deadline: Instant) -> Option<KeyReadGuard<'_, K, S>> {
        self.read_by(key, Deadline::At(deadline))
    }

    /// Write-locks `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let _r = locks.read("k");
    /// assert!(locks.try_write_until("k", deadline).is_none());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_until(&self, key: K, deadline: Instant) -> Option<KeyWriteGuard<'_, K, S>> {
        self.write_by(key, Deadline::At(deadline))
    }

    /// Takes an upgradable read lock of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let u = locks.try_upgradable_read_until("k", deadline).expect("a free key");
    /// assert!(locks.try_upgradable_read_until("k", deadline).is_none());
    /// # drop(u);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_upgradable_read_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<KeyUpgradableGuard<'_, K, S>> {
        self.upgradable_read_by(key, Deadline::At(deadline))
    }

    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(super) fn read_by(&self, key: K, deadline: Deadline) -> Option<KeyReadGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, READ, deadline)
            .map(|(ticket, held)| KeyReadGuard::with_held(&self.registry, ticket, held))
    }

    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(super) fn write_by(&self, key: K, deadline: Deadline) -> Option<KeyWriteGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, WRITE, deadline)
            .map(|(ticket, held)| KeyWriteGuard::with_held(&self.registry, ticket, held))
    }

    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn upgradable_read_by(
        &self,
        key: K,
        deadline: Deadline,
    ) -> Option<KeyUpgradableGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, UPGRADABLE, deadline)
            .map(|(ticket, held)| KeyUpgradableGuard::with_held(&self.registry, ticket, held))
    }
}

#[cfg(feature = "async")]
impl<K: Eq + Hash, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue, or gives the key back if it was
    /// granted already.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let (a, b) = (locks.read(1).await, locks.read(1).await);
    /// assert!(locks.try_write(1).is_none());
    /// # drop((a, b));
    /// # }
    /// ```
    pub async fn read(&self, key: K) -> AsyncKeyReadGuard<'_, K, S> {
        let (ticket, held) = Claim::weight(&self.registry, key, READ).await;
        KeyReadGuard::with_held(&self.registry, ticket, held)
    }

    /// Write-locks `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let r = locks.read(1).await;
    /// let timed = tokio::time::timeout(Duration::from_millis(5), locks.write(1)).await;
    /// assert!(timed.is_err()); // the dropped future left the queue
    /// drop(r);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub async fn write(&self, key: K) -> AsyncKeyWriteGuard<'_, K, S> {
        let (ticket, held) = Claim::weight(&self.registry, key, WRITE).await;
        KeyWriteGuard::with_held(&self.registry, ticket, held)
    }

    /// Takes an upgradable read lock of `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let u = locks.upgradable_read("k").await;
    /// let w = u.upgrade().await;
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// # }
    /// ```
    pub async fn upgradable_read(&self, key: K) -> AsyncKeyUpgradableGuard<'_, K, S> {
        let (ticket, held) = Claim::weight(&self.registry, key, UPGRADABLE).await;
        KeyUpgradableGuard::with_held(&self.registry, ticket, held)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks `key`, waiting at most `timeout` on Tokio's timer; `None` if the time ran out.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.write(1).await;
    /// assert!(locks.try_read_for(1, Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(locks.try_read_for(1, Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    pub async fn try_read_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<AsyncKeyReadGuard<'_, K, S>> {
        within(timeout, self.read(key)).await
    }

    /// Read-locks `key`, waiting until `deadline` at the latest on Tokio's timer; `None` if it passed
    /// first.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.write(1).await;
    /// assert!(locks.try_read_until(1, deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_read_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<AsyncKeyReadGuard<'_, K, S>> {
        until(deadline, self.read(key)).await
    }

    /// Write-locks `key`, waiting at most `timeout` on Tokio's timer; `None` if the time ran out.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`write`](Self::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.read(1).await;
    /// assert!(locks.try_write_for(1, Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(locks.try_write_for(1, Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    pub async fn try_write_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<AsyncKeyWriteGuard<'_, K, S>> {
        within(timeout, self.write(key)).await
    }

    /// Write-locks `key`, waiting until `deadline` at the latest on Tokio's timer; `None` if it passed
    /// first.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`write`](Self::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.read(1).await;
    /// assert!(locks.try_write_until(1, deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_write_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<AsyncKeyWriteGuard<'_, K, S>> {
        until(deadline, self.write(key)).await
    }

    /// Takes an upgradable read lock of `key`, waiting at most `timeout` on Tokio's timer; `None` if the time ran out.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`upgradable_read`](Self::upgradable_read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.upgradable_read(1).await;
    /// assert!(locks.try_upgradable_read_for(1, Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(locks.try_upgradable_read_for(1, Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    pub async fn try_upgradable_read_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<AsyncKeyUpgradableGuard<'_, K, S>> {
        within(timeout, self.upgradable_read(key)).await
    }

    /// Takes an upgradable read lock of `key`, waiting until `deadline` at the latest on Tokio's timer; `None` if it passed
    /// first.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`upgradable_read`](Self::upgradable_read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.upgradable_read(1).await;
    /// assert!(locks.try_upgradable_read_until(1, deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_upgradable_read_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<AsyncKeyUpgradableGuard<'_, K, S>> {
        until(deadline, self.upgradable_read(key)).await
    }
}
