//! A hybrid lock: optimistic, shared and exclusive modes on one version word and a parking
//! lock (the hybrid latch of the `LeanStore` engine), soundly in Rust's memory model.
//!
//! | mode | how | writes shared memory? |
//! |---|---|---|
//! | optimistic ([`HybridLock::read_optimistic`], [`HybridLock::optimistic`]) | read the version, read the data, check the version is unchanged; a changed version is a [`Restart`] | **no**: a reader only loads |
//! | shared ([`HybridLock::read`]) | the parking lock in shared mode | the lock's reader count |
//! | exclusive ([`HybridLock::write`], [`OptimisticRead::upgrade`]) | the parking lock in exclusive mode; the version is odd while held and one higher on release | the version and the lock |
//!
//! An optimistic reader writes nothing, so readers on many cores do not bounce the cache line
//! of a lock between them, which is what makes hand-over-hand reading of an in-memory tree
//! cheap (Leis et al., "The ART of Practical Synchronization", `DaMoN` 2016: optimistic lock
//! coupling). The price is that a reader may run concurrently with a writer, and must be
//! ready to find that what it read does not hang together and start again.
//!
//! [`RawHybridLock`] is the lock without data: it implements lock_api's
//! [`RawRwLock`](lock_api::RawRwLock) and [`RawRwLockDowngrade`](lock_api::RawRwLockDowngrade),
//! so `lock_api::RwLock<RawHybridLock, T>` ([`HybridRwLock`]) is a chain level and a walk node
//! like any other reader-writer lock (its exclusive holds bump the version), and it adds the
//! version operations ([`optimistic`](RawHybridLock::optimistic),
//! [`validate`](RawHybridLock::validate), [`upgrade`](RawHybridLock::upgrade)) that protocols
//! over several locks (lock coupling down a tree) are built from.
//!
//! # Examples
//!
//! ```
//! use chainlock::hybrid::HybridLock;
//! use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
//!
//! // The data a writer changes while optimistic readers may look: atomics.
//! #[derive(Default)]
//! struct Span {
//!     start: AtomicU64,
//!     end: AtomicU64,
//! }
//!
//! let span = HybridLock::new(Span::default());
//! {
//!     let span = span.write();
//!     span.start.store(10, Relaxed);
//!     span.end.store(20, Relaxed);
//! }
//! // A validated read: both fields from the same write, or a `Restart`.
//! let read = span.read_optimistic(|span| (span.start.load(Relaxed), span.end.load(Relaxed)));
//! assert_eq!(read, Ok((10, 20)));
//!
//! // Upgrade by version: the write happens only if nothing changed since the read.
//! let seen = span.optimistic().unwrap();
//! let end = seen.end.load(Relaxed);
//! let span_now = seen.upgrade().expect("no writer in between");
//! span_now.end.store(end + 5, Relaxed);
//! ```
//!
//! # Soundness
//!
//! Reading memory that another thread is writing is a data race, and a data race is
//! undefined behaviour, whatever the reader does with the value afterwards (a version check
//! after the fact does not make the read defined: the compiler may assume no race, and a torn
//! value of a type with invalid bit patterns is UB the moment it exists). A seqlock that reads
//! plain fields through a `&T` while a writer holds a `&mut T` is therefore unsound, however
//! carefully it validates. This module avoids that in two ways, by construction rather than by
//! care:
//!
//! 1. **No `&mut T` while the lock is shared.** [`HybridLock`] hands out only `&T`, in every
//!    mode, exclusive included ([`HybridWriteGuard`] derefs to `&T`, not `&mut T`); the only
//!    `&mut T` is [`HybridLock::get_mut`], through `&mut self`, when no other thread can hold
//!    the lock. A `HybridLock<T>` is `Sync` exactly when `T` is (no `unsafe impl`): the data
//!    is shared only as `&T` between threads that are allowed to share a `&T` anyway. So
//!    whatever a writer changes it changes through `T`'s own interior mutability, which is
//!    `Sync`: in practice atomics. An optimistic reader racing a writer is an atomic load
//!    racing an atomic store, which the memory model defines: the load returns one whole
//!    value that some store wrote. **The closure never sees a torn value**; it may see a
//!    combination of values from different moments (field `a` before a write, field `b`
//!    after), and that is what validation is for.
//! 2. **Nothing read optimistically is trusted before the version validates.**
//!    [`read_optimistic`](HybridLock::read_optimistic) returns the closure's result only if
//!    the version is unchanged afterwards; otherwise `Err(Restart)`: a typed restart, never a
//!    panic or a jump. The closure must not act on what it reads (no allocation sized by it,
//!    no indexing without bounds checks, no following of a pointer that a writer could have
//!    freed): it computes a result that the caller uses only once it is `Ok`. Safe code
//!    cannot do worse than compute a wrong result and have it discarded (indexing is bounds
//!    checked, every loaded value is a valid value of its type).
//!
//! **Why a validated read is consistent** (the seqlock orderings of Boehm, "Can seqlocks get
//! along with programming language memory models?", MSPC 2012). The version is even when no
//! writer holds the lock. A writer takes the parking lock, stores `v + 1` (odd) and issues a
//! release fence, changes the data with atomic stores, then stores `v + 2` with release. A
//! reader loads `v` with acquire (odd: restart at once), loads the data, issues an acquire
//! fence and loads the version again. If the second load is still `v`:
//! - every write before `v` is visible: the acquire load of `v` synchronizes with the release
//!   store of `v` by the last writer, so the reader's loads see those stores or later ones;
//! - no later write was seen: if any data load had read a store of a later writer, that
//!   writer's release fence (after its odd store) synchronizes with the reader's acquire fence,
//!   so the odd store happens before the reader's second version load, which would then read
//!   `v + 1` or later, not `v`.
//!
//! So a validated read saw exactly the state at version `v`. [`upgrade`](OptimisticRead::upgrade)
//! takes the parking lock and compares the version under it: equal means no writer came in
//! between (versions only grow, by two per exclusive hold, and a `u64` does not wrap), so what
//! the reader saw is still the state, and the upgraded writer may act on it.
//!
//! **Memory an optimistic reader reaches through pointers** is the caller's to keep alive:
//! a structure whose readers follow pointers read optimistically must not free a node that a
//! reader may still reach (epoch reclamation, or never freeing while shared).
//! `chainlock-trees`' `OrderedMap` never frees a node while the map is shared.
//!
//! **What is checked**: loom models of the version protocol (validate, restart, upgrade, a
//! writer racing a reader at each step, lock coupling over two locks:
//! `src/hybrid/tests/loom_*.rs`), and Miri's data-race detector over concurrent optimistic
//! readers and writers (`cargo +nightly miri test -p chainlock --lib hybrid`).
//!
//! # Writers and starvation
//!
//! Writers queue on the parking lock (parking_lot's fair-on-timeout reader-writer lock), so
//! writers do not starve each other; optimistic readers never block writers. A reader that
//! keeps meeting writers keeps restarting: bound its attempts, then take the shared mode
//! ([`read`](HybridLock::read)), which waits its turn like any reader of a reader-writer lock.
//!
//! # No async face
//!
//! An optimistic read never waits, so it needs no async twin; the shared and exclusive modes
//! park the thread (parking_lot), for short critical sections: hold no hybrid guard across an
//! `.await` (the guards are not `Send`).

use crate::loom::sync::RawRwLock as ParkingLock;
use crate::loom::sync::atomic::{AtomicU64, Ordering, fence};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
#[cfg(not(loom))]
use std::sync::Arc;
#[cfg(not(loom))]
use std::time::Instant;

/// An optimistic read met a writer: what it read may not hang together; start again.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::{HybridLock, Restart};
///
/// let lock = HybridLock::new(());
/// let write = lock.write();
/// assert_eq!(lock.read_optimistic(|_| ()), Err(Restart));
/// drop(write);
/// assert_eq!(lock.read_optimistic(|_| ()), Ok(()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("an optimistic read met a writer: restart")]
pub struct Restart;

/// A version of a [`RawHybridLock`] seen with no writer holding it: what
/// [`validate`](RawHybridLock::validate) and [`upgrade`](RawHybridLock::upgrade) compare with.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::RawHybridLock;
///
/// let lock = RawHybridLock::new();
/// let version = lock.optimistic().unwrap();
/// assert_eq!(lock.validate(version), Ok(()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version(u64);

impl Version {
    /// The number: even, two higher after each exclusive hold.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::RawHybridLock::new();
    /// assert_eq!(lock.optimistic().unwrap().get(), 0);
    /// ```
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The hybrid lock without data: a version word (odd while held exclusively) and a parking
/// reader-writer lock. See [the module](self) for the protocol and its soundness.
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
    version: AtomicU64,
    lock: ParkingLock,
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

    /// After taking the parking lock exclusively: the version goes odd, ordered before every
    /// data store that follows (the release fence pairs with the readers' acquire fence).
    #[inline]
    fn begin_write(&self) {
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Before releasing the parking lock: the version goes even and higher, after every data
    /// store (release).
    #[inline]
    fn end_write(&self) {
        let version = self.version.load(Ordering::Relaxed);
        self.version.store(version + 1, Ordering::Release);
    }

    #[inline]
    fn acquire_exclusive(&self) {
        self.lock.lock_exclusive();
        self.begin_write();
    }

    #[inline]
    fn try_acquire_exclusive(&self) -> bool {
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
    unsafe fn release_exclusive(&self) {
        self.end_write();
        // SAFETY: forwarded from the caller.
        unsafe { self.lock.unlock_exclusive() };
    }

    /// # Safety
    ///
    /// Held exclusively by the caller.
    #[inline]
    unsafe fn downgrade_exclusive(&self) {
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
/// (a writer holds `&mut T`); use [`HybridLock`] for that.
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

/// A hybrid lock around data that writers change through interior mutability (atomics), so
/// that readers may read it optimistically. Every mode hands out `&T` only; see
/// [the module](self) for why that makes optimistic reads sound.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::HybridLock;
/// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
///
/// let hits = HybridLock::new(AtomicU32::new(0));
/// hits.write().fetch_add(1, Relaxed);
/// let seen = hits.read_optimistic(|hits| hits.load(Relaxed)).unwrap_or_else(|_| hits.read().load(Relaxed));
/// assert_eq!(seen, 1);
/// ```
pub struct HybridLock<T: ?Sized> {
    raw: RawHybridLock,
    data: T,
}

impl<T: Default> Default for HybridLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for HybridLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HybridLock")
            .field("raw", &self.raw)
            .field("data", &&self.data)
            .finish()
    }
}

impl<T> HybridLock<T> {
    /// A lock around `data`, unlocked, at version 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(std::sync::atomic::AtomicU8::new(1));
    /// assert_eq!(lock.into_inner().into_inner(), 1);
    /// ```
    #[cfg(not(loom))]
    pub const fn new(data: T) -> Self {
        HybridLock {
            raw: RawHybridLock::new(),
            data,
        }
    }

    /// A lock around `data` (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new(data: T) -> Self {
        HybridLock {
            raw: RawHybridLock::new(),
            data,
        }
    }

    /// The data, the lock consumed.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::hybrid::HybridLock::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data
    }
}

impl<T: ?Sized> HybridLock<T> {
    /// The data, mutably: `&mut self` proves that no other thread holds or reads the lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut lock = chainlock::hybrid::HybridLock::new(3);
    /// *lock.get_mut() += 1;
    /// assert_eq!(*lock.read(), 4);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.data
    }

    /// The raw lock: its version operations, for protocols over several locks.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(());
    /// drop(lock.write());
    /// assert_eq!(lock.raw().optimistic().unwrap().get(), 2);
    /// ```
    pub fn raw(&self) -> &RawHybridLock {
        &self.raw
    }

    /// Reads optimistically: runs `f` on the data without taking the lock, and returns its
    /// result only if no writer held the lock meanwhile. Writes nothing to shared memory.
    ///
    /// `f` may run while a writer changes the data: each atomic it loads is one whole value,
    /// but two of them may come from different writes; its result is returned only when the
    /// version shows there were none. `f` must not act on what it reads (see the module's
    /// soundness section).
    ///
    /// # Errors
    ///
    /// [`Restart`] if a writer held the lock at any moment of the read.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    ///
    /// let pair = HybridLock::new([AtomicU64::new(1), AtomicU64::new(1)]);
    /// let sum = loop {
    ///     if let Ok(sum) = pair.read_optimistic(|p| p[0].load(Relaxed) + p[1].load(Relaxed)) {
    ///         break sum;
    ///     }
    /// };
    /// assert_eq!(sum, 2);
    /// ```
    #[inline]
    pub fn read_optimistic<R>(&self, f: impl FnOnce(&T) -> R) -> Result<R, Restart> {
        let version = self.raw.optimistic()?;
        let result = f(&self.data);
        self.raw.validate(version)?;
        Ok(result)
    }

    /// Begins an optimistic read that the caller validates or upgrades when it chooses (lock
    /// coupling: read a node, find its child, begin on the child, validate the node).
    ///
    /// # Errors
    ///
    /// [`Restart`] while a writer holds the lock.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    ///
    /// let lock = HybridLock::new(AtomicU64::new(7));
    /// let read = lock.optimistic().unwrap();
    /// let seen = read.load(Relaxed);
    /// read.validate().unwrap();
    /// assert_eq!(seen, 7);
    /// ```
    #[inline]
    pub fn optimistic(&self) -> Result<OptimisticRead<'_, T>, Restart> {
        Ok(OptimisticRead {
            lock: self,
            version: self.raw.optimistic()?,
        })
    }

    /// A shared hold, waiting for writers to leave.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(1);
    /// let (a, b) = (lock.read(), lock.read());
    /// assert_eq!(*a + *b, 2);
    /// ```
    #[inline]
    pub fn read(&self) -> HybridReadGuard<'_, T> {
        self.raw.lock.lock_shared();
        HybridReadGuard::new(self)
    }

    /// A shared hold if no writer holds the lock now.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(1);
    /// let write = lock.write();
    /// assert!(lock.try_read().is_none());
    /// drop(write);
    /// assert!(lock.try_read().is_some());
    /// ```
    #[inline]
    pub fn try_read(&self) -> Option<HybridReadGuard<'_, T>> {
        self.raw
            .lock
            .try_lock_shared()
            .then(|| HybridReadGuard::new(self))
    }

    /// An exclusive hold, waiting for other holders to leave. The guard derefs to `&T`:
    /// change the data through its atomics.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    ///
    /// let lock = chainlock::hybrid::HybridLock::new(AtomicU64::new(1));
    /// lock.write().store(2, Relaxed);
    /// assert_eq!(lock.read().load(Relaxed), 2);
    /// ```
    #[inline]
    pub fn write(&self) -> HybridWriteGuard<'_, T> {
        self.raw.acquire_exclusive();
        HybridWriteGuard::new(self)
    }

    /// An exclusive hold if no one holds the lock now.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = chainlock::hybrid::HybridLock::new(());
    /// let read = lock.read();
    /// assert!(lock.try_write().is_none());
    /// drop(read);
    /// assert!(lock.try_write().is_some());
    /// ```
    #[inline]
    pub fn try_write(&self) -> Option<HybridWriteGuard<'_, T>> {
        self.raw
            .try_acquire_exclusive()
            .then(|| HybridWriteGuard::new(self))
    }
}

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
    lock: &'a HybridLock<T>,
    version: Version,
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
    pub fn upgrade(self) -> Result<HybridWriteGuard<'a, T>, Restart> {
        self.lock.raw.upgrade(self.version)?;
        Ok(HybridWriteGuard::new(self.lock))
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
    lock: &'a HybridLock<T>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    _not_send: PhantomData<lock_api::GuardNoSend>,
}

impl<'a, T: ?Sized> HybridReadGuard<'a, T> {
    /// The guard of a shared hold just taken.
    fn new(lock: &'a HybridLock<T>) -> Self {
        HybridReadGuard {
            lock,
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
    lock: &'a HybridLock<T>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    _not_send: PhantomData<lock_api::GuardNoSend>,
}

impl<'a, T: ?Sized> HybridWriteGuard<'a, T> {
    /// The guard of an exclusive hold just taken.
    fn new(lock: &'a HybridLock<T>) -> Self {
        HybridWriteGuard {
            lock,
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
    pub fn downgrade(self) -> HybridReadGuard<'a, T> {
        let lock = self.lock;
        std::mem::forget(self);
        // SAFETY: `self` owned the exclusive hold; forgotten so that it is not released twice.
        unsafe { lock.raw.downgrade_exclusive() };
        HybridReadGuard::new(lock)
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
        // SAFETY: the guard owns the exclusive hold, taken when it was made.
        unsafe { self.lock.raw.release_exclusive() };
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for HybridWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

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
        let lock = &this.raw.lock;
        let taken = match deadline {
            None => {
                lock.lock_shared();
                true
            }
            Some(deadline) => lock.try_lock_shared_until(deadline),
        };
        if !taken {
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

    /// An exclusive hold through the `Arc` (`None` if `deadline` passed first), kept only if
    /// no writer held the lock since `seen` (`Err(Restart)` otherwise, the hold let go): an
    /// owned, timed [`upgrade`](RawHybridLock::upgrade).
    pub(crate) fn write_arc_at(
        this: &Arc<Self>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<ArcHybridWriteGuard<T>>, Restart> {
        let raw = &this.raw;
        if let Some(seen) = seen
            && raw.version.load(Ordering::Relaxed) != seen.0
        {
            return Err(Restart);
        }
        let taken = match deadline {
            None => {
                raw.lock.lock_exclusive();
                true
            }
            Some(deadline) => raw.lock.try_lock_exclusive_until(deadline),
        };
        if !taken {
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
/// let found = Walker::new().descend_optimistic(&root, Shared, |_, _| Step::Here).unwrap();
/// assert_eq!(found.target.0, 7);
/// assert!(root.try_write().is_none(), "held shared by `found`");
/// ```
#[cfg(not(loom))]
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct ArcHybridReadGuard<T: ?Sized> {
    lock: Arc<HybridLock<T>>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    _not_send: PhantomData<lock_api::GuardNoSend>,
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
    /// let found = Walker::new().descend_optimistic(&root, Shared, |_, _| Step::Here).unwrap();
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
/// `&T` only (change the data through its atomics, as with [`HybridWriteGuard`]); released on
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
/// let found = Walker::new().descend_optimistic(&root, Exclusive, |_, _| Step::Here).unwrap();
/// found.target.0.store(8, Relaxed);
/// drop(found);
/// assert_eq!(root.read_optimistic(|leaf| leaf.0.load(Relaxed)), Ok(8));
/// ```
#[cfg(not(loom))]
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct ArcHybridWriteGuard<T: ?Sized> {
    lock: Arc<HybridLock<T>>,
    /// Released on the thread that took it, as parking_lot's guards (without `send_guard`).
    _not_send: PhantomData<lock_api::GuardNoSend>,
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
    /// let found = Walker::new().descend_optimistic(&root, Exclusive, |_, _| Step::Here).unwrap();
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

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod miri;

    #[cfg(loom)]
    mod loom_hybrid;
}
