//! The retaining descent (Bayer–Schkolnick): [`Walker::descend_retaining`] and its
//! deadline and async twins, its loops, and the bookkeeping of the path it keeps.

use super::{
    Acquire, AsyncMode, Blocking, Exclusive, Exit, Retained, Step, Until, Walker, address,
    observed_async,
};
use crate::chain::{Absence, ChainNode, ExclusiveLock, TimedExclusiveLock};
use std::ops::DerefMut;
use std::sync::Arc;
use std::time::Instant;

impl Walker {
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
    /// As [`descend`](Self::descend); [`Exit::Cycle`] also when the lock handed back is
    /// a retained ancestor's.
    ///
    /// # Examples
    ///
    /// See [`Retained`].
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_retaining<L>(
        self,
        root: &Arc<L>,
        step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, Exit>
    where
        L: ExclusiveLock + ?Sized,
        L::Target: ChainNode,
    {
        self.retain::<L, _>(root, &Blocking::<true>, step, is_safe)
    }

    /// Like [`descend_retaining`](Self::descend_retaining), giving up when `deadline` passes
    /// while waiting for a lock (releasing the retained path).
    ///
    /// # Errors
    ///
    /// As [`descend_retaining`](Self::descend_retaining), and [`Exit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Step, Walker};
    /// use chainlock::Exit;
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
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
    /// assert!(head.try_lock().is_some(), "the retained head was released");
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_retaining_until<L>(
        self,
        root: &Arc<L>,
        deadline: Instant,
        step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, Exit>
    where
        L: TimedExclusiveLock + ?Sized,
        L::Target: ChainNode,
    {
        self.retain::<L, _>(root, &Until::<true>(deadline), step, is_safe)
    }
}

/// Async walks over locks with owned async guards (`tokio::sync::{Mutex, RwLock}`, feature
/// `tokio`): the same guarantees as the blocking walks, and cancel safety (see the
/// [module docs](super#cancel-safety)).
impl Walker {
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
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, Exit>
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
    /// use chainlock::walk::{Step, Walker};
    /// use chainlock::Exit;
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
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
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
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, Exit>
    where
        L: ?Sized,
        Exclusive: AsyncMode<L>,
        <Exclusive as AsyncMode<L>>::Path: DerefMut,
        <Exclusive as AsyncMode<L>>::Node: ChainNode,
    {
        self.retain_async(root, Some(deadline), step, is_safe).await
    }
}

// The retaining loops: blocking and deadline share one through `Acquire`; the async loop
// mirrors it; both keep their path in a `Retaining`.
impl Walker {
    /// The retaining descent's loop (Bayer–Schkolnick).
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(super) fn retain<L, A>(
        self,
        root: &Arc<L>,
        acquire: &A,
        mut step: impl FnMut(&mut L::Guard, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&L::Target, usize) -> bool,
    ) -> Result<Retained<L::Guard>, Exit>
    where
        L: ExclusiveLock + ?Sized,
        L::Target: ChainNode,
        A: Acquire<L, Exclusive>,
    {
        if A::RECORDS && !crate::telemetry::hooks::recording() {
            return self.retain::<L, A::Plain>(root, &acquire.plain(), step, is_safe);
        }
        let mut path = Retaining::new();
        let (mut next, mut depth, mut is_target) = (Arc::clone(root), 0, false);
        loop {
            // The retained path keeps guards past the loop: the telemetry counts the
            // acquisition and times its wait, and does not follow the hold.
            let (guard, _) = acquire
                .path::<false>(&next, depth)
                .ok_or(Exit::TimedOut { level: depth })?;
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
    pub(super) async fn retain_async<L>(
        self,
        root: &Arc<L>,
        deadline: Option<Instant>,
        mut step: impl FnMut(&mut <Exclusive as AsyncMode<L>>::Path, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<Exclusive as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Retained<<Exclusive as AsyncMode<L>>::Path>, Exit>
    where
        L: ?Sized,
        Exclusive: AsyncMode<L>,
        <Exclusive as AsyncMode<L>>::Path: DerefMut,
        <Exclusive as AsyncMode<L>>::Node: ChainNode,
    {
        let mut path = Retaining::new();
        let (mut next, mut depth, mut is_target) = (Arc::clone(root), 0, false);
        loop {
            let acquire = <Exclusive as AsyncMode<L>>::lock_path(Arc::clone(&next), deadline);
            let (guard, _) = observed_async::<_, _, false>(&next, depth, acquire)
                .await
                .ok_or(Exit::TimedOut { level: depth })?;
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
    ) -> Result<(), Exit> {
        self.guards.push(guard);
        self.held.push(address(lock));
        let node = self.current();
        if node.is_closed() {
            return Err(Exit::Absent {
                level: depth,
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
