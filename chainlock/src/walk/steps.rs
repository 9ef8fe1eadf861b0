//! Walks as a step closure decides at each node: [`Walker::descend`] and [`Walker::run`],
//! their deadline and async twins, and the one loop of each flavor that every plain walk
//! (the key paths and the speculative descent's first pass too) goes through.

use super::{
    Acquire, AsyncMode, Blocking, Exit, Mode, Step, TimedMode, Until, Walker, address,
    observed_async, open,
};
use crate::chain::{Absence, ChainNode};
use std::sync::Arc;
use std::time::Instant;

impl Walker {
    /// Walks from `root` as `step` decides at each node, and returns the target's guard with
    /// only the target still locked.
    ///
    /// `step` gets the guard of the node the walk holds and its depth (the root is at 0),
    /// and answers with a [`Step`]. Each node is checked for being closed right after it is
    /// locked.
    ///
    /// # Errors
    ///
    /// [`Exit`] says why and at which level (the depth, from the root at 0) the walk ended
    /// early; nothing stays locked.
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk::<L, M, _>(root, false, &Blocking::<true>, step)
            .map(|(target, _)| target)
    }

    /// Like [`descend`](Self::descend), giving up when `deadline` passes while waiting for a
    /// lock ([`Exit::TimedOut`] with that node's level). Needs locks with timed
    /// acquisition (parking_lot's do).
    ///
    /// # Errors
    ///
    /// As [`descend`](Self::descend), and [`Exit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::walk::{Exclusive, Step, Walker};
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
    /// let outcome = Walker::new().descend_until(&head, Exclusive, deadline, |node, _| {
    ///     node.next.clone().map_or(Step::Here, Step::Descend)
    /// });
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
    /// assert!(head.try_lock().is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_until<L, M>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: TimedMode<L>,
        M::Node: ChainNode,
    {
        let _ = mode;
        self.walk::<L, M, _>(root, false, &Until::<true>(deadline), step)
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn run<L, M, R>(
        self,
        root: &Arc<L>,
        mode: M,
        step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
        leaf: impl FnOnce(&mut M::Target) -> R,
    ) -> Result<R, Exit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
    {
        let mut target = self.descend(root, mode, step)?;
        Ok(leaf(&mut target))
    }
}

/// Async walks over locks with owned async guards (`tokio::sync::{Mutex, RwLock}`, feature
/// `tokio`): the same guarantees as the blocking walks, and cancel safety (see the
/// [module docs](super#cancel-safety)).
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
    ) -> Result<M::Target, Exit>
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
    /// use chainlock::walk::{Exclusive, Step, Walker};
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
    ///     .descend_until_async(&head, Exclusive, deadline, |node, _| node.next.clone().map_or(Step::Here, Step::Descend))
    ///     .await;
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
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
    ) -> Result<M::Target, Exit>
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
}

// The loops: blocking and deadline share one through `Acquire`; the async loop mirrors it.
impl Walker {
    /// Hand over hand from `root` as `step` decides; returns the target's guard and depth.
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(super) fn walk<L, M, A>(
        self,
        root: &Arc<L>,
        root_is_target: bool,
        acquire: &A,
        mut step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<(M::Target, usize), Exit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode,
        A: Acquire<L, M>,
    {
        if A::RECORDS && !crate::telemetry::hooks::recording() {
            return self.walk::<L, M, A::Plain>(root, root_is_target, &acquire.plain(), step);
        }
        if root_is_target {
            let target = acquire.target(root, 0).ok_or(Exit::TimedOut { level: 0 })?;
            return open(target, 0).map(|target| (target, 0));
        }
        let (mut guard, mut guard_held) = acquire
            .path::<true>(root, 0)
            .ok_or(Exit::TimedOut { level: 0 })?;
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
            let step = step(&mut guard, depth);
            let Some((child, is_target)) = self.follow(step, &mut depth, &[held])? else {
                // The guard goes to the caller: the telemetry's record of it ends here.
                guard_held.released();
                return M::settle(guard)
                    .map(|target| (target, depth))
                    .map_err(|_| Exit::NotExclusive { level: depth });
            };
            if is_target {
                // The parent (`guard`) is released only once the target is locked.
                let target = acquire
                    .target(&child, depth)
                    .ok_or(Exit::TimedOut { level: depth })?;
                guard_held.released();
                drop(guard);
                return open(target, depth).map(|target| (target, depth));
            }
            let (next, next_held) = acquire
                .path::<true>(&child, depth)
                .ok_or(Exit::TimedOut { level: depth })?;
            // The old guard drops here, after the child's lock is held (its record first).
            std::mem::replace(&mut guard_held, next_held).released();
            guard = next;
            held = address(&child);
        }
    }

    /// The async loop: as [`walk`](Self::walk), each lock awaited (with an optional deadline).
    pub(super) async fn walk_async<L, M>(
        self,
        root: &Arc<L>,
        root_is_target: bool,
        deadline: Option<Instant>,
        mut step: impl FnMut(&mut M::Path, usize) -> Step<Arc<L>>,
    ) -> Result<(M::Target, usize), Exit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode,
    {
        if root_is_target {
            let acquire = M::lock_target(Arc::clone(root), deadline);
            let (target, _) = observed_async::<_, _, false>(root, 0, acquire)
                .await
                .ok_or(Exit::TimedOut { level: 0 })?;
            return open(target, 0).map(|target| (target, 0));
        }
        let acquire = M::lock_path(Arc::clone(root), deadline);
        let (mut guard, mut guard_held) = observed_async::<_, _, true>(root, 0, acquire)
            .await
            .ok_or(Exit::TimedOut { level: 0 })?;
        let mut held = address(root);
        let mut depth = 0;
        loop {
            if guard.is_closed() {
                return Err(Exit::Absent {
                    level: depth,
                    cause: Absence::Closed,
                });
            }
            let step = step(&mut guard, depth);
            let Some((child, is_target)) = self.follow(step, &mut depth, &[held])? else {
                guard_held.released();
                return M::settle(guard)
                    .map(|target| (target, depth))
                    .map_err(|_| Exit::NotExclusive { level: depth });
            };
            let child_address = address(&child);
            if is_target {
                let acquire = M::lock_target(Arc::clone(&child), deadline);
                let (target, _) = observed_async::<_, _, false>(&child, depth, acquire)
                    .await
                    .ok_or(Exit::TimedOut { level: depth })?;
                guard_held.released();
                drop(guard);
                return open(target, depth).map(|target| (target, depth));
            }
            let acquire = M::lock_path(Arc::clone(&child), deadline);
            let (next, next_held) = observed_async::<_, _, true>(&child, depth, acquire)
                .await
                .ok_or(Exit::TimedOut { level: depth })?;
            std::mem::replace(&mut guard_held, next_held).released();
            guard = next;
            held = child_address;
        }
    }
}

// The repeated level of a mixed chain (`Volume, Dir*, File`), as `chain_locker!` generates
// it: a `Walker` walk from the first `Dir` whose steps are these (`__private` re-exports them).

/// The depth of the walk's target if the step that answered `step` at `depth` is the last.
#[expect(
    clippy::inline_always,
    reason = "a step of the generated code: must inline into it to cost nothing"
)]
#[inline(always)]
pub fn walk_depth<C>(step: &Step<C>, depth: usize) -> usize {
    match step {
        Step::Descend(_) | Step::Target(_) => depth + 1,
        Step::Here | Step::Absent => depth,
    }
}

/// A key step of the repeated level: descend into the child found, or end absent.
#[expect(
    clippy::inline_always,
    reason = "a step of the generated code: must inline into it to cost nothing"
)]
#[inline(always)]
pub fn walk_child<C>(child: Option<C>) -> Step<C> {
    child.map_or(Step::Absent, Step::Descend)
}
