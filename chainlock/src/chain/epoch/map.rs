//! [`EpochMap`]: children by key, in sorted snapshots (the design of both containers is in
//! its docs).

use super::snapshots::{Change, Lent, Snapshots};
use crate::chain::children::{ChildContainer, LookupBy, LookupRef};
use crate::chain::pin::EpochGuard;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// Children by key that optimistic readers look up while a writer inserts and removes them
/// through `&self`: sorted copy-on-write snapshots freed by epoch (see below for
/// the design, the cost and the garbage bound).
///
/// Readers: [`get`](Self::get) (or [`LookupRef`], or [`ChildrenRef`](crate::chain::ChildrenRef) on a
/// derived node) lends the child's `Arc` for as long as an [`EpochGuard`] lives, writing
/// nothing; [`ChildContainer::lookup`] clones it. Writers: [`insert`](Self::insert) and
/// [`remove`](Self::remove), normally under the parent's exclusive hold (so that optimistic
/// readers of the parent see its version change); concurrent writers without it are still
/// safe and lose no update.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{EpochGuard, EpochMap};
/// use chainlock::hybrid::HybridLock;
/// use std::sync::Arc;
///
/// let rooms: EpochMap<String, HybridLock<u32>> = EpochMap::new();
/// assert!(rooms.insert("a".into(), Arc::new(HybridLock::new(1))).is_none());
/// rooms.insert("b".into(), Arc::new(HybridLock::new(2)));
/// let guard = EpochGuard::pin();
/// let a = rooms.get("a", &guard).unwrap();
/// let removed = rooms.remove("a").unwrap(); // a reader may still hold `a`: it stays allocated
/// assert!(Arc::ptr_eq(a, &removed));
/// assert!(rooms.get("a", &guard).is_none());
/// assert_eq!(rooms.len(), 1);
/// ```
///
/// # The problem
///
/// An optimistic reader ([`HybridLock::optimistic`](crate::hybrid::HybridLock::optimistic),
/// [`Walker::descend_optimistic`](crate::walk::Walker::descend_optimistic)) takes no lock: it
/// reads a node while a writer, holding the node's [`HybridLock`](crate::hybrid::HybridLock)
/// exclusively, may change it through `&self`, and finds out afterwards (the version) whether
/// to trust what it read. For plain values that is what atomics are for. A node's *children*
/// are harder: the writer inserts and removes them while the reader searches them, and a child
/// the writer removed must stay allocated while a reader that found it a moment earlier still
/// reads its version. A `Mutex<HashMap<..>>` would make the reader write the mutex (the very
/// cache-line traffic optimism avoids); cloning each child's `Arc` would write its count.
///
/// # The design: copy-on-write snapshots, freed by epoch
///
/// A container holds one pointer to an immutable **snapshot** of its children (a sorted
/// `Vec<(K, Arc<L>)>` for [`EpochMap`], a `Vec<Arc<L>>` for [`EpochVec`](crate::chain::EpochVec)). A reader pins the
/// thread ([`EpochGuard::pin`]), loads the pointer, searches the snapshot and gets back a
/// `&Arc<L>` borrowed for as long as the guard lives: nothing is written but the thread's
/// own epoch slot. A writer copies the snapshot, changes the copy, publishes it with one
/// compare-and-swap (release), and *retires* the old snapshot: it is freed (and the `Arc` of
/// the child the change removed or replaced dropped, so that child itself if nobody else holds
/// it) only once every thread that was pinned when it was replaced has unpinned. A reader
/// therefore never sees a snapshot being changed (they are never changed) nor freed (it is
/// pinned), whatever writers do, with no `unsafe` in the user's code.
///
/// The container owns **one reference count per child**, not one per snapshot: the snapshots
/// hold bitwise copies of the children's `Arc`s that never drop, and a count leaves the
/// container exactly once, when a published snapshot no longer lists the child (dropped after
/// the grace period) or when the container is dropped. So copying a snapshot writes nothing to
/// the children (no count, no cache line a reader of them reads), and a writer writes one
/// count per change: the child it adds, or the one it hands back.
///
/// Reclamation is [crossbeam-epoch]'s (the collector of crossbeam's lock-free structures,
/// maintained with them): its `pin` is a store to a slot only the pinning thread writes, which
/// keeps a descent write-free to shared lines, and its garbage is batched per thread. Rejected
/// alternatives: [`seize`] (hyaline; robust against stalled threads, but per-structure
/// collectors each node would have to share, and no loom support either); hazard pointers
/// (a store per *pointer* read: one per level, on lines other threads scan); snapshots behind
/// `arc-swap` (its `load` writes a debt slot and its guard may fall back to a count). Copying a
/// snapshot costs a writer O(n) per insert or remove (a copy of the pointers and, for a map,
/// a clone of each key: no count written); a lookup is a binary search (map) or an index
/// (vec). That suits the upper levels
/// of a tree, read far more often than their fan-out changes (a registry of lectures, the
/// classes of a lecture); a node with thousands of children changed often wants a concurrent
/// map of its own.
///
/// **Garbage is bounded**: each write retires one snapshot (and at most one child's count)
/// into its thread's bag of deferred functions; crossbeam-epoch seals a bag into the global
/// queue when it holds 64 (or when the thread exits), and frees a sealed bag once the global
/// epoch has advanced twice past it, which it does as soon as every pinned thread has moved on
/// (tried every 128 pins of a thread and whenever a bag is sealed). So at most 64 retired
/// snapshots wait per writing thread, plus the sealed bags of the last two epochs. A write is
/// not flushed to the global queue by itself: a flush per write moved a 2 KiB bag (a copy and
/// an allocation) and touched the shared queue on every insert and remove, which cost the
/// scheduling service a third of its first-level cache write misses (`docs/benchmarks.md`).
/// The price: a removed child whose last `Arc` is the container's is dropped up to 64 writes
/// of the same thread later, not two epochs after its removal; a thread that exits hands its
/// bag to the global queue, which is freed only when other threads' pins collect (every
/// 128 pins of a thread: a short-lived remover in a program whose other threads rarely pin
/// leaves its removed children allocated until they do); keep a clone
/// of what must be dropped at a known time. **A thread that stays
/// pinned** (an [`EpochGuard`] kept alive, a step that blocks inside a descent, or the
/// pessimistic pass of a chain locker or of an optimistic walk while it waits; their
/// optimistic passes wait for their first locked level or target unpinned) holds the
/// epoch back: nothing is freed early, but every snapshot retired meanwhile, anywhere in the
/// process, waits (memory grows by one snapshot per write, plus the removed children kept alive
/// by those snapshots) until it unpins. So a guard lives for one descent, and a step does not
/// wait for anything. Dropping a container frees its current snapshot at once (`&mut` access
/// proves no reader is inside it).
///
/// **Under loom** (`--cfg loom`) crossbeam-epoch's own model needs `--cfg crossbeam_loom`, so
/// the reclamation is abstracted: a replaced snapshot is kept until the container is dropped
/// (never freed while shared), and the models check the publication protocol (a reader sees a
/// whole snapshot, writers never lose an update, a validated read of the parent saw the
/// children at its version). Use-after-free is Miri's to find, with the real collector
/// (`cargo +nightly miri test -p chainlock --lib chain::epoch`, under Tree Borrows: the
/// collector's intrusive list breaks Stacked Borrows' rules, as crossbeam's own CI notes),
/// and the freeing of removed children is asserted by drop counters, natively and under
/// Miri.
///
/// # A node type an optimistic reader may read
///
/// Everything a writer changes while the node is shared is an atomic or one of these
/// containers; the derive finds the children and the closed flag:
///
/// ```
/// use chainlock::chain::{ChildrenRef, EpochMap};
/// use chainlock::hybrid::HybridLock;
/// use chainlock::walk::{Exclusive, Shared, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
/// use std::sync::Arc;
///
/// #[derive(ChainNode, Default)]
/// struct Dir {
///     #[chain(closed)]
///     removed: AtomicBool,
///     size: AtomicU64,
///     #[chain(children)]
///     entries: EpochMap<String, HybridLock<Dir>>,
/// }
///
/// // The step of a descent along a path: a borrowed lookup, no `Arc` cloned, no count written.
/// fn along<'p>(
///     path: &'p [&'p str],
/// ) -> impl for<'g> FnMut(&'g Dir, usize, &'g chainlock::chain::EpochGuard)
///        -> Step<&'g Arc<HybridLock<Dir>>> + 'p {
///     move |dir, depth, guard| match path.get(depth) {
///         None => Step::Here,
///         Some(name) => dir.child_ref(*name, guard).map_or(Step::Absent, Step::Descend),
///     }
/// }
///
/// let root = Arc::new(HybridLock::new(Dir::default()));
/// // A writer holds a directory exclusively and changes its entries through `&self`.
/// let usr = Walker::new().descend_optimistic(&root, Exclusive, along(&[])).unwrap();
/// usr.target.entries.insert("usr".into(), Arc::new(HybridLock::new(Dir::default())));
/// usr.target.entries.insert("tmp".into(), Arc::new(HybridLock::new(Dir::default())));
/// drop(usr);
///
/// // Readers go down by version, and lock only the target.
/// let found = Walker::new().descend_optimistic(&root, Shared, along(&["usr"])).unwrap();
/// assert_eq!((found.level, found.target.size.load(Relaxed)), (1, 0));
/// drop(found);
///
/// // Removing: unlink the child under the parent's hold, and close it under its own (a
/// // reader that found it before the unlink sees it closed).
/// let parent = Walker::new().descend_optimistic(&root, Exclusive, along(&[])).unwrap();
/// let tmp = parent.target.entries.remove("tmp").unwrap();
/// tmp.write().removed.store(true, Relaxed);
/// drop(parent);
/// let walk = Walker::new().descend_optimistic(&root, Shared, along(&["tmp"]));
/// assert!(walk.is_err(), "gone");
/// ```
///
/// # What a step that reads optimistically may and may not do
///
/// It may read the node's atomics and look children up by reference (`child_ref`,
/// [`EpochMap::get`], [`EpochVec::get`](crate::chain::EpochVec::get)), compute with what it read, and answer. It runs on
/// data a writer may be changing, maybe more than once per level (once per pass), and its
/// answer is used only once the node's version validates, so it must not: act on what it read
/// (write shared state, allocate by a size it read, index without bounds checks, panic on an
/// inconsistent mix of values), loop until a value changes, block (a pinned thread holds every
/// container's garbage back), or keep what it read (a reference it looked up is valid only
/// for the pass, which the borrow checker enforces through the guard's lifetime).
///
/// [crossbeam-epoch]: https://docs.rs/crossbeam-epoch
/// [`seize`]: https://docs.rs/seize
pub struct EpochMap<K, L: ?Sized> {
    /// Sorted by key, no key twice.
    entries: Snapshots<Vec<(K, Lent<L>)>>,
}

impl<K, L: ?Sized> Drop for EpochMap<K, L> {
    fn drop(&mut self) {
        for (_, child) in self.entries.current_mut().drain(..) {
            // SAFETY: the current snapshot's entries hold the container's counts; `&mut`:
            // no reader, and the snapshot is emptied, so each is released once.
            drop(unsafe { child.release() });
        }
    }
}

// SAFETY: the map owns its entries (`K`, `Arc<L>`) like a `Vec<(K, Arc<L>)>` does; sending it
// sends them.
unsafe impl<K: Send, L: ?Sized + Send + Sync> Send for EpochMap<K, L> {}
// SAFETY: through `&self`, readers on any thread get `&K` and `&Arc<L>` (`K: Sync`,
// `L: Send + Sync`), and writers on any thread retire snapshots that the collector may drop on
// another thread (`K: Send`).
unsafe impl<K: Send + Sync, L: ?Sized + Send + Sync> Sync for EpochMap<K, L> {}

impl<K, L: ?Sized> EpochMap<K, L> {
    /// An empty map.
    ///
    /// # Examples
    ///
    /// ```
    /// let map: chainlock::chain::EpochMap<u8, ()> = chainlock::chain::EpochMap::new();
    /// assert!(map.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        EpochMap {
            entries: Snapshots::new(Vec::new()),
        }
    }

    /// The child under `key`, lent while `guard` lives; writes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{EpochGuard, EpochMap};
    /// use std::sync::Arc;
    ///
    /// let map = EpochMap::new();
    /// map.insert(1_u8, Arc::new("one"));
    /// assert_eq!(map.get(&1, &EpochGuard::pin()).map(|one| **one), Some("one"));
    /// ```
    #[inline]
    pub fn get<'g, Q>(&'g self, key: &Q, guard: &'g EpochGuard) -> Option<&'g Arc<L>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        let entries = self.entries.load(guard);
        let index = entries
            .binary_search_by(|(probe, _)| probe.borrow().cmp(key))
            .ok()?;
        Some(entries[index].1.child())
    }

    /// The entries in key order as they are now, lent while `guard` lives (a later write
    /// does not change what this iterator yields).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{EpochGuard, EpochMap};
    /// use std::sync::Arc;
    ///
    /// let map: EpochMap<u8, u8> = [(2, Arc::new(20)), (1, Arc::new(10))].into_iter().collect();
    /// let guard = EpochGuard::pin();
    /// let keys: Vec<u8> = map.iter(&guard).map(|(key, _)| *key).collect();
    /// assert_eq!(keys, [1, 2]);
    /// ```
    pub fn iter<'g>(
        &'g self,
        guard: &'g EpochGuard,
    ) -> impl ExactSizeIterator<Item = (&'g K, &'g Arc<L>)> + 'g {
        self.entries
            .load(guard)
            .iter()
            .map(|(key, child)| (key, child.child()))
    }

    /// How many children there are now.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock::chain::EpochMap::new();
    /// map.insert(1, std::sync::Arc::new(()));
    /// assert_eq!(map.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.load(&EpochGuard::pin()).len()
    }

    /// Whether there are no children now.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(chainlock::chain::EpochMap::<u8, ()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K, L> EpochMap<K, L>
where
    K: Ord + Clone + Send + Sync + 'static,
    L: ?Sized + Send + Sync + 'static,
{
    /// Inserts `child` under `key` and returns the child it replaces: a new snapshot is
    /// published, the old one retired (freed once no pinned reader can still reach it).
    ///
    /// Call it under the parent's exclusive hold, so that optimistic readers of the parent
    /// see its version change and restart.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::EpochMap;
    /// use std::sync::Arc;
    ///
    /// let map = EpochMap::new();
    /// assert!(map.insert(1, Arc::new('a')).is_none());
    /// assert_eq!(map.insert(1, Arc::new('b')).as_deref(), Some(&'a'));
    /// ```
    pub fn insert(&self, key: K, child: Arc<L>) -> Option<Arc<L>> {
        self.entries
            .update(move |entries| {
                let found = entries.binary_search_by(|(probe, _)| probe.cmp(&key));
                let index = found.unwrap_or_else(|index| index);
                let mut next = Vec::with_capacity(entries.len() + usize::from(found.is_err()));
                let shared = |(key, child): &(K, Lent<L>)| (key.clone(), child.share());
                next.extend(entries[..index].iter().map(shared));
                next.push((key.clone(), Lent::new(child.clone())));
                let after = if found.is_ok() { index + 1 } else { index };
                next.extend(entries[after..].iter().map(shared));
                let linked = next[index].1.share();
                let unlinked = found.ok().map(|index| entries[index].1.share());
                Some(Change {
                    next,
                    result: unlinked.as_ref().map(|entry| entry.child().clone()),
                    unlinked,
                    linked: Some(linked),
                })
            })
            .flatten()
    }

    /// Removes the child under `key` and returns it (`None`, and nothing written, if there is
    /// none). Readers that found it before stay safe: it is freed once they have unpinned
    /// and the returned `Arc` is dropped.
    ///
    /// Call it under the parent's exclusive hold, as [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::EpochMap;
    /// use std::sync::Arc;
    ///
    /// let map = EpochMap::new();
    /// map.insert("x".to_owned(), Arc::new(1));
    /// assert_eq!(map.remove("x").as_deref(), Some(&1));
    /// assert!(map.remove("x").is_none());
    /// ```
    pub fn remove<Q>(&self, key: &Q) -> Option<Arc<L>>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        self.entries.update(move |entries| {
            let index = entries
                .binary_search_by(|(probe, _)| probe.borrow().cmp(key))
                .ok()?;
            let shared = |(key, child): &(K, Lent<L>)| (key.clone(), child.share());
            let mut next = Vec::with_capacity(entries.len() - 1);
            next.extend(entries[..index].iter().map(shared));
            next.extend(entries[index + 1..].iter().map(shared));
            let removed = &entries[index].1;
            Some(Change {
                next,
                result: removed.child().clone(),
                unlinked: Some(removed.share()),
                linked: None,
            })
        })
    }
}

impl<K, L: ?Sized> Default for EpochMap<K, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord, L: ?Sized> FromIterator<(K, Arc<L>)> for EpochMap<K, L> {
    /// The map of `children`; of two children under one key, the last is kept.
    fn from_iter<I: IntoIterator<Item = (K, Arc<L>)>>(children: I) -> Self {
        let mut entries: Vec<(K, Arc<L>)> = children.into_iter().collect();
        // Stable: equal keys stay in order, and the last of each run is kept.
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        entries.reverse();
        entries.dedup_by(|(a, _), (b, _)| a == b);
        entries.reverse();
        EpochMap {
            entries: Snapshots::new(
                entries
                    .into_iter()
                    .map(|(key, child)| (key, Lent::new(child)))
                    .collect(),
            ),
        }
    }
}

impl<K: fmt::Debug, L: ?Sized + fmt::Debug> fmt::Debug for EpochMap<K, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter(&EpochGuard::pin()))
            .finish()
    }
}

impl<K: Ord, L: ?Sized> ChildContainer for EpochMap<K, L> {
    type Key = K;
    type Lock = L;

    #[inline]
    fn lookup(&self, key: &K) -> Option<Arc<L>> {
        self.get(key, &EpochGuard::pin()).cloned()
    }
}

impl<K: Borrow<Q>, Q: ?Sized + Ord, L: ?Sized> LookupBy<Q> for EpochMap<K, L> {
    type Lock = L;

    #[inline]
    fn lookup_by(&self, key: &Q) -> Option<Arc<L>> {
        self.get(key, &EpochGuard::pin()).cloned()
    }
}

impl<K: Borrow<Q>, Q: ?Sized + Ord, L: ?Sized> LookupRef<Q> for EpochMap<K, L> {
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, key: &Q, guard: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.get(key, guard)
    }
}
