//! The weighted engine (keyed reader-writer locks and permits, `striped::Semaphore`): a
//! sharded table of held keys, each with a used weight out of one capacity and a FIFO queue.
//!
//! A holder takes a *weight* of its key's capacity: a permit is 1 out of N; a reader is
//! [`READ`], an upgradable reader [`UPGRADABLE`] and a writer [`WRITE`] out of [`RW_CAPACITY`],
//! so that readers share, an upgradable reader shares with readers only, and a writer shares
//! with no one. This is tokio's batch semaphore, per key.
//!
//! Invariants (under the shard's lock):
//!
//! - an entry exists for a key **iff** its used weight is positive (the key is held);
//! - the queue's front waiter does not fit (`used + front > capacity`), so a non-empty queue
//!   implies a holder, and nothing stays for a key neither held nor awaited;
//! - whenever the used weight drops or the front leaves, waiters are granted from the front
//!   while they fit ([`Entry::grant`]): consecutive readers are granted together, a writer
//!   stops the batch, a newcomer queues behind any waiter (no barging);
//! - a waiter that gives up re-checks `granted` under the shard lock: it either holds its
//!   weight (and must give it back) or has left the queue, never both and never neither.
//!
//! Waking happens after the shard lock is released; keys are dropped outside it too.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash};
use std::panic::{AssertUnwindSafe, Location};

use super::sharded::{Row, Sharded, Ticket};
use super::waiter::{Outcome, Waiter, Wake};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering;
use crate::telemetry::hooks::{Held, KeyProbe, Label, ProbeKind, observe_queued};

/// Half of [`RW_CAPACITY`].
const HALF: u64 = 1 << 62;
/// The capacity of a key of a reader-writer manager.
pub(crate) const RW_CAPACITY: u64 = 2 * HALF;
/// A reader's weight: up to `HALF - 1` readers share a key with an upgradable reader.
pub(crate) const READ: u64 = 1;
/// An upgradable reader's weight: two of them exceed the capacity, one fits with readers.
pub(crate) const UPGRADABLE: u64 = HALF + 1;
/// A writer's weight: the whole capacity.
pub(crate) const WRITE: u64 = RW_CAPACITY;

/// The sharded table of held keys of a weighted manager.
pub(crate) struct Weighted<K, S> {
    shards: Sharded<Entry<K>, S>,
    /// The weight every key can give out at once.
    capacity: u64,
    /// What telemetry records of this registry's keys (nothing without the feature).
    pub(crate) telemetry: KeyProbe<K>,
}

/// A held key.
struct Entry<K> {
    hash: u64,
    /// Names this entry for its guards.
    id: u64,
    key: K,
    /// The weight held, in `1..=capacity`.
    used: u64,
    /// Waiters in arrival order (an upgrade goes to the front); allocated on first
    /// contention.
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

impl<K> Entry<K> {
    /// [`grant`](Self::grant) into a new list, out of the uncontended path.
    #[cold]
    #[inline(never)]
    fn grant_all(&mut self, capacity: u64) -> Vec<Arc<Waiter>> {
        let mut woken = Vec::new();
        self.grant(capacity, &mut woken);
        woken
    }

    /// Grants waiters from the front while they fit; they are woken from `woken` after the
    /// shard lock is released.
    #[inline]
    fn grant(&mut self, capacity: u64, woken: &mut Vec<Arc<Waiter>>) {
        let Some(queue) = self.waiters.as_mut() else {
            return;
        };
        while let Some(front) = queue.front() {
            if front.claim > capacity - self.used {
                break;
            }
            self.used += front.claim;
            // Under the shard lock: a waiter that gives up re-checks this under the lock.
            front.granted.store(true, Ordering::Release);
            woken.extend(queue.pop_front());
        }
    }
}

/// What [`Weighted::release`] leaves to do outside the shard lock.
enum Released<K> {
    /// Others still hold the key, nobody was granted.
    StillHeld,
    /// These waiters were granted: wake them.
    Granted(Vec<Arc<Waiter>>),
    /// The last hold left: drop the entry (its key is user code).
    Removed(Entry<K>),
}

impl<K> Released<K> {
    #[inline]
    fn finish(self) {
        match self {
            Released::StillHeld => {}
            Released::Granted(woken) => wake_all(woken),
            Released::Removed(entry) => drop(entry),
        }
    }
}

#[cold]
#[inline(never)]
fn wake_all(woken: Vec<Arc<Waiter>>) {
    for waiter in woken {
        waiter.wake();
    }
}

impl<K, S> Weighted<K, S> {
    /// Creates `shards` shards (rounded up to a power of two, at most 65 536) for keys of
    /// `capacity` each.
    #[track_caller]
    pub(crate) fn new(shards: usize, capacity: u64, hasher: S) -> Self {
        Self::with_telemetry(
            shards,
            capacity,
            hasher,
            KeyProbe::new(ProbeKind::Keyed {
                manager: Label::caller(),
            }),
        )
    }

    /// [`new`](Self::new) with what telemetry calls its keys.
    #[track_caller]
    pub(crate) fn with_telemetry(
        shards: usize,
        capacity: u64,
        hasher: S,
        telemetry: KeyProbe<K>,
    ) -> Self {
        assert!(capacity > 0, "a key needs a capacity of at least one");
        Self {
            shards: Sharded::new(shards, hasher),
            capacity,
            telemetry,
        }
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.shards.count()
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The number of held keys, summed shard by shard.
    pub(crate) fn len(&self) -> usize {
        self.shards.len()
    }

    /// Gives back `weight` of the entry `ticket` names (all of a hold, or part of it on a
    /// downgrade), grants the waiters that now fit, and removes the entry once nothing is
    /// held.
    #[inline]
    pub(crate) fn release(&self, ticket: Ticket, weight: u64) {
        let capacity = self.capacity;
        let released = self.shards.at(ticket.shard).with(|shard| {
            let mut found = shard.entry_of(ticket);
            let entry = found.get_mut();
            entry.used -= weight;
            if entry
                .waiters
                .as_ref()
                .is_some_and(|queue| !queue.is_empty())
            {
                // Waiters never leave a key with no holder: the front fits once it is free.
                return Released::Granted(entry.grant_all(capacity));
            }
            if entry.used > 0 {
                return Released::StillHeld;
            }
            let (removed, _) = found.remove();
            shard.shrink_if_sparse();
            Released::Removed(removed)
        });
        // Outside the shard lock: waking is a system call, a key's destructor user code.
        released.finish();
    }

    /// Called by a queued waiter that gives up. Returns `true` if it was granted meanwhile:
    /// the caller then holds its weight (and must use or release it). Otherwise the waiter
    /// has left the queue, and the waiters it held up are granted if they now fit.
    pub(crate) fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool {
        let capacity = self.capacity;
        let woken = self.shards.at(ticket.shard).with(|shard| {
            // Granting happens under this lock: this read is authoritative.
            if waiter.granted.load(Ordering::Acquire) {
                return None;
            }
            let mut found = shard.entry_of(ticket);
            let entry = found.get_mut();
            let queue = entry
                .waiters
                .as_mut()
                .expect("an ungranted waiter is in its key's queue");
            let position = queue
                .iter()
                .position(|queued| Arc::ptr_eq(queued, waiter))
                .expect("an ungranted waiter is in its key's queue");
            queue.remove(position);
            let mut woken = Vec::new();
            entry.grant(capacity, &mut woken);
            Some(woken)
        });
        match woken {
            None => true,
            Some(woken) => {
                for waiter in woken {
                    waiter.wake();
                }
                false
            }
        }
    }

    /// Adds `extra` to the hold `ticket` names (an upgrade), ahead of every waiter: at once
    /// if it fits ([`Outcome::Held`]), else [`Outcome::Busy`] when `queue` is `None`, else a
    /// waiter at the front of the queue ([`Outcome::Queued`]).
    pub(crate) fn grow(
        &self,
        ticket: Ticket,
        extra: u64,
        queue: Option<impl FnOnce() -> Wake>,
    ) -> Outcome {
        let capacity = self.capacity;
        self.shards.at(ticket.shard).with(|shard| {
            let mut found = shard.entry_of(ticket);
            let entry = found.get_mut();
            if extra <= capacity - entry.used {
                entry.used += extra;
                Outcome::Held(ticket)
            } else if let Some(wake) = queue {
                let waiter = Waiter::new(extra, wake());
                entry
                    .waiters
                    .get_or_insert_default()
                    .push_front(Arc::clone(&waiter));
                Outcome::Queued(ticket, waiter)
            } else {
                Outcome::Busy
            }
        })
    }

    /// Gives back what [`acquire`](Weighted::acquire) took: its weight, or its place in
    /// the queue (and the weight if it was granted meanwhile).
    #[cold]
    fn undo(&self, outcome: Outcome, weight: u64) {
        match outcome {
            Outcome::Held(ticket) => self.release(ticket, weight),
            Outcome::Queued(ticket, waiter) => {
                if self.cancel(ticket, &waiter) {
                    self.release(ticket, weight);
                }
            }
            Outcome::Busy => {}
        }
    }
}

impl<K: Eq + Hash, S: BuildHasher> Weighted<K, S> {
    /// The hash of `key` (what telemetry names a key by).
    #[inline]
    pub(crate) fn hash(&self, key: &K) -> u64 {
        self.shards.place(key).1
    }

    /// Takes `weight` of `key` if possible now, with its telemetry (the try of every face).
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(crate) fn try_acquire(&self, key: K, weight: u64, task: bool) -> Option<(Ticket, Held)> {
        observe_queued!(
            self.telemetry,
            key,
            |key| self.hash(key),
            Location::caller(),
            task,
            |key| self.acquire(key, weight, None::<fn() -> Wake>).answer(),
            |_| unreachable!("a try never queues"),
        )
    }

    /// Takes `weight` (at most the capacity) of `key`: at once if nobody waits and it fits,
    /// else [`Outcome::Busy`] when `queue` is `None`, else queued at the back.
    #[inline]
    pub(crate) fn acquire(
        &self,
        key: K,
        weight: u64,
        queue: Option<impl FnOnce() -> Wake>,
    ) -> Outcome {
        debug_assert!(weight > 0 && weight <= self.capacity);
        let capacity = self.capacity;
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
                        used: weight,
                        waiters: None,
                    });
                    let ticket = Ticket {
                        shard: index,
                        hash,
                        id,
                        bucket: inserted.bucket_index(),
                    };
                    (Outcome::Held(ticket), None)
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
                    let nobody_waits = entry.waiters.as_ref().is_none_or(|queue| queue.is_empty());
                    let outcome = if nobody_waits && weight <= capacity - entry.used {
                        entry.used += weight;
                        Outcome::Held(ticket)
                    } else if let Some(wake) = queue {
                        let waiter = Waiter::new(weight, wake());
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
        // The caller's copy of a present key is dropped outside the lock; if its destructor
        // panics, what this call took is given back before the panic goes on.
        if let Some(key) = unused_key
            && let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| drop(key)))
        {
            self.undo(outcome, weight);
            std::panic::resume_unwind(panic);
        }
        outcome
    }

    /// `Some((used weight, waiters))` if `key` is held, `None` if it is free.
    pub(crate) fn probe<Q>(&self, key: &Q) -> Option<(u64, usize)>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (index, hash) = self.shards.place(key);
        self.shards.at(index).with(|shard| {
            shard
                .table
                .find(hash, |e| e.key.borrow() == key)
                .map(|e| (e.used, e.waiters.as_ref().map_or(0, |queue| queue.len())))
        })
    }
}
