//! The one core of both keyed reader-writer managers: constructors, probes, the non-waiting
//! methods and the guards, generic over the [`Flavor`]. `rw_blocking.rs` and `rw_future.rs`
//! add only their way of waiting.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;

use super::manager::{Blocking, Flavor};
use super::registry::{Outcome, Ticket, Wake};
use super::weighted::{READ, RW_CAPACITY, UPGRADABLE, WRITE, Weighted};
use super::{DefaultHashBuilder, default_shards};

/// A manager of named reader-writer locks, one per key of type `K`, generic over its
/// [`Flavor`]. Use it through its faces: [`KeyedRwLocks`](super::KeyedRwLocks) (blocking)
/// and, with the `tokio` feature, `AsyncKeyedRwLocks` (futures). The constructors, probes
/// and `try_*` methods below serve both.
///
/// Per key: many readers, or one upgradable reader with readers, or one writer. Strict FIFO
/// between them: a newcomer queues behind any waiter, consecutive queued readers are granted
/// together. See the [module documentation](super#reader-writer-locks-and-permits).
///
/// # Examples
///
/// ```
/// use chainlock::keyed::{DefaultHashBuilder, Flavor, KeyedRwLocks, RwLockManager};
///
/// fn written<F: Flavor>(locks: &RwLockManager<&str, DefaultHashBuilder, F>, key: &str) -> bool {
///     locks.is_write_locked(key)
/// }
///
/// let locks = KeyedRwLocks::new();
/// let _w = locks.write("a");
/// assert!(written(&locks, "a"));
/// assert!(!written(&locks, "b"));
/// ```
pub struct RwLockManager<K, S, F> {
    pub(super) registry: Weighted<K, S>,
    _flavor: PhantomData<fn() -> F>,
}

impl<K: Eq + Hash, F: Flavor> RwLockManager<K, DefaultHashBuilder, F> {
    /// Creates an empty manager with the default number of shards (four per core) and a
    /// randomly seeded [`DefaultHashBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::<String>::new();
    /// assert!(locks.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with_shards_and_hasher(default_shards(), DefaultHashBuilder::default())
    }

    /// Creates an empty manager with `shards` shards (rounded up to a power of two, at
    /// most 65 536).
    ///
    /// # Panics
    ///
    /// Panics if `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::<u64>::with_shards(3);
    /// assert_eq!(locks.shard_count(), 4);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards(shards: usize) -> Self {
        Self::with_shards_and_hasher(shards, DefaultHashBuilder::default())
    }
}

impl<K: Eq + Hash, F: Flavor> Default for RwLockManager<K, DefaultHashBuilder, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash, S: BuildHasher, F: Flavor> RwLockManager<K, S, F> {
    /// Creates an empty manager that hashes keys with `hasher`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher;
    /// use chainlock::keyed::KeyedRwLocks;
    ///
    /// let locks: KeyedRwLocks<u32, BuildHasherDefault<DefaultHasher>> =
    ///     KeyedRwLocks::with_hasher(BuildHasherDefault::default());
    /// drop(locks.read(1));
    /// ```
    #[must_use]
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_shards_and_hasher(default_shards(), hasher)
    }

    /// Creates an empty manager with `shards` shards (rounded up to a power of two, at most
    /// 65 536) that hashes keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::keyed::{DefaultHashBuilder, KeyedRwLocks};
    ///
    /// let locks: KeyedRwLocks<&str> = KeyedRwLocks::with_shards_and_hasher(1, DefaultHashBuilder::default());
    /// assert_eq!(locks.shard_count(), 1);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards_and_hasher(shards: usize, hasher: S) -> Self {
        Self {
            registry: Weighted::new(shards, RW_CAPACITY, hasher),
            _flavor: PhantomData,
        }
    }

    /// Read-locks `key` if that is possible right now without overtaking a waiter; never
    /// waits.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read("k");
    /// assert!(locks.try_read("k").is_some()); // readers share
    /// assert!(locks.try_write("k").is_none());
    /// # drop(r);
    /// ```
    #[inline]
    pub fn try_read(&self, key: K) -> Option<KeyReadGuard<'_, K, S, F>> {
        self.try_claim(key, READ)
            .map(|ticket| KeyReadGuard::new(&self.registry, ticket))
    }

    /// Write-locks `key` if it is free right now; never waits.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.try_write("k").expect("a free key");
    /// assert!(locks.try_read("k").is_none());
    /// drop(w);
    /// assert!(locks.is_empty());
    /// ```
    #[inline]
    pub fn try_write(&self, key: K) -> Option<KeyWriteGuard<'_, K, S, F>> {
        self.try_claim(key, WRITE)
            .map(|ticket| KeyWriteGuard::new(&self.registry, ticket))
    }

    /// Takes an upgradable read lock of `key` if possible right now: it shares the key with
    /// readers, but not with writers or another upgradable reader.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.try_upgradable_read("k").unwrap();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_upgradable_read("k").is_none());
    /// # drop(u);
    /// ```
    #[inline]
    pub fn try_upgradable_read(&self, key: K) -> Option<KeyUpgradableGuard<'_, K, S, F>> {
        self.try_claim(key, UPGRADABLE)
            .map(|ticket| KeyUpgradableGuard::new(&self.registry, ticket))
    }

    /// Whether `key` is held in any mode right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read(7);
    /// assert!(locks.is_locked(&7));
    /// drop(r);
    /// assert!(!locks.is_locked(&7));
    /// ```
    pub fn is_locked<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).is_some()
    }

    /// Whether `key` is write-locked right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read(7);
    /// assert!(!locks.is_write_locked(&7));
    /// drop(r);
    /// let _w = locks.write(7);
    /// assert!(locks.is_write_locked(&7));
    /// ```
    pub fn is_write_locked<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry
            .probe(key)
            .is_some_and(|(used, _)| used == WRITE)
    }

    /// The number of callers waiting for `key` right now (a snapshot), an upgrade included.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.read("k");
    /// assert_eq!(locks.waiting(&"k"), 0);
    /// # drop(r);
    /// ```
    pub fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).map_or(0, |(_, waiting)| waiting)
    }

    /// Takes `weight` of `key` if possible now.
    #[inline]
    fn try_claim(&self, key: K, weight: u64) -> Option<Ticket> {
        match self.registry.acquire(key, weight, None::<fn() -> Wake>) {
            Outcome::Held(ticket) => Some(ticket),
            Outcome::Busy => None,
            Outcome::Queued(..) => unreachable!("a try never queues"),
        }
    }
}

impl<K, S, F> RwLockManager<K, S, F> {
    /// The number of keys held right now (each with its waiters); 0 means the manager holds
    /// no memory for any key. Counted shard by shard.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let held = locks.read_many(["a", "b"]);
    /// assert_eq!(locks.len(), 2);
    /// drop(held);
    /// assert_eq!(locks.len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no key is held (see [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::<u8>::new();
    /// assert!(locks.is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of shards of the registry (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::<u8>::with_shards(5);
    /// assert_eq!(locks.shard_count(), 8);
    /// ```
    #[must_use]
    pub fn shard_count(&self) -> usize {
        self.registry.shard_count()
    }
}

impl<K, S, F: Flavor> fmt::Debug for RwLockManager<K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if F::PER_THREAD {
            "KeyedRwLocks"
        } else {
            "AsyncKeyedRwLocks"
        };
        f.debug_struct(name)
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
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
            pub(super) registry: &'a Weighted<K, S>,
            pub(super) ticket: Ticket,
            /// Guards are `Send` in both flavors: nothing is per thread.
            _flavor: PhantomData<fn() -> F>,
        }

        impl<'a, K, S, F> $name<'a, K, S, F> {
            pub(super) fn new(registry: &'a Weighted<K, S>, ticket: Ticket) -> Self {
                Self {
                    registry,
                    ticket,
                    _flavor: PhantomData,
                }
            }

            /// The registry and ticket, without releasing.
            #[allow(
                dead_code,
                reason = "macro_rules output for every guard; only some take a hold apart, so `expect` would be unfulfilled in the others"
            )]
            pub(super) fn into_parts(self) -> (&'a Weighted<K, S>, Ticket) {
                let this = ManuallyDrop::new(self);
                (this.registry, this.ticket)
            }
        }

        impl<K, S, F> Drop for $name<'_, K, S, F> {
            #[inline]
            fn drop(&mut self) {
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

weighted_guard!(
    /// A shared (read) hold of a key of a keyed reader-writer manager, released when it
    /// drops.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let a = locks.read(1);
    /// let b = locks.read(1);
    /// drop((a, b));
    /// assert!(locks.is_empty());
    /// ```
    KeyReadGuard,
    READ
);

weighted_guard!(
    /// An exclusive (write) hold of a key of a keyed reader-writer manager, released when it
    /// drops.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let w = locks.write(1);
    /// assert!(locks.try_read(1).is_none());
    /// let r = w.downgrade(); // readers may join now
    /// assert!(locks.try_read(1).is_some());
    /// # drop(r);
    /// ```
    KeyWriteGuard,
    WRITE
);

weighted_guard!(
    /// An upgradable read hold of a key: it shares the key with readers but excludes writers
    /// and other upgradable readers, and can become a write hold without letting a writer in
    /// between ([`try_upgrade`](Self::try_upgrade); `upgrade` waits for the readers to
    /// leave, ahead of every queued waiter).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("config");
    /// // ... read, decide to write ...
    /// let w = u.upgrade();
    /// assert!(locks.is_write_locked("config"));
    /// # drop(w);
    /// ```
    KeyUpgradableGuard,
    UPGRADABLE
);

impl<'a, K, S, F> KeyWriteGuard<'a, K, S, F> {
    /// Turns the write hold into a read hold without releasing the key; queued readers at
    /// the front of the queue are let in with it.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.write("k").downgrade();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_write("k").is_none());
    /// # drop(r);
    /// ```
    pub fn downgrade(self) -> KeyReadGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, WRITE - READ);
        KeyReadGuard::new(registry, ticket)
    }

    /// Turns the write hold into an upgradable read hold without releasing the key.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.write("k").downgrade_to_upgradable();
    /// assert!(locks.try_read("k").is_some());
    /// assert!(locks.try_upgradable_read("k").is_none());
    /// # drop(u);
    /// ```
    pub fn downgrade_to_upgradable(self) -> KeyUpgradableGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, WRITE - UPGRADABLE);
        KeyUpgradableGuard::new(registry, ticket)
    }
}

impl<'a, K, S, F> KeyUpgradableGuard<'a, K, S, F> {
    /// Becomes a write hold if no reader holds the key right now.
    ///
    /// # Errors
    ///
    /// Gives the guard back, still holding its upgradable read, if a reader holds the key.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let u = locks.upgradable_read("k");
    /// let r = locks.read("k");
    /// let u = u.try_upgrade().unwrap_err(); // a reader is in
    /// drop(r);
    /// let w = u.try_upgrade().unwrap();
    /// assert!(locks.is_write_locked("k"));
    /// # drop(w);
    /// ```
    pub fn try_upgrade(self) -> Result<KeyWriteGuard<'a, K, S, F>, Self> {
        match self
            .registry
            .grow(self.ticket, WRITE - UPGRADABLE, None::<fn() -> Wake>)
        {
            Outcome::Held(_) => {
                let (registry, ticket) = self.into_parts();
                Ok(KeyWriteGuard::new(registry, ticket))
            }
            Outcome::Busy => Err(self),
            Outcome::Queued(..) => unreachable!("a try never queues"),
        }
    }

    /// Turns the upgradable hold into a plain read hold, letting another upgradable reader
    /// (or queued readers) in.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let r = locks.upgradable_read("k").downgrade();
    /// assert!(locks.try_upgradable_read("k").is_some());
    /// # drop(r);
    /// ```
    pub fn downgrade(self) -> KeyReadGuard<'a, K, S, F> {
        let (registry, ticket) = self.into_parts();
        registry.release(ticket, UPGRADABLE - READ);
        KeyReadGuard::new(registry, ticket)
    }
}

/// The holds taken by one multi-key call (`read_many`, `write_many`, `acquire_all`, …), in
/// ascending key order, released together when it drops. It dereferences to the slice of
/// its guards, one per distinct key.
///
/// # Examples
///
/// ```
/// let locks = chainlock::keyed::KeyedRwLocks::new();
/// let held = locks.write_many(["b", "a", "b"]);
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

    /// The individual guards, in locking (ascending key) order.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// assert_eq!(locks.read_many([3, 1]).into_guards().len(), 2);
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
