//! The sharded table both keyed engines keep their entries in (`registry` for exclusive
//! keys, `weighted` for shared modes): shards chosen by hash, each a `HashTable` behind its
//! own lock, entries named by an id so that guards find them again without the key, and
//! memory given back after a burst of keys.

use std::hash::{BuildHasher, Hash};

use crossbeam_utils::CachePadded;
use hashbrown::HashTable;
use hashbrown::hash_table::OccupiedEntry;

use super::shard_lock::ShardLock;
use crate::spread::Spread;

/// At most this many shards: more would only spread the same keys thinner.
const MAX_SHARDS: usize = 1 << 16;

/// Tables with at most this many buckets are never shrunk (avoids churn on small tables).
const MIN_SHRINK_BUCKETS: usize = 64;

/// An entry of the table: its key's hash (kept so the table can rehash and entries be found
/// without the key) and the id that names it for its guards.
pub(super) trait Row {
    fn hash(&self) -> u64;
    fn id(&self) -> u64;
}

/// Where a held key's entry lives: all a guard needs to release it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    pub(super) shard: usize,
    pub(super) hash: u64,
    pub(super) id: u64,
    /// The entry's bucket when the ticket was issued: a hint that saves probing the table
    /// on release. Only a rehash moves entries (it is rare); a stale hint is detected by
    /// the entry's `id` and falls back to probing with `hash`.
    pub(super) bucket: usize,
}

impl Ticket {
    /// The lock this ticket is a hold of, for telemetry (its key's hash: the same for every
    /// holder and waiter of the key).
    #[inline]
    pub(crate) fn lock_addr(&self) -> usize {
        self.hash as usize
    }
}

/// The shards and the hasher that places keys on them.
pub(super) struct Sharded<E, S> {
    shards: Box<[CachePadded<ShardLock<Shard<E>>>]>,
    /// Picks a shard for a key's hash; the count is a power of two.
    spread: Spread,
    hasher: S,
}

/// One shard's entries.
pub(super) struct Shard<E> {
    pub(super) table: HashTable<E>,
    /// Source of entry ids, unique within this shard (a field, not a method, so that it
    /// can be bumped while a table entry is borrowed).
    pub(super) next_id: u64,
}

impl<E, S> Sharded<E, S> {
    /// Creates `shards` shards (rounded up to a power of two, at most 65 536).
    #[track_caller]
    pub(super) fn new(shards: usize, hasher: S) -> Self {
        assert!(shards > 0, "a keyed lock manager needs at least one shard");
        let count = shards.min(MAX_SHARDS).next_power_of_two();
        let shards = (0..count)
            .map(|_| {
                CachePadded::new(ShardLock::new(Shard {
                    table: HashTable::new(),
                    next_id: 0,
                }))
            })
            .collect();
        Self {
            shards,
            spread: Spread::over(count),
            hasher,
        }
    }

    pub(super) fn count(&self) -> usize {
        self.shards.len()
    }

    /// The shard `index` (from [`Sharded::place`] or a [`Ticket`]).
    #[inline]
    pub(super) fn at(&self, index: usize) -> &ShardLock<Shard<E>> {
        &self.shards[index]
    }

    /// The number of entries, summed shard by shard: exact when no other thread locks or
    /// releases meanwhile.
    pub(super) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.with(|shard| shard.table.len()))
            .sum()
    }
}

impl<E, S: BuildHasher> Sharded<E, S> {
    /// The shard index and hash of `key`.
    #[inline]
    pub(super) fn place<Q: Hash + ?Sized>(&self, key: &Q) -> (usize, u64) {
        let hash = self.hasher.hash_one(key);
        // The shard comes from the hash multiplied; hashbrown probes with the hash's low
        // bits and tags with its top 7, so shard choice and in-shard placement stay apart.
        (self.spread.slot(hash), hash)
    }
}

impl<E: Row> Shard<E> {
    /// The entry `ticket` names (which exists: its key is held or awaited).
    #[inline]
    pub(super) fn entry_of(&mut self, ticket: Ticket) -> OccupiedEntry<'_, E> {
        let hinted = self
            .table
            .get_bucket(ticket.bucket)
            .is_some_and(|entry| entry.id() == ticket.id);
        let bucket = if hinted {
            ticket.bucket
        } else {
            self.table
                .find_bucket_index(ticket.hash, |entry| entry.id() == ticket.id)
                .expect("a held key has an entry")
        };
        // SAFETY: `bucket` was just found occupied, by `get_bucket` or by the probe.
        unsafe { self.table.get_bucket_entry_unchecked(bucket) }
    }

    /// Gives memory back after a burst of keys, amortized: shrinks to twice the live count
    /// once fewer than an eighth of the buckets are used. (The bucket count is a field
    /// read; the capacity would be computed on every release.)
    #[inline]
    pub(super) fn shrink_if_sparse(&mut self) {
        let buckets = self.table.num_buckets();
        if buckets > MIN_SHRINK_BUCKETS && self.table.len() * 8 < buckets {
            self.shrink();
        }
    }

    #[cold]
    #[inline(never)]
    fn shrink(&mut self) {
        self.table.shrink_to(self.table.len() * 2, Row::hash);
    }
}
