//! [`EpochVec`]: children by index (the design is [`EpochMap`](crate::chain::EpochMap)'s).

use super::snapshots::{Change, Lent, Snapshots};
use crate::chain::children::{ChildContainer, LookupBy, LookupRef};
use crate::chain::pin::EpochGuard;
use std::fmt;
use std::sync::Arc;

/// Children by index that optimistic readers look up while a writer pushes, replaces and
/// removes them through `&self`: copy-on-write snapshots freed by epoch, as [`EpochMap`](crate::chain::EpochMap)
/// (see [`EpochMap`](crate::chain::EpochMap#the-design-copy-on-write-snapshots-freed-by-epoch)).
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
