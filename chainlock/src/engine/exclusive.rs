//! The exclusive engine (`keyed::KeyedLocks`, `keyed::AsyncKeyedLocks`): a sharded table of held keys with FIFO queues.
//!
//! Invariant (under the shard's lock): an entry exists for a key **iff** the key is held.
//! Every entry has an owner; waiters queue behind it. Releasing the last hold either hands
//! the entry to the queue's front waiter (new owner set, waiter marked granted, all under
//! the shard lock, then woken after it) or removes the entry. Hence:
//!
//! - nothing stays for a key neither held nor awaited (a waiter only exists behind a
//!   holder), and removal is atomic with the last release;
//! - a newcomer finds the entry present and queues at the back: no barging;
//! - a waiter that gives up (timeout, dropped future) re-checks `granted` under the shard
//!   lock, so a grant racing with its timeout is seen: the waiter either owns the key or
//!   is removed from the queue, never both and never neither.
//!
//! The blocking face (`KeyedLocks`) and the async one (`AsyncKeyedLocks`) differ only in
//! how a waiter sleeps ([`Wake`]) and in what names an owner (a thread, or one acquisition):
//! both are `keyed::LockManager`, which owns the registry.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::panic::AssertUnwindSafe;

use super::sharded::{Row, Sharded, Ticket};
use super::waiter::{Outcome, Waiter, Wake};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering;
use crate::telemetry::hooks::{KeyProbe, Label, ProbeKind};

/// The sharded table of held keys.
pub(crate) struct Registry<K, S> {
    shards: Sharded<Entry<K>, S>,
    /// What telemetry records of this registry's keys (nothing without the feature).
    pub(crate) telemetry: KeyProbe<K>,
}

/// A held key.
struct Entry<K> {
    /// The key's hash, kept so the table can rehash and entries be found without `K`.
    hash: u64,
    /// Names this entry for its guards: they find it again by id, without the key.
    id: u64,
    key: K,
    /// Who holds the key: a thread token or an acquisition token.
    owner: u64,
    /// Holds by `owner` (reentrancy); the key is released when it drops to 0.
    depth: usize,
    /// Waiters in arrival order; the front one is granted the key next.
    /// Boxed and allocated on first contention: 8 bytes instead of 32 in every entry of
    /// the (common) uncontended case.
    #[expect(
        clippy::box_collection,
        reason = "8 bytes instead of 32 in every uncontended entry"
    )]
    waiters: Option<Box<VecDeque<Arc<Waiter>>>>,
}

impl<K> Row for Entry<K> {
    #[inline]
    fn hash(&self) -> u64 {
        self.hash
    }

    #[inline]
    fn id(&self) -> u64 {
        self.id
    }
}

impl<K, S> Registry<K, S> {
    /// Creates `shards` shards (rounded up to a power of two, at most 65 536).
    #[track_caller]
    pub(crate) fn new(shards: usize, hasher: S) -> Self {
        Self {
            shards: Sharded::new(shards, hasher),
            telemetry: KeyProbe::new(ProbeKind::Keyed {
                manager: Label::caller(),
            }),
        }
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.shards.count()
    }

    /// The number of held keys (each with its waiters), summed shard by shard: exact when
    /// no other thread locks or releases meanwhile.
    pub(crate) fn len(&self) -> usize {
        self.shards.len()
    }

    /// Releases one hold of the entry `ticket` names; on the last one, hands the key to the
    /// longest waiter or removes the entry.
    #[inline]
    pub(crate) fn release(&self, ticket: Ticket) {
        let handed_to = self.shards.at(ticket.shard).with(|shard| {
            let mut found = shard.entry_of(ticket);
            let entry = found.get_mut();
            entry.depth -= 1;
            if entry.depth > 0 {
                return Released::StillHeld;
            }
            if let Some(next) = entry.waiters.as_mut().and_then(|queue| queue.pop_front()) {
                entry.owner = next.claim;
                entry.depth = 1;
                // Under the shard lock: a waiter that gives up re-checks this under the lock.
                next.granted.store(true, Ordering::Release);
                return Released::HandedTo(next);
            }
            let (removed, _) = found.remove();
            shard.shrink_if_sparse();
            Released::Removed(removed)
        });
        // Outside the shard lock: waking is a system call, and a key's destructor may be
        // slow or panic.
        match handed_to {
            Released::HandedTo(next) => next.wake(),
            Released::Removed(entry) => drop(entry),
            Released::StillHeld => {}
        }
    }

    /// Called by a queued waiter that gives up. Returns `true` if the key had been granted
    /// to it meanwhile: the caller then owns the key (and must use or release it).
    /// Otherwise the waiter has left the queue.
    pub(crate) fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool {
        self.shards.at(ticket.shard).with(|shard| {
            // Granting happens under this lock: this read is authoritative.
            if waiter.granted.load(Ordering::Acquire) {
                return true;
            }
            let mut found = shard.entry_of(ticket);
            let queue = found
                .get_mut()
                .waiters
                .as_mut()
                .expect("an ungranted waiter is in its key's queue");
            let position = queue
                .iter()
                .position(|queued| Arc::ptr_eq(queued, waiter))
                .expect("an ungranted waiter is in its key's queue");
            queue.remove(position);
            false
        })
    }
}

/// What [`Registry::release`] did, to finish outside the shard lock.
enum Released<K> {
    StillHeld,
    HandedTo(Arc<Waiter>),
    Removed(Entry<K>),
}

impl<K: Eq + Hash, S: BuildHasher> Registry<K, S> {
    /// The hash of `key` (what telemetry names a key by).
    #[inline]
    pub(crate) fn hash(&self, key: &K) -> u64 {
        self.shards.place(key).1
    }

    /// Takes `key` for `owner`.
    ///
    /// If the key is held by `owner` and `reentrant`, adds a hold. If it is held by another
    /// owner: returns [`Outcome::Busy`] when `queue` is `None`, otherwise queues a waiter
    /// woken by `queue()` (called under the shard lock) and returns [`Outcome::Queued`].
    ///
    /// # Panics
    ///
    /// Panics if `owner` would hold the key more than `usize::MAX` times.
    #[inline]
    pub(crate) fn acquire(
        &self,
        key: K,
        owner: u64,
        reentrant: bool,
        queue: Option<impl FnOnce() -> Wake>,
    ) -> Outcome {
        let (index, hash) = self.shards.place(&key);
        let (outcome, unused_key) = self.shards.at(index).with(|shard| {
            match shard.table.entry(hash, |e| e.key == key, |e| e.hash) {
                hashbrown::hash_table::Entry::Vacant(vacant) => {
                    let id = shard.next_id;
                    shard.next_id += 1;
                    let inserted = vacant.insert(Entry {
                        hash,
                        id,
                        key,
                        owner,
                        depth: 1,
                        waiters: None,
                    });
                    (
                        Outcome::Held(Ticket {
                            shard: index,
                            hash,
                            id,
                            bucket: inserted.bucket_index(),
                        }),
                        None,
                    )
                }
                hashbrown::hash_table::Entry::Occupied(mut occupied) => {
                    let bucket = occupied.bucket_index();
                    let entry = occupied.get_mut();
                    let ticket = Ticket {
                        shard: index,
                        hash,
                        id: entry.id,
                        bucket,
                    };
                    let outcome = if reentrant && entry.owner == owner {
                        entry.depth = entry
                            .depth
                            .checked_add(1)
                            .expect("a key was locked reentrantly more than usize::MAX times");
                        Outcome::Held(ticket)
                    } else if let Some(wake) = queue {
                        let waiter = Waiter::new(owner, wake());
                        entry
                            .waiters
                            .get_or_insert_default()
                            .push_back(Arc::clone(&waiter));
                        Outcome::Queued(ticket, waiter)
                    } else {
                        Outcome::Busy
                    };
                    (outcome, Some(key))
                }
            }
        });
        // The caller's copy of an already present key is dropped outside the lock. Its
        // destructor is user code: if it panics, the hold or the place in the queue this call
        // took is given back before the panic goes on, so that the key is never stranded.
        if let Some(key) = unused_key
            && let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| drop(key)))
        {
            self.undo(outcome);
            std::panic::resume_unwind(panic);
        }
        outcome
    }

    /// Gives back what [`acquire`](Self::acquire) took: a hold, or a place in the queue (and
    /// the key itself if it was granted meanwhile).
    #[cold]
    fn undo(&self, outcome: Outcome) {
        match outcome {
            Outcome::Held(ticket) => self.release(ticket),
            Outcome::Queued(ticket, waiter) => {
                if self.cancel(ticket, &waiter) {
                    self.release(ticket);
                }
            }
            Outcome::Busy => {}
        }
    }

    /// `Some(number of waiters)` if `key` is held, `None` if it is free.
    pub(crate) fn probe<Q>(&self, key: &Q) -> Option<usize>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (index, hash) = self.shards.place(key);
        self.shards.at(index).with(|shard| {
            shard
                .table
                .find(hash, |e| e.key.borrow() == key)
                .map(|e| e.waiters.as_ref().map_or(0, |queue| queue.len()))
        })
    }
}

impl<K, S> fmt::Debug for Registry<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("shards", &self.shards.count())
            .finish_non_exhaustive()
    }
}
