//! Hand-over-hand walks of run-time depth down recursive trees.
//!
//! [`chain_locker!`](crate::chain_locker) serves chains whose levels are known when the
//! program is written (registry → lecture → class). The trees people lock hand over hand are
//! mostly *recursive*, their depth known only at run time: a directory tree, a B-tree, a
//! trie, a sorted linked list. A [`Walker`] walks such a tree with the same guarantees:
//!
//! - the child is locked **before** the parent is released (and a retaining descent keeps
//!   the ancestors a structural change needs);
//! - an early exit says why and at which depth ([`WalkExit`]);
//! - every lock the walk holds is released on early exit and on panic;
//! - waits can end at a deadline (`*_until`), and a depth limit (2^20 by default) bounds a
//!   runaway walk;
//! - a step that hands back a lock the walk already holds ends the walk with
//!   [`WalkExit::Cycle`] instead of deadlocking.
//!
//! Each node of the tree is an `Arc<L>` where `L` is a lock of a [`Mode`]: [`Exclusive`]
//! all the way, [`Shared`] all the way, [`Crab`] (latch crabbing: shared on the way down,
//! exclusive at the target), or [`Upgrade`] (upgradable reads on the way down, any node
//! made writable in place when a step must change it). Node types implement [`ChainNode`] (derive it; its closed marker
//! makes a node behave as absent), and [`Children`] for key paths.
//!
//! # Examples
//!
//! A directory tree, walked by a path known only at run time:
//!
//! ```
//! use chainlock::parking_lot::RwLock;
//! use chainlock::chain::Absence;
//! use chainlock::walk::{Crab, WalkExit, Walker};
//! use chainlock::ChainNode;
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! #[derive(ChainNode, Default)]
//! struct Dir {
//!     #[chain(children)]
//!     entries: BTreeMap<String, Arc<RwLock<Dir>>>,
//!     bytes: u64,
//! }
//!
//! let root = Arc::new(RwLock::new(Dir::default()));
//! let usr = Arc::new(RwLock::new(Dir::default()));
//! usr.write().entries.insert("lib".into(), Arc::new(RwLock::new(Dir::default())));
//! root.write().entries.insert("usr".into(), usr);
//!
//! let path: Vec<String> = "usr/lib".split('/').map(String::from).collect();
//! // `/` and `/usr` are read-locked on the way down, `/usr/lib` write-locked at the end.
//! let mut lib = Walker::new().descend_keys(&root, Crab, &path)?;
//! lib.bytes += 4096;
//! drop(lib);
//!
//! let missing: Vec<String> = vec!["usr".into(), "bin".into()];
//! assert_eq!(Walker::new().descend_keys(&root, Crab, &missing).err(), Some(WalkExit::Absent { depth: 2, cause: Absence::Missing }));
//! # Ok::<(), WalkExit>(())
//! ```
//!
#![doc = include_str!("../../docs/walk.md")]

mod exit;
mod mode;
mod retained;

pub use exit::WalkExit;
pub use mode::{AsyncMode, Crab, Exclusive, Mode, Shared, TimedMode, Upgrade};
pub use retained::Retained;

use crate::chain::{Absence, ChainNode, Children, ExclusiveLock, SharedLock, TimedExclusiveLock};
use std::borrow::Borrow;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

/// What a walk does next, as a step decides at each node.
///
/// `C` is the child's lock handle (`Arc<L>`).
#[derive(Debug)]
pub enum Step<C> {
    /// Lock this child in the walk's path mode and continue there.
    Descend(C),
    /// Lock this child in the walk's target mode and end the walk there.
    Target(C),
    /// End the walk at the current node: it is the target. In [`Crab`] mode the current
    /// node is only read-locked, so this ends with [`WalkExit::NotExclusive`] there.
    Here,
    /// The node sought is not there: the walk ends with [`WalkExit::Absent`].
    Absent,
}

/// Walks down recursive trees hand over hand, to a depth known only at run time.
///
/// A `Walker` holds the walk's settings (a depth limit, [`Walker::DEFAULT_MAX_DEPTH`] unless
/// set); it is `Copy` and can be kept in a `const`. See the [module docs](self) for the guarantees.
///
/// # Examples
///
/// Insertion into a sorted linked list, the textbook lock coupling (Herlihy & Shavit, ch. 9):
///
/// ```
/// use chainlock::parking_lot::Mutex;
/// use chainlock::walk::{Exclusive, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Node { value: i32, next: Option<Arc<Mutex<Node>>> }
/// impl ChainNode for Node {}
///
/// fn insert(head: &Arc<Mutex<Node>>, value: i32) {
///     // Walk to the last node smaller than `value`, holding it and at most its successor.
///     let mut before = Walker::new()
///         .descend(head, Exclusive, |node, _| match &node.next {
///             Some(next) if next.lock().value < value => Step::Descend(next.clone()),
///             _ => Step::Here,
///         })
///         .unwrap();
///     let next = before.next.take();
///     before.next = Some(Arc::new(Mutex::new(Node { value, next })));
/// }
///
/// let head = Arc::new(Mutex::new(Node { value: i32::MIN, next: None }));
/// for value in [3, 1, 2] {
///     insert(&head, value);
/// }
/// let mut values = vec![];
/// let mut node = head.lock().next.clone();
/// while let Some(current) = node {
///     values.push(current.lock().value);
///     node = current.lock().next.clone();
/// }
/// assert_eq!(values, [1, 2, 3]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walker {
    max_depth: usize,
}

impl Default for Walker {
    fn default() -> Self {
        Self::new()
    }
}

/// How the core loop takes each lock: blocking, or giving up at a deadline.
trait Acquire<L: ?Sized, M: Mode<L>> {
    fn path(&self, lock: &Arc<L>) -> Option<M::Path>;
    fn target(&self, lock: &Arc<L>) -> Option<M::Target>;
}

struct Blocking;

impl<L: ?Sized, M: Mode<L>> Acquire<L, M> for Blocking {
    #[inline]
    fn path(&self, lock: &Arc<L>) -> Option<M::Path> {
        Some(M::lock_path(lock))
    }

    #[inline]
    fn target(&self, lock: &Arc<L>) -> Option<M::Target> {
        Some(M::lock_target(lock))
    }
}

struct Until(Instant);

impl<L: ?Sized, M: TimedMode<L>> Acquire<L, M> for Until {
    #[inline]
    fn path(&self, lock: &Arc<L>) -> Option<M::Path> {
        M::lock_path_until(lock, self.0)
    }

    #[inline]
    fn target(&self, lock: &Arc<L>) -> Option<M::Target> {
        M::lock_target_until(lock, self.0)
    }
}

impl Walker {
    /// The depth limit of [`Walker::new`]: 2^20 levels, far beyond any file system or
    /// B-tree, so that a tree that through a bug links back to a node the walk has already
    /// released ends with [`WalkExit::TooDeep`] instead of walking forever. Lists walked hand
    /// over hand can be longer: raise it with [`max_depth`](Self::max_depth)
    /// (`usize::MAX`: unlimited).
    pub const DEFAULT_MAX_DEPTH: usize = 1 << 20;

    /// A walker with the default depth limit, [`DEFAULT_MAX_DEPTH`](Self::DEFAULT_MAX_DEPTH).
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::Walker;
    /// const WALKER: Walker = Walker::new().max_depth(64);
    /// assert_eq!(WALKER.depth_limit(), 64);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Walker {
            max_depth: Self::DEFAULT_MAX_DEPTH,
        }
    }

    /// The same walker, refusing to go deeper than `max_depth` (the root is at depth 0): a
    /// walk that would ends with [`WalkExit::TooDeep`]. A bound for trees that may, through a
    /// bug, contain a cycle through nodes the walk has already released.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Step, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Node { next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// // A ring of two nodes: a walk following `next` would never end.
    /// let a = Arc::new(Mutex::new(Node { next: None }));
    /// let b = Arc::new(Mutex::new(Node { next: Some(a.clone()) }));
    /// a.lock().next = Some(b.clone());
    ///
    /// let outcome = Walker::new().max_depth(100).descend(&a, Exclusive, |node, _| {
    ///     node.next.clone().map_or(Step::Here, Step::Descend)
    /// });
    /// assert_eq!(outcome.err(), Some(WalkExit::TooDeep { max_depth: 100 }));
    /// # a.lock().next = None; // break the ring so the test does not leak
    /// ```
    #[must_use]
    pub const fn max_depth(self, max_depth: usize) -> Self {
        Walker { max_depth }
    }

    /// The depth limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::Walker;
    /// assert_eq!(Walker::new().depth_limit(), Walker::DEFAULT_MAX_DEPTH);
    /// assert_eq!(Walker::new().max_depth(usize::MAX).depth_limit(), usize::MAX); // unlimited
    /// ```
    pub const fn depth_limit(self) -> usize {
        self.max_depth
    }

    /// Walks from `root` as `step` decides at each node, and returns the target's guard with
    /// only the target still locked.
    ///
    /// `step` gets the guard of the node the walk holds and its depth (the root is at 0),
    /// and answers with a [`Step`]. Each node is checked for being closed right after it is
    /// locked.
    ///
    /// # Errors
    ///
    /// [`WalkExit`] says why and at which depth the walk ended early; nothing stays locked.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::walk::{Shared, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// // An org chart: walk down the first report until someone has none.
    /// struct Person { name: &'static str, reports: Vec<Arc<RwLock<Person>>> }
    /// impl ChainNode for Person {}
    ///
    /// let leaf = Arc::new(RwLock::new(Person { name: "dev", reports: vec![] }));
    /// let boss = Arc::new(RwLock::new(Person { name: "boss", reports: vec![leaf] }));
    /// let bottom = Walker::new()
    ///     .descend(&boss, Shared, |person, _| person.reports.first().cloned().map_or(Step::Here, Step::Descend))
    ///     .unwrap();
    /// assert_eq!(bottom.name, "dev");
    /// ```
    #[inline]
    pub fn descend<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk::<L, M>(root, false, &Blocking, step)
            .map(|(target, _)| target)
    }

    /// Like [`descend`](Self::descend), giving up when `deadline` passes while waiting for a
    /// lock ([`WalkExit::TimedOut`] with that node's depth). Needs locks with timed
    /// acquisition (parking_lot's do).
    ///
    /// # Errors
    ///
    /// As [`descend`](Self::descend), and [`WalkExit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Step, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    ///
    /// struct Node { next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let tail = Arc::new(Mutex::new(Node { next: None }));
    /// let head = Arc::new(Mutex::new(Node { next: Some(tail.clone()) }));
    /// let _held = tail.lock();
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new().descend_until(&head, Exclusive, deadline, |node, _| {
    ///     node.next.clone().map_or(Step::Here, Step::Descend)
    /// });
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// assert!(head.try_lock().is_some());
    /// ```
    #[inline]
    pub fn descend_until<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: TimedMode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk::<L, M>(root, false, &Until(deadline), step)
            .map(|(target, _)| target)
    }

    /// [`descend`](Self::descend), then `leaf` on the target; returns what `leaf` returns.
    /// The target is released when `leaf` returns (or panics).
    ///
    /// # Errors
    ///
    /// As [`descend`](Self::descend).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Node { hits: u32, next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let head = Arc::new(Mutex::new(Node { hits: 0, next: None }));
    /// let hits = Walker::new().run(&head, Exclusive, |_, _| Step::Here, |node| {
    ///     node.hits += 1;
    ///     node.hits
    /// });
    /// assert_eq!(hits, Ok(1));
    /// ```
    #[inline]
    pub fn run<L, M, R>(
        self,
        root: &Arc<L>,
        mode: M,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
        leaf: impl FnOnce(&mut M::Target) -> R,
    ) -> Result<R, WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
    {
        let mut target = self.descend(root, mode, step)?;
        Ok(leaf(&mut target))
    }

    /// Walks from `root` along a path of keys (any `IntoIterator`), each looked up in the
    /// node's [`Children`] (what `#[derive(ChainNode)]` implements for a `#[chain(children)]`
    /// field), and returns the last node's guard: locked in the target mode, the nodes above
    /// it in the path mode. An empty path ends at the root, locked in the target mode.
    ///
    /// # Errors
    ///
    /// [`WalkExit::Absent`] with the depth of the first missing (or closed) key's node,
    /// [`WalkExit::Cycle`], [`WalkExit::TooDeep`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// #[derive(ChainNode)]
    /// struct Trie {
    ///     #[chain(children)]
    ///     next: std::collections::HashMap<char, Arc<Mutex<Trie>>>,
    ///     count: u32,
    /// }
    ///
    /// let b = Arc::new(Mutex::new(Trie { next: Default::default(), count: 0 }));
    /// let a = Arc::new(Mutex::new(Trie { next: [('b', b)].into(), count: 0 }));
    /// let root = Arc::new(Mutex::new(Trie { next: [('a', a)].into(), count: 0 }));
    ///
    /// Walker::new().descend_keys(&root, Exclusive, "ab".chars())?.count += 1;
    /// assert_eq!(Walker::new().descend_keys(&root, Exclusive, "ab".chars())?.count, 1);
    /// # Ok::<(), chainlock::walk::WalkExit>(())
    /// ```
    #[inline]
    pub fn descend_keys<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys::<L, M, I>(root, &Blocking, keys)
    }

    /// Like [`descend_keys`](Self::descend_keys), giving up when `deadline` passes while
    /// waiting for a lock.
    ///
    /// # Errors
    ///
    /// As [`descend_keys`](Self::descend_keys), and [`WalkExit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::walk::{Crab, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    ///
    /// #[derive(ChainNode)]
    /// struct Dir {
    ///     #[chain(children)]
    ///     entries: Vec<Arc<RwLock<Dir>>>,
    /// }
    ///
    /// let child = Arc::new(RwLock::new(Dir { entries: vec![] }));
    /// let root = Arc::new(RwLock::new(Dir { entries: vec![child.clone()] }));
    /// let _reader = child.read(); // a reader blocks the exclusive target
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new().descend_keys_until(&root, Crab, deadline, [0]);
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// ```
    #[inline]
    pub fn descend_keys_until<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: TimedMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys::<L, M, I>(root, &Until(deadline), keys)
    }

    /// [`descend_keys`](Self::descend_keys), then `leaf` on the target.
    ///
    /// # Errors
    ///
    /// As [`descend_keys`](Self::descend_keys).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::walk::{Shared, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// #[derive(ChainNode)]
    /// struct Dir {
    ///     #[chain(children)]
    ///     entries: Vec<Arc<RwLock<Dir>>>,
    ///     name: &'static str,
    /// }
    ///
    /// let etc = Arc::new(RwLock::new(Dir { entries: vec![], name: "etc" }));
    /// let root = Arc::new(RwLock::new(Dir { entries: vec![etc], name: "" }));
    /// assert_eq!(Walker::new().run_keys(&root, Shared, [0], |dir| dir.name), Ok("etc"));
    /// ```
    #[inline]
    pub fn run_keys<L, M, I, R>(
        self,
        root: &Arc<L>,
        mode: M,
        keys: I,
        leaf: impl FnOnce(&mut M::Target) -> R,
    ) -> Result<R, WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let mut target = self.descend_keys(root, mode, keys)?;
        Ok(leaf(&mut target))
    }

    /// A Bayer–Schkolnick descent: every node exclusively, and the ancestors of the current
    /// node stay locked as long as it is *unsafe* (`is_safe` says `false`: it may need its
    /// parent changed, like a full B-tree node on insert). As soon as a node is safe, every
    /// ancestor above it is released, top-most first. Returns the target with the retained
    /// path above it, to propagate a change upward.
    ///
    /// `step` decides at each node as for [`descend`](Self::descend) ([`Step::Target`] and
    /// [`Step::Descend`] both lock exclusively; `Target` ends there). `is_safe` is asked of
    /// every node right after it is locked and found open.
    ///
    /// # Errors
    ///
    /// As [`descend`](Self::descend); [`WalkExit::Cycle`] also when the lock handed back is
    /// a retained ancestor's.
    ///
    /// # Examples
    ///
    /// See [`Retained`].
    pub fn descend_retaining<L>(
        self,
        root: &Arc<L>,
        step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, WalkExit>
    where
        L: ExclusiveLock + ?Sized,
        L::Target: ChainNode,
    {
        self.retain::<L, _>(root, &Blocking, step, is_safe)
    }

    /// Like [`descend_retaining`](Self::descend_retaining), giving up when `deadline` passes
    /// while waiting for a lock (releasing the retained path).
    ///
    /// # Errors
    ///
    /// As [`descend_retaining`](Self::descend_retaining), and [`WalkExit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Step, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    ///
    /// struct Node { next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let tail = Arc::new(Mutex::new(Node { next: None }));
    /// let head = Arc::new(Mutex::new(Node { next: Some(tail.clone()) }));
    /// let _held = tail.lock();
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new().descend_retaining_until(
    ///     &head,
    ///     deadline,
    ///     |node, _| node.next.clone().map_or(Step::Here, Step::Descend),
    ///     |_, _| false,
    /// );
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// assert!(head.try_lock().is_some(), "the retained head was released");
    /// ```
    pub fn descend_retaining_until<L>(
        self,
        root: &Arc<L>,
        deadline: Instant,
        step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, WalkExit>
    where
        L: TimedExclusiveLock + ?Sized,
        L::Target: ChainNode,
    {
        self.retain::<L, _>(root, &Until(deadline), step, is_safe)
    }

    /// The optimistic form of [`descend_retaining`](Self::descend_retaining): first a
    /// [`Crab`] walk (shared down, exclusive target), which keeps writers of other subtrees
    /// out of each other's way; if its target is safe, done. If not (or if `step` answered
    /// [`Step::Here`] on a read-locked node), the walk releases everything and restarts once
    /// as a retaining descent. The answer says how many restarts it took (0 or 1).
    ///
    /// `step` and `is_safe` may be called twice for the same depth (once per pass) and see
    /// the node read-only.
    ///
    /// # Errors
    ///
    /// As [`descend_retaining`](Self::descend_retaining): the first pass's exits are final
    /// except for an unsafe target and [`WalkExit::NotExclusive`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::walk::{Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Node { keys: usize, child: Option<Arc<RwLock<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let leaf = Arc::new(RwLock::new(Node { keys: 1, child: None }));
    /// let root = Arc::new(RwLock::new(Node { keys: 1, child: Some(leaf.clone()) }));
    /// let step = |node: &Node, _| match &node.child {
    ///     Some(child) if child.read().child.is_none() => Step::Target(child.clone()),
    ///     Some(child) => Step::Descend(child.clone()),
    ///     None => Step::Here,
    /// };
    /// let not_full = |node: &Node, _| node.keys < 4;
    ///
    /// let fast = Walker::new().descend_optimistic(&root, step, not_full).unwrap();
    /// assert_eq!((fast.restarts, fast.path.len()), (0, 1));
    /// drop(fast);
    ///
    /// leaf.write().keys = 4; // full: an insert would split it and change the root
    /// let slow = Walker::new().descend_optimistic(&root, step, not_full).unwrap();
    /// assert_eq!((slow.restarts, slow.path.len()), (1, 2));
    /// ```
    pub fn descend_optimistic<L>(
        self,
        root: &Arc<L>,
        mut step: impl FnMut(&<L as SharedLock>::Target, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<L as SharedLock>::Target, usize) -> bool,
    ) -> Result<Optimistic<<L as ExclusiveLock>::Guard>, WalkExit>
    where
        L: SharedLock + ExclusiveLock<Target = <L as SharedLock>::Target> + ?Sized,
        <L as SharedLock>::Target: ChainNode,
    {
        let first =
            self.walk::<L, Crab>(root, false, &Blocking, |guard, depth| step(&**guard, depth));
        match first {
            Ok((target, depth)) => {
                if is_safe(&*target, depth) {
                    return Ok(Optimistic {
                        path: Retained::new(vec![target], depth),
                        restarts: 0,
                    });
                }
            }
            Err(WalkExit::NotExclusive { .. }) => {}
            Err(exit) => return Err(exit),
        }
        let path = self.retain::<L, _>(
            root,
            &Blocking,
            |guard, depth| step(&**guard, depth),
            is_safe,
        )?;
        Ok(Optimistic { path, restarts: 1 })
    }
}

/// Async walks over locks with owned async guards (`tokio::sync::{Mutex, RwLock}`, feature
/// `tokio`). The same guarantees as the blocking walks; on top:
///
/// # Cancel safety
///
/// Dropping a walk's future at any `.await` releases every lock it holds: the guards live in
/// the future. A dropped walk never leaves a node locked.
impl Walker {
    /// The async twin of [`descend`](Self::descend).
    ///
    /// # Errors
    ///
    /// As [`descend`](Self::descend).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Exclusive, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use tokio::sync::Mutex;
    ///
    /// struct Node { value: u32, next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tail = Arc::new(Mutex::new(Node { value: 2, next: None }));
    /// let head = Arc::new(Mutex::new(Node { value: 1, next: Some(tail) }));
    /// let last = Walker::new()
    ///     .descend_async(&head, Exclusive, |node, _| node.next.clone().map_or(Step::Here, Step::Descend))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(last.value, 2);
    /// # });
    /// # }
    /// ```
    pub async fn descend_async<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk_async::<L, M>(root, false, None, step)
            .await
            .map(|(target, _)| target)
    }

    /// The async twin of [`descend_until`](Self::descend_until). Needs a Tokio runtime with
    /// timers enabled (`tokio::time`).
    ///
    /// # Errors
    ///
    /// As [`descend_until`](Self::descend_until).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with the time driver enabled (tokio's `timeout_at` panics).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Exclusive, Step, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use tokio::sync::Mutex;
    ///
    /// struct Node { next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let tail = Arc::new(Mutex::new(Node { next: None }));
    /// let head = Arc::new(Mutex::new(Node { next: Some(tail.clone()) }));
    /// let _held = tail.lock().await;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new()
    ///     .descend_until_async(&head, Exclusive, deadline, |node, _| node.next.clone().map_or(Step::Here, Step::Descend))
    ///     .await;
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// assert!(head.try_lock().is_ok());
    /// # });
    /// # }
    /// ```
    pub async fn descend_until_async<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk_async::<L, M>(root, false, Some(deadline), step)
            .await
            .map(|(target, _)| target)
    }

    /// The async twin of [`descend_keys`](Self::descend_keys).
    ///
    /// # Errors
    ///
    /// As [`descend_keys`](Self::descend_keys).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Crab, Walker};
    /// use chainlock::ChainNode;
    /// use std::collections::BTreeMap;
    /// use std::sync::Arc;
    /// use tokio::sync::RwLock;
    ///
    /// #[derive(ChainNode, Default)]
    /// struct Dir {
    ///     #[chain(children)]
    ///     entries: BTreeMap<String, Arc<RwLock<Dir>>>,
    ///     files: u32,
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let root = Arc::new(RwLock::new(Dir::default()));
    /// root.write().await.entries.insert("tmp".into(), Arc::default());
    /// let mut tmp = Walker::new().descend_keys_async(&root, Crab, ["tmp".to_string()]).await.unwrap();
    /// tmp.files += 1;
    /// # });
    /// # }
    /// ```
    pub async fn descend_keys_async<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys_async::<L, M, I>(root, None, keys).await
    }

    /// The async twin of [`descend_keys_until`](Self::descend_keys_until). Needs a Tokio
    /// runtime with timers enabled.
    ///
    /// # Errors
    ///
    /// As [`descend_keys_until`](Self::descend_keys_until).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with the time driver enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Shared, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use tokio::sync::RwLock;
    ///
    /// #[derive(ChainNode)]
    /// struct Dir {
    ///     #[chain(children)]
    ///     entries: Vec<Arc<RwLock<Dir>>>,
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let child = Arc::new(RwLock::new(Dir { entries: vec![] }));
    /// let root = Arc::new(RwLock::new(Dir { entries: vec![child.clone()] }));
    /// let _writer = child.write().await;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new().descend_keys_until_async(&root, Shared, deadline, [0]).await;
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// # });
    /// # }
    /// ```
    pub async fn descend_keys_until_async<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys_async::<L, M, I>(root, Some(deadline), keys)
            .await
    }

    /// The async twin of [`descend_retaining`](Self::descend_retaining).
    ///
    /// # Errors
    ///
    /// As [`descend_retaining`](Self::descend_retaining).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use tokio::sync::Mutex;
    ///
    /// struct Node { full: bool, next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let leaf = Arc::new(Mutex::new(Node { full: true, next: None }));
    /// let root = Arc::new(Mutex::new(Node { full: false, next: Some(leaf) }));
    /// let path = Walker::new()
    ///     .descend_retaining_async(
    ///         &root,
    ///         |node, _| node.next.clone().map_or(Step::Here, Step::Descend),
    ///         |node, _| !node.full,
    ///     )
    ///     .await
    ///     .unwrap();
    /// assert_eq!((path.top_depth(), path.len()), (0, 2)); // the full leaf keeps its parent
    /// # });
    /// # }
    /// ```
    pub async fn descend_retaining_async<L>(
        self,
        root: &Arc<L>,
        step: impl FnMut(&mut <Exclusive as AsyncMode<L>>::Path, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&<Exclusive as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, WalkExit>
    where
        L: ?Sized,
        Exclusive: AsyncMode<L>,
        <Exclusive as AsyncMode<L>>::Path: DerefMut,
        <Exclusive as AsyncMode<L>>::Node: ChainNode,
    {
        self.retain_async(root, None, step, is_safe).await
    }

    /// The async twin of [`descend_retaining_until`](Self::descend_retaining_until). Needs a
    /// Tokio runtime with timers enabled.
    ///
    /// # Errors
    ///
    /// As [`descend_retaining_until`](Self::descend_retaining_until).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with the time driver enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Step, WalkExit, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use tokio::sync::Mutex;
    ///
    /// struct Node { next: Option<Arc<Mutex<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let tail = Arc::new(Mutex::new(Node { next: None }));
    /// let head = Arc::new(Mutex::new(Node { next: Some(tail.clone()) }));
    /// let _held = tail.lock().await;
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let outcome = Walker::new()
    ///     .descend_retaining_until_async(
    ///         &head,
    ///         deadline,
    ///         |node, _| node.next.clone().map_or(Step::Here, Step::Descend),
    ///         |_, _| false,
    ///     )
    ///     .await;
    /// assert_eq!(outcome.err(), Some(WalkExit::TimedOut { depth: 1 }));
    /// assert!(head.try_lock().is_ok());
    /// # });
    /// # }
    /// ```
    pub async fn descend_retaining_until_async<L>(
        self,
        root: &Arc<L>,
        deadline: Instant,
        step: impl FnMut(&mut <Exclusive as AsyncMode<L>>::Path, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&<Exclusive as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, WalkExit>
    where
        L: ?Sized,
        Exclusive: AsyncMode<L>,
        <Exclusive as AsyncMode<L>>::Path: DerefMut,
        <Exclusive as AsyncMode<L>>::Node: ChainNode,
    {
        self.retain_async(root, Some(deadline), step, is_safe).await
    }

    /// The async twin of [`descend_optimistic`](Self::descend_optimistic).
    ///
    /// # Errors
    ///
    /// As [`descend_optimistic`](Self::descend_optimistic).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use chainlock::walk::{Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use tokio::sync::RwLock;
    ///
    /// struct Node { keys: usize, child: Option<Arc<RwLock<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let leaf = Arc::new(RwLock::new(Node { keys: 4, child: None }));
    /// let root = Arc::new(RwLock::new(Node { keys: 1, child: Some(leaf) }));
    /// let found = Walker::new()
    ///     .descend_optimistic_async(
    ///         &root,
    ///         |node: &Node, _| node.child.clone().map_or(Step::Here, Step::Target),
    ///         |node: &Node, _| node.keys < 4,
    ///     )
    ///     .await
    ///     .unwrap();
    /// assert_eq!((found.restarts, found.path.len()), (1, 2)); // the full leaf made it restart
    /// # });
    /// # }
    /// ```
    pub async fn descend_optimistic_async<L>(
        self,
        root: &Arc<L>,
        mut step: impl FnMut(&<Crab as AsyncMode<L>>::Node, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<Crab as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Optimistic<<Crab as AsyncMode<L>>::Target>, WalkExit>
    where
        L: ?Sized,
        Crab: AsyncMode<L>,
        Exclusive: AsyncMode<L, Path = <Crab as AsyncMode<L>>::Target, Node = <Crab as AsyncMode<L>>::Node>,
        <Crab as AsyncMode<L>>::Target: DerefMut,
        <Crab as AsyncMode<L>>::Node: ChainNode,
    {
        let first = self
            .walk_async::<L, Crab>(root, false, None, |guard, depth| step(&**guard, depth))
            .await;
        match first {
            Ok((target, depth)) => {
                if is_safe(&*target, depth) {
                    return Ok(Optimistic {
                        path: Retained::new(vec![target], depth),
                        restarts: 0,
                    });
                }
            }
            Err(WalkExit::NotExclusive { .. }) => {}
            Err(exit) => return Err(exit),
        }
        let path = self
            .retain_async(root, None, |guard, depth| step(&**guard, depth), is_safe)
            .await?;
        Ok(Optimistic { path, restarts: 1 })
    }

    /// The async loop: as [`walk`](Self::walk), each lock awaited (with an optional deadline).
    async fn walk_async<L, M>(
        self,
        root: &Arc<L>,
        root_is_target: bool,
        deadline: Option<Instant>,
        mut step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<(M::Target, usize), WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode,
    {
        if root_is_target {
            let target = M::lock_target(Arc::clone(root), deadline)
                .await
                .ok_or(WalkExit::TimedOut { depth: 0 })?;
            return open(target, 0).map(|target| (target, 0));
        }
        let mut guard = M::lock_path(Arc::clone(root), deadline)
            .await
            .ok_or(WalkExit::TimedOut { depth: 0 })?;
        let mut held = address(root);
        let mut depth = 0;
        loop {
            if guard.is_closed() {
                return Err(WalkExit::Absent {
                    depth,
                    cause: Absence::Closed,
                });
            }
            let step = step(&mut guard, depth);
            let Some((child, is_target)) = self.follow(step, &mut depth, &[held])? else {
                return M::settle(guard)
                    .map(|target| (target, depth))
                    .map_err(|_| WalkExit::NotExclusive { depth });
            };
            let child_address = address(&child);
            if is_target {
                let target = M::lock_target(child, deadline)
                    .await
                    .ok_or(WalkExit::TimedOut { depth })?;
                drop(guard);
                return open(target, depth).map(|target| (target, depth));
            }
            guard = M::lock_path(child, deadline)
                .await
                .ok_or(WalkExit::TimedOut { depth })?;
            held = child_address;
        }
    }

    async fn walk_keys_async<L, M, I>(
        self,
        root: &Arc<L>,
        deadline: Option<Instant>,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let mut keys = keys.into_iter();
        // As `walk_keys`, the same walks end `TooDeep` (one loop: a future's cost is not in
        // the depth check).
        let walker = if self.bounds(&keys) {
            Self::UNLIMITED
        } else {
            self
        };
        if M::PATH_IS_TARGET {
            return walker
                .walk_async::<L, M>(root, false, deadline, plain_key_step(keys))
                .await
                .map(|(target, _)| target);
        }
        let first = keys.next();
        walker
            .walk_async::<L, M>(root, first.is_none(), deadline, key_step(keys, first))
            .await
            .map(|(target, _)| target)
    }
}

/// A key path as a step: each key looked up in the node's children; the last key's node is
/// the target. `key` is the next key (looked ahead, to tell the last one); `walk` asks again
/// only after a `Descend`, which is answered only when a key follows.
fn key_step<G, N, L, I>(
    mut keys: I,
    mut key: Option<I::Item>,
) -> impl FnMut(&mut G, usize) -> Step<Arc<L>>
where
    G: Deref<Target = N>,
    N: Children<N, Lock = L> + ?Sized,
    L: ?Sized,
    I: Iterator,
    I::Item: Borrow<N::Key>,
{
    move |node, _| {
        let Some(this) = key.take() else {
            return Step::Here;
        };
        let Some(child) = node.deref().child(this.borrow()) else {
            return Step::Absent;
        };
        key = keys.next();
        if key.is_none() {
            Step::Target(child)
        } else {
            Step::Descend(child)
        }
    }
}

/// A key path as a step for modes whose path guard is the target guard: no look-ahead, the
/// walk ends where the keys do ([`Step::Here`]).
fn plain_key_step<G, N, L, I>(mut keys: I) -> impl FnMut(&mut G, usize) -> Step<Arc<L>>
where
    G: Deref<Target = N>,
    N: Children<N, Lock = L> + ?Sized,
    L: ?Sized,
    I: Iterator,
    I::Item: Borrow<N::Key>,
{
    move |node, _| match keys.next() {
        None => Step::Here,
        Some(key) => node
            .deref()
            .child(key.borrow())
            .map_or(Step::Absent, Step::Descend),
    }
}

/// What [`Walker::descend_optimistic`] found: the exclusively locked path (the target alone
/// when the first, shared pass was enough) and how many times it restarted.
#[derive(Debug)]
#[must_use = "if unused the path is released immediately"]
pub struct Optimistic<G> {
    /// The target, and the ancestors a retaining restart kept above it.
    pub path: Retained<G>,
    /// 0 when the shared pass was enough, 1 when it restarted as a retaining descent.
    pub restarts: usize,
}

// The walks themselves: one loop per shape, shared by the blocking and deadline flavors.
impl Walker {
    /// What every loop does with a step's answer: the child to lock next and whether it is
    /// the target (`depth` then counts it), `None` for [`Step::Here`], or why the walk ends
    /// (absent, too deep, or a lock in `held` handed back).
    // Always inlined: it is a few instructions per level on every walk's hot path, and an
    // out-of-line call costs more than its body (callgrind: +30 instructions per 16 levels).
    #[expect(
        clippy::inline_always,
        reason = "measured: a few instructions per level on the hot path"
    )]
    #[inline(always)]
    fn follow<L: ?Sized>(
        self,
        step: Step<Arc<L>>,
        depth: &mut usize,
        held: &[usize],
    ) -> Result<Option<(Arc<L>, bool)>, WalkExit> {
        let (child, is_target) = match step {
            Step::Descend(child) => (child, false),
            Step::Target(child) => (child, true),
            Step::Here => return Ok(None),
            Step::Absent => {
                return Err(WalkExit::Absent {
                    depth: *depth + 1,
                    cause: Absence::Missing,
                });
            }
        };
        if *depth >= self.max_depth {
            return Err(WalkExit::TooDeep {
                max_depth: self.max_depth,
            });
        }
        *depth += 1;
        if held.contains(&address(&child)) {
            return Err(WalkExit::Cycle { depth: *depth });
        }
        Ok(Some((child, is_target)))
    }

    /// Hand over hand from `root` as `step` decides; returns the target's guard and depth.
    #[inline]
    fn walk<L, M>(
        self,
        root: &Arc<L>,
        root_is_target: bool,
        acquire: &impl Acquire<L, M>,
        mut step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<(M::Target, usize), WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
    {
        if root_is_target {
            let target = acquire
                .target(root)
                .ok_or(WalkExit::TimedOut { depth: 0 })?;
            return open(target, 0).map(|target| (target, 0));
        }
        let mut guard = acquire.path(root).ok_or(WalkExit::TimedOut { depth: 0 })?;
        // The node `guard` holds, to refuse a step that hands its own lock back.
        let mut held = address(root);
        let mut depth = 0;
        loop {
            if guard.is_closed() {
                return Err(WalkExit::Absent {
                    depth,
                    cause: Absence::Closed,
                });
            }
            let step = step(&mut guard, depth);
            let Some((child, is_target)) = self.follow(step, &mut depth, &[held])? else {
                return M::settle(guard)
                    .map(|target| (target, depth))
                    .map_err(|_| WalkExit::NotExclusive { depth });
            };
            if is_target {
                // The parent (`guard`) is released only once the target is locked.
                let target = acquire.target(&child).ok_or(WalkExit::TimedOut { depth })?;
                drop(guard);
                return open(target, depth).map(|target| (target, depth));
            }
            let next = acquire.path(&child).ok_or(WalkExit::TimedOut { depth })?;
            // The old guard drops here, after the child's lock is held.
            guard = next;
            held = address(&child);
        }
    }

    /// A key path as a step: the last key's node is the target.
    #[inline]
    fn walk_keys<L, M, I>(
        self,
        root: &Arc<L>,
        acquire: &impl Acquire<L, M>,
        keys: I,
    ) -> Result<M::Target, WalkExit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let mut keys = keys.into_iter();
        // Two copies of the loop: a path that cannot go deeper than the limit skips its
        // check (two instructions a level).
        let bounded = self.bounds(&keys);
        if M::PATH_IS_TARGET {
            let step = plain_key_step(keys);
            return if bounded {
                Self::UNLIMITED.walk::<L, M>(root, false, acquire, step)
            } else {
                self.walk::<L, M>(root, false, acquire, step)
            }
            .map(|(target, _)| target);
        }
        let first = keys.next();
        let (root_is_target, step) = (first.is_none(), key_step(keys, first));
        if bounded {
            Self::UNLIMITED.walk::<L, M>(root, root_is_target, acquire, step)
        } else {
            self.walk::<L, M>(root, root_is_target, acquire, step)
        }
        .map(|(target, _)| target)
    }

    /// Whether a key path is known (from its iterator's `size_hint`) to be no longer than
    /// the depth limit, so that its walk cannot exceed the limit: a key path descends one
    /// level a key. An iterator whose `size_hint` lies (which the standard library allows)
    /// may take such a walk past the limit; it still ends where the keys or the tree do.
    fn bounds<I: Iterator>(self, keys: &I) -> bool {
        keys.size_hint().1.is_some_and(|len| len <= self.max_depth)
    }

    /// No depth limit, as a constant, so that the compiler drops the check.
    const UNLIMITED: Walker = Walker::new().max_depth(usize::MAX);

    /// The retaining descent's loop (Bayer–Schkolnick).
    fn retain<L, A>(
        self,
        root: &Arc<L>,
        acquire: &A,
        mut step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, WalkExit>
    where
        L: ExclusiveLock + ?Sized,
        L::Target: ChainNode,
        A: Acquire<L, Exclusive>,
    {
        let mut path = Retaining::new();
        let (mut next, mut depth, mut is_target) = (Arc::clone(root), 0, false);
        loop {
            let guard = acquire.path(&next).ok_or(WalkExit::TimedOut { depth })?;
            path.enter(guard, &next, depth, &mut is_safe)?;
            if is_target {
                return Ok(path.finish());
            }
            let step = step(path.current(), depth);
            let Some(following) = self.follow(step, &mut depth, &path.held)? else {
                return Ok(path.finish());
            };
            (next, is_target) = following;
        }
    }

    /// The async retaining loop: as [`retain`](Self::retain), each lock awaited.
    async fn retain_async<L>(
        self,
        root: &Arc<L>,
        deadline: Option<Instant>,
        mut step: impl FnMut(&mut <Exclusive as AsyncMode<L>>::Path, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<Exclusive as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, WalkExit>
    where
        L: ?Sized,
        Exclusive: AsyncMode<L>,
        <Exclusive as AsyncMode<L>>::Path: DerefMut,
        <Exclusive as AsyncMode<L>>::Node: ChainNode,
    {
        let mut path = Retaining::new();
        let (mut next, mut depth, mut is_target) = (Arc::clone(root), 0, false);
        loop {
            let guard = <Exclusive as AsyncMode<L>>::lock_path(Arc::clone(&next), deadline)
                .await
                .ok_or(WalkExit::TimedOut { depth })?;
            path.enter(guard, &next, depth, &mut is_safe)?;
            if is_target {
                return Ok(path.finish());
            }
            let step = step(path.current(), depth);
            let Some(following) = self.follow(step, &mut depth, &path.held)? else {
                return Ok(path.finish());
            };
            (next, is_target) = following;
        }
    }
}

/// The bookkeeping of a retaining descent: the guards from the top-most retained node down
/// to the current one (dropping them releases top-down) and their locks' addresses.
struct Retaining<G> {
    guards: Vec<G>,
    held: Vec<usize>,
    top_depth: usize,
}

impl<G: DerefMut> Retaining<G>
where
    G::Target: ChainNode,
{
    fn new() -> Self {
        Retaining {
            guards: Vec::with_capacity(8),
            held: Vec::with_capacity(8),
            top_depth: 0,
        }
    }

    /// Takes the node just locked at `depth`: ends the walk if it is closed, and releases
    /// every ancestor (top-most first) if it is safe.
    fn enter<L: ?Sized>(
        &mut self,
        guard: G,
        lock: &Arc<L>,
        depth: usize,
        is_safe: &mut impl FnMut(&G::Target, usize) -> bool,
    ) -> Result<(), WalkExit> {
        self.guards.push(guard);
        self.held.push(address(lock));
        let node = self.current();
        if node.is_closed() {
            return Err(WalkExit::Absent {
                depth,
                cause: Absence::Closed,
            });
        }
        if is_safe(node, depth) && self.guards.len() > 1 {
            // Safe: no change below can reach above this node; release the ancestors.
            let released = self.guards.len() - 1;
            self.guards.drain(..released);
            self.held.drain(..released);
            self.top_depth = depth;
        }
        Ok(())
    }

    fn current(&mut self) -> &mut G {
        self.guards.last_mut().expect("the current node is held")
    }

    fn finish(self) -> Retained<G> {
        Retained::new(self.guards, self.top_depth)
    }
}

/// A lock's identity while the walk holds it (an address, so that async walks stay `Send`).
#[inline]
fn address<L: ?Sized>(lock: &Arc<L>) -> usize {
    Arc::as_ptr(lock).cast::<()>().addr()
}

/// The target, unless it is closed (then released, and the walk ends there).
#[inline]
fn open<G: Deref>(target: G, depth: usize) -> Result<G, WalkExit>
where
    G::Target: ChainNode,
{
    if target.is_closed() {
        Err(WalkExit::Absent {
            depth,
            cause: Absence::Closed,
        })
    } else {
        Ok(target)
    }
}
