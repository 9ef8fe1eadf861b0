//! Reader-writer stripes: `Striped<lock_api::RwLock<R, T>>`, and their timed forms when `R`
//! has a timer (`RawRwLockTimed`, as parking_lot's).

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use lock_api::{RawRwLock, RawRwLockTimed, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{StripeGuards, Striped};

impl<R: RawRwLock, T, S: BuildHasher> Striped<RwLock<R, T>, S> {
    /// Locks the stripe of `key` for reading (shared).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let versions: Striped<RwLock<u32>> = Striped::new(8);
    /// let a = versions.read("doc");
    /// let b = versions.read("doc"); // readers share the stripe
    /// assert_eq!(*a + *b, 0);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn read<Q: Hash + ?Sized>(&self, key: &Q) -> RwLockReadGuard<'_, R, T> {
        self.take_stripe(key, true, RwLock::try_read, |s| Some(s.read()))
            .expect("a blocking lock always takes its stripe")
    }

    /// Locks the stripe of `key` for writing (exclusive).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let versions: Striped<RwLock<u32>> = Striped::new(8);
    /// *versions.write("doc") += 1;
    /// assert_eq!(*versions.read("doc"), 1);
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn write<Q: Hash + ?Sized>(&self, key: &Q) -> RwLockWriteGuard<'_, R, T> {
        self.take_stripe(key, true, RwLock::try_write, |s| Some(s.write()))
            .expect("a blocking lock always takes its stripe")
    }

    /// Locks the stripe of `key` for reading if possible right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let writer = locks.write("k");
    /// assert!(locks.try_read("k").is_none());
    /// drop(writer);
    /// assert!(locks.try_read("k").is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read<Q: Hash + ?Sized>(&self, key: &Q) -> Option<RwLockReadGuard<'_, R, T>> {
        self.take_stripe(key, false, RwLock::try_read, RwLock::try_read)
    }

    /// Locks the stripe of `key` for writing if possible right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let reader = locks.read("k");
    /// assert!(locks.try_write("k").is_none());
    /// drop(reader);
    /// assert!(locks.try_write("k").is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write<Q: Hash + ?Sized>(&self, key: &Q) -> Option<RwLockWriteGuard<'_, R, T>> {
        self.take_stripe(key, false, RwLock::try_write, RwLock::try_write)
    }

    /// Read-locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// Mixing bulk readers and bulk writers never deadlocks: all take stripes in the same
    /// order. A thread must not already hold one of these stripes: a read lock taken twice
    /// can deadlock behind a queued writer.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let readers = locks.read_all(["x", "y"]);
    /// assert!(locks.try_read("x").is_some()); // shared
    /// assert!(locks.try_write("x").is_none());
    /// drop(readers);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn read_all<Q, I>(&self, keys: I) -> StripeGuards<RwLockReadGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, RwLock::try_read, RwLock::read)
    }

    /// Write-locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let held = locks.write_all(["x", "y"]);
    /// assert!(locks.try_read("x").is_none());
    /// drop(held);
    /// assert!(locks.try_read("x").is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn write_all<Q, I>(&self, keys: I) -> StripeGuards<RwLockWriteGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, RwLock::try_write, RwLock::write)
    }

    /// Read-locks the stripes of all `keys` if that is possible right now; otherwise
    /// locks none.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(1);
    /// let held = locks.write(&1);
    /// assert!(locks.try_read_all([1, 2]).is_none());
    /// drop(held);
    /// assert!(locks.try_read_all([1, 2]).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all<Q, I>(&self, keys: I) -> Option<StripeGuards<RwLockReadGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, false, RwLock::try_read, RwLock::try_read)
    }

    /// Write-locks the stripes of all `keys` if that is possible right now; otherwise
    /// locks none.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(1);
    /// let held = locks.read(&1);
    /// assert!(locks.try_write_all([1, 2]).is_none());
    /// drop(held);
    /// assert!(locks.try_write_all([1, 2]).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all<Q, I>(&self, keys: I) -> Option<StripeGuards<RwLockWriteGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, false, RwLock::try_write, RwLock::try_write)
    }
}

impl<R, T, S: BuildHasher> Striped<RwLock<R, T>, S>
where
    R: RawRwLockTimed<Duration = Duration, Instant = Instant>,
{
    /// Read-locks the stripe of `key`, waiting at most `timeout`; `None` if the time ran
    /// out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let held = locks.write("k");
    /// assert!(locks.try_read_for("k", Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(locks.try_read_for("k", Duration::from_millis(5)).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_for<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        timeout: Duration,
    ) -> Option<RwLockReadGuard<'_, R, T>> {
        self.take_stripe(key, true, RwLock::try_read, |s| s.try_read_for(timeout))
    }

    /// Read-locks the stripe of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(locks.try_read_until("k", deadline).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_until<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        deadline: Instant,
    ) -> Option<RwLockReadGuard<'_, R, T>> {
        self.take_stripe(key, true, RwLock::try_read, |s| s.try_read_until(deadline))
    }

    /// Read-locks the stripes of all `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(1);
    /// let held = locks.write(&1);
    /// assert!(locks.try_read_all_for([1, 2], Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(locks.try_read_all_for([1, 2], Duration::from_millis(5)).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all_for<Q, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Option<StripeGuards<RwLockReadGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_read_all_until(keys, deadline),
            None => Some(self.read_all(keys)),
        }
    }

    /// Read-locks the stripes of all `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(locks.try_read_all_until(["a", "a"], deadline).map(|held| held.len()), Some(1));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read_all_until<Q, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Option<StripeGuards<RwLockReadGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, true, RwLock::try_read, |stripe| {
            stripe.try_read_until(deadline)
        })
    }

    /// Write-locks the stripe of `key`, waiting at most `timeout`; `None` if the time ran
    /// out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let held = locks.read("k");
    /// assert!(locks.try_write_for("k", Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(locks.try_write_for("k", Duration::from_millis(5)).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_for<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        timeout: Duration,
    ) -> Option<RwLockWriteGuard<'_, R, T>> {
        self.take_stripe(key, true, RwLock::try_write, |s| s.try_write_for(timeout))
    }

    /// Write-locks the stripe of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(locks.try_write_until("k", deadline).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_until<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        deadline: Instant,
    ) -> Option<RwLockWriteGuard<'_, R, T>> {
        self.take_stripe(key, true, RwLock::try_write, |s| {
            s.try_write_until(deadline)
        })
    }

    /// Write-locks the stripes of all `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(1);
    /// let held = locks.read(&1);
    /// assert!(locks.try_write_all_for([1, 2], Duration::from_millis(5)).is_none());
    /// drop(held);
    /// assert!(locks.try_write_all_for([1, 2], Duration::from_millis(5)).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all_for<Q, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Option<StripeGuards<RwLockWriteGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_write_all_until(keys, deadline),
            None => Some(self.write_all(keys)),
        }
    }

    /// Write-locks the stripes of all `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(locks.try_write_all_until(["a", "a"], deadline).map(|held| held.len()), Some(1));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write_all_until<Q, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Option<StripeGuards<RwLockWriteGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, true, RwLock::try_write, |stripe| {
            stripe.try_write_until(deadline)
        })
    }
}
