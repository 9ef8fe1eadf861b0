//! A concurrent ordered map: a B+-tree whose nodes are each behind a [`HybridLock`], read by
//! optimistic lock coupling (Leis et al., "The ART of Practical Synchronization", 2016).
//!
//! - `get` writes nothing: at each node it reads the version, finds the child, reads the
//!   child's version, then checks the node's version is unchanged; a change is a typed
//!   [`Restart`] from the root. After [`MAX_OPTIMISTIC_ATTEMPTS`] it falls back to shared
//!   locks hand over hand (which wait their turn like any reader), so it cannot starve.
//! - `insert` descends the same way and upgrades only the leaf, by version: the upgrade
//!   succeeds only if nothing changed since the leaf was read, so the position found
//!   optimistically is still right. A full node met on the way is split first (its parent and
//!   itself upgraded by version, split, then the insert restarts), so a split never climbs.
//!   After the bound of restarts it falls back to exclusive locks hand over hand.
//! - `remove` upgrades only the leaf; leaves are not merged (a leaf may become empty).
//!
//! The root hangs from a fixed *anchor* lock whose data is the root pointer: a root split
//! upgrades the anchor.
//!
//! # Soundness
//!
//! - **Every field a writer changes is an atomic** (keys and values as words, the key count,
//!   child pointers), and the only references ever made to a node are `&` references (the
//!   hybrid lock hands out nothing else), so an optimistic reader racing a writer makes
//!   atomic loads racing atomic stores: no data race. A key or value is kept as one atomic
//!   word ([`Word`]): a reader may see a combination of words from different moments, never a
//!   torn word, and [`Word::from_word`] is total, so every key it compares is a valid `K`.
//!   Values are converted and returned only once the leaf's version validates.
//! - **Indices are bounded**: a key count read mid-write is clamped to the node's capacity,
//!   and every slot access is bounds checked.
//! - **Nodes are never freed while the map is shared**: leaves are not merged and a split
//!   keeps the left half in place, so a node, once linked, stays allocated until the map is
//!   dropped (`&mut self`: no reader left). A child pointer read optimistically, even a stale
//!   one from a slot past the key count, is null (restart) or a live node. This is why no
//!   epoch reclamation is needed; a variant that merged or replaced nodes would need it.
//! - **Publication**: a node is built before it is linked, and child pointers are stored
//!   with release and loaded with acquire, so a reader that sees a pointer sees the node's
//!   initialisation.
//!
//! Miri's data-race detector runs over concurrent readers and writers
//! (`cargo +nightly miri test -p chainlock-trees --test ordered_map_miri`).
//!
//! # Panics in user code
//!
//! A key's `Ord` may panic. Every comparison of an optimistic operation happens before it
//! holds anything (the upgrade by version comes after the search), and the fallback paths
//! compare before they change a node; a split compares nothing. So a panicking comparison
//! unwinds out of `insert` or `remove` with the tree unchanged (or with a split completed,
//! which changes no entry): no other entry is lost and `len()` stays exact.

use chainlock::hybrid::{HybridLock, HybridReadGuard, HybridWriteGuard, OptimisticRead, Restart};
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The most keys a node can hold (the largest `with_node_capacity`).
pub const MAX_NODE_CAPACITY: usize = 32;

/// How many optimistic attempts an operation makes before it takes locks hand over hand.
pub const MAX_OPTIMISTIC_ATTEMPTS: usize = 16;

/// A key or value the map keeps in one atomic word, so that a reader racing a writer reads it
/// whole. `from_word` must accept any word (a reader may compare a key that was never
/// inserted, read from a node being changed, before it learns to restart): it is safe code,
/// so a careless implementation gives wrong answers, never undefined behaviour.
///
/// # Examples
///
/// ```
/// use chainlock_trees::{OrderedMap, Word};
///
/// #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
/// struct UserId(u32);
///
/// impl Word for UserId {
///     fn to_word(self) -> u64 {
///         self.0.into()
///     }
///     fn from_word(word: u64) -> Self {
///         UserId(word as u32)
///     }
/// }
///
/// let map = OrderedMap::new();
/// map.insert(UserId(7), 1_u8);
/// assert_eq!(map.get(&UserId(7)), Some(1));
/// ```
pub trait Word: Copy {
    /// The value as a word.
    fn to_word(self) -> u64;
    /// A value from any word (the inverse of `to_word` on its image).
    fn from_word(word: u64) -> Self;
}

macro_rules! word_for_integers {
    ($($t:ty),*) => {$(
        impl Word for $t {
            // The word is the value's bits (sign-extended); the round trip is exact.
            #[inline]
            // `allow`, not `expect`: which cast lint fires depends on the integer type.
            #[allow(clippy::cast_lossless, clippy::cast_sign_loss)]
            fn to_word(self) -> u64 {
                self as u64
            }
            #[inline]
            #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // as above
            fn from_word(word: u64) -> Self {
                word as $t
            }
        }
    )*};
}
word_for_integers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Word for bool {
    fn to_word(self) -> u64 {
        u64::from(self)
    }
    fn from_word(word: u64) -> Self {
        word != 0
    }
}

type Slot<K, V> = HybridLock<Node<K, V>>;
type AnchorRead<'a, K, V> = OptimisticRead<'a, AtomicPtr<Slot<K, V>>>;
type NodeRead<'a, K, V> = OptimisticRead<'a, Node<K, V>>;
type AnchorWrite<'a, K, V> = HybridWriteGuard<'a, AtomicPtr<Slot<K, V>>>;
type NodeWrite<'a, K, V> = HybridWriteGuard<'a, Node<K, V>>;

/// A leaf (`level == 0`: `keys` and `values`) or an inner node (`keys` separate `children`:
/// child `i` holds the keys in `keys[i - 1]..keys[i]`). `level` never changes.
struct Node<K, V> {
    level: usize,
    len: AtomicUsize,
    keys: [AtomicU64; MAX_NODE_CAPACITY],
    values: [AtomicU64; MAX_NODE_CAPACITY],
    children: [AtomicPtr<Slot<K, V>>; MAX_NODE_CAPACITY + 1],
    _words: PhantomData<fn() -> (K, V)>,
}

impl<K: Word + Ord, V: Word> Node<K, V> {
    fn new(level: usize) -> Self {
        Node {
            level,
            len: AtomicUsize::new(0),
            keys: std::array::from_fn(|_| AtomicU64::new(0)),
            values: std::array::from_fn(|_| AtomicU64::new(0)),
            children: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            _words: PhantomData,
        }
    }

    /// The key count, clamped (a reader may race a writer).
    #[inline]
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed).min(MAX_NODE_CAPACITY)
    }

    #[inline]
    fn key(&self, index: usize) -> K {
        K::from_word(self.keys[index].load(Ordering::Relaxed))
    }

    #[inline]
    fn child(&self, index: usize) -> *mut Slot<K, V> {
        self.children[index].load(Ordering::Acquire)
    }

    /// `Ok(index)` of `key`, or `Err(index)` where it would go (the standard library's
    /// branchless binary search over the atomics).
    #[inline]
    fn search(&self, key: &K) -> Result<usize, usize> {
        let keys = &self.keys[..self.len()];
        let index = keys.partition_point(|k| K::from_word(k.load(Ordering::Relaxed)) < *key);
        match keys.get(index) {
            Some(k) if K::from_word(k.load(Ordering::Relaxed)) == *key => Ok(index),
            _ => Err(index),
        }
    }

    /// The index of the child whose range holds `key`: the number of keys `<= key`.
    #[inline]
    fn route(&self, key: &K) -> usize {
        self.keys[..self.len()].partition_point(|k| K::from_word(k.load(Ordering::Relaxed)) <= *key)
    }

    // Writers' helpers: called only under an exclusive hold of this node.

    fn set_key(&self, index: usize, key: u64) {
        self.keys[index].store(key, Ordering::Relaxed);
    }

    fn set_child(&self, index: usize, child: *mut Slot<K, V>) {
        self.children[index].store(child, Ordering::Release);
    }

    /// Inserts `key`/`value` at `index` of a leaf with room. Their words are taken before
    /// anything moves, so that a panicking `to_word` changes nothing.
    fn insert_entry(&self, index: usize, key: K, value: V) {
        let (key, value) = (key.to_word(), value.to_word());
        let len = self.len();
        for i in (index..len).rev() {
            self.set_key(i + 1, self.keys[i].load(Ordering::Relaxed));
            self.values[i + 1].store(self.values[i].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.set_key(index, key);
        self.values[index].store(value, Ordering::Relaxed);
        self.len.store(len + 1, Ordering::Relaxed);
    }

    /// Removes the entry at `index` of a leaf; returns its value word.
    fn remove_entry(&self, index: usize) -> u64 {
        let len = self.len();
        let value = self.values[index].load(Ordering::Relaxed);
        for i in index..len - 1 {
            self.set_key(i, self.keys[i + 1].load(Ordering::Relaxed));
            self.values[i].store(
                self.values[i + 1].load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
        }
        self.len.store(len - 1, Ordering::Relaxed);
        value
    }

    /// Inserts `separator` and the new right sibling of child `child` of an inner node with
    /// room.
    fn insert_child(&self, child: usize, separator: u64, right: *mut Slot<K, V>) {
        let len = self.len();
        for i in (child..len).rev() {
            self.set_key(i + 1, self.keys[i].load(Ordering::Relaxed));
        }
        for i in (child + 1..=len).rev() {
            self.set_child(i + 1, self.child(i));
        }
        self.set_key(child, separator);
        self.set_child(child + 1, right);
        self.len.store(len + 1, Ordering::Relaxed);
    }

    /// Splits this full node (held exclusively) in two, comparing no keys: the left half
    /// stays here, the right half is a new node. Returns the separator and the right node,
    /// not yet linked.
    fn split(&self) -> (u64, *mut Slot<K, V>) {
        let len = self.len();
        let middle = len / 2;
        let right = Node::new(self.level);
        let separator = self.keys[middle].load(Ordering::Relaxed);
        if self.level == 0 {
            for (to, from) in (middle..len).enumerate() {
                right.set_key(to, self.keys[from].load(Ordering::Relaxed));
                right.values[to]
                    .store(self.values[from].load(Ordering::Relaxed), Ordering::Relaxed);
            }
            right.len.store(len - middle, Ordering::Relaxed);
        } else {
            for (to, from) in (middle + 1..len).enumerate() {
                right.set_key(to, self.keys[from].load(Ordering::Relaxed));
            }
            for (to, from) in (middle + 1..=len).enumerate() {
                right.set_child(to, self.child(from));
            }
            right.len.store(len - middle - 1, Ordering::Relaxed);
        }
        self.len.store(middle, Ordering::Relaxed);
        (separator, Box::into_raw(Box::new(HybridLock::new(right))))
    }

    /// The index of `child` among this inner node's children (by address, comparing no key).
    fn position_of(&self, child: *const Slot<K, V>) -> usize {
        (0..=self.len())
            .find(|&index| ptr::eq(self.child(index), child))
            .expect("a node is a child of its parent")
    }
}

/// The parent of the node an insert is at: the anchor (the node is the root) or a node.
enum Parent<A, N> {
    Anchor(A),
    Node(N),
}

/// A concurrent ordered map on a B+-tree read by optimistic lock coupling.
///
/// Keys and values are [`Word`]s (integers, or your own types that fit a word), kept in
/// atomics so that readers racing writers are sound; see the module's soundness notes.
///
/// # Examples
///
/// ```
/// use chainlock_trees::OrderedMap;
///
/// let map = OrderedMap::with_node_capacity(4);
/// for key in 0..100 {
///     map.insert(key, key * 10);
/// }
/// assert_eq!(map.get(&42), Some(420));
/// assert_eq!(map.remove(&42), Some(420));
/// assert_eq!(map.len(), 99);
/// map.check().unwrap();
/// ```
pub struct OrderedMap<K, V> {
    /// The root pointer.
    anchor: HybridLock<AtomicPtr<Slot<K, V>>>,
    /// The most keys a node holds; a full node is split before anything is added to it.
    capacity: usize,
    len: AtomicUsize,
    restarts: AtomicU64,
    /// Tests: every `n`-th validation at one level fails (0: never), counted per level.
    inject_every: AtomicU64,
    inject_level: AtomicUsize,
    injected: AtomicU64,
    injected_by_level: [AtomicU64; 16],
}

impl<K: Word + Ord, V: Word> Default for OrderedMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> Drop for OrderedMap<K, V> {
    fn drop(&mut self) {
        let root = *self.anchor.get_mut().get_mut();
        // SAFETY: `&mut self`: no reader is left; every node is reachable once through the
        // live children of its parent and was made by `Box::into_raw`.
        unsafe { free(root) };
    }
}

/// Frees `node` and its subtree.
///
/// # Safety
///
/// `node` came from `Box::into_raw`, nothing else refers to it or its subtree, and it is not
/// used again.
unsafe fn free<K, V>(node: *mut Slot<K, V>) {
    // SAFETY: from the caller.
    let mut node = unsafe { Box::from_raw(node) };
    let node = node.get_mut();
    if node.level > 0 {
        let len = *node.len.get_mut();
        for child in &mut node.children[..=len] {
            // SAFETY: the live children of a node own their subtrees, each once.
            unsafe { free(*child.get_mut()) };
        }
    }
}

impl<K: Word + Ord, V: Word> OrderedMap<K, V> {
    /// An empty map with 32 keys per node.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::<u64, u64>::new();
    /// assert!(map.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_node_capacity(MAX_NODE_CAPACITY)
    }

    /// An empty map whose leaves hold at most `capacity` keys, and inner nodes
    /// `capacity.max(3)` (a full node is split before a key is added to it, so a full inner
    /// node must split into two that each keep a key); small capacities make deep trees, for
    /// tests.
    ///
    /// # Panics
    ///
    /// If `capacity < 2` or `capacity > MAX_NODE_CAPACITY`.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::with_node_capacity(2);
    /// map.insert(1_u8, 1_u8);
    /// ```
    pub fn with_node_capacity(capacity: usize) -> Self {
        assert!(capacity >= 2, "a B+-tree node holds at least 2 keys");
        assert!(
            capacity <= MAX_NODE_CAPACITY,
            "a node holds at most {MAX_NODE_CAPACITY} keys"
        );
        let root = Box::into_raw(Box::new(HybridLock::new(Node::new(0))));
        OrderedMap {
            anchor: HybridLock::new(AtomicPtr::new(root)),
            capacity,
            len: AtomicUsize::new(0),
            restarts: AtomicU64::new(0),
            inject_every: AtomicU64::new(0),
            inject_level: AtomicUsize::new(0),
            injected: AtomicU64::new(0),
            injected_by_level: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The number of entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::new();
    /// map.insert(1_u8, 1_u8);
    /// assert_eq!(map.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether the map is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(chainlock_trees::OrderedMap::<u8, u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many optimistic attempts restarted: a version changed under them, or an insert
    /// split a full node and went again.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::with_node_capacity(2);
    /// for key in 0..3_u8 {
    ///     map.insert(key, 0_u8);
    /// }
    /// assert_eq!(map.restarts(), 1, "the third key split the leaf");
    /// ```
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Tests: makes every `every`-th validation of an optimistic read at `level` fail (0:
    /// none; level 0 is the leaves, the root's level plus one the anchor), so that restarts
    /// happen at a chosen level; with `every == 1` at the anchor, every operation takes its
    /// fallback path.
    #[doc(hidden)]
    pub fn inject_restarts(&self, level: usize, every: u64) {
        self.inject_level.store(level, Ordering::Relaxed);
        self.inject_every.store(every, Ordering::Relaxed);
    }

    /// Tests: how many injected restarts happened at each level (0: leaves), up to the root
    /// and then the anchor (the last entry).
    #[doc(hidden)]
    pub fn injected_restarts_by_level(&self) -> Vec<u64> {
        let height = self.height();
        self.injected_by_level[..=(height + 1).min(15)]
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }

    /// The most keys an inner node holds: `capacity`, but at least 3, so that a full inner
    /// node (split before a key is added to it) splits into two that each have a key.
    #[inline]
    fn inner_capacity(&self) -> usize {
        self.capacity.max(3)
    }

    /// The root's level (a quiescent read).
    fn height(&self) -> usize {
        let anchor = self.anchor.read();
        self.slot(anchor.load(Ordering::Acquire)).read().level
    }

    /// The node behind a pointer read from a node or the anchor. Takes `&self` so that the
    /// reference lives no longer than the map (which frees the nodes when dropped).
    #[inline]
    #[expect(
        clippy::unused_self,
        reason = "`&self` bounds the reference's lifetime by the map's"
    )]
    fn slot(&self, node: *mut Slot<K, V>) -> &Slot<K, V> {
        assert!(!node.is_null(), "a live child slot is never null");
        // SAFETY: a non-null pointer in any slot of this map points to a node made by
        // `Box::into_raw` that is freed only when the map is dropped (nodes are never
        // unlinked), which `&self` excludes.
        unsafe { &*node }
    }

    /// The node behind a pointer read optimistically: null is a restart.
    #[inline]
    fn slot_optimistic(&self, node: *mut Slot<K, V>) -> Result<&Slot<K, V>, Restart> {
        if node.is_null() {
            return Err(Restart);
        }
        Ok(self.slot(node))
    }

    /// Tests: whether restarts are being injected (one load per operation).
    #[inline]
    fn injecting(&self) -> bool {
        self.inject_every.load(Ordering::Relaxed) != 0
    }

    /// Tests: whether to fail a validation at `level` on purpose (`I`: restarts are being
    /// injected; the operations are compiled twice, so that the normal path pays nothing).
    #[inline]
    fn injected<const I: bool>(&self, level: usize) -> bool {
        if !I {
            return false;
        }
        let every = self.inject_every.load(Ordering::Relaxed);
        let hit = every != 0
            && level == self.inject_level.load(Ordering::Relaxed)
            && self
                .injected
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(every);
        if hit {
            self.injected_by_level[level.min(15)].fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Validates `read` at `level` (or fails it on purpose, see `injected`).
    #[inline]
    fn validate<const I: bool, T>(
        &self,
        read: &OptimisticRead<'_, T>,
        level: usize,
    ) -> Result<(), Restart> {
        if self.injected::<I>(level) {
            return Err(Restart);
        }
        read.validate()
    }

    /// Begins at the root: the anchor's read (an insert upgrades it for a root split) and
    /// the root's.
    #[expect(
        clippy::type_complexity,
        reason = "a pair of guards of the anchor and the root"
    )]
    #[inline]
    fn enter<const I: bool>(
        &self,
    ) -> Result<
        (
            OptimisticRead<'_, AtomicPtr<Slot<K, V>>>,
            OptimisticRead<'_, Node<K, V>>,
        ),
        Restart,
    > {
        let anchor = self.anchor.optimistic()?;
        let root = self
            .slot_optimistic(anchor.load(Ordering::Acquire))?
            .optimistic()?;
        self.validate::<I, _>(&anchor, root.level + 1)?;
        Ok((anchor, root))
    }

    /// From `node` to its child towards `key`: the child's read begins, then `node`'s read
    /// is validated (so the child was `node`'s child at its version).
    #[inline]
    fn step<'a, const I: bool>(
        &'a self,
        node: &OptimisticRead<'a, Node<K, V>>,
        key: &K,
    ) -> Result<OptimisticRead<'a, Node<K, V>>, Restart> {
        let child = self
            .slot_optimistic(node.child(node.route(key)))?
            .optimistic()?;
        self.validate::<I, _>(node, node.level)?;
        Ok(child)
    }

    /// Runs `attempt` optimistically up to the bound, counting restarts; then `fallback`.
    #[inline]
    fn retry<R>(
        &self,
        mut attempt: impl FnMut() -> Result<R, Restart>,
        fallback: impl FnOnce() -> R,
    ) -> R {
        for _ in 0..MAX_OPTIMISTIC_ATTEMPTS {
            match attempt() {
                Ok(result) => return result,
                Err(Restart) => {
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        fallback()
    }

    /// The value under `key`. Writes nothing to shared memory unless it restarts.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::new();
    /// map.insert(3_u32, 30_u32);
    /// assert_eq!(map.get(&3), Some(30));
    /// assert_eq!(map.get(&4), None);
    /// ```
    #[inline]
    pub fn get(&self, key: &K) -> Option<V> {
        if self.injecting() {
            return self.retry(|| self.get_optimistic::<true>(key), || self.get_locked(key));
        }
        self.retry(
            || self.get_optimistic::<false>(key),
            || self.get_locked(key),
        )
    }

    #[inline]
    fn get_optimistic<const I: bool>(&self, key: &K) -> Result<Option<V>, Restart> {
        let (_, mut node) = self.enter::<I>()?;
        while node.level > 0 {
            node = self.step::<I>(&node, key)?;
        }
        let value = node
            .search(key)
            .ok()
            .map(|index| node.values[index].load(Ordering::Relaxed));
        self.validate::<I, _>(&node, 0)?;
        Ok(value.map(V::from_word))
    }

    /// Shared locks hand over hand down to the leaf (the fallback of `get` and `remove`).
    fn leaf_shared(&self, key: &K) -> HybridReadGuard<'_, Node<K, V>> {
        let anchor = self.anchor.read();
        let mut node = self.slot(anchor.load(Ordering::Acquire)).read();
        drop(anchor);
        while node.level > 0 {
            let child = self.slot(node.child(node.route(key))).read();
            node = child;
        }
        node
    }

    fn get_locked(&self, key: &K) -> Option<V> {
        let leaf = self.leaf_shared(key);
        let index = leaf.search(key).ok()?;
        Some(V::from_word(leaf.values[index].load(Ordering::Relaxed)))
    }

    /// Inserts `value` under `key`; returns the value it replaces.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::new();
    /// assert_eq!(map.insert(1_i64, 1_i64), None);
    /// assert_eq!(map.insert(1, 2), Some(1));
    /// ```
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        if self.injecting() {
            return self.retry(
                || self.insert_optimistic::<true>(key, value),
                || self.insert_locked(key, value),
            );
        }
        self.retry(
            || self.insert_optimistic::<false>(key, value),
            || self.insert_locked(key, value),
        )
    }

    fn insert_optimistic<const I: bool>(&self, key: K, value: V) -> Result<Option<V>, Restart> {
        let (anchor, mut node) = self.enter::<I>()?;
        let mut parent = Parent::Anchor(anchor);
        loop {
            if node.level == 0 {
                // Every comparison happens here, before anything is held.
                let found = node.search(&key);
                return match found {
                    Ok(index) => {
                        let leaf = node.upgrade()?;
                        let old = leaf.values[index].swap(value.to_word(), Ordering::Relaxed);
                        Ok(Some(V::from_word(old)))
                    }
                    Err(index) if node.len() < self.capacity => {
                        let leaf = node.upgrade()?;
                        leaf.insert_entry(index, key, value);
                        self.len.fetch_add(1, Ordering::Relaxed);
                        Ok(None)
                    }
                    Err(_) => {
                        Self::split_optimistic(parent, node)?;
                        Err(Restart)
                    }
                };
            }
            if node.len() >= self.inner_capacity() {
                Self::split_optimistic(parent, node)?;
                return Err(Restart);
            }
            let child = self.step::<I>(&node, &key)?;
            parent = Parent::Node(node);
            node = child;
        }
    }

    /// Upgrades `parent` then `node` by version (top-down, as every path locks) and splits
    /// `node`.
    fn split_optimistic<'a>(
        parent: Parent<AnchorRead<'a, K, V>, NodeRead<'a, K, V>>,
        node: OptimisticRead<'a, Node<K, V>>,
    ) -> Result<(), Restart> {
        let parent = match parent {
            Parent::Anchor(anchor) => Parent::Anchor(anchor.upgrade()?),
            Parent::Node(parent) => Parent::Node(parent.upgrade()?),
        };
        let node = node.upgrade()?;
        Self::split_under(&parent, &node);
        Ok(())
    }

    /// Splits `node` (held exclusively, full) and links the right half into `parent` (held
    /// exclusively, with room); returns the separator and the right half. Compares no keys.
    fn split_under(
        parent: &Parent<AnchorWrite<'_, K, V>, NodeWrite<'_, K, V>>,
        node: &HybridWriteGuard<'_, Node<K, V>>,
    ) -> (u64, *mut Slot<K, V>) {
        let (separator, right) = node.split();
        match parent {
            Parent::Anchor(anchor) => {
                let root = Node::new(node.level + 1);
                root.set_key(0, separator);
                // The old root's pointer as allocated (not one made from a reference: it is
                // freed through it).
                root.set_child(0, anchor.load(Ordering::Relaxed));
                root.set_child(1, right);
                root.len.store(1, Ordering::Relaxed);
                let root = Box::into_raw(Box::new(HybridLock::new(root)));
                anchor.store(root, Ordering::Release);
            }
            Parent::Node(parent) => {
                let index = parent.position_of(HybridWriteGuard::lock(node));
                parent.insert_child(index, separator, right);
            }
        }
        (separator, right)
    }

    /// The fallback of `insert`: exclusive locks hand over hand, splitting full nodes on the
    /// way down (holding the parent and the node), then the leaf.
    fn insert_locked(&self, key: K, value: V) -> Option<V> {
        let anchor = self.anchor.write();
        let mut node = self.slot(anchor.load(Ordering::Acquire)).write();
        let mut parent = Parent::Anchor(anchor);
        loop {
            let present = node.level == 0 && node.search(&key).is_ok();
            let full = if node.level == 0 {
                node.len() >= self.capacity
            } else {
                node.len() >= self.inner_capacity()
            };
            if full && !present {
                let (separator, right) = Self::split_under(&parent, &node);
                // The split is complete: a panicking comparison here loses nothing. Only
                // this thread can reach the right half to lock it (its parent is held).
                if key >= K::from_word(separator) {
                    node = self.slot(right).write();
                }
            }
            if node.level == 0 {
                return match node.search(&key) {
                    Ok(index) => {
                        let old = node.values[index].swap(value.to_word(), Ordering::Relaxed);
                        Some(V::from_word(old))
                    }
                    Err(index) => {
                        node.insert_entry(index, key, value);
                        self.len.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                };
            }
            let child = self.slot(node.child(node.route(&key))).write();
            parent = Parent::Node(node);
            node = child;
        }
    }

    /// Removes `key`; returns its value. Only the leaf is locked (upgraded by version).
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::new();
    /// map.insert(5_u16, 50_u16);
    /// assert_eq!(map.remove(&5), Some(50));
    /// assert_eq!(map.remove(&5), None);
    /// ```
    pub fn remove(&self, key: &K) -> Option<V> {
        if self.injecting() {
            return self.retry(
                || self.remove_optimistic::<true>(key),
                || self.remove_locked(key),
            );
        }
        self.retry(
            || self.remove_optimistic::<false>(key),
            || self.remove_locked(key),
        )
    }

    fn remove_optimistic<const I: bool>(&self, key: &K) -> Result<Option<V>, Restart> {
        let (_, mut node) = self.enter::<I>()?;
        while node.level > 0 {
            node = self.step::<I>(&node, key)?;
        }
        let Ok(index) = node.search(key) else {
            self.validate::<I, _>(&node, 0)?;
            return Ok(None);
        };
        let leaf = node.upgrade()?;
        let value = leaf.remove_entry(index);
        self.len.fetch_sub(1, Ordering::Relaxed);
        Ok(Some(V::from_word(value)))
    }

    /// The fallback of `remove`: exclusive locks hand over hand (a node is let go once its
    /// child is held), then the leaf.
    fn remove_locked(&self, key: &K) -> Option<V> {
        let anchor = self.anchor.read();
        let mut node = self.slot(anchor.load(Ordering::Acquire)).write();
        drop(anchor);
        while node.level > 0 {
            let child = self.slot(node.child(node.route(key))).write();
            node = child;
        }
        self.remove_from(&node, key)
    }

    fn remove_from(&self, leaf: &HybridWriteGuard<'_, Node<K, V>>, key: &K) -> Option<V> {
        let index = leaf.search(key).ok()?;
        let value = leaf.remove_entry(index);
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(V::from_word(value))
    }

    /// Every entry in key order (read-locks each node it visits; meant for quiescent maps,
    /// not a consistent snapshot under writers).
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::new();
    /// map.insert(2_u8, 0_u8);
    /// map.insert(1, 0);
    /// assert_eq!(map.to_vec(), vec![(1, 0), (2, 0)]);
    /// ```
    pub fn to_vec(&self) -> Vec<(K, V)> {
        let mut entries = Vec::new();
        let root = self.anchor.read().load(Ordering::Acquire);
        self.collect(root, &mut entries);
        entries
    }

    fn collect(&self, node: *mut Slot<K, V>, entries: &mut Vec<(K, V)>) {
        let node = self.slot(node).read();
        let len = node.len();
        if node.level == 0 {
            entries.extend((0..len).map(|index| {
                let value = node.values[index].load(Ordering::Relaxed);
                (node.key(index), V::from_word(value))
            }));
            return;
        }
        for index in 0..=len {
            self.collect(node.child(index), entries);
        }
    }

    /// Checks the B+-tree's invariants on a quiescent map: keys sorted and within their
    /// separators, every leaf at level 0 and the same depth, no node over capacity, and the
    /// entry count.
    ///
    /// # Errors
    ///
    /// The first violation found, in words.
    ///
    /// # Examples
    ///
    /// ```
    /// let map = chainlock_trees::OrderedMap::with_node_capacity(3);
    /// for key in 0..50_u32 {
    ///     map.insert(key, key);
    /// }
    /// assert_eq!(map.check(), Ok(()));
    /// ```
    pub fn check(&self) -> Result<(), String> {
        let root = self.anchor.read().load(Ordering::Acquire);
        let level = self.slot(root).read().level;
        let mut count = 0;
        self.check_node(root, level, None, None, &mut count)?;
        if count != self.len() {
            return Err(format!(
                "{count} entries in the leaves, len() says {}",
                self.len()
            ));
        }
        Ok(())
    }

    fn check_node(
        &self,
        node: *mut Slot<K, V>,
        level: usize,
        low: Option<K>,
        high: Option<K>,
        count: &mut usize,
    ) -> Result<(), String> {
        if node.is_null() {
            return Err("a null child".into());
        }
        let node = self.slot(node).read();
        if node.level != level {
            return Err(format!("a node at level {level} says {}", node.level));
        }
        let len = node.len.load(Ordering::Relaxed);
        let capacity = if level == 0 {
            self.capacity
        } else {
            self.inner_capacity()
        };
        if len > capacity {
            return Err(format!("a node holds {len} keys, capacity {capacity}"));
        }
        let keys: Vec<K> = (0..len).map(|index| node.key(index)).collect();
        if !keys.is_sorted_by(|a, b| a < b) {
            return Err("keys out of order in a node".into());
        }
        let in_range =
            |key: &K| low.is_none_or(|low| *key >= low) && high.is_none_or(|high| *key < high);
        if !keys.iter().all(in_range) {
            return Err("a key outside its separators".into());
        }
        if level == 0 {
            *count += len;
            return Ok(());
        }
        for index in 0..=len {
            let low = if index == 0 {
                low
            } else {
                Some(keys[index - 1])
            };
            let high = keys.get(index).copied().or(high);
            self.check_node(node.child(index), level - 1, low, high, count)?;
        }
        Ok(())
    }
}
