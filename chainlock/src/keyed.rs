//! A keyed lock manager: exact per-key locking for any `K: Eq + Hash`, with bounded memory.
//!
//! [`KeyedLocks<K>`] locks *names*: a file name, a user id, a key of a dictionary. Unlike
//! [striping](crate::striped), two different keys never exclude each other; unlike a map of
//! mutexes that only grows, memory is bounded by the keys currently held or awaited.
//! (`OmniThreadLibrary`'s `TOmniLockManager<K>` is the model, minus its lost-signal bug.)
//!
//! # Guarantees
//!
//! - **Exact:** a key is held by at most one owner at a time; different keys never block
//!   each other beyond a short critical section on their shard of the registry.
//! - **Reentrant per thread:** the thread holding a key may lock it again; the key is free
//!   when its last guard drops. Guards are `!Send`, so a hold never migrates to another
//!   thread (checked at compile time).
//! - **Strict FIFO:** on release the key is handed directly to the longest waiter, before
//!   that waiter even wakes up; a newcomer (even the releasing thread) cannot barge in.
//! - **Timeouts without lost grants:** a waiter whose timeout fires as the key is handed to
//!   it re-checks under the registry lock; it then either owns the key (and returns it) or
//!   has left the queue. No grant is lost, no later waiter is stranded.
//! - **Bounded memory:** the entry of a key is removed atomically with its last release
//!   (not by a sweep). Nothing stays for a key that is neither held nor awaited:
//!   [`KeyedLocks::is_empty`] is true again once all guards are dropped.
//! - **Sharded:** the registry is split into independently locked shards, so that unrelated
//!   keys rarely contend on one lock.
//! - **All-or-nothing multi-key locking** ([`KeyedLocks::lock_all`]): locks a set of keys
//!   in one total order (`K: Ord`), within one deadline, or none of them.
//!
//! With the `async` feature, `AsyncKeyedLocks` offers the same registry to async tasks:
//! per-acquisition ownership (no reentrancy) and cancel-safe lock futures; with `tokio`,
//! their timed waits (`try_lock_for`, …) too.
//!
//! Both are faces of one core, [`LockManager<K, S, F>`](LockManager), whose [`Flavor`]
//! `F` ([`Blocking`] or `Async`) decides how a caller waits and who owns a hold: the
//! constructors, probes, `try_lock` and the guards ([`KeyGuard`], [`KeyGuards`]) are
//! written once; each face adds only its way of waiting.
//!
//! # Names
//!
//! Every manager speaks one vocabulary: `verb` waits, `try_verb` does not, `try_verb_for`
//! and `try_verb_until` wait at most a `Duration` / until an `Instant` (on the async faces
//! with feature `tokio`); `verb_all` takes several keys all or nothing and returns
//! [`KeyGuards`] (`len`, `is_empty`, `into_guards`). The verbs are `lock` ([`KeyedLocks`]),
//! `read`, `write`, `upgradable_read` ([`KeyedRwLocks`]) and `acquire` ([`KeyedPermits`],
//! whose guard is a [`KeyPermit`]).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use chainlock::keyed::KeyedLocks;
//!
//! let locks = KeyedLocks::new();
//! let report = locks.lock("report.pdf");
//! let again = locks.lock("report.pdf"); // same thread: reentrant
//! std::thread::scope(|s| {
//!     s.spawn(|| {
//!         // Another thread waits, here at most 10 ms.
//!         assert!(locks.try_lock_for("report.pdf", Duration::from_millis(10)).is_none());
//!         // Other keys are independent.
//!         let _other = locks.lock("notes.txt");
//!     });
//! });
//! drop((report, again));
//! assert!(locks.is_empty()); // nothing left behind
//! ```
//!
//! # Reader-writer locks and permits
//!
//! Two more managers lock names in shared modes, with the same registry design (exact per
//! key, sharded, an entry only while a key is held or awaited, timeouts that never lose a
//! grant, all-or-nothing multi-key locking in ascending `Ord` order) and a blocking and an
//! async face each on one core:
//!
//! - [`KeyedRwLocks`] / `AsyncKeyedRwLocks` ([`RwLockManager`]): per key, many readers, or
//!   one upgradable reader with readers, or one writer. **Strict FIFO with batched
//!   readers:** a newcomer queues behind any waiter (a queued writer is never starved by a
//!   stream of readers), and when a writer leaves, all the readers queued consecutively
//!   behind it are let in together. Write guards downgrade; an upgradable guard upgrades
//!   ahead of the queue (it waits only for the readers already in).
//! - [`KeyedPermits`] / `AsyncKeyedPermits` ([`PermitManager`]): a counting semaphore per
//!   key, at most N holders of a key at once, N fixed at construction.
//!
//! Unlike [`KeyedLocks`], both are **not reentrant**: each acquisition is its own holder
//! (as with `parking_lot::RwLock` and `tokio::sync::Semaphore`), so their guards are `Send`
//! in both flavors. A thread that reads a key it already reads may wait forever behind a
//! queued writer.
//!
//! Their guards protect names, not data, so there is nothing for
//! [`mapped`](crate::mapped) to narrow: keep the data in a structure whose own owned guards
//! map (or in a [`Striped`](crate::striped::Striped) of `RwLock<T>`, whose guards lock_api
//! maps).
//!
//! ```
//! use chainlock::keyed::{KeyedPermits, KeyedRwLocks};
//!
//! let docs = KeyedRwLocks::new();
//! let (a, b) = (docs.read("readme"), docs.read("readme")); // readers share
//! assert!(docs.try_write("readme").is_none());
//! drop((a, b));
//! let w = docs.upgradable_read("readme").upgrade();
//! drop(w);
//!
//! let hosts = KeyedPermits::new(2); // two connections per host
//! let held = (hosts.acquire("a.org"), hosts.acquire("a.org"));
//! assert!(hosts.try_acquire("a.org").is_none());
//! drop(held);
//! assert!(docs.is_empty() && hosts.is_empty());
//! ```
//!
//! # Keys are user code
//!
//! The manager calls the key's `Hash` and `Eq` while it holds the internal lock of the key's
//! shard, and drops keys (the caller's copy of a key already present, and the stored key when
//! the last holder leaves) outside it. A panic in any of them leaves nothing behind: a
//! destructor that panics after the manager took a hold or queued the caller gives that hold
//! or place back before the panic goes on. One thing is not detected: a `Hash` or `Eq` that
//! calls back into the *same* manager would wait for the shard lock it is running under, and
//! spin forever. Keys must compare and hash without locking keys.
//!
//! # Ordering of multi-key locking
//!
//! To lock several keys without deadlock, every caller must take them in the same total
//! order. `Eq + Hash` alone gives none: ordering by hash cannot break ties between two
//! distinct keys with equal hashes in a way all callers agree on. So
//! [`lock_all`](KeyedLocks::lock_all) requires `K: Ord` and locks keys in ascending `Ord`
//! order (equal keys once). Keys held already by the calling thread (reentrancy) are outside
//! that order: hold nothing else when calling it, or use a deadline.
//!
#![doc = include_str!("../docs/named-locks.md")]

mod flavor;
mod guards;
mod locks;
mod permits;
mod rw_locks;

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use flavor::Async;
pub use flavor::{Blocking, Flavor};
pub use guards::{KeyGuard, KeyGuards};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use locks::{AsyncKeyGuard, AsyncKeyedLocks};
pub use locks::{KeyedLocks, LockManager};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use permits::{AsyncKeyPermit, AsyncKeyedPermits};
pub use permits::{KeyPermit, KeyedPermits, PermitManager};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use rw_locks::{
    AsyncKeyReadGuard, AsyncKeyUpgradableGuard, AsyncKeyWriteGuard, AsyncKeyedRwLocks,
};
pub use rw_locks::{KeyReadGuard, KeyUpgradableGuard, KeyWriteGuard, KeyedRwLocks, RwLockManager};

pub use crate::striped::DefaultHashBuilder;
