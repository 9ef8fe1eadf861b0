//! What a hold of a [`HybridLock`] hands out: the optimistic read, the shared and exclusive
//! guards. Each derefs to `&T` only.

use super::{HybridLock, Restart, Version};
use crate::telemetry::hooks::{self, Held};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::panic::Location;

/// An optimistic read in progress ([`HybridLock::optimistic`]): derefs to the data (which a
/// writer may be changing), validates or upgrades by version. Holds nothing: dropping it
/// writes nothing.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::HybridLock;
/// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
///
/// let lock = HybridLock::new(AtomicU64::new(1));
/// let read = lock.optimistic().unwrap();
/// let next = read.load(Relaxed) + 1;
/// read.upgrade().unwrap().store(next, Relaxed);
/// assert_eq!(lock.read().load(Relaxed), 2);
/// ```
#[must_use = "an optimistic read proves nothing until it is validated"]
pub struct OptimisticRead<'a, T: ?Sized> {
    pub(super) lock: &'a HybridLock<T>,
    pub(super) version: Version,
}

impl<T: ?Sized> fmt::Debug for OptimisticRead<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OptimisticRead")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl<'a, T: ?Sized> OptimisticRead<'a, T> {
    /// The lock being read (an associated function, as the read derefs to the data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{HybridLock, OptimisticRead};
    ///
    /// let lock = HybridLock::new(());
    /// let read = lock.optimistic().unwrap();
    /// assert!(std::ptr::eq(OptimisticRead::lock(&read), &lock));
    /// ```
    pub fn lock(this: &Self) -> &'a HybridLock<T> {
        this.lock
    }

    /// The version the read began at.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(());
    /// assert_eq!(lock.optimistic().unwrap().version().get(), 0);
    /// ```
    pub fn version(&self) -> Version {
        self.version
    }

    /// `Ok` if no writer held the lock since the read began: everything loaded so far was
    /// the state at [`version`](Self::version).
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held the lock since the read began.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(());
    /// let read = lock.optimistic().unwrap();
    /// assert!(read.validate().is_ok());
    /// drop(lock.write());
    /// assert!(read.validate().is_err());
    /// ```
    #[inline]
    pub fn validate(&self) -> Result<(), Restart> {
        self.lock.raw.validate(self.version)
    }

    /// An exclusive hold if no writer held the lock since the read began (waits for the
    /// parking lock, then compares versions), so what the read saw is still the data.
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held the lock since the read began.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(());
    /// let read = lock.optimistic().unwrap();
    /// drop(lock.write());
    /// assert!(read.upgrade().is_err());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn upgrade(self) -> Result<HybridWriteGuard<'a, T>, Restart> {
        let (lock, version) = (self.lock, self.version);
        let taken = hooks::observe_hybrid::<(), true>(
            &super::STANDALONE,
            Location::caller(),
            HybridLock::<T>::telemetry_key(),
            lock.address(),
            || {
                lock.raw
                    .try_upgrade(version)
                    .map(|taken| taken.then_some(()))
            },
            || lock.raw.upgrade(version).map(Some),
        )?;
        let ((), held) = taken.expect("an upgrade without a deadline never gives up");
        Ok(HybridWriteGuard::new(lock, held))
    }
}

impl<T: ?Sized> Deref for OptimisticRead<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

/// A shared hold of a [`HybridLock`]; released on drop.
///
/// # Examples
///
/// ```
/// let lock = chainlock::hybrid::HybridLock::new(2);
/// assert_eq!(*lock.read(), 2);
/// ```
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct HybridReadGuard<'a, T: ?Sized> {
    pub(super) lock: &'a HybridLock<T>,
    /// The telemetry's record of the hold (nothing unless sampled).
    held: Held,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    pub(super) _not_send: PhantomData<lock_api::GuardNoSend>,
}

impl<'a, T: ?Sized> HybridReadGuard<'a, T> {
    /// The guard of a shared hold just taken.
    #[inline]
    pub(super) fn new(lock: &'a HybridLock<T>, held: Held) -> Self {
        HybridReadGuard {
            lock,
            held,
            _not_send: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for HybridReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

impl<T: ?Sized> Drop for HybridReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // The hold's record ends before the lock is let go (the next holder's begins after).
        std::mem::take(&mut self.held).released();
        // SAFETY: the guard owns a shared hold, taken when it was made.
        unsafe { self.lock.raw.lock.unlock_shared() };
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for HybridReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// An exclusive hold of a [`HybridLock`]; derefs to `&T` (change the data through its
/// atomics); released on drop, which makes the version even and higher.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
///
/// let lock = chainlock::hybrid::HybridLock::new(AtomicU64::new(0));
/// let write = lock.write();
/// write.store(1, Relaxed);
/// let read = write.downgrade();
/// assert_eq!(read.load(Relaxed), 1);
/// ```
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct HybridWriteGuard<'a, T: ?Sized> {
    pub(super) lock: &'a HybridLock<T>,
    /// The telemetry's record of the hold (nothing unless sampled).
    held: Held,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    pub(super) _not_send: PhantomData<lock_api::GuardNoSend>,
}

impl<'a, T: ?Sized> HybridWriteGuard<'a, T> {
    /// The guard of an exclusive hold just taken.
    #[inline]
    pub(super) fn new(lock: &'a HybridLock<T>, held: Held) -> Self {
        HybridWriteGuard {
            lock,
            held,
            _not_send: PhantomData,
        }
    }

    /// The lock held (an associated function, as the guard derefs to the data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{HybridLock, HybridWriteGuard};
    ///
    /// let lock = HybridLock::new(());
    /// let write = lock.write();
    /// assert!(std::ptr::eq(HybridWriteGuard::lock(&write), &lock));
    /// ```
    pub fn lock(this: &Self) -> &'a HybridLock<T> {
        this.lock
    }

    /// Turns the exclusive hold into a shared one without letting writers in between.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(1);
    /// let read = lock.write().downgrade();
    /// assert!(lock.try_read().is_some());
    /// drop(read);
    /// ```
    pub fn downgrade(mut self) -> HybridReadGuard<'a, T> {
        let (lock, held) = (self.lock, std::mem::take(&mut self.held));
        std::mem::forget(self);
        // SAFETY: `self` owned the exclusive hold; forgotten so that it is not released twice
        // (its record moved out first: the hold goes on, shared).
        unsafe { lock.raw.downgrade_exclusive() };
        HybridReadGuard::new(lock, held)
    }
}

impl<T: ?Sized> Deref for HybridWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

impl<T: ?Sized> Drop for HybridWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        std::mem::take(&mut self.held).released();
        // SAFETY: the guard owns the exclusive hold, taken when it was made.
        unsafe { self.lock.raw.release_exclusive() };
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for HybridWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
