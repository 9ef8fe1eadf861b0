//! How a node holds the locks of its children, so that a descent can go by key.

use super::pin::EpochGuard;
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

/// A container of child locks that can be searched by key: what a field marked
/// `#[chain(children)]` must be.
///
/// Implemented for `HashMap<K, Arc<L>>` and `BTreeMap<K, Arc<L>>` (key `K`),
/// `Vec<Arc<L>>` (key `usize`, the index), `Option<Arc<L>>` and `Arc<L>` (key `()`).
/// Implement it for any other container to use it as a child field.
///
/// # Examples
///
/// ```
/// use chainlock::chain::ChildContainer;
/// use chainlock::parking_lot::Mutex;
/// use std::sync::Arc;
///
/// /// Children kept sorted by name in a vector.
/// struct Sorted(Vec<(String, Arc<Mutex<u32>>)>);
///
/// impl ChildContainer for Sorted {
///     type Key = str;
///     type Lock = Mutex<u32>;
///     fn lookup(&self, key: &str) -> Option<Arc<Mutex<u32>>> {
///         let index = self.0.binary_search_by(|(name, _)| name.as_str().cmp(key)).ok()?;
///         Some(self.0[index].1.clone())
///     }
/// }
///
/// let children = Sorted(vec![("a".into(), Arc::new(Mutex::new(1)))]);
/// assert_eq!(*children.lookup("a").unwrap().lock(), 1);
/// assert!(children.lookup("b").is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a container of child locks",
    label = "`#[chain(children)]` needs a `ChildContainer` here",
    note = "hold the children as `Vec<Arc<L>>`, `HashMap<K, Arc<L>>`, `BTreeMap<K, Arc<L>>`, `Option<Arc<L>>` or `Arc<L>`, or implement `chainlock::chain::ChildContainer` for `{Self}`"
)]
pub trait ChildContainer {
    /// What a child is looked up by.
    type Key: ?Sized;
    /// The lock around each child.
    type Lock: ?Sized;

    /// The lock of the child under `key`, if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::ChildContainer;
    /// use chainlock::parking_lot::Mutex;
    /// use std::sync::Arc;
    ///
    /// let classes = vec![Arc::new(Mutex::new("algebra"))];
    /// assert_eq!(classes.lookup(&0).map(|class| *class.lock()), Some("algebra"));
    /// assert!(classes.lookup(&1).is_none());
    /// ```
    fn lookup(&self, key: &Self::Key) -> Option<Arc<Self::Lock>>;
}

impl<K: Eq + Hash, L: ?Sized, S: BuildHasher> ChildContainer for HashMap<K, Arc<L>, S> {
    type Key = K;
    type Lock = L;

    #[inline]
    fn lookup(&self, key: &K) -> Option<Arc<L>> {
        self.get(key).cloned()
    }
}

impl<K: Ord, L: ?Sized> ChildContainer for BTreeMap<K, Arc<L>> {
    type Key = K;
    type Lock = L;

    #[inline]
    fn lookup(&self, key: &K) -> Option<Arc<L>> {
        self.get(key).cloned()
    }
}

impl<L: ?Sized> ChildContainer for Vec<Arc<L>> {
    type Key = usize;
    type Lock = L;

    #[inline]
    fn lookup(&self, index: &usize) -> Option<Arc<L>> {
        self.get(*index).cloned()
    }
}

impl<L: ?Sized> ChildContainer for Option<Arc<L>> {
    type Key = ();
    type Lock = L;

    #[inline]
    fn lookup(&self, (): &()) -> Option<Arc<L>> {
        self.clone()
    }
}

impl<L: ?Sized> ChildContainer for Arc<L> {
    type Key = ();
    type Lock = L;

    #[inline]
    fn lookup(&self, (): &()) -> Option<Arc<L>> {
        Some(self.clone())
    }
}

/// A [`ChildContainer`] searched by a borrowed form `Q` of its key, as `HashMap::get` is
/// (`K: Borrow<Q>`): a `HashMap<String, _>` or `BTreeMap<String, _>` searched with a `&str`.
///
/// Implemented for `HashMap<K, Arc<L>>` (`Q: Hash + Eq`), `BTreeMap<K, Arc<L>>` (`Q: Ord`),
/// `Vec<Arc<L>>` (`Q = usize`), `Option<Arc<L>>` and `Arc<L>` (`Q = ()`). Implement it beside
/// `ChildContainer` for your own containers.
///
/// # Examples
///
/// ```
/// use chainlock::chain::LookupBy;
/// use chainlock::parking_lot::Mutex;
/// use std::collections::HashMap;
/// use std::sync::Arc;
///
/// let dirs = HashMap::from([("usr".to_owned(), Arc::new(Mutex::new(1)))]);
/// assert!(dirs.lookup_by("usr").is_some(), "a `&str` finds a `String` key");
/// assert!(dirs.lookup_by("bin").is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be searched by a `&{Q}`",
    label = "no borrowed lookup by `{Q}`",
    note = "a map finds its children by any `Q` its keys borrow as (`K: Borrow<Q>`, as `HashMap::get`); a `Vec` by `usize`, an `Option`/`Arc` by `()`"
)]
pub trait LookupBy<Q: ?Sized> {
    /// The lock around each child (as [`ChildContainer::Lock`]).
    type Lock: ?Sized;

    /// The lock of the child whose key borrows as `key`, if there is one.
    ///
    /// # Examples
    ///
    /// See [`LookupBy`].
    fn lookup_by(&self, key: &Q) -> Option<Arc<Self::Lock>>;
}

impl<K, Q, L, S> LookupBy<Q> for HashMap<K, Arc<L>, S>
where
    K: Eq + Hash + Borrow<Q>,
    Q: ?Sized + Eq + Hash,
    L: ?Sized,
    S: BuildHasher,
{
    type Lock = L;

    #[inline]
    fn lookup_by(&self, key: &Q) -> Option<Arc<L>> {
        self.get(key).cloned()
    }
}

impl<K, Q, L> LookupBy<Q> for BTreeMap<K, Arc<L>>
where
    K: Ord + Borrow<Q>,
    Q: ?Sized + Ord,
    L: ?Sized,
{
    type Lock = L;

    #[inline]
    fn lookup_by(&self, key: &Q) -> Option<Arc<L>> {
        self.get(key).cloned()
    }
}

impl<L: ?Sized> LookupBy<usize> for Vec<Arc<L>> {
    type Lock = L;

    #[inline]
    fn lookup_by(&self, index: &usize) -> Option<Arc<L>> {
        self.lookup(index)
    }
}

impl<L: ?Sized> LookupBy<()> for Option<Arc<L>> {
    type Lock = L;

    #[inline]
    fn lookup_by(&self, (): &()) -> Option<Arc<L>> {
        self.lookup(&())
    }
}

impl<L: ?Sized> LookupBy<()> for Arc<L> {
    type Lock = L;

    #[inline]
    fn lookup_by(&self, (): &()) -> Option<Arc<L>> {
        self.lookup(&())
    }
}

/// A node whose children of type `C` can be found by key: what `#[derive(ChainNode)]`
/// implements for each `#[chain(children)]` field, and what the key-path methods of a
/// generated locker (`descend_keys`, `run_keys`, `lock_leaves`) use to go from one level to
/// the next. The child type selects the field, so a node may have children of several types.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{ChildContainer, Children};
/// use chainlock::parking_lot::Mutex;
/// use std::collections::HashMap;
/// use std::sync::Arc;
///
/// struct Lecture { classes: HashMap<u32, Arc<Mutex<Class>>> }
/// struct Class { students: Vec<u32> }
///
/// // By hand; the derive looks children up the same way, in the `#[chain(children)]` field:
/// impl Children<Class> for Lecture {
///     type Key = u32;
///     type Lock = Mutex<Class>;
///     fn child(&self, key: &u32) -> Option<Arc<Mutex<Class>>> {
///         self.classes.lookup(key)
///     }
/// }
///
/// let lecture = Lecture { classes: HashMap::from([(3, Arc::new(Mutex::new(Class { students: vec![] })))]) };
/// assert!(lecture.child(&3).is_some());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no children of type `{C}`",
    label = "no `Children<{C}>` impl",
    note = "derive it: `#[derive(ChainNode)]` on `{Self}` with `#[chain(children)]` on the field that holds the `{C}` locks; or descend with closures (`run`/`descend`)"
)]
pub trait Children<C: ?Sized> {
    /// What a child is looked up by.
    type Key: ?Sized;
    /// The lock around each child (its `Target` is `C`).
    type Lock: ?Sized;

    /// The lock of the child under `key`, if there is one.
    ///
    /// # Examples
    ///
    /// See [`Children`].
    fn child(&self, key: &Self::Key) -> Option<Arc<Self::Lock>>;
}

/// [`Children`] found by a borrowed form `Q` of the key, as `HashMap::get` finds them
/// (`K: Borrow<Q>`): `#[derive(ChainNode)]` implements it for every `#[chain(children)]`
/// field whose container implements [`LookupBy<Q>`].
///
/// # Examples
///
/// ```
/// use chainlock::chain::ChildrenBy;
/// use chainlock::parking_lot::RwLock;
/// use chainlock::ChainNode;
/// use std::collections::HashMap;
/// use std::sync::Arc;
///
/// #[derive(ChainNode, Default)]
/// struct Dir {
///     #[chain(children)]
///     entries: HashMap<String, Arc<RwLock<Dir>>>,
/// }
///
/// let mut root = Dir::default();
/// root.entries.insert("usr".into(), Arc::new(RwLock::new(Dir::default())));
/// // A `&str` finds the `String` key, with no `String` allocated.
/// assert!(ChildrenBy::<Dir, str>::child_by(&root, "usr").is_some());
/// assert!(ChildrenBy::<Dir, str>::child_by(&root, "bin").is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no children of type `{C}` found by a `&{Q}`",
    label = "no `ChildrenBy<{C}, {Q}>` impl",
    note = "`#[derive(ChainNode)]` implements it when the `#[chain(children)]` field's keys borrow as `{Q}` (`K: Borrow<{Q}>`, as `HashMap::get`)"
)]
pub trait ChildrenBy<C: ?Sized, Q: ?Sized> {
    /// The lock around each child (as [`Children::Lock`]).
    type Lock: ?Sized;

    /// The lock of the child whose key borrows as `key`, if there is one.
    ///
    /// # Examples
    ///
    /// See [`ChildrenBy`].
    fn child_by(&self, key: &Q) -> Option<Arc<Self::Lock>>;
}

/// A container whose lookup lends the child's `Arc` for as long as the reader is pinned,
/// instead of cloning it: what an optimistic descent uses, so that it writes no child's
/// reference count on the way down ([`Walker::descend_optimistic`]). `Q` is what the child is
/// searched by, as in [`LookupBy`].
///
/// Implemented for the containers optimistic readers can search while a writer changes them,
/// [`EpochMap`](super::EpochMap) (`K: Borrow<Q>`, `Q: Ord`) and [`EpochVec`](super::EpochVec) (`Q = usize`): their lookups are
/// tied to the [`EpochGuard`]. Also implemented for the `std` containers of
/// [`ChildContainer`] (`HashMap`, `BTreeMap`, `Vec`, `Option<Arc<L>>`, `Arc<L>`), whose
/// lookups are tied to the container alone: a node behind a
/// [`HybridLock`](crate::hybrid::HybridLock) is only ever shared as `&N`, so such a field
/// cannot change while a reader can see it (it is written through
/// [`get_mut`](crate::hybrid::HybridLock::get_mut) before the node is shared, or never).
///
/// [`Walker::descend_optimistic`]: crate::walk::Walker::descend_optimistic
///
/// # Examples
///
/// ```
/// use chainlock::chain::{EpochGuard, EpochMap, LookupRef};
/// use chainlock::hybrid::HybridLock;
/// use std::sync::Arc;
///
/// let classes = EpochMap::new();
/// classes.insert(7_u32, Arc::new(HybridLock::new("algebra")));
/// let guard = EpochGuard::pin();
/// // A reference into the container, valid while `guard` lives: no count written.
/// let class: &Arc<HybridLock<&str>> = classes.lookup_ref(&7, &guard).unwrap();
/// assert_eq!(*class.read(), "algebra");
/// assert!(classes.lookup_ref(&8, &guard).is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no lookup by reference for a `&{Q}`",
    label = "no `LookupRef<{Q}>` impl",
    note = "children that writers insert and remove while optimistic readers look belong in a `chainlock::chain::EpochMap` or `EpochVec`; a `std` container qualifies when it never changes while shared"
)]
pub trait LookupRef<Q: ?Sized> {
    /// The lock around each child (as [`ChildContainer::Lock`]).
    type Lock: ?Sized;

    /// The child's `Arc` under `key`, lent for as long as both the container and `guard`
    /// are borrowed.
    ///
    /// # Examples
    ///
    /// See [`LookupRef`].
    fn lookup_ref<'g>(&'g self, key: &Q, guard: &'g EpochGuard) -> Option<&'g Arc<Self::Lock>>;
}

impl<K, Q, L, S> LookupRef<Q> for HashMap<K, Arc<L>, S>
where
    K: Eq + Hash + Borrow<Q>,
    Q: ?Sized + Eq + Hash,
    L: ?Sized,
    S: BuildHasher,
{
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, key: &Q, _: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.get(key)
    }
}

impl<K, Q, L> LookupRef<Q> for BTreeMap<K, Arc<L>>
where
    K: Ord + Borrow<Q>,
    Q: ?Sized + Ord,
    L: ?Sized,
{
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, key: &Q, _: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.get(key)
    }
}

impl<L: ?Sized> LookupRef<usize> for Vec<Arc<L>> {
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, index: &usize, _: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.get(*index)
    }
}

impl<L: ?Sized> LookupRef<()> for Option<Arc<L>> {
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, (): &(), _: &'g EpochGuard) -> Option<&'g Arc<L>> {
        self.as_ref()
    }
}

impl<L: ?Sized> LookupRef<()> for Arc<L> {
    type Lock = L;

    #[inline]
    fn lookup_ref<'g>(&'g self, (): &(), _: &'g EpochGuard) -> Option<&'g Arc<L>> {
        Some(self)
    }
}

/// [`Children`] lent by reference for as long as the reader is pinned: `#[derive(ChainNode)]`
/// implements it for every `#[chain(children)]` field whose container implements
/// [`LookupRef<Q>`] ([`EpochMap`](super::EpochMap), [`EpochVec`](super::EpochVec), the `std` containers). What a step of
/// [`Walker::descend_optimistic`](crate::walk::Walker::descend_optimistic) calls to go down
/// without writing a child's reference count.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{ChildrenRef, EpochGuard, EpochMap};
/// use chainlock::hybrid::HybridLock;
/// use chainlock::ChainNode;
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
///
/// #[derive(ChainNode, Default)]
/// struct Dir {
///     #[chain(closed)]
///     removed: AtomicBool,
///     #[chain(children)]
///     entries: EpochMap<String, HybridLock<Dir>>,
/// }
///
/// let root = Dir::default();
/// root.entries.insert("usr".into(), Arc::new(HybridLock::new(Dir::default())));
/// let guard = EpochGuard::pin();
/// assert!(root.child_ref("usr", &guard).is_some(), "a `&str` finds a `String` key");
/// assert!(ChildrenRef::<Dir, str>::child_ref(&root, "bin", &guard).is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no children of type `{C}` lent by a `&{Q}`",
    label = "no `ChildrenRef<{C}, {Q}>` impl",
    note = "`#[derive(ChainNode)]` implements it when the `#[chain(children)]` field's container implements `LookupRef<{Q}>` (`EpochMap`, `EpochVec`, or a `std` container)"
)]
pub trait ChildrenRef<C: ?Sized, Q: ?Sized> {
    /// The lock around each child (as [`Children::Lock`]).
    type Lock: ?Sized;

    /// The child's `Arc` under `key`, lent for as long as both the node and `guard` are
    /// borrowed.
    ///
    /// # Examples
    ///
    /// See [`ChildrenRef`].
    fn child_ref<'g>(&'g self, key: &Q, guard: &'g EpochGuard) -> Option<&'g Arc<Self::Lock>>;
}
