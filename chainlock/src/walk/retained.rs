//! The path of ancestors a retaining descent keeps locked.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// The locked path a [retaining descent](super::Walker::descend_retaining) ends with: the
/// target and the ancestors above it up to the lowest *safe* one, each still locked, so that
/// a structural change (a B-tree split, a rename) can be propagated upward.
///
/// Index 0 is the target, 1 its parent, and so on up to [`len`](Self::len)` - 1`, the
/// top-most retained node at depth [`top_depth`](Self::top_depth).
///
/// Dropping it releases the locks **top-down**: the top-most ancestor first, the target last,
/// so that threads waiting above are let in first. [`release_above`](Self::release_above)
/// releases the upper part early, in the same order.
///
/// # Examples
///
/// ```
/// use chainlock::parking_lot::Mutex;
/// use chainlock::walk::{Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Node { full: bool, next: Option<Arc<Mutex<Node>>> }
/// impl ChainNode for Node {}
///
/// let leaf = Arc::new(Mutex::new(Node { full: true, next: None }));
/// let middle = Arc::new(Mutex::new(Node { full: true, next: Some(leaf) }));
/// let root = Arc::new(Mutex::new(Node { full: false, next: Some(middle) }));
///
/// let mut path = Walker::new()
///     .descend_retaining(
///         &root,
///         |node, _depth| node.next.clone().map_or(Step::Here, Step::Descend),
///         |node, _depth| !node.full, // a full node may need its parent changed
///     )
///     .unwrap();
/// // The root is safe, so it is the top of the retained path; the two full nodes below it too.
/// assert_eq!((path.top_depth(), path.len()), (0, 3));
/// for node in path.iter_mut() {
///     node.full = false; // leaf first, upward: "split" each full node
/// }
/// assert!(!path.get(2).unwrap().full);
/// ```
#[must_use = "if unused the path is released immediately"]
#[clippy::has_significant_drop]
pub struct Retained<G> {
    /// Top-most retained node first, the target last (`Vec` drops front to back).
    guards: Vec<G>,
    top_depth: usize,
}

impl<G> Retained<G> {
    pub(crate) fn new(guards: Vec<G>, top_depth: usize) -> Self {
        debug_assert!(!guards.is_empty());
        Retained { guards, top_depth }
    }

    /// How many nodes are held: the target and its retained ancestors (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Always `false`: a retained path holds at least its target. (For clippy's `len`
    /// convention.)
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert!(!path.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The depth of the top-most retained node.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.top_depth(), 0);
    /// ```
    #[inline]
    pub fn top_depth(&self) -> usize {
        self.top_depth
    }

    /// The depth of the target.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.target_depth(), 2);
    /// ```
    #[inline]
    pub fn target_depth(&self) -> usize {
        self.top_depth + self.guards.len() - 1
    }

    /// The guard `up` levels above the target (0: the target itself), if retained.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.guard(1).unwrap().value, 1);
    /// assert!(path.guard(3).is_none());
    /// ```
    #[inline]
    pub fn guard(&self, up: usize) -> Option<&G> {
        let index = self.guards.len().checked_sub(up + 1)?;
        self.guards.get(index)
    }

    /// The mutable guard `up` levels above the target (0: the target), if retained.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// path.guard_mut(2).unwrap().value = 10;
    /// assert_eq!(path.get(2).unwrap().value, 10);
    /// ```
    #[inline]
    pub fn guard_mut(&mut self, up: usize) -> Option<&mut G> {
        let index = self.guards.len().checked_sub(up + 1)?;
        self.guards.get_mut(index)
    }

    /// Releases the retained nodes above the lowest `keep` (at least the target stays),
    /// top-most first.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// path.release_above(1);
    /// assert_eq!((path.len(), path.top_depth()), (1, 2));
    /// assert!(root.try_lock().is_some(), "the released ancestors are free");
    /// ```
    pub fn release_above(&mut self, keep: usize) {
        let keep = keep.max(1);
        if let Some(released) = self.guards.len().checked_sub(keep) {
            self.guards.drain(..released);
            self.top_depth += released;
        }
    }

    /// Releases every ancestor (top-most first) and returns the target's guard.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// let leaf = path.into_target();
    /// assert_eq!(leaf.value, 2);
    /// assert!(root.try_lock().is_some());
    /// ```
    pub fn into_target(mut self) -> G {
        self.release_above(1);
        self.guards.pop().expect("a retained path holds its target")
    }
}

impl<G: Deref> Retained<G> {
    /// The node `up` levels above the target (0: the target itself), if retained.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.get(0).unwrap().value, 2);
    /// ```
    #[inline]
    pub fn get(&self, up: usize) -> Option<&G::Target> {
        self.guard(up).map(|guard| &**guard)
    }

    /// The target node.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// assert_eq!(path.target().value, 2);
    /// ```
    #[inline]
    pub fn target(&self) -> &G::Target {
        self.get(0).expect("a retained path holds its target")
    }

    /// The retained nodes, target first, then upward.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// let values: Vec<u32> = path.iter().map(|node| node.value).collect();
    /// assert_eq!(values, [2, 1, 0]); // target first
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &G::Target> {
        self.guards.iter().rev().map(|guard| &**guard)
    }
}

impl<G: DerefMut> Retained<G> {
    /// The node `up` levels above the target (0: the target itself), if retained, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// path.get_mut(1).unwrap().value += 5;
    /// assert_eq!(path.get(1).unwrap().value, 6);
    /// ```
    #[inline]
    pub fn get_mut(&mut self, up: usize) -> Option<&mut G::Target> {
        self.guard_mut(up).map(|guard| &mut **guard)
    }

    /// The target node, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// path.target_mut().value = 7;
    /// assert_eq!(path.target().value, 7);
    /// ```
    #[inline]
    pub fn target_mut(&mut self) -> &mut G::Target {
        self.get_mut(0).expect("a retained path holds its target")
    }

    /// The retained nodes, mutably, target first, then upward: the order in which a change
    /// is propagated.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::{Step, Walker};
    /// # use chainlock::parking_lot::Mutex;
    /// # use chainlock::ChainNode;
    /// # use std::sync::Arc;
    /// # struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// # impl ChainNode for Node {}
    /// # let leaf = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// # let middle = Arc::new(Mutex::new(Node { value: 1, next: Some(leaf) }));
    /// # let root = Arc::new(Mutex::new(Node { value: 0, next: Some(middle) }));
    /// // Nothing is safe: the whole path, root to leaf, stays locked.
    /// let mut path = Walker::new()
    ///     .descend_retaining(&root, |n, _| n.next.clone().map_or(Step::Here, Step::Descend), |_, _| false)
    ///     .unwrap();
    /// for node in path.iter_mut() {
    ///     node.value *= 2;
    /// }
    /// assert_eq!(path.iter().map(|node| node.value).collect::<Vec<_>>(), [4, 2, 0]);
    /// ```
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut G::Target> {
        self.guards.iter_mut().rev().map(|guard| &mut **guard)
    }
}

impl<G> fmt::Debug for Retained<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retained")
            .field("top_depth", &self.top_depth)
            .field("len", &self.guards.len())
            .finish_non_exhaustive()
    }
}
