//! The lock families a chain level can be: what "lock this level through its `Arc` and keep
//! an owned guard" means for each lock type.
//!
//! Implemented for every [`lock_api`] lock (so for parking_lot's `Mutex`, `FairMutex` and
//! `RwLock`, and for any user `RawMutex`/`RawRwLock`), and with the `tokio` feature for
//! `tokio::sync::{Mutex, RwLock}`. Implement them for your own lock type to use it in a chain.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

/// A lock whose holder has exclusive access, taken through an `Arc` so that the guard owns
/// the lock handle and can outlive the guard of the parent it was found in.
///
/// # Examples
///
/// ```
/// use chainlock::chain::ExclusiveLock;
/// use chainlock::parking_lot::Mutex;
/// use std::sync::Arc;
///
/// let lock = Arc::new(Mutex::new(1));
/// let mut guard = ExclusiveLock::lock_exclusive(&lock);
/// *guard += 1;
/// assert!(ExclusiveLock::try_lock_exclusive(&lock).is_none(), "held by `guard`");
/// drop(guard);
/// assert_eq!(*lock.lock(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an exclusive level of a chain",
    label = "not a lock with owned guards",
    note = "a level is an `Arc<L>` where `L` is a `lock_api`/parking_lot `Mutex`, `FairMutex` or `RwLock`; tokio's locks need the `*_async` methods; a `HybridLock` level is `optimistic` or `shared` (its writers get `&T`, not `&mut T`)",
    note = "chainlock implements this for lock_api 0.5 (parking_lot 0.13): a `Mutex` of another parking_lot version (e.g. 0.12) is another type; use `chainlock::parking_lot` or the same version"
)]
pub trait ExclusiveLock {
    /// The data the lock protects.
    type Target: ?Sized;
    /// The owned guard: holds the lock (and a clone of the `Arc`) until dropped.
    type Guard: DerefMut<Target = Self::Target>;

    /// Blocks until the lock is held exclusively.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::ExclusiveLock, parking_lot::RwLock};
    /// # use std::sync::Arc;
    /// let lock = Arc::new(RwLock::new(vec![1]));
    /// ExclusiveLock::lock_exclusive(&lock).push(2); // an `RwLock`'s write side
    /// assert_eq!(*lock.read(), [1, 2]);
    /// ```
    fn lock_exclusive(this: &Arc<Self>) -> Self::Guard;

    /// Takes the lock exclusively if that needs no waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::ExclusiveLock, parking_lot::Mutex};
    /// # use std::sync::Arc;
    /// let lock = Arc::new(Mutex::new(0));
    /// let held = lock.lock();
    /// assert!(ExclusiveLock::try_lock_exclusive(&lock).is_none());
    /// drop(held);
    /// assert!(ExclusiveLock::try_lock_exclusive(&lock).is_some());
    /// ```
    fn try_lock_exclusive(this: &Arc<Self>) -> Option<Self::Guard>;
}

/// An [`ExclusiveLock`] that can give up waiting at a deadline (lock_api's `RawMutexTimed`).
///
/// # Examples
///
/// See [`TimedExclusiveLock::try_lock_exclusive_until`]. A lock whose raw lock cannot wait
/// with a timeout (a spin lock, say) has no deadline methods: a generated locker's
/// `descend_until` on it does not compile (E0277, `RawMutexTimed` not implemented).
///
/// ```compile_fail,E0277
/// use chainlock::chain_locker;
/// use chainlock::lock_api::{GuardNoSend, RawMutex};
/// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
/// use std::time::Instant;
///
/// struct Spin(AtomicBool);
///
/// unsafe impl RawMutex for Spin {
///     const INIT: Spin = Spin(AtomicBool::new(false));
///     type Guard = GuardNoSend;
///     fn lock(&self) -> GuardNoSend {
///         while self.0.swap(true, Ordering::Acquire) {}
///         GuardNoSend::new()
///     }
///     fn try_lock(&self) -> Option<GuardNoSend> {
///         (!self.0.swap(true, Ordering::Acquire)).then(GuardNoSend::new)
///     }
///     unsafe fn unlock(&self, _: GuardNoSend) {
///         self.0.store(false, Ordering::Release);
///     }
///     fn is_locked(&self) -> bool {
///         self.0.load(Ordering::Relaxed)
///     }
/// }
///
/// struct Registry;
/// chain_locker!(struct RegistryLocker(Registry););
///
/// let root = Arc::new(chainlock::lock_api::Mutex::<Spin, _>::new(Registry));
/// let _ = RegistryLocker.descend(&root); // fine: no deadline
/// let _ = RegistryLocker.descend_until(&root, Instant::now()); // E0277
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be locked with a deadline",
    label = "its raw lock has no timed acquisition",
    note = "deadline methods (`*_until`) need a raw lock implementing `lock_api::RawMutexTimed` or `RawRwLockTimed`, as parking_lot's locks do"
)]
pub trait TimedExclusiveLock: ExclusiveLock {
    /// Waits for the lock until `deadline`; `None` if the deadline passed first.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::TimedExclusiveLock, parking_lot::Mutex};
    /// # use std::{sync::Arc, time::{Duration, Instant}};
    /// let lock = Arc::new(Mutex::new(0));
    /// let held = lock.lock();
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// assert!(TimedExclusiveLock::try_lock_exclusive_until(&lock, soon).is_none());
    /// drop(held);
    /// assert!(TimedExclusiveLock::try_lock_exclusive_until(&lock, soon).is_some());
    /// ```
    fn try_lock_exclusive_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard>;
}

/// A lock that many holders may hold at once for reading (an `RwLock`'s read side).
///
/// # Examples
///
/// See [`SharedLock::lock_shared`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no shared mode",
    label = "a `shared` level needs a lock with a read mode",
    note = "use an `RwLock` for this level, or make the level exclusive (drop the `shared` modifier)"
)]
pub trait SharedLock {
    /// The data the lock protects.
    type Target: ?Sized;
    /// The owned read guard.
    type Guard: Deref<Target = Self::Target>;

    /// Blocks until the lock is held in shared mode.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::SharedLock, parking_lot::RwLock};
    /// # use std::sync::Arc;
    /// let lock = Arc::new(RwLock::new(5));
    /// let (a, b) = (SharedLock::lock_shared(&lock), SharedLock::lock_shared(&lock));
    /// assert_eq!(*a + *b, 10, "readers share the lock");
    /// ```
    fn lock_shared(this: &Arc<Self>) -> Self::Guard;

    /// Takes the lock in shared mode if that needs no waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::SharedLock, parking_lot::RwLock};
    /// # use std::sync::Arc;
    /// let lock = Arc::new(RwLock::new(5));
    /// let writer = lock.write();
    /// assert!(SharedLock::try_lock_shared(&lock).is_none());
    /// drop(writer);
    /// assert!(SharedLock::try_lock_shared(&lock).is_some());
    /// ```
    fn try_lock_shared(this: &Arc<Self>) -> Option<Self::Guard>;
}

/// A [`SharedLock`] that can give up waiting at a deadline.
///
/// # Examples
///
/// See [`TimedSharedLock::try_lock_shared_until`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read-locked with a deadline",
    label = "its raw lock has no timed acquisition",
    note = "deadline methods (`*_until`) need a raw lock implementing `lock_api::RawRwLockTimed`, as parking_lot's `RwLock` does"
)]
pub trait TimedSharedLock: SharedLock {
    /// Waits for the shared lock until `deadline`; `None` if the deadline passed first.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{chain::TimedSharedLock, parking_lot::RwLock};
    /// # use std::{sync::Arc, time::{Duration, Instant}};
    /// let lock = Arc::new(RwLock::new(5));
    /// let writer = lock.write();
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// assert!(TimedSharedLock::try_lock_shared_until(&lock, soon).is_none());
    /// drop(writer);
    /// assert!(TimedSharedLock::try_lock_shared_until(&lock, soon).is_some());
    /// ```
    fn try_lock_shared_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard>;
}

impl<R: lock_api::RawMutex, T: ?Sized> ExclusiveLock for lock_api::Mutex<R, T> {
    type Target = T;
    type Guard = lock_api::ArcMutexGuard<R, T>;

    #[inline]
    fn lock_exclusive(this: &Arc<Self>) -> Self::Guard {
        this.lock_arc()
    }

    #[inline]
    fn try_lock_exclusive(this: &Arc<Self>) -> Option<Self::Guard> {
        this.try_lock_arc()
    }
}

impl<R, T> TimedExclusiveLock for lock_api::Mutex<R, T>
where
    R: lock_api::RawMutexTimed<Instant = Instant>,
    T: ?Sized,
{
    #[inline]
    fn try_lock_exclusive_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard> {
        this.try_lock_arc_until(deadline)
    }
}

impl<R: lock_api::RawRwLock, T: ?Sized> ExclusiveLock for lock_api::RwLock<R, T> {
    type Target = T;
    type Guard = lock_api::ArcRwLockWriteGuard<R, T>;

    #[inline]
    fn lock_exclusive(this: &Arc<Self>) -> Self::Guard {
        this.write_arc()
    }

    #[inline]
    fn try_lock_exclusive(this: &Arc<Self>) -> Option<Self::Guard> {
        this.try_write_arc()
    }
}

impl<R, T> TimedExclusiveLock for lock_api::RwLock<R, T>
where
    R: lock_api::RawRwLockTimed<Instant = Instant>,
    T: ?Sized,
{
    #[inline]
    fn try_lock_exclusive_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard> {
        this.try_write_arc_until(deadline)
    }
}

impl<R: lock_api::RawRwLock, T: ?Sized> SharedLock for lock_api::RwLock<R, T> {
    type Target = T;
    type Guard = lock_api::ArcRwLockReadGuard<R, T>;

    #[inline]
    fn lock_shared(this: &Arc<Self>) -> Self::Guard {
        this.read_arc()
    }

    #[inline]
    fn try_lock_shared(this: &Arc<Self>) -> Option<Self::Guard> {
        this.try_read_arc()
    }
}

impl<R, T> TimedSharedLock for lock_api::RwLock<R, T>
where
    R: lock_api::RawRwLockTimed<Instant = Instant>,
    T: ?Sized,
{
    #[inline]
    fn try_lock_shared_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard> {
        this.try_read_arc_until(deadline)
    }
}

/// A [`HybridLock`](crate::hybrid::HybridLock) as a `shared` level (below `optimistic` ones,
/// say, to hold the directory a descent ends at while the leaf reads it): its read side,
/// [`ArcHybridReadGuard`](crate::hybrid::ArcHybridReadGuard). It is no [`ExclusiveLock`]: its
/// writers get `&T`, never `&mut T` (that is what lets optimistic readers read it), so an
/// exclusive level of it would have no `&mut` to lend; change it in the leaf through `write()`.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{SharedLock, TimedSharedLock};
/// use chainlock::hybrid::HybridLock;
/// use std::sync::Arc;
/// use std::time::Instant;
///
/// let lock = Arc::new(HybridLock::new(5));
/// let (a, b) = (SharedLock::lock_shared(&lock), SharedLock::lock_shared(&lock));
/// assert_eq!(*a + *b, 10);
/// assert!(lock.try_write().is_none(), "held shared");
/// drop((a, b));
/// let writer = lock.write();
/// assert!(SharedLock::try_lock_shared(&lock).is_none());
/// assert!(TimedSharedLock::try_lock_shared_until(&lock, Instant::now()).is_none());
/// drop(writer);
/// ```
#[cfg(not(loom))]
impl<T: ?Sized> SharedLock for crate::hybrid::HybridLock<T> {
    type Target = T;
    type Guard = crate::hybrid::ArcHybridReadGuard<T>;

    #[inline]
    fn lock_shared(this: &Arc<Self>) -> Self::Guard {
        Self::read_arc_at(this, None, None)
            .ok()
            .flatten()
            .expect("an untimed hold without a version to keep never gives up")
    }

    #[inline]
    fn try_lock_shared(this: &Arc<Self>) -> Option<Self::Guard> {
        Self::try_read_arc(this)
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> TimedSharedLock for crate::hybrid::HybridLock<T> {
    #[inline]
    fn try_lock_shared_until(this: &Arc<Self>, deadline: Instant) -> Option<Self::Guard> {
        Self::read_arc_at(this, None, Some(deadline)).ok().flatten()
    }
}

/// An exclusive lock acquired asynchronously through an owned `Arc` (tokio's `lock_owned`).
///
/// The returned futures are `Send` so that a generated `*_async` method can run inside
/// `tokio::spawn`.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "tokio")]
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use chainlock::chain::{AsyncExclusiveLock, AsyncSharedLock};
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use tokio::sync::RwLock;
///
/// let lock = Arc::new(RwLock::new(1));
/// *AsyncExclusiveLock::lock_exclusive_async(lock.clone()).await += 1;
/// let reader = AsyncSharedLock::lock_shared_async(lock.clone()).await;
/// assert_eq!(*reader, 2);
/// // A writer cannot get in while `reader` lives; the timed flavor gives up (this needs a
/// // Tokio runtime with timers).
/// let soon = Instant::now() + Duration::from_millis(1);
/// assert!(AsyncExclusiveLock::try_lock_exclusive_until_async(lock.clone(), soon).await.is_none());
/// drop(reader);
/// assert!(AsyncSharedLock::try_lock_shared_until_async(lock, soon).await.is_some());
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an exclusive level of an async chain",
    label = "not an async lock with owned guards",
    note = "the `*_async` methods need `tokio::sync::Mutex` or `tokio::sync::RwLock` levels (feature `tokio`)"
)]
pub trait AsyncExclusiveLock {
    /// The data the lock protects.
    type Target: ?Sized;
    /// The owned guard.
    type Guard: DerefMut<Target = Self::Target>;

    /// Waits until the lock is held exclusively; runs on any executor.
    ///
    /// # Examples
    ///
    /// See [`AsyncExclusiveLock`].
    fn lock_exclusive_async(this: Arc<Self>) -> impl Future<Output = Self::Guard> + Send;

    /// Waits for the lock until `deadline`; `None` if the deadline passed first.
    ///
    /// # Panics
    ///
    /// tokio's implementation sleeps with `tokio::time`: outside a Tokio runtime with timers
    /// enabled it panics when first polled.
    ///
    /// # Examples
    ///
    /// See [`AsyncExclusiveLock`].
    fn try_lock_exclusive_until_async(
        this: Arc<Self>,
        deadline: Instant,
    ) -> impl Future<Output = Option<Self::Guard>> + Send;
}

/// A lock acquired asynchronously in shared mode through an owned `Arc` (tokio's `read_owned`).
///
/// # Examples
///
/// See [`AsyncExclusiveLock`], which shows both.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no async shared mode",
    label = "a `shared` level of an async chain needs `tokio::sync::RwLock`",
    note = "use `tokio::sync::RwLock` for this level, or make the level exclusive"
)]
pub trait AsyncSharedLock {
    /// The data the lock protects.
    type Target: ?Sized;
    /// The owned read guard.
    type Guard: Deref<Target = Self::Target>;

    /// Waits until the lock is held in shared mode; runs on any executor.
    ///
    /// # Examples
    ///
    /// See [`AsyncExclusiveLock`].
    fn lock_shared_async(this: Arc<Self>) -> impl Future<Output = Self::Guard> + Send;

    /// Waits for the shared lock until `deadline`; `None` if the deadline passed first.
    ///
    /// # Panics
    ///
    /// tokio's implementation sleeps with `tokio::time`: outside a Tokio runtime with timers
    /// enabled it panics when first polled.
    ///
    /// # Examples
    ///
    /// See [`AsyncExclusiveLock`].
    fn try_lock_shared_until_async(
        this: Arc<Self>,
        deadline: Instant,
    ) -> impl Future<Output = Option<Self::Guard>> + Send;
}

/// The owned guard of an exclusive level.
pub type XGuard<L> = <L as ExclusiveLock>::Guard;
/// The owned guard of a shared level.
pub type SGuard<L> = <L as SharedLock>::Guard;
/// The owned guard of an exclusive level of an async descent.
pub type AXGuard<L> = <L as AsyncExclusiveLock>::Guard;
/// The owned guard of a shared level of an async descent.
pub type ASGuard<L> = <L as AsyncSharedLock>::Guard;

/// Keeps the items it is given when chainlock's `tokio` feature is on and drops them
/// otherwise: the generated `*_async*` methods are wrapped in it, so the macro crate needs
/// no feature of its own and a build without `tokio` pays nothing for them.
#[cfg(feature = "tokio")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_if_tokio {
    ($($items:tt)*) => { $($items)* };
}

/// See the `tokio` twin above: without the feature, the async methods are not emitted.
#[cfg(not(feature = "tokio"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_if_tokio {
    ($($items:tt)*) => {};
}

#[cfg(feature = "tokio")]
mod tokio_impls {
    use super::{AsyncExclusiveLock, AsyncSharedLock, Instant};
    use std::sync::Arc;
    use tokio::sync::{
        Mutex, OwnedMutexGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock,
    };
    use tokio::time::timeout_at;

    impl<T: ?Sized + Send> AsyncExclusiveLock for Mutex<T> {
        type Target = T;
        type Guard = OwnedMutexGuard<T>;

        fn lock_exclusive_async(this: Arc<Self>) -> impl Future<Output = Self::Guard> + Send {
            this.lock_owned()
        }

        async fn try_lock_exclusive_until_async(
            this: Arc<Self>,
            deadline: Instant,
        ) -> Option<Self::Guard> {
            timeout_at(deadline.into(), this.lock_owned()).await.ok()
        }
    }

    impl<T: ?Sized + Send + Sync> AsyncExclusiveLock for RwLock<T> {
        type Target = T;
        type Guard = OwnedRwLockWriteGuard<T>;

        fn lock_exclusive_async(this: Arc<Self>) -> impl Future<Output = Self::Guard> + Send {
            this.write_owned()
        }

        async fn try_lock_exclusive_until_async(
            this: Arc<Self>,
            deadline: Instant,
        ) -> Option<Self::Guard> {
            timeout_at(deadline.into(), this.write_owned()).await.ok()
        }
    }

    impl<T: ?Sized + Send + Sync> AsyncSharedLock for RwLock<T> {
        type Target = T;
        type Guard = OwnedRwLockReadGuard<T>;

        fn lock_shared_async(this: Arc<Self>) -> impl Future<Output = Self::Guard> + Send {
            this.read_owned()
        }

        async fn try_lock_shared_until_async(
            this: Arc<Self>,
            deadline: Instant,
        ) -> Option<Self::Guard> {
            timeout_at(deadline.into(), this.read_owned()).await.ok()
        }
    }
}
