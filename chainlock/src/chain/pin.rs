//! The pin an optimistic reader holds while it looks children up: [`EpochGuard`], what
//! the epoch containers (`epoch.rs`) lend their children for, and what the lookups by
//! reference (`children.rs`) take.

use std::fmt;
#[cfg(loom)]
use std::marker::PhantomData;

/// The current thread pinned: children that writers remove from an
/// [`EpochMap`](super::EpochMap) or [`EpochVec`](super::EpochVec) while it lives stay
/// allocated until it is dropped, so references looked up through it
/// ([`LookupRef::lookup_ref`](super::LookupRef::lookup_ref),
/// [`EpochMap::get`](super::EpochMap::get)) live as long as it does.
///
/// Pinning writes only the thread's own epoch slot; it is reentrant (a second guard on the
/// same thread is a counter). Not `Send`: a guard belongs to the thread it pinned. Keep it for
/// one descent: while any thread is pinned, nothing retired since is freed (see
/// [`EpochMap`'s garbage bound](super::EpochMap#the-design-copy-on-write-snapshots-freed-by-epoch)).
///
/// # Examples
///
/// ```
/// use chainlock::chain::{EpochGuard, EpochVec};
/// use std::sync::Arc;
///
/// let children = EpochVec::new();
/// children.push(Arc::new(1));
/// let guard = EpochGuard::pin();
/// let first = children.get(0, &guard).unwrap();
/// children.pop(); // removed, but `first` stays valid while `guard` lives
/// assert_eq!(**first, 1);
/// assert!(children.get(0, &guard).is_none());
/// ```
pub struct EpochGuard {
    #[cfg(not(loom))]
    pub(super) inner: crossbeam_epoch::Guard,
    #[cfg(loom)]
    _not_send: PhantomData<*mut ()>,
}

impl EpochGuard {
    /// Pins the current thread.
    ///
    /// # Examples
    ///
    /// See [`EpochGuard`].
    #[must_use = "the thread is unpinned when the guard is dropped"]
    #[inline]
    pub fn pin() -> Self {
        EpochGuard {
            #[cfg(not(loom))]
            inner: crossbeam_epoch::pin(),
            #[cfg(loom)]
            _not_send: PhantomData,
        }
    }
}

impl fmt::Debug for EpochGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpochGuard").finish_non_exhaustive()
    }
}
