//! Mutex stripes: `Striped<lock_api::Mutex<R, T>>`, and their timed forms when `R` has a
//! timer (`RawMutexTimed`, as parking_lot's).

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use lock_api::{Mutex, MutexGuard, RawMutex, RawMutexTimed};

use super::{StripeGuards, Striped};

impl<R: RawMutex, T, S: BuildHasher> Striped<Mutex<R, T>, S> {
    /// Locks the stripe of `key`, blocking until it is available.
    ///
    /// The stripe's mutex is not reentrant: locking a key whose stripe the current thread
    /// already holds (the same key, or a colliding one) behaves as the mutex `R` does on
    /// relock (it deadlocks with `parking_lot`). Use [`lock_all`](Self::lock_all) to hold
    /// several keys at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let balances: Striped<Mutex<i64>> = Striped::new(8);
    /// *balances.lock(&7_u32) += 10;
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn lock<Q: Hash + ?Sized>(&self, key: &Q) -> MutexGuard<'_, R, T> {
        self.take_stripe(key, true, Mutex::try_lock, |s| Some(s.lock()))
            .expect("a blocking lock always takes its stripe")
    }

    /// Locks the stripe of `key` if it is free right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(8);
    /// let held = locks.lock("k");
    /// assert!(locks.try_lock("k").is_none()); // the stripe is taken
    /// drop(held);
    /// assert!(locks.try_lock("k").is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock<Q: Hash + ?Sized>(&self, key: &Q) -> Option<MutexGuard<'_, R, T>> {
        self.take_stripe(key, false, Mutex::try_lock, Mutex::try_lock)
    }

    /// Locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// Because every bulk locker takes stripes in the same (ascending) order, concurrent
    /// calls with overlapping keys never deadlock one another. The calling thread must not
    /// already hold one of these stripes (see [`lock`](Self::lock)).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let accounts: Striped<Mutex<()>> = Striped::new(32);
    /// // Transfer between two accounts: both locked, whatever the argument order.
    /// let held = accounts.lock_all([&"acct-9", &"acct-1"]);
    /// assert_eq!(held.stripes(), accounts.indices_of(["acct-1", "acct-9"]));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn lock_all<Q, I>(&self, keys: I) -> StripeGuards<MutexGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, Mutex::try_lock, Mutex::lock)
    }

    /// Locks the stripes of all `keys` if all are free right now; otherwise locks none.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1);
    /// let held = locks.lock(&1);
    /// assert!(locks.try_lock_all([1, 2]).is_none());
    /// drop(held);
    /// assert!(locks.try_lock_all([1, 2]).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all<Q, I>(&self, keys: I) -> Option<StripeGuards<MutexGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, false, Mutex::try_lock, Mutex::try_lock)
    }
}

impl<R, T, S: BuildHasher> Striped<Mutex<R, T>, S>
where
    R: RawMutexTimed<Duration = Duration, Instant = Instant>,
{
    /// Locks the stripe of `key`, waiting at most `timeout`; `None` if the time ran out.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(8);
    /// std::thread::scope(|s| {
    ///     let held = locks.lock("k");
    ///     s.spawn(|| assert!(locks.try_lock_for("k", Duration::from_millis(5)).is_none()))
    ///         .join()
    ///         .unwrap();
    ///     drop(held);
    /// });
    /// assert!(locks.try_lock_for("k", Duration::from_millis(5)).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_for<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        timeout: Duration,
    ) -> Option<MutexGuard<'_, R, T>> {
        self.take_stripe(key, true, Mutex::try_lock, |s| s.try_lock_for(timeout))
    }

    /// Locks the stripe of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(8);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(locks.try_lock_until("k", deadline).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_until<Q: Hash + ?Sized>(
        &self,
        key: &Q,
        deadline: Instant,
    ) -> Option<MutexGuard<'_, R, T>> {
        self.take_stripe(key, true, Mutex::try_lock, |s| s.try_lock_until(deadline))
    }

    /// Locks the stripes of all `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1);
    /// std::thread::scope(|s| {
    ///     let held = locks.lock(&1);
    ///     s.spawn(|| assert!(locks.try_lock_all_for([1, 2], Duration::from_millis(5)).is_none()))
    ///         .join()
    ///         .unwrap();
    ///     drop(held);
    /// });
    /// assert!(locks.try_lock_all_for([1, 2], Duration::from_millis(5)).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all_for<Q, I>(
        &self,
        keys: I,
        timeout: Duration,
    ) -> Option<StripeGuards<MutexGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_all_until(keys, deadline),
            None => Some(self.lock_all(keys)),
        }
    }

    /// Locks the stripes of all `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(4);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(locks.try_lock_all_until(["a", "b"], deadline).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_all_until<Q, I>(
        &self,
        keys: I,
        deadline: Instant,
    ) -> Option<StripeGuards<MutexGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, true, Mutex::try_lock, |stripe| {
            stripe.try_lock_until(deadline)
        })
    }
}
