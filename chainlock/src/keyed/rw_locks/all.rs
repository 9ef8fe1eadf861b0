//! Several keys of the keyed reader-writer locks at once, all or nothing, in ascending `Ord`
//! order: the `try_` methods of the core (both faces), then each face's waiting ones.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::{KeyReadGuard, KeyWriteGuard, RwLockManager};
#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::wait::{Deadline, all_or_nothing};
use crate::keyed::KeyGuards;
use crate::keyed::flavor::{Blocking, Flavor};
#[cfg(feature = "async")]
use {
    super::{AsyncKeyReadGuard, AsyncKeyWriteGuard},
    crate::keyed::flavor::Async,
    crate::lock_order::ascending_unique,
};

impl<K: Eq + Hash + Ord, S: BuildHasher, F: Flavor> RwLockManager<K, S, F> {
    /// Read-locks every key of `keys` if that is possible right now (in ascending `Ord`
    /// order, duplicates once), or none of them; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.write("b");
    /// assert!(locks.try_read_all(["a", "b"]).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// drop(w);
    /// assert_eq!(locks.try_read_all(["a", "b"]).map(|held| held.len()), Some(2));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S, F>>> {
        all_or_nothing!(keys, |key| self.try_read(key)).map(KeyGuards::new)
    }

    /// Write-locks every key of `keys` if all are free right now (in ascending `Ord`
    /// order, duplicates once), or none of them; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read("b");
    /// assert!(locks.try_write_all(["a", "b"]).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// drop(r);
    /// assert_eq!(locks.try_write_all(["a", "b"]).map(|held| held.len()), Some(2));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S, F>>> {
        all_or_nothing!(keys, |key| self.try_write(key)).map(KeyGuards::new)
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> RwLockManager<K, S, Blocking> {
    /// Read-locks every key of `keys`, in ascending `Ord` order (duplicates once), blocking
    /// until all are held. Concurrent multi-key calls never deadlock one another.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let readers = locks.read_all(["b", "a"]);
    /// assert!(locks.try_read("a").is_some());
    /// assert!(locks.try_write("b").is_none());
    /// # drop(readers);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn read_all(&self, keys: impl IntoIterator<Item = K>) -> KeyGuards<KeyReadGuard<'_, K, S>> {
        self.read_all_by(keys, Deadline::Forever)
            .expect("untimed locks always succeed")
    }

    /// Write-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(locks.write_all(["b", "a"])));
    ///     s.spawn(|| drop(locks.write_all(["a", "b"])));
    /// });
    /// assert!(locks.is_empty());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn write_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<KeyWriteGuard<'_, K, S>> {
        self.write_all_by(keys, Deadline::Forever)
            .expect("untimed locks always succeed")
    }

    /// Read-locks every key of `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let _w = locks.write("b");
    /// assert!(locks.try_read_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S>>> {
        self.read_all_by(keys, Deadline::after(timeout))
    }

    /// Write-locks every key of `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let _r = locks.read("b");
    /// assert!(locks.try_write_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S>>> {
        self.write_all_by(keys, Deadline::after(timeout))
    }

    /// Read-locks every key of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.write("b");
    /// assert!(locks.try_read_all_until(["a", "b"], deadline).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// drop(held);
    /// assert!(locks.try_read_all_until(["a", "b"], deadline).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S>>> {
        self.read_all_by(keys, Deadline::At(deadline))
    }

    /// Write-locks every key of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.read("b");
    /// assert!(locks.try_write_all_until(["a", "b"], deadline).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// drop(held);
    /// assert!(locks.try_write_all_until(["a", "b"], deadline).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S>>> {
        self.write_all_by(keys, Deadline::At(deadline))
    }

    #[cfg_attr(feature = "telemetry", track_caller)]
    fn read_all_by(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S>>> {
        all_or_nothing!(keys, |key| self.read_by(key, deadline)).map(KeyGuards::new)
    }

    #[cfg_attr(feature = "telemetry", track_caller)]
    fn write_all_by(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S>>> {
        all_or_nothing!(keys, |key| self.write_by(key, deadline)).map(KeyGuards::new)
    }
}

#[cfg(feature = "async")]
impl<K: Eq + Hash + Ord, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future releases the keys taken so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.read_all(["b", "a", "b"]).await;
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn read_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyReadGuard<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.read(key).await);
        }
        KeyGuards::new(guards)
    }

    /// Write-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`read_all`](Self::read_all).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.write_all([2, 1]).await;
    /// assert!(locks.try_read(1).is_none());
    /// drop(held);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub async fn write_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyWriteGuard<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.write(key).await);
        }
        KeyGuards::new(guards)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash + Ord, S: BuildHasher> RwLockManager<K, S, Async> {
    /// Read-locks every key of `keys` within `timeout` in total (Tokio's timer), or
    /// none of them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`read_all`](Self::read_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.write("b").await;
    /// assert!(locks.try_read_all_for(["a", "b"], Duration::from_millis(5)).await.is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_read_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<AsyncKeyReadGuard<'_, K, S>>> {
        within(timeout, self.read_all(keys)).await
    }

    /// Read-locks every key of `keys` before `deadline` (Tokio's timer), or none of
    /// them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`read_all`](Self::read_all).
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
    /// let held = locks.try_read_all_until(["a", "b"], deadline).await.expect("free keys");
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn try_read_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<AsyncKeyReadGuard<'_, K, S>>> {
        until(deadline, self.read_all(keys)).await
    }

    /// Write-locks every key of `keys` within `timeout` in total (Tokio's timer), or
    /// none of them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`write_all`](Self::write_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedRwLocks::new();
    /// let held = locks.read("b").await;
    /// assert!(locks.try_write_all_for(["a", "b"], Duration::from_millis(5)).await.is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_write_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<AsyncKeyWriteGuard<'_, K, S>>> {
        within(timeout, self.write_all(keys)).await
    }

    /// Write-locks every key of `keys` before `deadline` (Tokio's timer), or none of
    /// them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`write_all`](Self::write_all).
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
    /// let held = locks.try_write_all_until(["a", "b"], deadline).await.expect("free keys");
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn try_write_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<AsyncKeyWriteGuard<'_, K, S>>> {
        until(deadline, self.write_all(keys)).await
    }
}
