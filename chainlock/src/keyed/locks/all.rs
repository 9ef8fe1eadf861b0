//! Several keys of the keyed locks at once, all or nothing, in ascending `Ord` order: the
//! `try_` method of the core (both faces), then each face's waiting ones.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::{KeyGuard, LockManager};
#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::wait::{Deadline, all_or_nothing};
use crate::keyed::KeyGuards;
use crate::keyed::flavor::{Blocking, Flavor};
#[cfg(feature = "async")]
use {super::AsyncKeyGuard, crate::keyed::flavor::Async, crate::lock_order::ascending_unique};

impl<K: Eq + Hash + Ord, S: BuildHasher, F: Flavor> LockManager<K, S, F> {
    /// Locks every key of `keys` if all are free right now (in ascending `Ord` order,
    /// duplicates once), or none of them; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let b = locks.lock("b");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         assert!(locks.try_lock_all(["a", "b"]).is_none());
    ///         assert!(!locks.is_locked("a")); // all or nothing
    ///     });
    /// });
    /// drop(b);
    /// assert_eq!(locks.try_lock_all(["a", "b"]).map(|held| held.len()), Some(2));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Option<KeyGuards<KeyGuard<'_, K, S, F>>> {
        all_or_nothing!(keys, |key| self.try_lock(key)).map(KeyGuards::new)
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> LockManager<K, S, Blocking> {
    /// Locks every key of `keys`, blocking until all are held.
    ///
    /// Keys are taken in ascending `Ord` order (duplicates once), so that concurrent
    /// `lock_all` calls with overlapping sets never deadlock one another. See
    /// [the module documentation](crate::keyed#ordering-of-multi-key-locking) for why `Ord`.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(locks.lock_all(["b", "a"])));
    ///     s.spawn(|| drop(locks.lock_all(["a", "b", "a"])));
    /// });
    /// assert!(locks.is_empty());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn lock_all(&self, keys: impl IntoIterator<Item = K>) -> KeyGuards<KeyGuard<'_, K, S>> {
        self.lock_all_by(keys, Deadline::Forever)
            .expect("untimed locks always succeed")
    }

    /// Locks every key of `keys` within `timeout` in total, or none of them: on timeout the
    /// keys taken so far are released and `None` is returned.
    ///
    /// A zero timeout tries each key once without waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let _b = locks.lock("b");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         assert!(locks.try_lock_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    ///         assert!(!locks.is_locked("a")); // all or nothing
    ///     });
    /// });
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyGuard<'_, K, S>>> {
        self.lock_all_by(keys, Deadline::after(timeout))
    }

    /// Locks every key of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let _a = locks.lock("a");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         assert!(locks.try_lock_all_until(["b", "a"], deadline).is_none());
    ///         assert!(!locks.is_locked("b")); // all or nothing
    ///     });
    /// });
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<KeyGuard<'_, K, S>>> {
        self.lock_all_by(keys, Deadline::At(deadline))
    }

    #[cfg_attr(feature = "telemetry", track_caller)]
    fn lock_all_by(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyGuard<'_, K, S>>> {
        all_or_nothing!(keys, |key| self.acquire(key, deadline)).map(KeyGuards::new)
    }
}

#[cfg(feature = "async")]
impl<K: Eq + Hash + Ord, S: BuildHasher> LockManager<K, S, Async> {
    /// Locks every key of `keys`, in ascending `Ord` order (duplicates once), so that
    /// concurrent calls with overlapping sets never deadlock one another.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future releases the keys it took so
    /// far and leaves the queue of the one it waits for. For one deadline over the whole
    /// set, see `try_lock_all_until` (feature `tokio`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let both = locks.lock_all(["b", "a", "b"]).await;
    /// assert_eq!(both.len(), 2);
    /// # }
    /// ```
    pub async fn lock_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyGuard<'_, K, S>> {
        let keys = ascending_unique(keys);
        let mut guards = Vec::with_capacity(keys.len());
        for key in keys {
            guards.push(self.lock(key).await);
        }
        KeyGuards::new(guards)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash + Ord, S: BuildHasher> LockManager<K, S, Async> {
    /// Locks every key of `keys` within `timeout` in total (Tokio's timer), or none of
    /// them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`lock_all`](Self::lock_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let b = locks.lock("b").await;
    /// assert!(locks.try_lock_all_for(["a", "b"], Duration::from_millis(5)).await.is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// # drop(b);
    /// # }
    /// ```
    pub async fn try_lock_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<AsyncKeyGuard<'_, K, S>>> {
        within(timeout, self.lock_all(keys)).await
    }

    /// Locks every key of `keys` before `deadline` (Tokio's timer), or none of them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`lock_all`](Self::lock_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.try_lock_all_until(["a", "b"], deadline).await.expect("free keys");
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn try_lock_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<AsyncKeyGuard<'_, K, S>>> {
        until(deadline, self.lock_all(keys)).await
    }
}
