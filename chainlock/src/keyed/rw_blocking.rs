//! The blocking face of the keyed reader-writer manager: threads wait by parking.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::DefaultHashBuilder;
use super::blocking::{Deadline, acquire_weighted, all_or_nothing, grow_weighted};
use super::manager::Blocking;
use super::rw::{KeyGuards, KeyReadGuard, KeyUpgradableGuard, KeyWriteGuard, RwLockManager};
use super::weighted::{READ, UPGRADABLE, WRITE};

/// A manager of named reader-writer locks for threads, one per key of type `K`: many
/// readers or one writer per key, strict FIFO with batched readers, timeouts, bounded
/// memory, all-or-nothing multi-key locking.
///
/// Not reentrant: a thread that read-locks a key it already reads may wait forever behind
/// a queued writer (strict FIFO), and one that write-locks a key it holds waits forever.
/// Guards are `Send`: a hold may be released by another thread.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use chainlock::keyed::KeyedRwLocks;
///
/// // Readers of one document proceed together; a writer has it alone.
/// let locks = KeyedRwLocks::new();
/// let docs = Mutex::new(HashMap::from([("a", 0_u32)]));
/// std::thread::scope(|s| {
///     for i in 0..4 {
///         let (locks, docs) = (&locks, &docs);
///         s.spawn(move || {
///             if i == 0 {
///                 let _w = locks.write("a");
///                 *docs.lock().unwrap().get_mut("a").unwrap() += 1;
///             } else {
///                 let _r = locks.read("a");
///                 assert!(docs.lock().unwrap()["a"] <= 1);
///             }
///         });
///     }
/// });
/// assert!(locks.is_empty());
/// ```
pub type KeyedRwLocks<K, S = DefaultHashBuilder> = RwLockManager<K, S, Blocking>;

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
    pub fn read(&self, key: K) -> KeyReadGuard<'_, K, S> {
        self.read_until(key, Deadline::Forever)
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
    pub fn write(&self, key: K) -> KeyWriteGuard<'_, K, S> {
        self.write_until(key, Deadline::Forever)
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
    pub fn upgradable_read(&self, key: K) -> KeyUpgradableGuard<'_, K, S> {
        self.upgradable_until(key, Deadline::Forever)
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
    pub fn try_read_for(&self, key: K, timeout: Duration) -> Option<KeyReadGuard<'_, K, S>> {
        self.read_until(key, Deadline::after(timeout))
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
    pub fn try_write_for(&self, key: K, timeout: Duration) -> Option<KeyWriteGuard<'_, K, S>> {
        self.write_until(key, Deadline::after(timeout))
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
    pub fn try_upgradable_read_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<KeyUpgradableGuard<'_, K, S>> {
        self.upgradable_until(key, Deadline::after(timeout))
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
    pub fn try_read_until(&self, key: K, deadline: Instant) -> Option<KeyReadGuard<'_, K, S>> {
        self.read_until(key, Deadline::At(deadline))
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
    pub fn try_write_until(&self, key: K, deadline: Instant) -> Option<KeyWriteGuard<'_, K, S>> {
        self.write_until(key, Deadline::At(deadline))
    }

    #[inline]
    fn read_until(&self, key: K, deadline: Deadline) -> Option<KeyReadGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, READ, deadline)
            .map(|ticket| KeyReadGuard::new(&self.registry, ticket))
    }

    #[inline]
    fn write_until(&self, key: K, deadline: Deadline) -> Option<KeyWriteGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, WRITE, deadline)
            .map(|ticket| KeyWriteGuard::new(&self.registry, ticket))
    }

    #[inline]
    fn upgradable_until(&self, key: K, deadline: Deadline) -> Option<KeyUpgradableGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, UPGRADABLE, deadline)
            .map(|ticket| KeyUpgradableGuard::new(&self.registry, ticket))
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
    /// let readers = locks.read_many(["b", "a"]);
    /// assert!(locks.try_read("a").is_some());
    /// assert!(locks.try_write("b").is_none());
    /// # drop(readers);
    /// ```
    pub fn read_many(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<KeyReadGuard<'_, K, S>> {
        self.read_many_until(keys, Deadline::Forever)
            .expect("untimed locks always succeed")
    }

    /// Write-locks every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(locks.write_many(["b", "a"])));
    ///     s.spawn(|| drop(locks.write_many(["a", "b"])));
    /// });
    /// assert!(locks.is_empty());
    /// ```
    pub fn write_many(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<KeyWriteGuard<'_, K, S>> {
        self.write_many_until(keys, Deadline::Forever)
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
    /// assert!(locks.try_read_many_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// ```
    pub fn try_read_many_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S>>> {
        self.read_many_until(keys, Deadline::after(timeout))
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
    /// assert!(locks.try_write_many_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert!(!locks.is_locked("a")); // all or nothing
    /// ```
    pub fn try_write_many_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S>>> {
        self.write_many_until(keys, Deadline::after(timeout))
    }

    fn read_many_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyReadGuard<'_, K, S>>> {
        all_or_nothing(keys, |key| self.read_until(key, deadline)).map(KeyGuards::new)
    }

    fn write_many_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyWriteGuard<'_, K, S>>> {
        all_or_nothing(keys, |key| self.write_until(key, deadline)).map(KeyGuards::new)
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
        self.upgrade_until(Deadline::Forever)
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
        self.upgrade_until(Deadline::after(timeout))
    }

    fn upgrade_until(self, deadline: Deadline) -> Result<KeyWriteGuard<'a, K, S>, Self> {
        if grow_weighted(self.registry, self.ticket, WRITE - UPGRADABLE, deadline) {
            let (registry, ticket) = self.into_parts();
            Ok(KeyWriteGuard::new(registry, ticket))
        } else {
            Err(self)
        }
    }
}
