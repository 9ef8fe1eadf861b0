//! The speculative descent (what Bayer and Schkolnick call the "optimistic" descent; here
//! the word is kept for optimistic lock coupling): a crab pass first, restarting as a
//! retaining descent if its target is unsafe.

use super::{AsyncMode, Blocking, Crab, Exclusive, Exit, Retained, Step, Walker};
use crate::chain::{ChainNode, ExclusiveLock, SharedLock};
use std::ops::DerefMut;
use std::sync::Arc;

impl Walker {
    /// The speculative form of [`descend_retaining`](Self::descend_retaining) (Bayer and
    /// Schkolnick's "optimistic" descent: it bets that the target is safe): first a
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
    /// except for an unsafe target and [`Exit::NotExclusive`].
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
    /// let fast = Walker::new().descend_speculative(&root, step, not_full).unwrap();
    /// assert_eq!((fast.restarts, fast.path.len()), (0, 1));
    /// drop(fast);
    ///
    /// leaf.write().keys = 4; // full: an insert would split it and change the root
    /// let slow = Walker::new().descend_speculative(&root, step, not_full).unwrap();
    /// assert_eq!((slow.restarts, slow.path.len()), (1, 2));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_speculative<L>(
        self,
        root: &Arc<L>,
        mut step: impl FnMut(&<L as SharedLock>::Target, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<L as SharedLock>::Target, usize) -> bool,
    ) -> Result<Speculative<<L as ExclusiveLock>::Guard>, Exit>
    where
        L: SharedLock + ExclusiveLock<Target = <L as SharedLock>::Target> + ?Sized,
        <L as SharedLock>::Target: ChainNode,
    {
        let first = self.walk::<L, Crab, _>(root, false, &Blocking::<true>, |guard, depth| {
            step(&**guard, depth)
        });
        match first {
            Ok((target, depth)) => {
                if is_safe(&*target, depth) {
                    return Ok(Speculative {
                        path: Retained::new(vec![target], depth),
                        restarts: 0,
                    });
                }
            }
            Err(Exit::NotExclusive { .. }) => {}
            Err(exit) => return Err(exit),
        }
        let path = self.retain::<L, _>(
            root,
            &Blocking::<true>,
            |guard, depth| step(&**guard, depth),
            is_safe,
        )?;
        Ok(Speculative { path, restarts: 1 })
    }
}

/// Async walks over locks with owned async guards (`tokio::sync::{Mutex, RwLock}`, feature
/// `tokio`): the same guarantees as the blocking walks, and cancel safety (see the
/// [module docs](super#cancel-safety)).
impl Walker {
    /// The async twin of [`descend_speculative`](Self::descend_speculative).
    ///
    /// # Errors
    ///
    /// As [`descend_speculative`](Self::descend_speculative).
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
    ///     .descend_speculative_async(
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
    pub async fn descend_speculative_async<L>(
        self,
        root: &Arc<L>,
        mut step: impl FnMut(&<Crab as AsyncMode<L>>::Node, usize) -> Step<Arc<L>>,
        mut is_safe: impl FnMut(&<Crab as AsyncMode<L>>::Node, usize) -> bool,
    ) -> Result<Speculative<<Crab as AsyncMode<L>>::Target>, Exit>
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
                    return Ok(Speculative {
                        path: Retained::new(vec![target], depth),
                        restarts: 0,
                    });
                }
            }
            Err(Exit::NotExclusive { .. }) => {}
            Err(exit) => return Err(exit),
        }
        let path = self
            .retain_async(root, None, |guard, depth| step(&**guard, depth), is_safe)
            .await?;
        Ok(Speculative { path, restarts: 1 })
    }
}

/// What [`Walker::descend_speculative`] found: the exclusively locked path (the target alone
/// when the first, shared pass was enough) and how many times it restarted.
#[derive(Debug)]
#[must_use = "if unused the path is released immediately"]
pub struct Speculative<G> {
    /// The target, and the ancestors a retaining restart kept above it.
    pub path: Retained<G>,
    /// 0 when the shared pass was enough, 1 when it restarted as a retaining descent.
    pub restarts: usize,
}
