//! The blocking face of the keyed permit manager: threads wait by parking.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::DefaultHashBuilder;
use super::blocking::{Deadline, acquire_weighted, all_or_nothing};
use super::manager::Blocking;
use super::permits::{PermitGuard, PermitManager};
use super::rw::KeyGuards;

/// A manager of named counting semaphores for threads: at most N holders per key, strict
/// FIFO, timeouts, bounded memory, all-or-nothing multi-key acquisition.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use chainlock::keyed::KeyedPermits;
///
/// let hosts = KeyedPermits::new(2);
/// let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// std::thread::scope(|s| {
///     for _ in 0..6 {
///         s.spawn(|| {
///             let _permit = hosts.acquire("example.org");
///             let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
///             most.fetch_max(now, Ordering::SeqCst);
///             inside.fetch_sub(1, Ordering::SeqCst);
///         });
///     }
/// });
/// assert!(most.load(Ordering::SeqCst) <= 2);
/// assert!(hosts.is_empty());
/// ```
pub type KeyedPermits<K, S = DefaultHashBuilder> = PermitManager<K, S, Blocking>;

impl<K: Eq + Hash, S: BuildHasher> PermitManager<K, S, Blocking> {
    /// Takes a permit of `key`, blocking until one is free and every earlier waiter was
    /// served.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(2);
    /// let (a, b) = (hosts.acquire("h"), hosts.acquire("h"));
    /// assert_eq!(hosts.available(&"h"), 0);
    /// # drop((a, b));
    /// ```
    #[inline]
    pub fn acquire(&self, key: K) -> PermitGuard<'_, K, S> {
        self.acquire_until(key, Deadline::Forever)
            .expect("an untimed acquisition always succeeds")
    }

    /// Takes a permit of `key`, waiting at most `timeout`; `None` if the time ran out. A
    /// grant that races the timeout is taken, never lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let _held = hosts.acquire("h");
    /// assert!(hosts.try_acquire_for("h", Duration::from_millis(5)).is_none());
    /// ```
    #[inline]
    pub fn try_acquire_for(&self, key: K, timeout: Duration) -> Option<PermitGuard<'_, K, S>> {
        self.acquire_until(key, Deadline::after(timeout))
    }

    /// Takes a permit of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(hosts.try_acquire_until("h", deadline).is_some());
    /// ```
    #[inline]
    pub fn try_acquire_until(&self, key: K, deadline: Instant) -> Option<PermitGuard<'_, K, S>> {
        self.acquire_until(key, Deadline::At(deadline))
    }

    #[inline]
    fn acquire_until(&self, key: K, deadline: Deadline) -> Option<PermitGuard<'_, K, S>> {
        acquire_weighted(&self.registry, key, 1, deadline)
            .map(|ticket| PermitGuard::new(&self.registry, ticket))
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> PermitManager<K, S, Blocking> {
    /// Takes a permit of every key of `keys`, in ascending `Ord` order (duplicates once),
    /// blocking until all are held. Concurrent multi-key calls never deadlock one another.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let both = hosts.acquire_all(["b", "a", "b"]);
    /// assert_eq!(both.len(), 2);
    /// ```
    pub fn acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<PermitGuard<'_, K, S>> {
        self.acquire_all_until(keys, Deadline::Forever)
            .expect("untimed acquisitions always succeed")
    }

    /// Takes a permit of every key of `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let _b = hosts.acquire("b");
    /// assert!(hosts.try_acquire_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert_eq!(hosts.available(&"a"), 1); // all or nothing
    /// ```
    pub fn try_acquire_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<PermitGuard<'_, K, S>>> {
        self.acquire_all_until(keys, Deadline::after(timeout))
    }

    fn acquire_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<PermitGuard<'_, K, S>>> {
        all_or_nothing(keys, |key| self.acquire_until(key, deadline)).map(KeyGuards::new)
    }
}
