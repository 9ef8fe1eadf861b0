//! Owned holds of an `Arc<HybridLock>` (a walk keeps the target it found), timed, and kept
//! only if the version is still the one an optimistic read saw.

use super::{HybridLock, Restart, Version};
#[cfg(not(loom))]
use crate::loom::sync::RawRwLock as ParkingLock;
use crate::loom::sync::atomic::Ordering;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
#[cfg(not(loom))]
use std::sync::Arc;
#[cfg(not(loom))]
use std::time::Instant;

/// How an owned hold of a [`HybridLock`] is taken: waiting for ever or until a deadline, and,
/// when it ends an optimistic read, kept only if the version is still the one read.
#[cfg(not(loom))]
impl<T: ?Sized> HybridLock<T> {
    /// A shared hold through the `Arc` (`None` if `deadline` passed first), kept only if no
    /// writer held the lock since `seen` (`Err(Restart)` otherwise, the hold let go).
    pub(crate) fn read_arc_at(
        this: &Arc<Self>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<ArcHybridReadGuard<T>>, Restart> {
        Self::read_arc_if(this, seen, |lock| match deadline {
            None => {
                lock.lock_shared();
                true
            }
            Some(deadline) => lock.try_lock_shared_until(deadline),
        })
    }

    /// [`read_arc_at`](Self::read_arc_at) only if no writer holds the lock now (`None`
    /// otherwise): an optimistic walk's target, waited for out of the walk's pin if held.
    pub(crate) fn try_read_arc_at(
        this: &Arc<Self>,
        seen: Option<Version>,
    ) -> Result<Option<ArcHybridReadGuard<T>>, Restart> {
        Self::read_arc_if(this, seen, ParkingLock::try_lock_shared)
    }

    /// A shared hold through the `Arc` if `take` takes the parking lock shared, kept only if
    /// no writer held the lock since `seen`.
    #[inline]
    fn read_arc_if(
        this: &Arc<Self>,
        seen: Option<Version>,
        take: impl FnOnce(&ParkingLock) -> bool,
    ) -> Result<Option<ArcHybridReadGuard<T>>, Restart> {
        if !take(&this.raw.lock) {
            return Ok(None);
        }
        let guard = ArcHybridReadGuard {
            lock: Arc::clone(this),
            _not_send: PhantomData,
        };
        // Under a shared hold no writer can change the version, and taking the parking lock
        // made the last writer's version store visible: this is the current version.
        match seen {
            Some(seen) if this.raw.version.load(Ordering::Relaxed) != seen.0 => Err(Restart),
            _ => Ok(Some(guard)),
        }
    }

    /// A shared hold through the `Arc` if no writer holds the lock now.
    pub(crate) fn try_read_arc(this: &Arc<Self>) -> Option<ArcHybridReadGuard<T>> {
        this.raw.lock.try_lock_shared().then(|| ArcHybridReadGuard {
            lock: Arc::clone(this),
            _not_send: PhantomData,
        })
    }

    /// An exclusive hold through the `Arc` (`None` if `deadline` passed first), kept only if
    /// no writer held the lock since `seen` (`Err(Restart)` otherwise, the hold let go): an
    /// owned, timed [`upgrade`](RawHybridLock::upgrade).
    pub(crate) fn write_arc_at(
        this: &Arc<Self>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<ArcHybridWriteGuard<T>>, Restart> {
        Self::write_arc_if(this, seen, |lock| match deadline {
            None => {
                lock.lock_exclusive();
                true
            }
            Some(deadline) => lock.try_lock_exclusive_until(deadline),
        })
    }

    /// [`write_arc_at`](Self::write_arc_at) only if no one holds the lock now (`None`
    /// otherwise): an optimistic walk's target, waited for out of the walk's pin if held.
    pub(crate) fn try_write_arc_at(
        this: &Arc<Self>,
        seen: Option<Version>,
    ) -> Result<Option<ArcHybridWriteGuard<T>>, Restart> {
        Self::write_arc_if(this, seen, ParkingLock::try_lock_exclusive)
    }

    /// An exclusive hold through the `Arc` if `take` takes the parking lock exclusively, kept
    /// only if no writer held the lock since `seen`.
    #[inline]
    fn write_arc_if(
        this: &Arc<Self>,
        seen: Option<Version>,
        take: impl FnOnce(&ParkingLock) -> bool,
    ) -> Result<Option<ArcHybridWriteGuard<T>>, Restart> {
        let raw = &this.raw;
        if let Some(seen) = seen
            && raw.version.load(Ordering::Relaxed) != seen.0
        {
            return Err(Restart);
        }
        if !take(&raw.lock) {
            return Ok(None);
        }
        // Under the parking lock: the last writer's release of it made its version store
        // visible, so this is the current version.
        if let Some(seen) = seen
            && raw.version.load(Ordering::Relaxed) != seen.0
        {
            // SAFETY: taken exclusively just above; the version was not touched.
            unsafe { raw.lock.unlock_exclusive() };
            return Err(Restart);
        }
        raw.begin_write();
        Ok(Some(ArcHybridWriteGuard {
            lock: Arc::clone(this),
            _not_send: PhantomData,
        }))
    }
}

/// A shared hold of a [`HybridLock`] that owns a clone of its `Arc` (so it can outlive the
/// walk that found the lock): what
/// [`Walker::descend_optimistic`](crate::walk::Walker::descend_optimistic) returns in
/// [`Shared`](crate::walk::Shared) mode. Released on drop.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::HybridLock;
/// use chainlock::walk::{Shared, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Leaf(u32);
/// impl ChainNode for Leaf {}
///
/// let root = Arc::new(HybridLock::new(Leaf(7)));
/// let found = Walker::new().descend_optimistic(&root, Shared, |_, _, _| Step::Here).unwrap();
/// assert_eq!(found.target.0, 7);
/// assert!(root.try_write().is_none(), "held shared by `found`");
/// ```
#[cfg(not(loom))]
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct ArcHybridReadGuard<T: ?Sized> {
    pub(super) lock: Arc<HybridLock<T>>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    pub(super) _not_send: PhantomData<lock_api::GuardNoSend>,
}

#[cfg(not(loom))]
impl<T: ?Sized> ArcHybridReadGuard<T> {
    /// The lock held (an associated function, as the guard derefs to the data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{ArcHybridReadGuard, HybridLock};
    /// use chainlock::walk::{Shared, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Leaf;
    /// impl ChainNode for Leaf {}
    ///
    /// let root = Arc::new(HybridLock::new(Leaf));
    /// let found = Walker::new().descend_optimistic(&root, Shared, |_, _, _| Step::Here).unwrap();
    /// assert!(Arc::ptr_eq(ArcHybridReadGuard::lock(&found.target), &root));
    /// ```
    pub fn lock(this: &Self) -> &Arc<HybridLock<T>> {
        &this.lock
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> Deref for ArcHybridReadGuard<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> Drop for ArcHybridReadGuard<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard owns a shared hold, taken when it was made.
        unsafe { self.lock.raw.lock.unlock_shared() };
    }
}

#[cfg(not(loom))]
impl<T: ?Sized + fmt::Debug> fmt::Debug for ArcHybridReadGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// An exclusive hold of a [`HybridLock`] that owns a clone of its `Arc`: what
/// [`Walker::descend_optimistic`](crate::walk::Walker::descend_optimistic) returns in
/// [`Crab`](crate::walk::Crab) and [`Exclusive`](crate::walk::Exclusive) modes. Derefs to
/// `&T` only (change the data through its atomics, as with [`HybridWriteGuard`](super::HybridWriteGuard)); released on
/// drop, which makes the version even and higher.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::HybridLock;
/// use chainlock::walk::{Exclusive, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
/// use std::sync::Arc;
///
/// struct Leaf(AtomicU32);
/// impl ChainNode for Leaf {}
///
/// let root = Arc::new(HybridLock::new(Leaf(AtomicU32::new(7))));
/// let found = Walker::new().descend_optimistic(&root, Exclusive, |_, _, _| Step::Here).unwrap();
/// found.target.0.store(8, Relaxed);
/// drop(found);
/// assert_eq!(root.read_optimistic(|leaf| leaf.0.load(Relaxed)), Ok(8));
/// ```
#[cfg(not(loom))]
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct ArcHybridWriteGuard<T: ?Sized> {
    pub(super) lock: Arc<HybridLock<T>>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    pub(super) _not_send: PhantomData<lock_api::GuardNoSend>,
}

#[cfg(not(loom))]
impl<T: ?Sized> ArcHybridWriteGuard<T> {
    /// The lock held (an associated function, as the guard derefs to the data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{ArcHybridWriteGuard, HybridLock};
    /// use chainlock::walk::{Exclusive, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Leaf;
    /// impl ChainNode for Leaf {}
    ///
    /// let root = Arc::new(HybridLock::new(Leaf));
    /// let found = Walker::new().descend_optimistic(&root, Exclusive, |_, _, _| Step::Here).unwrap();
    /// assert!(Arc::ptr_eq(ArcHybridWriteGuard::lock(&found.target), &root));
    /// ```
    pub fn lock(this: &Self) -> &Arc<HybridLock<T>> {
        &this.lock
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> Deref for ArcHybridWriteGuard<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> Drop for ArcHybridWriteGuard<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard owns the exclusive hold, taken when it was made.
        unsafe { self.lock.raw.release_exclusive() };
    }
}

#[cfg(not(loom))]
impl<T: ?Sized + fmt::Debug> fmt::Debug for ArcHybridWriteGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
