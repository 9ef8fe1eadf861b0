//! The optimistic descent: optimistic lock coupling (Leis et al., `DaMoN` 2016) down a tree of
//! [`HybridLock`]s, a bounded number of restarts, then the pessimistic path (as `LeanStore`
//! falls back).
//!
//! The protocol, its soundness argument and how writers do not starve are in the docs of
//! [`Optimistic`], which rustdoc shows (this module is private).

#[cfg(doc)]
use super::{Crab, Exclusive, Shared};
use super::{Step, WALKS, Walker, address, open};
use crate::Exit;
use crate::chain::{Absence, ChainNode, EpochGuard};
#[cfg(doc)]
use crate::hybrid::{ArcHybridReadGuard, ArcHybridWriteGuard};
use crate::hybrid::{HybridLock, Restart, Version};
use crate::telemetry::hooks::{KeyRef, Next, observe_restart};
use carry::{Carried, Failed};
use path::{PathHold, observed};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

mod carry;
mod mode;
mod path;
pub(crate) mod repeated;

pub use mode::OptimisticMode;

/// What [`Walker::descend_optimistic`] found: the target's guard, its level, and how the walk
/// got there.
///
/// # The protocol
///
/// On the way down the walk takes no lock and writes nothing to the nodes' locks: at each
/// node it begins an optimistic read ([`HybridLock::optimistic`]), calls the step on the node's
/// data, and, if the step hands back a child, begins an optimistic read of the child (its
/// version) and only then validates the node's version. A validated node proves that the child
/// was its child when the child's version was read, so the child's version is a state of the
/// tree, and the walk moves on holding nothing but that version. Every answer of the step is
/// acted on only after the node it was computed from validates: an absent child, a closed
/// node, [`Step::Here`], a cycle and the depth limit are all validated exits, never artefacts
/// of an inconsistent read. At the target the walk takes the lock (shared or exclusive, as
/// the mode says) and keeps it only if the version is still the one read (an upgrade by
/// version).
///
/// A failed validation, or a node held by a writer, restarts the walk from the root. After
/// [`max_restarts`](Walker::max_restarts) restarts ([`Walker::DEFAULT_MAX_RESTARTS`] unless
/// set) the walk restarts one last time pessimistically: shared locks hand over hand and the
/// target in the mode's target mode, which waits for writers instead of restarting and always
/// finishes. [`Optimistic::restarts`] says how many restarts it took and
/// [`Optimistic::pessimistic`] whether the last pass was the pessimistic one.
///
/// | mode | optimistic pass: path, target | pessimistic pass: path, target | [`Step::Here`] |
/// |---|---|---|---|
/// | [`Shared`] | versions, shared by version | shared, shared | the current node, shared |
/// | [`Crab`] | versions, exclusive by version | shared, exclusive | [`Exit::NotExclusive`] (as in every crab walk; answer [`Step::Target`] one level higher) |
/// | [`Exclusive`] | versions, exclusive by version | exclusive, exclusive | the current node, exclusive |
///
/// # Soundness
///
/// The walk has no `unsafe` code; it is sound because of what it is allowed to touch:
///
/// - **The step sees a node only as `&N`**, through [`HybridLock::optimistic`]'s read (whose
///   argument is in [the hybrid module](crate::hybrid#soundness)): a [`HybridLock`] hands out
///   `&N` in every mode, exclusive included, so a writer changes a node only through `N`'s own
///   interior mutability (atomics, or locks of its own). A step racing a writer is atomic
///   loads racing atomic stores, defined behaviour: it may compute a wrong answer from an
///   inconsistent mix of values, never read a torn one.
/// - **Child handles are `&Arc`s the step borrowed**, lent for the walk by the node's data
///   or by the [`EpochGuard`] the walk holds (the step's third argument): the step's
///   signature ties the reference to both (`for<'g> FnMut(&'g N, usize, &'g EpochGuard) ->
///   Step<&'g Arc<..>>`), so the borrow checker accepts only a child kept alive for the whole
///   walk: a field no writer changes while the node is shared (a `Vec<Arc<_>>` written
///   through [`HybridLock::get_mut`] before sharing), or a child container whose removed
///   children outlive every pinned reader ([`EpochMap`](crate::chain::EpochMap),
///   [`EpochVec`](crate::chain::EpochVec), through [`ChildrenRef`](crate::chain::ChildrenRef)
///   on a derived node). A reference read from a `Mutex` or an `arc-swap` does not outlive
///   their guards and is refused at compile time. By induction from the root (borrowed from
///   the caller), every node the walk touches stays allocated until it returns, whatever
///   writers do meanwhile: a child that a writer unlinks is freed only once the walk has
///   unpinned, and a wrong child (the step read a stale snapshot) is only compared by address
///   and has its version read before the parent's failed validation restarts the walk. The
///   target alone is cloned into the owned guard the walk returns.
/// - **Nothing the step computed is acted on before validation**: the exits and the child
///   are used only after the node validates, and the target is kept only if its version is
///   unchanged under the lock. The consistency of a validated read is the hybrid lock's
///   (Boehm's seqlock orderings, in its module docs).
/// - **It waits unpinned.** A pass that finds its target held (a writer has it, or readers
///   when the mode takes it exclusively) validates the target's parent, ends, unpins, and
///   waits for the target's lock (until granted, or the deadline); then it walks again and
///   keeps the target it waited for if the path still leads there, or lets it go for the
///   node the path now leads to (a deadline that passed meanwhile times out at the target,
///   once a pass validated the path to it). A node a writer holds on the way (the root, a
///   node on the path, a `Step::Here` target the step has not seen yet) is waited for the
///   same way, out of the pin, until its writer is gone, and the walk starts again. So a holder that keeps the
///   target across I/O holds back no epoch container's reclamation. The steps above the
///   target run once more after such a wait, while the walk holds the target: a step must
///   not wait for a lock a walk of the same tree may hold. Each wait after the first counts
///   as a restart; the pessimistic pass (after the restart bound) still waits pinned,
///   holding its path.
///
/// The step must be ready to run on inconsistent data: it should not panic on it (use
/// `get`, not indexing, on lengths that writers change), and it must not loop on it.
///
/// What it costs: nothing is written on the way down, to a lock, a node or a reference
/// count, but the walk's one pin (the thread's own epoch slot, `crossbeam-epoch`) and the
/// target's `Arc` clone and lock; `docs/benchmarks.md` has the counts.
///
/// # Writers do not starve
///
/// Optimistic readers write nothing and hold nothing, so they never keep a writer out: a
/// writer on the path waits only for other writers and for pessimistic readers. Readers do
/// not starve either: the restart bound caps how often a reader yields to writers, after
/// which it queues like any reader on the node's parking lock (parking_lot's task-fair
/// reader-writer lock: a parked writer keeps new readers out, and waiting readers are let in
/// when it leaves), so a stream of writers cannot restart a reader for ever and a stream of
/// pessimistic readers cannot keep a writer out for ever. The bound is a count, not a queue
/// as in `OptiQL`: under heavy write contention a reader gives up optimism after
/// `max_restarts` failed attempts.
///
/// # No async twin
///
/// The hybrid lock has no async face: its shared and exclusive modes park the thread
/// (parking_lot), and the pessimistic pass and every target wait on them. An `_async` twin
/// would block its executor's thread while it waits, which is not what the other walks'
/// async twins promise (they await tokio's locks); an async hybrid lock would be the place to
/// start. The optimistic pass itself never waits.
///
/// # Examples
///
/// A root alone:
///
/// ```
/// use chainlock::hybrid::HybridLock;
/// use chainlock::walk::{Shared, Step, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Node(u8);
/// impl ChainNode for Node {}
///
/// let root = Arc::new(HybridLock::new(Node(1)));
/// let found = Walker::new().descend_optimistic(&root, Shared, |_, _, _| Step::Here).unwrap();
/// assert_eq!((found.target.0, found.level, found.restarts, found.pessimistic), (1, 0, 0, false));
/// ```
#[derive(Debug)]
#[must_use = "if unused the target is released immediately"]
pub struct Optimistic<G> {
    /// The target, locked in the mode's target mode.
    pub target: G,
    /// The target's level (the root is level 0).
    pub level: usize,
    /// How many times the walk started again from the root: optimistic passes that met a
    /// writer, plus the restart into the pessimistic pass if it was taken.
    pub restarts: usize,
    /// Whether the target was reached by the pessimistic pass (after
    /// [`max_restarts`](Walker::max_restarts) restarts, the last optimistic pass failed).
    pub pessimistic: bool,
}

/// A [`Walker`] with a restart bound for [`descend_optimistic`](Self::descend_optimistic):
/// made by [`Walker::max_restarts`].
///
/// # Examples
///
/// ```
/// use chainlock::walk::Walker;
///
/// const WALKER: chainlock::walk::OptimisticWalker = Walker::new().max_depth(64).max_restarts(2);
/// assert_eq!(WALKER.restart_limit(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptimisticWalker {
    walker: Walker,
    max_restarts: usize,
}

impl Walker {
    /// How many times [`descend_optimistic`](Self::descend_optimistic) restarts optimistically
    /// before its pessimistic pass, unless set with [`max_restarts`](Self::max_restarts).
    pub const DEFAULT_MAX_RESTARTS: usize = 8;

    /// The same walker, with a bound on the optimistic restarts of
    /// [`descend_optimistic`](Self::descend_optimistic): after `max_restarts` restarts, the
    /// next is the pessimistic pass (so at most `max_restarts + 1` optimistic passes; `0`:
    /// one optimistic pass, then pessimistic).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::walk::Walker;
    ///
    /// assert_eq!(Walker::new().max_restarts(3).restart_limit(), 3);
    /// ```
    #[must_use]
    pub const fn max_restarts(self, max_restarts: usize) -> OptimisticWalker {
        OptimisticWalker {
            walker: self,
            max_restarts,
        }
    }

    /// Optimistic lock coupling from `root` as `step` decides, with at most
    /// [`DEFAULT_MAX_RESTARTS`](Self::DEFAULT_MAX_RESTARTS) optimistic restarts; see
    /// [`OptimisticWalker::descend_optimistic`].
    ///
    /// # Errors
    ///
    /// As [`OptimisticWalker::descend_optimistic`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use chainlock::walk::{Crab, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    ///
    /// // A node's children are fixed when it is built; what writers change is atomic (children
    /// // that writers insert and remove belong in an `EpochMap` or `EpochVec`).
    /// struct Node { hits: AtomicU64, children: Vec<Arc<HybridLock<Node>>> }
    /// impl ChainNode for Node {}
    /// let node = |children| Arc::new(HybridLock::new(Node { hits: AtomicU64::new(0), children }));
    ///
    /// let root = node(vec![node(vec![]), node(vec![node(vec![])])]);
    /// // Down the last child at each level, lent by the node (no `Arc` cloned); the leaf is
    /// // locked exclusively.
    /// let found = Walker::new()
    ///     .descend_optimistic(&root, Crab, |n: &Node, _, _| match n.children.last() {
    ///         Some(child) if child.read_optimistic(|c| c.children.is_empty()) == Ok(true) => {
    ///             Step::Target(child)
    ///         }
    ///         Some(child) => Step::Descend(child),
    ///         None => Step::Absent,
    ///     })
    ///     .unwrap();
    /// found.target.hits.fetch_add(1, Relaxed);
    /// assert_eq!((found.level, found.restarts, found.pessimistic), (2, 0, false));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_optimistic<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        mode: M,
        step: impl for<'g> FnMut(&'g N, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<N>>>,
    ) -> Result<Optimistic<M::Target>, Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        self.max_restarts(Self::DEFAULT_MAX_RESTARTS)
            .descend_optimistic(root, mode, step)
    }

    /// [`descend_optimistic`](Self::descend_optimistic) giving up at `deadline`; see
    /// [`OptimisticWalker::descend_optimistic_until`].
    ///
    /// # Errors
    ///
    /// As [`OptimisticWalker::descend_optimistic_until`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use chainlock::walk::{Shared, Step, Walker};
    /// use chainlock::{ChainNode, Exit};
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    ///
    /// struct Node;
    /// impl ChainNode for Node {}
    ///
    /// let root = Arc::new(HybridLock::new(Node));
    /// let held = root.write();
    /// let soon = Instant::now() + Duration::from_millis(5);
    /// let walk = Walker::new().descend_optimistic_until(&root, Shared, soon, |_, _, _| Step::Here);
    /// assert_eq!(walk.err(), Some(Exit::TimedOut { level: 0 }));
    /// drop(held);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_optimistic_until<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        mode: M,
        deadline: Instant,
        step: impl for<'g> FnMut(&'g N, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<N>>>,
    ) -> Result<Optimistic<M::Target>, Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        self.max_restarts(Self::DEFAULT_MAX_RESTARTS)
            .descend_optimistic_until(root, mode, deadline, step)
    }
}

impl OptimisticWalker {
    /// The restart bound.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::Walker;
    /// assert_eq!(Walker::new().max_restarts(0).restart_limit(), 0);
    /// ```
    pub const fn restart_limit(self) -> usize {
        self.max_restarts
    }

    /// The walker without the restart bound (its depth limit).
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::Walker;
    /// assert_eq!(Walker::new().max_depth(4).max_restarts(1).walker().depth_limit(), 4);
    /// ```
    pub const fn walker(self) -> Walker {
        self.walker
    }

    /// Optimistic lock coupling from `root` as `step` decides (see
    /// [the protocol](Optimistic#the-protocol) of this kind of descent): versions down the
    /// tree, the target locked by version in `mode`'s target mode; after
    /// [`restart_limit`](Self::restart_limit) restarts, a pessimistic pass (shared locks hand
    /// over hand; exclusive ones in [`Exclusive`] mode) that always finishes.
    ///
    /// `step` sees each node's data as `&N`, maybe while a writer changes it (through `N`'s
    /// atomics): it may be called several times per level (once per pass), and its answer is
    /// used only once the node validates. The same `step` serves the pessimistic pass.
    ///
    /// | mode | target | [`Step::Here`] |
    /// |---|---|---|
    /// | [`Shared`] | [`ArcHybridReadGuard`] | the current node |
    /// | [`Crab`] | [`ArcHybridWriteGuard`] | [`Exit::NotExclusive`] |
    /// | [`Exclusive`] | [`ArcHybridWriteGuard`] | the current node |
    ///
    /// # Errors
    ///
    /// The exits of every walk, each from a validated read or a held lock:
    /// [`Exit::Absent`] (the step answered [`Step::Absent`]: `level` is one below the node;
    /// or the node at `level` is closed), [`Exit::TooDeep`] beyond the depth limit,
    /// [`Exit::Cycle`] when the step hands back the node it was called on (the lock the
    /// pessimistic pass holds then; longer cycles end at the depth limit), and
    /// [`Exit::NotExclusive`] for [`Step::Here`] in [`Crab`] mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use chainlock::walk::{Shared, Step, Walker};
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// struct Node { next: Option<Arc<HybridLock<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let tail = Arc::new(HybridLock::new(Node { next: None }));
    /// let head = Arc::new(HybridLock::new(Node { next: Some(tail.clone()) }));
    ///
    /// // No optimistic restart allowed: a writer on the path sends the walk pessimistic.
    /// let found = Walker::new()
    ///     .max_restarts(0)
    ///     .descend_optimistic(&head, Shared, |n: &Node, _, _| {
    ///         n.next.as_ref().map_or(Step::Here, Step::Descend)
    ///     })
    ///     .unwrap();
    /// assert!(Arc::ptr_eq(chainlock::hybrid::ArcHybridReadGuard::lock(&found.target), &tail));
    /// assert_eq!(found.level, 1);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_optimistic<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        _mode: M,
        mut step: impl for<'g> FnMut(&'g N, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<N>>>,
    ) -> Result<Optimistic<M::Target>, Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        self.walk::<N, M>(root, None, &mut step)
    }

    /// [`descend_optimistic`](Self::descend_optimistic) giving up at `deadline`: every lock
    /// it waits for (the target's, and the pessimistic pass's path) is taken with a
    /// deadline. The optimistic passes wait for nothing but the target.
    ///
    /// # Errors
    ///
    /// As [`descend_optimistic`](Self::descend_optimistic), and [`Exit::TimedOut`] at the
    /// level whose lock was still held by another at `deadline`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::hybrid::HybridLock;
    /// use chainlock::walk::{Crab, Step, Walker};
    /// use chainlock::{ChainNode, Exit};
    /// use std::sync::Arc;
    /// use std::time::Instant;
    ///
    /// struct Node { next: Option<Arc<HybridLock<Node>>> }
    /// impl ChainNode for Node {}
    ///
    /// let tail = Arc::new(HybridLock::new(Node { next: None }));
    /// let head = Arc::new(HybridLock::new(Node { next: Some(tail.clone()) }));
    /// let held = tail.write(); // a writer holds the target
    /// let walk = Walker::new().max_restarts(1).descend_optimistic_until(
    ///     &head,
    ///     Crab,
    ///     Instant::now(),
    ///     |n: &Node, _, _| n.next.as_ref().map_or(Step::Absent, Step::Target),
    /// );
    /// assert_eq!(walk.err(), Some(Exit::TimedOut { level: 1 }));
    /// drop(held);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_optimistic_until<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        _mode: M,
        deadline: Instant,
        mut step: impl for<'g> FnMut(&'g N, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<N>>>,
    ) -> Result<Optimistic<M::Target>, Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        self.walk::<N, M>(root, Some(deadline), &mut step)
    }

    /// The optimistic passes, then the pessimistic one.
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn walk<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        deadline: Option<Instant>,
        step: &mut impl for<'x> FnMut(&'x N, usize, &'x EpochGuard) -> Step<&'x Arc<HybridLock<N>>>,
    ) -> Result<Optimistic<M::Target>, Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        // One pin per pass: every reference a step lends stays valid until the pass ends (a
        // pin writes only this thread's epoch slot). A held target is waited for unpinned
        // (`carry.rs`).
        let mut pinned = EpochGuard::pin();
        let mut carried = Carried::Clear;
        let (mut restarts, mut waited) = (0, false);
        while restarts <= self.max_restarts {
            // What a failed pass leads to, recorded at the depth it failed (telemetry).
            let next = if restarts < self.max_restarts {
                Next::Optimistic
            } else {
                Next::Pessimistic
            };
            let failed = self.attempt::<N, M>(root, &pinned, next, step, &mut carried);
            match failed {
                Ok(found) => {
                    return found.map(|(target, level)| Optimistic {
                        target,
                        level,
                        restarts,
                        pessimistic: false,
                    });
                }
                Err(Failed::Restart) => {}
                Err(Failed::Wait { lock, depth, carry }) => {
                    drop(pinned);
                    // Never wait while carrying a target taken out of order (a pass that
                    // waits found the deadline not passed yet: `Self::wait`).
                    drop(std::mem::replace(&mut carried, Carried::Clear));
                    carried = if carry {
                        let taken = observed(
                            &lock,
                            depth,
                            || M::try_target(&lock, None),
                            || M::take_target(&lock, None, deadline),
                        );
                        match taken {
                            Ok(Some(target)) => Carried::Taken {
                                target,
                                address: address(&lock),
                            },
                            _ => Carried::Expired,
                        }
                    } else {
                        // Until its writer is gone: taken shared and let go.
                        let taken = observed(
                            &lock,
                            depth,
                            || HybridLock::try_read_arc_at(&lock, None),
                            || HybridLock::read_arc_at(&lock, None, deadline),
                        );
                        match taken {
                            Ok(Some(_)) => Carried::Clear,
                            _ => Carried::Expired,
                        }
                    };
                    pinned = EpochGuard::pin();
                    // The first wait is the walk's; another means the path changed.
                    if !waited {
                        waited = true;
                        continue;
                    }
                    observe_restart(&WALKS, KeyRef::Index(depth), next);
                }
            }
            restarts += 1;
            std::hint::spin_loop();
        }
        // The pessimistic pass waits for its path: never while carrying a target.
        drop(carried);
        let (target, level) = self.pessimistic::<N, M>(root, &pinned, deadline, step)?;
        Ok(Optimistic {
            target,
            level,
            restarts,
            pessimistic: true,
        })
    }

    /// One optimistic pass: the target and its level, or a validated exit, or a restart
    /// (recorded by the telemetry at the depth whose version or lock made it, then `next`).
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn attempt<'g, N, M>(
        self,
        root: &'g Arc<HybridLock<N>>,
        pinned: &'g EpochGuard,
        next: Next,
        step: &mut impl for<'x> FnMut(&'x N, usize, &'x EpochGuard) -> Step<&'x Arc<HybridLock<N>>>,
        carried: &mut Carried<M::Target>,
    ) -> PassOutcome<M::Target, N>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        // The current node, borrowed: the root from the caller, every other node from its
        // parent's data (a child container's snapshot, kept by `pinned`, or a field that
        // cannot change while the parent is shared). No `Arc` is cloned on the way down.
        let mut node = root;
        // The version the current node was first read at, before its parent validated.
        let mut seen: Option<Version> = None;
        let mut depth = 0;
        loop {
            // A restart at the current node's depth (`at(depth)` for another).
            let here = depth;
            let at = |depth: usize| {
                move |restart: Restart| {
                    observe_restart(&WALKS, KeyRef::Index(depth), next);
                    restart
                }
            };
            let Ok(read) = node.optimistic() else {
                // A writer holds this node (the root, or a node whose parent led to it):
                // wait for it out of the pin, then walk again.
                return Self::wait(node, here, carried, false);
            };
            if seen.is_some_and(|seen| seen != read.version()) {
                return Err(at(here)(Restart).into());
            }
            if read.is_closed() {
                read.validate().map_err(at(here))?;
                return Ok(Err(Exit::Absent {
                    level: depth,
                    cause: Absence::Closed,
                }));
            }
            // The data as `&'g N` (not borrowed from `read`): what the step lends from it
            // outlives this level.
            let answer = step(node.data(), depth, pinned);
            let followed = self.walker.follow(answer, &mut depth, &[address(node)]);
            let (child, is_target): (&'g Arc<HybridLock<N>>, bool) = match followed {
                Ok(Some(next)) => next,
                Ok(None) => {
                    read.validate().map_err(at(here))?;
                    if !M::HERE {
                        return Ok(Err(Exit::NotExclusive { level: depth }));
                    }
                    let taken = Self::take::<N, M>(node, read.version(), depth, carried, false);
                    return taken.map_err(|failed| failed.recorded(at(here)));
                }
                Err(exit) => {
                    read.validate().map_err(at(here))?;
                    return Ok(Err(exit));
                }
            };
            if is_target && let Some(target) = carried.take_if(child) {
                // The target the walk waited for: the node still leads to it.
                read.validate().map_err(at(here))?;
                return Ok(open(target, depth).map(|target| (target, depth)));
            }
            // Lock coupling on versions: the child's version, then the node's validation,
            // which proves the child was the node's child when its version was read.
            let Ok(child_version) = child.raw().optimistic() else {
                // A writer holds the child: wait for it, if the node leads to it (the target
                // carried into the next pass; a node on the path, or a `Here` target the step
                // has not seen, only waited for).
                read.validate().map_err(at(here))?;
                return Self::wait(child, depth, carried, is_target);
            };
            read.validate().map_err(at(here))?;
            if is_target {
                let taken = Self::take::<N, M>(child, child_version, depth, carried, true);
                return taken.map_err(|failed| failed.recorded(at(depth)));
            }
            node = child;
            seen = Some(child_version);
        }
    }

    /// The target of an optimistic pass, locked if it is free and its version is still
    /// `seen` (recorded as taken without waiting); held, the walk waits for it out of the
    /// pin ([`Failed::Wait`], `carry` as there). Inlined: called once per walk, and out of
    /// line with the telemetry's check it cost a call.
    #[expect(
        clippy::inline_always,
        reason = "once per walk, measured with callgrind"
    )]
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn take<N, M>(
        lock: &Arc<HybridLock<N>>,
        seen: Version,
        depth: usize,
        carried: &Carried<M::Target>,
        carry: bool,
    ) -> PassOutcome<M::Target, N>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        let Some(target) = M::try_target(lock, Some(seen))? else {
            return Self::wait(lock, depth, carried, carry);
        };
        // Counted as a walk's acquisition, asking the sampler once (a try that failed asked
        // nothing: the wait records the acquisition).
        let target = Cell::new(Some(target));
        let taken = observed(lock, depth, || Ok(target.take()), || Ok(target.take()));
        let target = taken?.expect("taken above");
        Ok(open(target, depth).map(|target| (target, depth)))
    }

    /// The target (at `depth`) held by another: wait for it out of the pin, or, the deadline
    /// passed while the walk waited, time out there (the path to it validated by the caller).
    fn wait<N: ?Sized, T>(
        lock: &Arc<HybridLock<N>>,
        depth: usize,
        carried: &Carried<T>,
        carry: bool,
    ) -> PassOutcome<T, N> {
        if carried.expired() {
            return Ok(Err(Exit::TimedOut { level: depth }));
        }
        Err(Failed::Wait {
            lock: Arc::clone(lock),
            depth,
            carry,
        })
    }

    /// The pessimistic pass: shared (or, in [`Exclusive`] mode, exclusive) locks hand over
    /// hand, the target in the mode's target mode; waits instead of restarting.
    // Out of line with the telemetry: inlined, its recorded holds cost the optimistic loop
    // registers (callgrind, `walk_optimistic` at depth 16: 596 per walk, 584 out of line).
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[cfg_attr(feature = "telemetry", inline(never))]
    fn pessimistic<N, M>(
        self,
        root: &Arc<HybridLock<N>>,
        pinned: &EpochGuard,
        deadline: Option<Instant>,
        step: &mut impl for<'x> FnMut(&'x N, usize, &'x EpochGuard) -> Step<&'x Arc<HybridLock<N>>>,
    ) -> Result<(M::Target, usize), Exit>
    where
        N: ChainNode + ?Sized,
        M: OptimisticMode<N>,
    {
        let mut guard =
            PathHold::<N>::take::<M>(root, deadline, 0).ok_or(Exit::TimedOut { level: 0 })?;
        // The node `guard` holds, to refuse a step that hands its own lock back.
        let mut held = address(root);
        let mut depth = 0;
        loop {
            if guard.is_closed() {
                return Err(Exit::Absent {
                    level: depth,
                    cause: Absence::Closed,
                });
            }
            let answer = step(&guard, depth, pinned);
            let Some((child, is_target)) = self.walker.follow(answer, &mut depth, &[held])? else {
                return guard
                    .settle::<M>()
                    .map(|target| (target, depth))
                    .ok_or(Exit::NotExclusive { level: depth });
            };
            if is_target {
                // The parent (`guard`) is released only once the target is locked.
                let target = observed(
                    child,
                    depth,
                    || M::take_target(child, None, Some(Instant::now())),
                    || M::take_target(child, None, deadline),
                );
                let Ok(Some(target)) = target else {
                    return Err(Exit::TimedOut { level: depth });
                };
                drop(guard);
                return open(target, depth).map(|target| (target, depth));
            }
            let next = PathHold::<N>::take::<M>(child, deadline, depth)
                .ok_or(Exit::TimedOut { level: depth })?;
            held = address(child);
            // The old guard drops here, after the child's lock is held.
            guard = next;
        }
    }
}

/// What an optimistic pass ends with: the target (`T`) and its level, or a validated exit;
/// or no answer ([`Failed`]: a restart, or a wait for the target).
type PassOutcome<T, N> = Result<Result<(T, usize), Exit>, Failed<N>>;

#[cfg(test)]
mod tests;
