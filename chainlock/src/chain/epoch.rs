//! Children that optimistic readers look up while a writer inserts and removes them:
//! [`EpochMap`] (by key) and [`EpochVec`] (by index), copy-on-write snapshots freed by epoch
//! reclamation, and the [`EpochGuard`] a reader holds while it looks.
//!
//! The design, its cost, the garbage bound, an example of a node type and what a step that
//! reads optimistically may do are in the docs of [`EpochMap`], which rustdoc shows (this
//! module is private).

use super::children::{ChildContainer, LookupBy, LookupRef};
use super::pin::EpochGuard;
use crate::loom::sync::atomic::{AtomicPtr, Ordering};
use std::borrow::Borrow;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A child in a snapshot: its `Arc` without a count of its own. The container owns one
/// count per entry of its *current* snapshot; every snapshot, current or retired, holds
/// bitwise copies of those `Arc`s that never drop, so copying a snapshot writes no child's
/// count (and no child's cache line). A count leaves the container exactly once: when a
/// published snapshot unlinks the entry ([`Lent::release`], then dropped after the grace
/// period by [`Snapshots::update`]) or when the container is dropped.
#[repr(transparent)]
struct Lent<L: ?Sized>(ManuallyDrop<Arc<L>>);

impl<L: ?Sized> Lent<L> {
    /// An entry holding `child`'s count, which becomes the container's once published.
    fn new(child: Arc<L>) -> Self {
        Lent(ManuallyDrop::new(child))
    }

    /// The child, for as long as the snapshot is borrowed.
    #[inline]
    fn child(&self) -> &Arc<L> {
        &self.0
    }

    /// The same entry for the next snapshot: no count written.
    fn share(&self) -> Self {
        // SAFETY: a bitwise copy of the `Arc` (a pointer). Neither copy drops it
        // (`ManuallyDrop`); its count is given back once, through `release`, by whoever
        // unlinks the entry or drops the container.
        Lent(ManuallyDrop::new(unsafe {
            std::ptr::read(&raw const *self.0)
        }))
    }

    /// The entry's count, out of the snapshots.
    ///
    /// # Safety
    ///
    /// Once per count the container owns: for an entry a published snapshot unlinked (and no
    /// current snapshot lists any more), or for the current snapshot's entries when the
    /// container is dropped (`&mut`: no reader).
    unsafe fn release(self) -> Arc<L> {
        ManuallyDrop::into_inner(self.0)
    }
}

/// What a writer's change makes of the current snapshot.
struct Change<T, R, L: ?Sized> {
    /// The snapshot to publish.
    next: T,
    /// What the writer answers once `next` is published.
    result: R,
    /// The entry of the current snapshot that `next` drops: its count is released once no
    /// reader pinned now can still reach it.
    unlinked: Option<Lent<L>>,
    /// The entry `next` adds: its count is the container's once published, released at once
    /// if another writer came first (the change is then made again).
    linked: Option<Lent<L>>,
}

/// An immutable `T` on the heap, replaced as a whole: a container's current snapshot.
struct Snapshots<T> {
    /// Never null: a `Box<T>` published by `new` or by a compare-and-swap with release.
    current: AtomicPtr<T>,
    /// Under loom, replaced snapshots (and the counts they unlinked) wait here for the
    /// container's drop.
    #[cfg(loom)]
    retired: crate::loom::sync::Mutex<Vec<Box<dyn Send>>>,
    _owns: PhantomData<Box<T>>,
}

impl<T> Snapshots<T> {
    fn new(value: T) -> Self {
        Snapshots {
            current: AtomicPtr::new(Box::into_raw(Box::new(value))),
            #[cfg(loom)]
            retired: crate::loom::sync::Mutex::new(Vec::new()),
            _owns: PhantomData,
        }
    }

    /// The current snapshot, for as long as `self` and the pin are borrowed.
    #[inline]
    fn load<'g>(&'g self, _pinned: &'g EpochGuard) -> &'g T {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: `current` is never null and points to a `Box<T>` published with release
        // (or before `self` was shared), which the acquire load synchronizes with. A snapshot
        // is never written after it is published, only read through `&T`. It is freed either
        // by `drop` (`&mut self`: no reader) or, once replaced, by `retire`, which defers the
        // free until every thread pinned at the time has unpinned: this thread is pinned for
        // `'g`, so the snapshot outlives the reference.
        unsafe { &*current }
    }

    /// The current snapshot, with no reader (for the container's drop).
    fn current_mut(&mut self) -> &mut T {
        // SAFETY: as in `load`, and `&mut self`: nobody else reads it.
        unsafe { &mut *self.current.load(Ordering::Relaxed) }
    }

    /// Replaces the snapshot with `change(current)`'s unless `change` says `None` (then
    /// nothing is written); compare-and-swap, so concurrent writers never lose an update.
    fn update<R, L>(&self, mut change: impl FnMut(&T) -> Option<Change<T, R, L>>) -> Option<R>
    where
        T: Send + 'static,
        L: ?Sized + Send + Sync + 'static,
    {
        let pinned = EpochGuard::pin();
        let mut current = self.current.load(Ordering::Acquire);
        loop {
            // SAFETY: as in `load`: published, never written, and pinned by `pinned`.
            let Change {
                next,
                result,
                unlinked,
                linked,
            } = change(unsafe { &*current })?;
            let next = Box::into_raw(Box::new(next));
            match self
                .current
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(replaced) => {
                    // SAFETY: `next` is published and does not list the unlinked entry,
                    // whose count, the container's, is released here once (dropped after
                    // the grace period, by `retire`).
                    let unlinked = unlinked.map(|entry| unsafe { entry.release() });
                    self.retire(replaced, unlinked, &pinned);
                    return Some(result);
                }
                Err(now) => {
                    // SAFETY: `next` was never published: this thread owns it alone.
                    drop(unsafe { Box::from_raw(next) });
                    // SAFETY: nor was the entry it added, whose count is nobody else's.
                    drop(linked.map(|entry| unsafe { entry.release() }));
                    current = now;
                }
            }
        }
    }

    /// Frees `replaced`, and drops the count `unlinked`, once no thread pinned now can still
    /// read them. Not flushed to the global queue: crossbeam-epoch batches a thread's
    /// deferred functions (64 per bag; see `EpochMap`'s garbage bound).
    #[cfg(not(loom))]
    #[expect(
        clippy::unused_self,
        reason = "the loom twin keeps replaced snapshots in `self`"
    )]
    fn retire<L>(&self, replaced: *mut T, unlinked: Option<Arc<L>>, pinned: &EpochGuard)
    where
        T: Send + 'static,
        L: ?Sized + Send + Sync + 'static,
    {
        let replaced = SendPtr(replaced);
        // SAFETY: `replaced` is no longer reachable from `self.current` (the compare-and-swap
        // unlinked it), so only threads pinned now can hold a reference to it or to the child
        // `unlinked` counts (lent by it or by an older snapshot, all unlinked before now), and
        // the deferred function runs after all of them have unpinned. It runs once, owns the
        // box and the count alone, and may run on another thread or later:
        // `T: Send + 'static`, `Arc<L>: Send + 'static`.
        unsafe {
            pinned.inner.defer_unchecked(move || {
                let SendPtr(replaced) = replaced;
                drop(Box::from_raw(replaced));
                drop(unlinked);
            });
        }
    }

    /// Under loom: kept until the container's drop (reclamation abstracted away).
    #[cfg(loom)]
    fn retire<L>(&self, replaced: *mut T, unlinked: Option<Arc<L>>, _pinned: &EpochGuard)
    where
        T: Send + 'static,
        L: ?Sized + Send + Sync + 'static,
    {
        // SAFETY: unlinked by the compare-and-swap; owned by the list from now on.
        let replaced = unsafe { Box::from_raw(replaced) };
        self.retired.lock().push(Box::new((replaced, unlinked)));
    }
}

impl<T> Drop for Snapshots<T> {
    fn drop(&mut self) {
        let current = self.current.load(Ordering::Relaxed);
        // SAFETY: `&mut self`: no reader can hold a reference into the current snapshot (one
        // that looked it up borrowed `self`), and it is never null. Retired ones are the
        // collector's. (The counts of its entries are the container's to release first.)
        drop(unsafe { Box::from_raw(current) });
    }
}

/// A raw pointer handed to the collector's deferred function (its `T: Send` is checked by
/// `retire`'s bound).
#[cfg(not(loom))]
struct SendPtr<T>(*mut T);
// SAFETY: only constructed in `retire`, for `T: Send`; the box it points to moves to
// whichever thread runs the deferred free.
#[cfg(not(loom))]
unsafe impl<T: Send> Send for SendPtr<T> {}

/// Children by key that optimistic readers look up while a writer inserts and removes them
/// through `&self`: sorted copy-on-write snapshots freed by epoch (see below for
/// the design, the cost and the garbage bound).
///
/// Readers: [`get`](Self::get) (or [`LookupRef`], or [`ChildrenRef`](super::ChildrenRef) on a
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
/// `Vec<(K, Arc<L>)>` for [`EpochMap`], a `Vec<Arc<L>>` for [`EpochVec`]). A reader pins the
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
/// of the same thread later (or at its exit), not two epochs after its removal; keep a clone
/// of what must be dropped at a known time. **A thread that stays
/// pinned** (an [`EpochGuard`] kept alive, or a step that blocks inside a descent) holds the
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
/// [`EpochMap::get`], [`EpochVec::get`]), compute with what it read, and answer. It runs on
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

/// Children by index that optimistic readers look up while a writer pushes, replaces and
/// removes them through `&self`: copy-on-write snapshots freed by epoch, as [`EpochMap`]
/// (see [`EpochMap`](EpochMap#the-design-copy-on-write-snapshots-freed-by-epoch)).
///
/// # Examples
///
/// ```
/// use chainlock::chain::{EpochGuard, EpochVec};
/// use chainlock::hybrid::HybridLock;
/// use std::sync::Arc;
///
/// let slots: EpochVec<HybridLock<u32>> = EpochVec::new();
/// slots.push(Arc::new(HybridLock::new(1)));
/// slots.push(Arc::new(HybridLock::new(2)));
/// let guard = EpochGuard::pin();
/// assert_eq!(*slots.get(1, &guard).unwrap().read(), 2);
/// let old = slots.replace(0, Arc::new(HybridLock::new(3)));
/// assert_eq!(*old.read(), 1);
/// assert!(slots.remove(5).is_none());
/// ```
pub struct EpochVec<L: ?Sized> {
    children: Snapshots<Vec<Lent<L>>>,
}

impl<L: ?Sized> Drop for EpochVec<L> {
    fn drop(&mut self) {
        for child in self.children.current_mut().drain(..) {
            // SAFETY: as `EpochMap`'s drop: the container's counts, each released once.
            drop(unsafe { child.release() });
        }
    }
}

// SAFETY: as `Vec<Arc<L>>`.
unsafe impl<L: ?Sized + Send + Sync> Send for EpochVec<L> {}
// SAFETY: readers share `&Arc<L>`, writers retire `Arc<L>`s the collector may drop on another
// thread: both need `L: Send + Sync`.
unsafe impl<L: ?Sized + Send + Sync> Sync for EpochVec<L> {}

impl<L: ?Sized> EpochVec<L> {
    /// An empty vector.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(chainlock::chain::EpochVec::<()>::new().is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        EpochVec {
            children: Snapshots::new(Vec::new()),
        }
    }

    /// The child at `index`, lent while `guard` lives; writes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{EpochGuard, EpochVec};
    /// use std::sync::Arc;
    ///
    /// let children: EpochVec<u8> = vec![Arc::new(7)].into();
    /// assert_eq!(children.get(0, &EpochGuard::pin()).map(|c| **c), Some(7));
    /// ```
    #[inline]
    pub fn get<'g>(&'g self, index: usize, guard: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.children.load(guard).get(index).map(Lent::child)
    }

    /// The children as they are now, lent while `guard` lives.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{EpochGuard, EpochVec};
    /// use std::sync::Arc;
    ///
    /// let children: EpochVec<u8> = vec![Arc::new(1), Arc::new(2)].into();
    /// let sum: u8 = children.as_slice(&EpochGuard::pin()).iter().map(|c| **c).sum();
    /// assert_eq!(sum, 3);
    /// ```
    pub fn as_slice<'g>(&'g self, guard: &'g EpochGuard) -> &'g [Arc<L>] {
        let children: &'g [Lent<L>] = self.children.load(guard);
        // SAFETY: `Lent<L>` is `repr(transparent)` over `ManuallyDrop<Arc<L>>`, itself
        // `repr(transparent)` over `Arc<L>`: the same layout. Through `&[Arc<L>]` no count
        // can be dropped (a shared slice), only cloned.
        unsafe { std::slice::from_raw_parts(children.as_ptr().cast::<Arc<L>>(), children.len()) }
    }

    /// How many children there are now.
    ///
    /// # Examples
    ///
    /// ```
    /// let children = chainlock::chain::EpochVec::new();
    /// children.push(std::sync::Arc::new(()));
    /// assert_eq!(children.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.children.load(&EpochGuard::pin()).len()
    }

    /// Whether there are no children now.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(chainlock::chain::EpochVec::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<L: ?Sized + Send + Sync + 'static> EpochVec<L> {
    /// Appends `child`. Call it under the parent's exclusive hold.
    ///
    /// # Examples
    ///
    /// ```
    /// let children = chainlock::chain::EpochVec::new();
    /// children.push(std::sync::Arc::new(1));
    /// assert_eq!(children.len(), 1);
    /// ```
    pub fn push(&self, child: Arc<L>) {
        self.children.update(move |children| {
            let mut next = Vec::with_capacity(children.len() + 1);
            next.extend(children.iter().map(Lent::share));
            let linked = Lent::new(child.clone());
            next.push(linked.share());
            Some(Change {
                next,
                result: (),
                unlinked: None,
                linked: Some(linked),
            })
        });
    }

    /// Removes the last child and returns it (`None` if there is none). Readers that found
    /// it stay safe: it is freed once they have unpinned.
    ///
    /// # Examples
    ///
    /// ```
    /// let children = chainlock::chain::EpochVec::new();
    /// children.push(std::sync::Arc::new(1));
    /// assert_eq!(children.pop().as_deref(), Some(&1));
    /// assert!(children.pop().is_none());
    /// ```
    pub fn pop(&self) -> Option<std::sync::Arc<L>> {
        self.children.update(move |children| {
            let (last, rest) = children.split_last()?;
            Some(Change {
                next: rest.iter().map(Lent::share).collect(),
                result: last.child().clone(),
                unlinked: Some(last.share()),
                linked: None,
            })
        })
    }

    /// Removes the child at `index`, shifting the later ones down, and returns it (`None`, and
    /// nothing written, if `index` is out of range, as `VecDeque::remove`).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{EpochGuard, EpochVec};
    /// use std::sync::Arc;
    ///
    /// let children: EpochVec<u8> = vec![Arc::new(1), Arc::new(2)].into();
    /// assert_eq!(children.remove(0).as_deref(), Some(&1));
    /// assert_eq!(children.get(0, &EpochGuard::pin()).map(|c| **c), Some(2));
    /// ```
    pub fn remove(&self, index: usize) -> Option<Arc<L>> {
        self.children.update(move |children| {
            let removed = children.get(index)?;
            let mut next = Vec::with_capacity(children.len() - 1);
            next.extend(children[..index].iter().map(Lent::share));
            next.extend(children[index + 1..].iter().map(Lent::share));
            Some(Change {
                next,
                result: removed.child().clone(),
                unlinked: Some(removed.share()),
                linked: None,
            })
        })
    }

    /// Puts `child` at `index` and returns the child it replaces.
    ///
    /// # Panics
    ///
    /// If `index` is out of range (as slice indexing), with nothing written.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::EpochVec;
    /// use std::sync::Arc;
    ///
    /// let children: EpochVec<char> = vec![Arc::new('a')].into();
    /// assert_eq!(*children.replace(0, Arc::new('b')), 'a');
    /// ```
    #[track_caller]
    pub fn replace(&self, index: usize, child: Arc<L>) -> Arc<L> {
        let replaced = self.children.update(move |children| {
            let replaced = children.get(index)?;
            let linked = Lent::new(child.clone());
            let next = children
                .iter()
                .enumerate()
                .map(|(at, entry)| {
                    if at == index {
                        linked.share()
                    } else {
                        entry.share()
                    }
                })
                .collect();
            Some(Change {
                next,
                result: replaced.child().clone(),
                unlinked: Some(replaced.share()),
                linked: Some(linked),
            })
        });
        match replaced {
            Some(replaced) => replaced,
            None => panic!(
                "EpochVec::replace: index {index} out of range for length {}",
                self.len()
            ),
        }
    }
}

impl<L: ?Sized> Default for EpochVec<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: ?Sized> From<Vec<Arc<L>>> for EpochVec<L> {
    fn from(children: Vec<Arc<L>>) -> Self {
        EpochVec {
            children: Snapshots::new(children.into_iter().map(Lent::new).collect()),
        }
    }
}

impl<L: ?Sized> FromIterator<Arc<L>> for EpochVec<L> {
    fn from_iter<I: IntoIterator<Item = Arc<L>>>(children: I) -> Self {
        children.into_iter().collect::<Vec<_>>().into()
    }
}

impl<L: ?Sized + fmt::Debug> fmt::Debug for EpochVec<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.as_slice(&EpochGuard::pin()))
            .finish()
    }
}

impl<L: ?Sized> ChildContainer for EpochVec<L> {
    type Key = usize;
    type Lock = L;

    #[inline]
    fn lookup(&self, index: &usize) -> Option<Arc<L>> {
        self.get(*index, &EpochGuard::pin()).cloned()
    }
}

impl<L: ?Sized> LookupBy<usize> for EpochVec<L> {
    type Lock = L;

    #[inline]
    fn lookup_by(&self, index: &usize) -> Option<Arc<L>> {
        self.lookup(index)
    }
}

impl<L: ?Sized> LookupRef<usize> for EpochVec<L> {
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, index: &usize, guard: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.get(*index, guard)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod miri;
    #[cfg(not(loom))]
    mod units;

    #[cfg(loom)]
    mod loom_epoch;
}
