//! Hand-over-hand walks of run-time depth down recursive trees.
//!
//! [`chain_locker!`](crate::chain_locker) serves chains whose levels are known when the
//! program is written (registry → lecture → class). The trees people lock hand over hand are
//! mostly *recursive*, their depth known only at run time: a directory tree, a B-tree, a
//! trie, a sorted linked list. A [`Walker`] walks such a tree with the same guarantees:
//!
//! - the child is locked **before** the parent is released (and a retaining descent keeps
//!   the ancestors a structural change needs);
//! - an early exit says why and at which level ([`Exit`], the one early-exit type of every
//!   descent: a walk's depth is its level, the root is level 0);
//! - every lock the walk holds is released on early exit and on panic;
//! - waits can end at a deadline (`*_until`), and a depth limit (2^20 by default) bounds a
//!   runaway walk, whatever the step or the key path ([`Exit::TooDeep`]);
//! - a step that hands back a lock the walk holds at that moment ends the walk with
//!   [`Exit::Cycle`] instead of deadlocking.
//!
//! Each node of the tree is an `Arc<L>` where `L` is a lock of a [`Mode`]: [`Exclusive`]
//! all the way, [`Shared`] all the way, [`Crab`] (latch crabbing: shared on the way down,
//! exclusive at the target), or [`Upgrade`] (upgradable reads on the way down, any node
//! made writable in place when a step must change it). Node types implement
//! [`ChainNode`] (derive it; its closed marker makes a node behave as
//! absent), and [`Children`](crate::chain::Children) for key paths.
//!
//! # Kinds of descent
//!
//! | descent | what decides each level | returns |
//! |---|---|---|
//! | [`descend`](Walker::descend), [`run`](Walker::run) | a step closure answering a [`Step`] | the target's guard |
//! | [`descend_keys`](Walker::descend_keys), [`run_keys`](Walker::run_keys) | a path of keys, each looked up in the node's children | the last key's node's guard |
//! | [`descend_retaining`](Walker::descend_retaining) | a step; every node exclusive, the unsafe ancestors kept (Bayer–Schkolnick) | the [`Retained`] path |
//! | [`descend_speculative`](Walker::descend_speculative) | a step; a [`Crab`] pass, restarted once as a retaining descent if its target is unsafe (Bayer–Schkolnick's "optimistic" descent) | [`Speculative`] |
//! | [`descend_optimistic`](Walker::descend_optimistic) | a step reading [`HybridLock`](crate::hybrid::HybridLock) nodes by version (optimistic lock coupling: no lock taken on the way down), a bounded number of restarts, then a pessimistic pass | [`Optimistic`] |
//!
//! Each has a deadline twin (`_until`, an [`Instant`]) where its locks
//! have timed acquisition, and async twins over `tokio::sync` locks (feature `tokio`): the
//! same name plus `_async`, always last (`descend_async`, `descend_until_async`, …), except
//! the optimistic descent, whose hybrid locks park threads (no async twin; see
//! [`Optimistic`]).
//! ("Optimistic" is kept for optimistic lock coupling: readers that validate versions.)
//!
//! # Cancel safety
//!
//! Dropping an async walk's future at any `.await` releases every lock it holds: the guards
//! live in the future. A dropped walk never leaves a node locked.
//!
//! # Telemetry
//!
//! With the `telemetry` feature, and [`telemetry::enable`](crate::telemetry::enable)d, every
//! walk's locks are recorded per depth (`LockName::Depth { walk: "walk", depth }`, the root
//! at 0, the same number as [`Exit`]'s level): acquisitions, contended ones (a lock is
//! tried first, and a failed try is a wait), waits, and the holds of the nodes the walk
//! passes through. The target's guard and a retained path are handed to the caller: their
//! acquisitions are counted and their waits timed, their holds not followed. The sites are
//! the caller's line (the blocking faces are `#[track_caller]`; an `async fn` cannot be).
//! The optimistic descent records no read (a read writes nothing): only its restarts and
//! fallbacks, at the depth whose check failed (`LockStats::restarts`, `fallbacks`); its
//! locks are recorded per depth as the other walks' are: the target's counted and its wait
//! timed, its hold not followed; the pessimistic pass's path nodes held as recorded holds.
//! Without the feature the walks compile to what they were (callgrind: identical counts).
//!
//! # Examples
//!
//! A directory tree, walked by a path known only at run time:
//!
//! ```
//! use chainlock::parking_lot::RwLock;
//! use chainlock::chain::Absence;
//! use chainlock::walk::{Crab, Walker};
//! use chainlock::Exit;
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
//! assert_eq!(Walker::new().descend_keys(&root, Crab, &missing).err(), Some(Exit::Absent { level: 2, cause: Absence::Missing }));
//! # Ok::<(), Exit>(())
//! ```
//!
#![doc = include_str!("../../docs/walk.md")]

// One file per kind of descent, each with its blocking and async loops side by side (a new
// kind, such as optimistic lock coupling, is a file of its own beside them); what they
// share (the settings, `Acquire`, `follow`, the closed check) is here.
mod keys;
mod mode;
#[cfg(not(loom))]
pub(crate) mod optimistic;
mod retained;
mod retaining;
mod speculative;
pub(crate) mod steps;

pub use mode::{AsyncMode, Crab, Exclusive, Mode, Shared, TimedMode, Upgrade};
#[cfg(not(loom))]
pub use optimistic::{Optimistic, OptimisticMode, OptimisticWalker};
pub use retained::Retained;
pub use speculative::Speculative;

use crate::Exit;
use crate::chain::{Absence, ChainNode};
use crate::telemetry::hooks::{Held, KeyRef, Probe, ProbeKind, observe_async, observe_timed};
use std::borrow::Borrow;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

/// What a walk does next, as a step decides at each node.
///
/// `C` is the child's lock handle (`Arc<L>`). A step is called on each node the walk holds in
/// its path mode, with the node's level, once per node and pass; never on a node locked as
/// the target.
#[derive(Debug)]
pub enum Step<C> {
    /// Lock this child in the walk's path mode, release the current node, and call the step
    /// again on the child.
    Descend(C),
    /// Lock this child in the walk's target mode, release the current node, and end the walk
    /// there: the step is **not** called on the target (a node one step may want to look at
    /// before deciding must be answered with [`Descend`](Step::Descend) and then
    /// [`Here`](Step::Here)). The target is still checked for being closed
    /// ([`Exit::Absent`] with [`Absence::Closed`]). In the
    /// modes whose path is their target ([`Exclusive`], [`Shared`], [`Upgrade`]), and in a
    /// retaining descent, `Target` locks the child exactly as `Descend` would.
    Target(C),
    /// End the walk at the current node: it is the target. In [`Crab`] mode the current
    /// node is only read-locked, so this ends with [`Exit::NotExclusive`] there (answer
    /// `Target` one level higher instead).
    Here,
    /// The node sought is not there: the walk ends with [`Exit::Absent`] one level below
    /// the current node ([`Absence::Missing`]).
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

/// How the core loop takes each lock: blocking, or giving up at a deadline. Each lock is
/// recorded per depth by the telemetry ([`WALKS`]); a node passed through comes with the
/// record of its hold ([`Held`], zero-sized without the `telemetry` feature), which the loop
/// ends when it lets the node go; a guard handed out (the target, a retained path) is counted
/// and its wait timed, its hold not followed (`HELD = false`).
///
/// A walk asks once, at its start, whether telemetry records; if not, it runs with
/// [`plain`](Self::plain), an instantiation without hooks (their flag check, null records
/// and register pressure cost about 20 instructions per depth).
trait Acquire<L: ?Sized, M: Mode<L>> {
    /// Whether these acquisitions are recorded by telemetry.
    const RECORDS: bool;
    /// The same acquisitions without telemetry.
    type Plain: Acquire<L, M>;
    fn plain(&self) -> Self::Plain;
    fn path<const HELD: bool>(&self, lock: &Arc<L>, depth: usize) -> Option<(M::Path, Held)>;
    fn target(&self, lock: &Arc<L>, depth: usize) -> Option<M::Target>;
}

/// The telemetry's probe of every walk: `LockName::Depth { walk: "walk", depth }`.
static WALKS: Probe = Probe::new(ProbeKind::Walk { walk: "walk" });

/// `lock`, recorded at `depth`: when recording, tried first (a failed try is a contended
/// acquisition), then `wait` (`None`: gave up at the deadline).
#[expect(
    clippy::inline_always,
    reason = "one acquisition of a walk's hot loop: measured with callgrind"
)]
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
fn observed<L: ?Sized, G, const HELD: bool>(
    lock: &Arc<L>,
    depth: usize,
    try_lock: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    let site = std::panic::Location::caller();
    observe_timed::<G, HELD>(
        &WALKS,
        site,
        KeyRef::Index(depth),
        address(lock),
        try_lock,
        wait,
    )
}

/// The async twin of [`observed`]: the acquisition waited if its first poll was pending;
/// the hold is a task's (`hold_across_await`).
#[inline]
async fn observed_async<L: ?Sized, G, const HELD: bool>(
    lock: &Arc<L>,
    depth: usize,
    acquire: impl Future<Output = Option<G>>,
) -> Option<(G, Held)> {
    let attempt = WALKS.begin(KeyRef::Index(depth));
    observe_async::<G, HELD>(attempt, address(lock), acquire).await
}

/// Blocking acquisitions, recorded by telemetry (`RECORD`) or not.
struct Blocking<const RECORD: bool = true>;

impl<L: ?Sized, M: Mode<L>, const RECORD: bool> Acquire<L, M> for Blocking<RECORD> {
    const RECORDS: bool = RECORD;
    type Plain = Blocking<false>;

    fn plain(&self) -> Blocking<false> {
        Blocking
    }

    #[expect(
        clippy::inline_always,
        reason = "one acquisition of a walk's hot loop: measured with callgrind"
    )]
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn path<const HELD: bool>(&self, lock: &Arc<L>, depth: usize) -> Option<(M::Path, Held)> {
        if !RECORD {
            return Some((M::lock_path(lock), Held::default()));
        }
        observed::<L, _, HELD>(
            lock,
            depth,
            || try_path::<L, M>(lock),
            || Some(M::lock_path(lock)),
        )
    }

    #[expect(
        clippy::inline_always,
        reason = "one acquisition of a walk's hot loop: measured with callgrind"
    )]
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn target(&self, lock: &Arc<L>, depth: usize) -> Option<M::Target> {
        if !RECORD {
            return Some(M::lock_target(lock));
        }
        observed::<L, _, false>(
            lock,
            depth,
            || try_target::<L, M>(lock),
            || Some(M::lock_target(lock)),
        )
        .map(|(target, _)| target)
    }
}

/// Acquisitions that give up at a deadline, recorded by telemetry (`RECORD`) or not.
struct Until<const RECORD: bool = true>(Instant);

impl<L: ?Sized, M: TimedMode<L>, const RECORD: bool> Acquire<L, M> for Until<RECORD> {
    const RECORDS: bool = RECORD;
    type Plain = Until<false>;

    fn plain(&self) -> Until<false> {
        Until(self.0)
    }

    #[expect(
        clippy::inline_always,
        reason = "one acquisition of a walk's hot loop: measured with callgrind"
    )]
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn path<const HELD: bool>(&self, lock: &Arc<L>, depth: usize) -> Option<(M::Path, Held)> {
        if !RECORD {
            return M::lock_path_until(lock, self.0).map(|path| (path, Held::default()));
        }
        observed::<L, _, HELD>(
            lock,
            depth,
            || try_path::<L, M>(lock),
            || M::lock_path_until(lock, self.0),
        )
    }

    #[expect(
        clippy::inline_always,
        reason = "one acquisition of a walk's hot loop: measured with callgrind"
    )]
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn target(&self, lock: &Arc<L>, depth: usize) -> Option<M::Target> {
        if !RECORD {
            return M::lock_target_until(lock, self.0);
        }
        observed::<L, _, false>(
            lock,
            depth,
            || try_target::<L, M>(lock),
            || M::lock_target_until(lock, self.0),
        )
        .map(|(target, _)| target)
    }
}

/// [`Mode::try_lock_path`] with the telemetry; nothing without it (never called).
#[inline]
fn try_path<L: ?Sized, M: Mode<L>>(lock: &Arc<L>) -> Option<M::Path> {
    #[cfg(feature = "telemetry")]
    return M::try_lock_path(lock);
    #[cfg(not(feature = "telemetry"))]
    {
        let _ = lock;
        None
    }
}

/// [`Mode::try_lock_target`] with the telemetry; nothing without it (never called).
#[inline]
fn try_target<L: ?Sized, M: Mode<L>>(lock: &Arc<L>) -> Option<M::Target> {
    #[cfg(feature = "telemetry")]
    return M::try_lock_target(lock);
    #[cfg(not(feature = "telemetry"))]
    {
        let _ = lock;
        None
    }
}

impl Walker {
    /// The depth limit of [`Walker::new`]: 2^20 levels, far beyond any file system or
    /// B-tree, so that a tree that through a bug links back to a node the walk has already
    /// released ends with [`Exit::TooDeep`] instead of walking forever. Lists walked hand
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

    /// The same walker, refusing to go deeper than `max_depth` (the root is at level 0): a
    /// walk that would lock a node at level `max_depth + 1` ends instead with
    /// [`Exit::TooDeep`]` { level: max_depth + 1, max_depth }`, whatever its steps answer
    /// or its key path's iterator says of its length. A bound for trees that may, through a
    /// bug, contain a cycle through nodes the walk has already released.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Step, Walker};
    /// use chainlock::Exit;
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
    /// assert_eq!(outcome.err(), Some(Exit::TooDeep { level: 101, max_depth: 100 }));
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
}

// What every loop shares: a step's answer, the identity of a lock, the closed check.
impl Walker {
    /// What every loop does with a step's answer: the child to lock next and whether it is
    /// the target (`depth` then counts it), `None` for [`Step::Here`], or why the walk ends
    /// (absent, too deep, or a lock in `held` handed back).
    // Always inlined: it is a few instructions per level on every walk's hot path, and an
    // out-of-line call costs more than its body (callgrind: +30 instructions per 16 levels).
    #[expect(
        clippy::inline_always,
        reason = "measured: out of line costs more than the body"
    )]
    #[inline(always)]
    fn follow<L: ?Sized, C: Borrow<Arc<L>>>(
        self,
        step: Step<C>,
        depth: &mut usize,
        held: &[usize],
    ) -> Result<Option<(C, bool)>, Exit> {
        let (child, is_target) = match step {
            Step::Descend(child) => (child, false),
            Step::Target(child) => (child, true),
            Step::Here => return Ok(None),
            Step::Absent => {
                return Err(Exit::Absent {
                    level: *depth + 1,
                    cause: Absence::Missing,
                });
            }
        };
        if *depth >= self.max_depth {
            return Err(Exit::TooDeep {
                level: *depth + 1,
                max_depth: self.max_depth,
            });
        }
        *depth += 1;
        if held.contains(&address(child.borrow())) {
            return Err(Exit::Cycle { level: *depth });
        }
        Ok(Some((child, is_target)))
    }
}

/// A lock's identity while the walk holds it (an address, so that async walks stay `Send`).
#[inline]
fn address<L: ?Sized>(lock: &Arc<L>) -> usize {
    Arc::as_ptr(lock).cast::<()>().addr()
}

/// The target, unless it is closed (then released, and the walk ends there).
#[inline]
fn open<G: Deref>(target: G, depth: usize) -> Result<G, Exit>
where
    G::Target: ChainNode,
{
    if target.is_closed() {
        Err(Exit::Absent {
            level: depth,
            cause: Absence::Closed,
        })
    } else {
        Ok(target)
    }
}
