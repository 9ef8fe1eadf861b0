//! [`RawHybridLock`]: the version word and the parking lock, the lock_api raw lock, and the
//! version operations lock coupling is built from.

use super::{Restart, Version};
use crate::loom::sync::RawRwLock as ParkingLock;
use crate::loom::sync::atomic::{AtomicU64, Ordering, fence};
use std::fmt;

/// The hybrid lock without data: a version word (odd while held exclusively) and a parking
/// reader-writer lock. See [the module](super) for the protocol and its soundness.
///
/// # Examples
///
/// As a chain level or walk node ([`HybridRwLock`]):
///
/// ```
/// use chainlock::hybrid::HybridRwLock;
///
/// let lock = HybridRwLock::new(5);
/// *lock.write() += 1;
/// assert_eq!(*lock.read(), 6);
/// ```
pub struct RawHybridLock {
    pub(super) version: AtomicU64,
    pub(super) lock: ParkingLock,
}

impl fmt::Debug for RawHybridLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawHybridLock")
            .field("version", &self.version.load(Ordering::Relaxed))
            .field("locked", &self.lock.is_locked())
            .finish()
    }
}

impl Default for RawHybridLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawHybridLock {
    /// An unlocked lock at version 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::RawHybridLock::new();
    /// assert!(lock.optimistic().is_ok());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawHybridLock {
            version: AtomicU64::new(0),
            lock: ParkingLock::new(),
        }
    }

    /// An unlocked lock at version 0 (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawHybridLock {
            version: AtomicU64::new(0),
            lock: ParkingLock::new(),
        }
    }

    /// Begins an optimistic read: the current version, or `Err(Restart)` if a writer holds
    /// the lock now. Writes nothing.
    ///
    /// # Errors
    ///
    /// [`Restart`] while the lock is held exclusively.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{RawHybridLock, Restart};
    /// use chainlock::lock_api::RawRwLock;
    ///
    /// let lock = RawHybridLock::new();
    /// let state = lock.lock_exclusive();
    /// assert_eq!(lock.optimistic(), Err(Restart));
    /// unsafe { lock.unlock_exclusive(state) };
    /// assert_eq!(lock.optimistic().unwrap().get(), 2);
    /// ```
    #[inline]
    pub fn optimistic(&self) -> Result<Version, Restart> {
        let version = self.version.load(Ordering::Acquire);
        if version & 1 == 0 {
            Ok(Version(version))
        } else {
            Err(Restart)
        }
    }

    /// Ends (or checks in the middle of) an optimistic read begun at `version`: `Ok` if no
    /// writer has held the lock since, so every load made since `version` was read saw the
    /// state at `version`. Writes nothing.
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held or holds the lock since `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::{RawHybridLock, Restart};
    /// use chainlock::lock_api::RawRwLock;
    ///
    /// let lock = RawHybridLock::new();
    /// let version = lock.optimistic().unwrap();
    /// let state = lock.lock_exclusive();
    /// unsafe { lock.unlock_exclusive(state) };
    /// assert_eq!(lock.validate(version), Err(Restart));
    /// ```
    #[inline]
    pub fn validate(&self, version: Version) -> Result<(), Restart> {
        // Orders every load before this point before the version load below (Boehm's
        // seqlock reader): a load that saw a later writer's store makes this one see its
        // odd version.
        fence(Ordering::Acquire);
        if self.version.load(Ordering::Relaxed) == version.0 {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Upgrades an optimistic read begun at `version` to an exclusive hold: waits for the
    /// parking lock, then holds it if the version is still `version` (nothing was written
    /// since, so what the read saw is the state), or lets it go and restarts. On `Ok` the
    /// caller holds the lock exclusively and must release it with
    /// [`unlock_exclusive`](lock_api::RawRwLock::unlock_exclusive) (its state is a
    /// stateless [`GuardNoSend`](lock_api::GuardNoSend)).
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held the lock since `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::RawHybridLock;
    /// use chainlock::lock_api::RawRwLock;
    ///
    /// let lock = RawHybridLock::new();
    /// let version = lock.optimistic().unwrap();
    /// lock.upgrade(version).unwrap();
    /// assert!(lock.optimistic().is_err(), "held exclusively");
    /// // SAFETY: held exclusively since the upgrade; its state is a stateless marker.
    /// unsafe { lock.unlock_exclusive(chainlock::lock_api::GuardNoSend::new()) };
    /// assert!(lock.upgrade(version).is_err(), "a writer came in between");
    /// ```
    #[inline]
    pub fn upgrade(&self, version: Version) -> Result<(), Restart> {
        // Cheap early answer without touching the parking lock.
        if self.version.load(Ordering::Relaxed) != version.0 {
            return Err(Restart);
        }
        self.lock.lock_exclusive();
        // Under the parking lock: the last writer's release of it made its version store
        // visible, so this is the current version.
        if self.version.load(Ordering::Relaxed) == version.0 {
            self.begin_write();
            Ok(())
        } else {
            // SAFETY: taken exclusively just above.
            unsafe { self.lock.unlock_exclusive() };
            Err(Restart)
        }
    }

    /// Whether a writer holds the lock now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::RawHybridLock;
    /// use chainlock::lock_api::RawRwLock;
    ///
    /// let lock = RawHybridLock::new();
    /// let state = lock.lock_shared();
    /// assert!(!lock.is_locked_exclusive());
    /// unsafe { lock.unlock_shared(state) };
    /// ```
    pub fn is_locked_exclusive(&self) -> bool {
        self.version.load(Ordering::Relaxed) & 1 == 1
    }

    /// A shared hold of the parking lock (an optimistic descent's pessimistic pass), waiting
    /// until `deadline` if there is one; whether it was taken. Release with
    /// [`release_shared`](Self::release_shared).
    #[inline]
    pub(crate) fn take_shared(&self, deadline: Option<std::time::Instant>) -> bool {
        match deadline {
            None => {
                self.lock.lock_shared();
                true
            }
            #[cfg(not(loom))]
            Some(deadline) => self.lock.try_lock_shared_until(deadline),
            // loom's model lock has no timed wait: a try stands for it.
            #[cfg(loom)]
            Some(_) => self.lock.try_lock_shared(),
        }
    }

    /// A shared hold of the parking lock if no writer holds it now.
    #[inline]
    pub(crate) fn try_take_shared(&self) -> bool {
        self.lock.try_lock_shared()
    }

    /// # Safety
    ///
    /// Held shared by the caller ([`take_shared`](Self::take_shared)).
    #[inline]
    pub(crate) unsafe fn release_shared(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.lock.unlock_shared() };
    }

    /// After taking the parking lock exclusively: the version goes odd, ordered before every
    /// data store that follows (the release fence pairs with the readers' acquire fence).
    #[inline]
    pub(super) fn begin_write(&self) {
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Before releasing the parking lock: the version goes even and higher, after every data
    /// store (release).
    #[inline]
    pub(super) fn end_write(&self) {
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Release);
    }

    /// [`upgrade`](Self::upgrade) if no one holds the lock now: `Ok(false)` if someone does.
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held the lock since `version`.
    #[inline]
    pub(super) fn try_upgrade(&self, version: Version) -> Result<bool, Restart> {
        if self.version.load(Ordering::Relaxed) != version.0 {
            return Err(Restart);
        }
        if !self.lock.try_lock_exclusive() {
            return Ok(false);
        }
        // As in `upgrade`: under the parking lock, this is the current version.
        if self.version.load(Ordering::Relaxed) == version.0 {
            self.begin_write();
            Ok(true)
        } else {
            // SAFETY: taken exclusively just above.
            unsafe { self.lock.unlock_exclusive() };
            Err(Restart)
        }
    }

    #[inline]
    pub(super) fn acquire_exclusive(&self) {
        self.lock.lock_exclusive();
        self.begin_write();
    }

    #[inline]
    pub(super) fn try_acquire_exclusive(&self) -> bool {
        let taken = self.lock.try_lock_exclusive();
        if taken {
            self.begin_write();
        }
        taken
    }

    /// # Safety
    ///
    /// Held exclusively by the caller.
    #[inline]
    pub(super) unsafe fn release_exclusive(&self) {
        self.end_write();
        // SAFETY: forwarded from the caller.
        unsafe { self.lock.unlock_exclusive() };
    }

    /// # Safety
    ///
    /// Held exclusively by the caller.
    #[inline]
    pub(super) unsafe fn downgrade_exclusive(&self) {
        self.end_write();
        // SAFETY: forwarded from the caller.
        unsafe { self.lock.downgrade() };
    }
}

// SAFETY: exclusive holds exclude each other and shared holds (the parking lock's own
// guarantee); the version is changed only under an exclusive hold. No operation unwinds
// holding a new acquisition (the parking lock's do not panic). The per-acquisition states are
// stateless markers that keep guards on their thread, as parking_lot's without `send_guard`.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLock for RawHybridLock {
    const INIT: Self = Self::new();
    type SharedGuard = lock_api::GuardNoSend;
    type ExclusiveGuard = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) -> lock_api::GuardNoSend {
        self.lock.lock_shared();
        lock_api::GuardNoSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardNoSend> {
        self.lock.try_lock_shared().then(lock_api::GuardNoSend::new)
    }

    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardNoSend) {
        // SAFETY: the caller holds a shared hold (the trait's contract).
        unsafe { self.lock.unlock_shared() };
    }

    #[inline]
    fn lock_exclusive(&self) -> lock_api::GuardNoSend {
        self.acquire_exclusive();
        lock_api::GuardNoSend::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<lock_api::GuardNoSend> {
        self.try_acquire_exclusive()
            .then(lock_api::GuardNoSend::new)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _: lock_api::GuardNoSend) {
        // SAFETY: the caller holds the lock exclusively (the trait's contract).
        unsafe { self.release_exclusive() };
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        RawHybridLock::is_locked_exclusive(self)
    }
}

// SAFETY: the version goes even before the parking lock is downgraded, atomically to a
// shared hold by the parking lock's own downgrade.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLockDowngrade for RawHybridLock {
    #[inline]
    unsafe fn downgrade(&self, _: lock_api::GuardNoSend) -> lock_api::GuardNoSend {
        // SAFETY: the caller holds the lock exclusively (the trait's contract).
        unsafe { self.downgrade_exclusive() };
        lock_api::GuardNoSend::new()
    }
}

/// A reader-writer lock on the hybrid lock, with lock_api's API (`&mut T` under `write`):
/// a chain level and a walk node like `parking_lot::RwLock`. Its data has no optimistic read
/// (a writer holds `&mut T`); use [`HybridLock`](super::HybridLock) for that.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::HybridRwLock;
///
/// let lock = HybridRwLock::new(vec![1]);
/// lock.write().push(2);
/// assert_eq!(lock.read().len(), 2);
/// ```
///
/// As the nodes of a walk:
///
/// ```
/// use chainlock::hybrid::HybridRwLock;
/// use chainlock::walk::{Shared, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Person { name: &'static str, reports: Vec<Arc<HybridRwLock<Person>>> }
/// impl ChainNode for Person {}
///
/// let dev = Arc::new(HybridRwLock::new(Person { name: "dev", reports: vec![] }));
/// let boss = Arc::new(HybridRwLock::new(Person { name: "boss", reports: vec![dev] }));
/// let bottom = Walker::new()
///     .descend(&boss, Shared, |p, _| p.reports.first().cloned().map_or(Step::Here, Step::Descend))
///     .unwrap();
/// assert_eq!(bottom.name, "dev");
/// ```
#[cfg(not(loom))]
pub type HybridRwLock<T> = lock_api::RwLock<RawHybridLock, T>;
