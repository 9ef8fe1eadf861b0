//! The copy-on-write publication both epoch containers share: an immutable snapshot behind
//! one pointer ([`Snapshots`]), replaced by compare-and-swap and retired to crossbeam-epoch's
//! collector, and the children's `Arc`s in it ([`Lent`]), copied without a count.

use crate::chain::pin::EpochGuard;
use crate::loom::sync::atomic::{AtomicPtr, Ordering};
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
pub(super) struct Lent<L: ?Sized>(ManuallyDrop<Arc<L>>);

impl<L: ?Sized> Lent<L> {
    /// An entry holding `child`'s count, which becomes the container's once published.
    pub(super) fn new(child: Arc<L>) -> Self {
        Lent(ManuallyDrop::new(child))
    }

    /// The child, for as long as the snapshot is borrowed.
    #[inline]
    pub(super) fn child(&self) -> &Arc<L> {
        &self.0
    }

    /// The same entry for the next snapshot: no count written.
    pub(super) fn share(&self) -> Self {
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
    pub(super) unsafe fn release(self) -> Arc<L> {
        ManuallyDrop::into_inner(self.0)
    }
}

/// What a writer's change makes of the current snapshot.
pub(super) struct Change<T, R, L: ?Sized> {
    /// The snapshot to publish.
    pub(super) next: T,
    /// What the writer answers once `next` is published.
    pub(super) result: R,
    /// The entry of the current snapshot that `next` drops: its count is released once no
    /// reader pinned now can still reach it.
    pub(super) unlinked: Option<Lent<L>>,
    /// The entry `next` adds: its count is the container's once published, released at once
    /// if another writer came first (the change is then made again).
    pub(super) linked: Option<Lent<L>>,
}

/// An immutable `T` on the heap, replaced as a whole: a container's current snapshot.
pub(super) struct Snapshots<T> {
    /// Never null: a `Box<T>` published by `new` or by a compare-and-swap with release.
    current: AtomicPtr<T>,
    /// Under loom, replaced snapshots (and the counts they unlinked) wait here for the
    /// container's drop.
    #[cfg(loom)]
    retired: crate::loom::sync::Mutex<Vec<Box<dyn Send>>>,
    _owns: PhantomData<Box<T>>,
}

impl<T> Snapshots<T> {
    pub(super) fn new(value: T) -> Self {
        Snapshots {
            current: AtomicPtr::new(Box::into_raw(Box::new(value))),
            #[cfg(loom)]
            retired: crate::loom::sync::Mutex::new(Vec::new()),
            _owns: PhantomData,
        }
    }

    /// The current snapshot, for as long as `self` and the pin are borrowed.
    #[inline]
    pub(super) fn load<'g>(&'g self, _pinned: &'g EpochGuard) -> &'g T {
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
    pub(super) fn current_mut(&mut self) -> &mut T {
        // SAFETY: as in `load`, and `&mut self`: nobody else reads it.
        unsafe { &mut *self.current.load(Ordering::Relaxed) }
    }

    /// Replaces the snapshot with `change(current)`'s unless `change` says `None` (then
    /// nothing is written); compare-and-swap, so concurrent writers never lose an update.
    pub(super) fn update<R, L>(
        &self,
        mut change: impl FnMut(&T) -> Option<Change<T, R, L>>,
    ) -> Option<R>
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
