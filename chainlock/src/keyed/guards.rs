//! The exclusive hold of one key ([`KeyGuard`]) and the plural of every keyed guard
//! ([`KeyGuards`]: the holds one multi-key call took together).

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use super::DefaultHashBuilder;
use super::flavor::Blocking;
use crate::engine::exclusive::Registry;
use crate::engine::sharded::Ticket;
use crate::telemetry::hooks::Held;

/// One hold of a key of a keyed lock manager; the hold is released when it drops.
///
/// With the [`Blocking`] flavor ([`KeyedLocks`](super::KeyedLocks)) a guard is `!Send`: the
/// hold belongs to the thread that took it (reentrancy is per thread), so it cannot be
/// released from another thread. This is checked at compile time:
///
/// ```compile_fail
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guard = locks.lock(1);
/// std::thread::scope(|s| {
///     s.spawn(move || drop(guard)); // error: `KeyGuard` cannot be sent between threads
/// });
/// ```
///
/// The same program passes when the guard stays on its thread:
///
/// ```
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guard = locks.lock(1);
/// std::thread::scope(|s| {
///     s.spawn(|| assert!(locks.try_lock(1).is_none()));
/// });
/// drop(guard);
/// ```
///
/// An `AsyncKeyGuard` (the async flavor) is `Send` and may be held across `.await` in a
/// multi-threaded runtime.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeyGuard<'a, K, S = DefaultHashBuilder, F = Blocking> {
    registry: &'a Registry<K, S>,
    ticket: Ticket,
    /// The hold's telemetry record (zero-sized without the feature).
    held: Held,
    /// `!Send` for [`Blocking`] (the hold is the thread's), but always `Sync`: sharing
    /// `&KeyGuard` is harmless.
    _flavor: PhantomData<F>,
}

impl<'a, K, S, F> KeyGuard<'a, K, S, F> {
    #[inline]
    pub(super) fn new(registry: &'a Registry<K, S>, ticket: Ticket, held: Held) -> Self {
        Self {
            registry,
            ticket,
            held,
            _flavor: PhantomData,
        }
    }
}

impl<K, S, F> Drop for KeyGuard<'_, K, S, F> {
    #[inline]
    fn drop(&mut self) {
        std::mem::take(&mut self.held).released();
        self.registry.release(self.ticket);
    }
}

impl<K, S, F> fmt::Debug for KeyGuard<'_, K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyGuard").finish_non_exhaustive()
    }
}

/// The holds taken by one multi-key call (`lock_all`, `read_all`, `write_all`,
/// `acquire_all`, and their `try_` forms), one per distinct key in ascending key order,
/// released together when it drops. `G` is the one-hold guard ([`KeyGuard`](super::KeyGuard),
/// [`KeyReadGuard`](super::KeyReadGuard), [`KeyPermit`](super::KeyPermit), …); it
/// dereferences to the slice of them.
///
/// # Examples
///
/// ```
/// let locks = chainlock::keyed::KeyedRwLocks::new();
/// let held = locks.write_all(["b", "a", "b"]);
/// assert_eq!(held.len(), 2);
/// let mut guards = held.into_guards();
/// drop(guards.remove(0)); // releases "a" only
/// assert!(!locks.is_locked("a"));
/// assert!(locks.is_locked("b"));
/// ```
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeyGuards<G> {
    guards: Vec<G>,
}

impl<G> KeyGuards<G> {
    pub(super) fn new(guards: Vec<G>) -> Self {
        Self { guards }
    }

    /// The number of keys held (distinct keys of the call).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// assert_eq!(locks.lock_all([3, 1, 3]).len(), 2);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no key is held (the call was given no keys).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::<u8>::new();
    /// assert!(locks.lock_all([]).is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The individual guards, in locking (ascending key) order, to release them one by one.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let mut guards = locks.lock_all([2, 1]).into_guards();
    /// drop(guards.remove(0)); // releases key 1 only
    /// assert!(!locks.is_locked(&1));
    /// assert!(locks.is_locked(&2));
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<G> {
        self.guards
    }
}

impl<G> Deref for KeyGuards<G> {
    type Target = [G];

    fn deref(&self) -> &[G] {
        &self.guards
    }
}

impl<G> fmt::Debug for KeyGuards<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyGuards")
            .field("len", &self.guards.len())
            .finish()
    }
}

/// Defines a guard that gives back `$weight` of its key when dropped.
macro_rules! weighted_guard {
    ($(#[$doc:meta])* $name:ident, $weight:expr) => {
        $(#[$doc])*
        #[must_use = "if unused the lock will immediately unlock"]
        #[clippy::has_significant_drop]
        pub struct $name<'a, K, S = DefaultHashBuilder, F = Blocking> {
            pub(crate) registry: &'a Weighted<K, S>,
            pub(crate) ticket: Ticket,
            /// The hold's telemetry record (zero-sized without the feature).
            held: $crate::telemetry::hooks::Held,
            /// Guards are `Send` in both flavors: nothing is per thread.
            _flavor: PhantomData<fn() -> F>,
        }

        impl<'a, K, S, F> $name<'a, K, S, F> {
            /// The guard of a hold telemetry does not follow (made by a conversion).
            #[allow(dead_code)] // `allow`: only some of the guards this macro makes are converted to
            pub(crate) fn new(registry: &'a Weighted<K, S>, ticket: Ticket) -> Self {
                Self::with_held(registry, ticket, $crate::telemetry::hooks::Held::default())
            }

            /// The guard of a fresh hold and its telemetry record.
            pub(crate) fn with_held(
                registry: &'a Weighted<K, S>,
                ticket: Ticket,
                held: $crate::telemetry::hooks::Held,
            ) -> Self {
                Self {
                    registry,
                    ticket,
                    held,
                    _flavor: PhantomData,
                }
            }

            /// The registry and ticket, without releasing (the telemetry record of the
            /// hold ends here: a conversion starts an unrecorded hold).
            #[allow(dead_code)] // `allow`: only some of the guards this macro makes are taken apart
            pub(crate) fn into_parts(self) -> (&'a Weighted<K, S>, Ticket) {
                let mut this = ManuallyDrop::new(self);
                std::mem::take(&mut this.held).released();
                (this.registry, this.ticket)
            }
        }

        impl<K, S, F> Drop for $name<'_, K, S, F> {
            #[inline]
            fn drop(&mut self) {
                std::mem::take(&mut self.held).released();
                self.registry.release(self.ticket, $weight);
            }
        }

        impl<K, S, F> fmt::Debug for $name<'_, K, S, F> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}
pub(super) use weighted_guard;
