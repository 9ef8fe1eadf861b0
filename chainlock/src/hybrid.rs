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

use crate::telemetry::hooks::{self, KeyRef, LockAddr, Probe, ProbeKind};
use std::fmt;
use std::panic::Location;

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

mod guards;
#[cfg(not(loom))]
mod owned;
mod raw;

pub use guards::{HybridReadGuard, HybridWriteGuard, OptimisticRead};
#[cfg(not(loom))]
pub use owned::{ArcHybridReadGuard, ArcHybridWriteGuard};
#[cfg(not(loom))]
pub use raw::HybridRwLock;
pub use raw::RawHybridLock;

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

    /// The data, not validated: what an optimistic reader that validates through
    /// [`raw`](Self::raw) reads (always `&T`, so sound in every mode; see the module).
    #[inline]
    pub(crate) fn data(&self) -> &T {
        &self.data
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn read(&self) -> HybridReadGuard<'_, T> {
        let ((), held) = hooks::observe::<(), true>(
            &STANDALONE,
            Location::caller(),
            Self::telemetry_key(),
            self.address(),
            || self.raw.lock.try_lock_shared().then_some(()),
            || self.raw.lock.lock_shared(),
        );
        HybridReadGuard::new(self, held)
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_read(&self) -> Option<HybridReadGuard<'_, T>> {
        let ((), held) = hooks::observe_try::<(), true>(
            &STANDALONE,
            Location::caller(),
            Self::telemetry_key(),
            self.address(),
            || self.raw.lock.try_lock_shared().then_some(()),
        )?;
        Some(HybridReadGuard::new(self, held))
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn write(&self) -> HybridWriteGuard<'_, T> {
        let ((), held) = hooks::observe::<(), true>(
            &STANDALONE,
            Location::caller(),
            Self::telemetry_key(),
            self.address(),
            || self.raw.try_acquire_exclusive().then_some(()),
            || self.raw.acquire_exclusive(),
        );
        HybridWriteGuard::new(self, held)
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_write(&self) -> Option<HybridWriteGuard<'_, T>> {
        let ((), held) = hooks::observe_try::<(), true>(
            &STANDALONE,
            Location::caller(),
            Self::telemetry_key(),
            self.address(),
            || self.raw.try_acquire_exclusive().then_some(()),
        )?;
        Some(HybridWriteGuard::new(self, held))
    }

    /// The lock within the telemetry's class of its data type.
    #[inline]
    fn telemetry_key() -> KeyRef<'static> {
        KeyRef::Type(std::any::type_name::<T>())
    }

    /// The lock's identity for the telemetry (which holder a waiter waits for).
    #[inline]
    fn address(&self) -> LockAddr {
        std::ptr::from_ref(self).cast::<()>().addr()
    }
}

/// The telemetry's probe of the hybrid locks taken by themselves (`read`, `write`, their
/// `try_` forms, [`OptimisticRead::upgrade`]): one class per data type,
/// [`LockName::Hybrid`](crate::telemetry::LockName::Hybrid). A hybrid lock a chain locker or a
/// walk takes goes through [`RawHybridLock`] and is recorded at its level or depth instead.
/// Zero-sized without the `telemetry` feature.
static STANDALONE: Probe = Probe::new(ProbeKind::Hybrid);

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod miri;

    #[cfg(loom)]
    mod loom_hybrid;
}
