//! How a node holds the locks of its children, so that a descent can go by key.

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
/// // What the derive writes for `#[chain(children)] classes`:
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
