//! Keyed reader-writer locks: the core [`RwLockManager`] (constructors, probes, the
//! `try_` methods), its blocking face [`KeyedRwLocks`] and its async face
//! `AsyncKeyedRwLocks`, each adding only its way of waiting on the weighted engine. The
//! multi-key calls are in `all.rs`, the guards (with their upgrades) in `guards.rs`.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use super::DefaultHashBuilder;
#[cfg(feature = "async")]
use super::flavor::Async;
use super::flavor::{Blocking, Flavor};
use crate::engine::default_shards;
use crate::engine::weighted::{RW_CAPACITY, WRITE, Weighted};

mod all;
mod guards;
mod one;

#[cfg(feature = "async")]
pub use guards::{AsyncKeyReadGuard, AsyncKeyUpgradableGuard, AsyncKeyWriteGuard};
pub use guards::{KeyReadGuard, KeyUpgradableGuard, KeyWriteGuard};

/// A manager of named reader-writer locks, one per key of type `K`, generic over its
/// [`Flavor`]. Use it through its faces: [`KeyedRwLocks`] (blocking)
/// and, with the `async` feature, `AsyncKeyedRwLocks` (futures). The constructors, probes
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
    registry: Weighted<K, S>,
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
}

impl<K, S, F> RwLockManager<K, S, F> {
    /// The number of keys held right now (each with its waiters); 0 means the manager holds
    /// no memory for any key. Counted shard by shard.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedRwLocks::new();
    /// let held = locks.read_all(["a", "b"]);
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
        f.debug_struct(F::RW_LOCKS)
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

/// A manager of named reader-writer locks for threads, one per key of type `K`: many
/// readers or one writer per key, strict FIFO with batched readers, timeouts, bounded
/// memory, all-or-nothing multi-key locking.
///
/// Not reentrant: a thread that read-locks a key it already reads may wait forever behind
/// a queued writer (strict FIFO), and one that write-locks a key it holds waits forever.
/// Guards are `Send`: a hold may be released by another thread.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use chainlock::keyed::KeyedRwLocks;
///
/// // Readers of one document proceed together; a writer has it alone.
/// let locks = KeyedRwLocks::new();
/// let docs = Mutex::new(HashMap::from([("a", 0_u32)]));
/// std::thread::scope(|s| {
///     for i in 0..4 {
///         let (locks, docs) = (&locks, &docs);
///         s.spawn(move || {
///             if i == 0 {
///                 let _w = locks.write("a");
///                 *docs.lock().unwrap().get_mut("a").unwrap() += 1;
///             } else {
///                 let _r = locks.read("a");
///                 assert!(docs.lock().unwrap()["a"] <= 1);
///             }
///         });
///     }
/// });
/// assert!(locks.is_empty());
/// ```
pub type KeyedRwLocks<K, S = DefaultHashBuilder> = RwLockManager<K, S, Blocking>;
/// A manager of named reader-writer locks for async tasks, one per key of type `K`.
///
/// The async twin of [`KeyedRwLocks`], on the same core: many readers
/// or one writer per key, strict FIFO with batched readers, entries removed with the last
/// release. Timed waits (`try_read_for`, …) need Tokio's timer (feature `tokio`); dropping
/// a pending lock future is always safe: it leaves the queue, and if it had been granted already, it
/// gives the key back at once.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use chainlock::keyed::AsyncKeyedRwLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let locks = Arc::new(AsyncKeyedRwLocks::new());
/// let mut tasks = Vec::new();
/// for i in 0..4 {
///     let locks = Arc::clone(&locks);
///     tasks.push(tokio::spawn(async move {
///         if i == 0 {
///             let _w = locks.write("doc").await;
///             tokio::task::yield_now().await; // held across an await
///         } else {
///             let _r = locks.read("doc").await;
///         }
///     }));
/// }
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert!(locks.is_empty());
/// # }
/// ```
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyedRwLocks<K, S = DefaultHashBuilder> = RwLockManager<K, S, Async>;

#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
impl<K, S, F> RwLockManager<K, S, F> {
    /// Names this manager in [`telemetry`](crate::telemetry) reports (default: the
    /// location of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let named = chainlock::keyed::KeyedRwLocks::<u64>::new().telemetry_name("hosts");
    /// # drop(named);
    /// ```
    #[must_use]
    pub fn telemetry_name(mut self, name: &str) -> Self {
        self.registry
            .telemetry
            .rename(crate::telemetry::hooks::Label::named(name));
        self
    }

    /// Names this manager's hot keys in [`telemetry`](crate::telemetry) reports by their
    /// `Debug` (default: `#<hash>`, as `K` need not be `Debug`).
    ///
    /// # Examples
    ///
    /// ```
    /// let named = chainlock::keyed::KeyedRwLocks::<u64>::new().telemetry_keys_debug();
    /// # drop(named);
    /// ```
    #[must_use]
    pub fn telemetry_keys_debug(mut self) -> Self
    where
        K: std::fmt::Debug,
    {
        self.registry.telemetry.key_debug(|key| format!("{key:?}"));
        self
    }
}
