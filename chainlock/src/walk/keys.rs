//! Walks along a path of keys, each looked up in the node's [`Children`]:
//! [`Walker::descend_keys`] and [`Walker::run_keys`], their deadline and async twins, and the
//! key steps they hand to the plain loops.

use super::{Acquire, AsyncMode, Blocking, Exit, Mode, Step, TimedMode, Until, Walker};
use crate::chain::{ChainNode, Children};
use std::borrow::Borrow;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

impl Walker {
    /// Walks from `root` along a path of keys (any `IntoIterator`), each looked up in the
    /// node's [`Children`] (what `#[derive(ChainNode)]` implements for a `#[chain(children)]`
    /// field), and returns the last node's guard: locked in the target mode, the nodes above
    /// it in the path mode. An empty path ends at the root, locked in the target mode.
    ///
    /// # Errors
    ///
    /// [`Exit::Absent`] with the level of the first missing (or closed) key's node,
    /// [`Exit::Cycle`], [`Exit::TooDeep`].
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
    /// # Ok::<(), chainlock::Exit>(())
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_keys<L, M, I>(self, root: &Arc<L>, mode: M, keys: I) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys::<L, M, I>(root, &Blocking::<true>, keys)
    }

    /// Like [`descend_keys`](Self::descend_keys), giving up when `deadline` passes while
    /// waiting for a lock.
    ///
    /// # Errors
    ///
    /// As [`descend_keys`](Self::descend_keys), and [`Exit::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::walk::{Crab, Walker};
    /// use chainlock::Exit;
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
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn descend_keys_until<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        keys: I,
    ) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: TimedMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        let _ = mode;
        self.walk_keys::<L, M, I>(root, &Until::<true>(deadline), keys)
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn run_keys<L, M, I, R>(
        self,
        root: &Arc<L>,
        mode: M,
        keys: I,
        leaf: impl FnOnce(&mut M::Target) -> R,
    ) -> Result<R, Exit>
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
}

/// Async walks over locks with owned async guards (`tokio::sync::{Mutex, RwLock}`, feature
/// `tokio`): the same guarantees as the blocking walks, and cancel safety (see the
/// [module docs](super#cancel-safety)).
impl Walker {
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
    ) -> Result<M::Target, Exit>
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
    /// use chainlock::walk::{Shared, Walker};
    /// use chainlock::Exit;
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
    /// assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
    /// # });
    /// # }
    /// ```
    pub async fn descend_keys_until_async<L, M, I>(
        self,
        root: &Arc<L>,
        mode: M,
        deadline: Instant,
        keys: I,
    ) -> Result<M::Target, Exit>
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
}

// The key paths as steps of the plain loops.
impl Walker {
    /// A key path as a step: the last key's node is the target.
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn walk_keys<L, M, I>(
        self,
        root: &Arc<L>,
        acquire: &impl Acquire<L, M>,
        keys: I,
    ) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: Mode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        // The depth limit is checked at every level, as for a step closure: the iterator's
        // `size_hint` may understate its length (the standard library allows it), so a path
        // that claims to fit within the limit is held to it all the same.
        let mut keys = keys.into_iter();
        if M::PATH_IS_TARGET {
            return self
                .walk::<L, M, _>(root, false, acquire, plain_key_step(keys))
                .map(|(target, _)| target);
        }
        let first = keys.next();
        self.walk::<L, M, _>(root, first.is_none(), acquire, key_step(keys, first))
            .map(|(target, _)| target)
    }

    async fn walk_keys_async<L, M, I>(
        self,
        root: &Arc<L>,
        deadline: Option<Instant>,
        keys: I,
    ) -> Result<M::Target, Exit>
    where
        L: ?Sized,
        M: AsyncMode<L>,
        M::Node: ChainNode + Children<M::Node, Lock = L>,
        I: IntoIterator,
        I::Item: Borrow<<M::Node as Children<M::Node>>::Key>,
    {
        // As `walk_keys`: the depth limit is checked at every level.
        let mut keys = keys.into_iter();
        if M::PATH_IS_TARGET {
            return self
                .walk_async::<L, M>(root, false, deadline, plain_key_step(keys))
                .await
                .map(|(target, _)| target);
        }
        let first = keys.next();
        self.walk_async::<L, M>(root, first.is_none(), deadline, key_step(keys, first))
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
