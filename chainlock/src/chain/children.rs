//! How a node holds the locks of its children, so that a descent can go by key.

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
