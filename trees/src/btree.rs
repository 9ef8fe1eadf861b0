//! A concurrent ordered map: a B+-tree whose nodes are each behind their own `RwLock`,
//! locked hand over hand.
//!
//! - `get` read-locks its way down ([`Shared`]).
//! - `insert` is speculative ([`Walker::descend_speculative`]): it read-locks the inner nodes
//!   and write-locks only the leaf; if the leaf is full (an insert would split it and change
//!   its parent), it restarts once as a Bayer–Schkolnick descent that write-locks its way down
//!   and keeps locked exactly the ancestors a split can reach (up to the lowest non-full
//!   node), then splits upward through that retained path.
//! - `remove` write-locks only the leaf ([`Crab`]); leaves are not merged (a leaf may become
//!   empty), which keeps removal local.
//!
//! The root may split, so the tree hangs from a fixed *anchor* node whose one child is the
//! root: a root split changes the anchor, which the retaining descent then holds.
//!
//! Keys and values are user code: a `K: Ord` or `Clone` that panics in the middle of a split
//! leaves that split half done (parking_lot's locks do not poison), so use keys whose
//! comparison and cloning do not panic.

use chainlock::ChainNode;
use chainlock::parking_lot::RwLock;
use chainlock::walk::{Crab, Shared, Step, Walker};
use std::mem;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

type Handle<K, V> = Arc<RwLock<Node<K, V>>>;

/// A leaf (`level == 0`: `keys` and `values`) or an inner node (`keys` separate `children`:
/// child `i` holds the keys in `keys[i - 1]..keys[i]`).
struct Node<K, V> {
    keys: Vec<K>,
    values: Vec<V>,
    children: Vec<Handle<K, V>>,
    /// 0 for leaves; the anchor is one above the root.
    level: usize,
}

impl<K, V> ChainNode for Node<K, V> {}

impl<K: Ord, V> Node<K, V> {
    /// The child whose range holds `key`.
    fn child_for(&self, key: &K) -> &Handle<K, V> {
        &self.children[self.keys.partition_point(|k| k <= key)]
    }

    /// The step of every descent towards `key`: the leaf is the target.
    fn step(&self, key: &K) -> Step<Handle<K, V>> {
        let child = self.child_for(key).clone();
        if self.level == 1 {
            Step::Target(child)
        } else {
            Step::Descend(child)
        }
    }
}

/// A concurrent ordered map on a B+-tree locked hand over hand.
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
    anchor: Handle<K, V>,
    /// The most keys a node holds before it splits.
    capacity: usize,
    len: AtomicUsize,
    restarts: AtomicU64,
}

impl<K: Ord + Clone, V: Clone> Default for OrderedMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone, V: Clone> OrderedMap<K, V> {
    /// An empty map with 32 keys per node.
    pub fn new() -> Self {
        Self::with_node_capacity(32)
    }

    /// An empty map whose nodes split beyond `capacity` keys (small capacities make deep
    /// trees, for tests).
    ///
    /// # Panics
    ///
    /// If `capacity < 2`.
    pub fn with_node_capacity(capacity: usize) -> Self {
        assert!(capacity >= 2, "a B+-tree node holds at least 2 keys");
        let root = Node {
            keys: vec![],
            values: vec![],
            children: vec![],
            level: 0,
        };
        let anchor = Node {
            keys: vec![],
            values: vec![],
            children: vec![Arc::new(RwLock::new(root))],
            level: 1,
        };
        OrderedMap {
            anchor: Arc::new(RwLock::new(anchor)),
            capacity,
            len: AtomicUsize::new(0),
            restarts: AtomicU64::new(0),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many inserts found their leaf full and restarted as a retaining descent.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// The value under `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        let leaf = Walker::new()
            .descend(&self.anchor, Shared, |node, _| node.step(key))
            .expect("every inner node has a child for every key");
        let index = leaf.keys.binary_search(key).ok()?;
        Some(leaf.values[index].clone())
    }

    /// Inserts `value` under `key`; returns the value it replaces.
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        let capacity = self.capacity;
        // Safe: a node with room for one more key absorbs a split below it, and a leaf that
        // already holds `key` only has its value replaced; nothing above them changes.
        let safe = |node: &Node<K, V>, _: usize| {
            node.keys.len() < capacity || (node.level == 0 && node.keys.binary_search(&key).is_ok())
        };
        let found = Walker::new()
            .descend_speculative(&self.anchor, |node, _| node.step(&key), safe)
            .expect("every inner node has a child for every key");
        self.restarts
            .fetch_add(found.restarts as u64, Ordering::Relaxed);
        let mut path = found.path;
        let leaf = path.target_mut();
        let index = match leaf.keys.binary_search(&key) {
            Ok(index) => return Some(mem::replace(&mut leaf.values[index], value)),
            Err(index) => index,
        };
        leaf.keys.insert(index, key);
        leaf.values.insert(index, value);
        self.len.fetch_add(1, Ordering::Relaxed);
        // Split upward through the retained path while a node overflows.
        let mut up = 0;
        loop {
            let node = path.get_mut(up).expect("the overflowing node is held");
            if node.keys.len() <= capacity {
                return None;
            }
            let (separator, right) = split(node);
            up += 1;
            let is_anchor = path.target_depth() == up;
            let parent = path
                .get_mut(up)
                .expect("the parent of a full node is retained");
            if is_anchor {
                // The root split: a new root over the two halves.
                let old_root = parent.children[0].clone();
                let new_root = Node {
                    keys: vec![separator],
                    values: vec![],
                    children: vec![old_root, right],
                    level: parent.level,
                };
                parent.children[0] = Arc::new(RwLock::new(new_root));
                parent.level += 1;
                return None;
            }
            let index = parent.keys.partition_point(|k| *k <= separator);
            parent.keys.insert(index, separator);
            parent.children.insert(index + 1, right);
        }
    }

    /// Removes `key`; returns its value. Only the leaf is write-locked.
    pub fn remove(&self, key: &K) -> Option<V> {
        let mut leaf = Walker::new()
            .descend(&self.anchor, Crab, |node, _| node.step(key))
            .expect("every inner node has a child for every key");
        let index = leaf.keys.binary_search(key).ok()?;
        leaf.keys.remove(index);
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(leaf.values.remove(index))
    }

    /// Every entry in key order (read-locks the path from the root to each node it visits;
    /// meant for quiescent maps, not a consistent snapshot under writers).
    pub fn to_vec(&self) -> Vec<(K, V)> {
        let mut entries = Vec::new();
        collect(&self.anchor.read().children[0], &mut entries);
        entries
    }

    /// Checks the B+-tree's invariants on a quiescent map: keys sorted and within their
    /// separators, every leaf at level 0 and the same depth, no node over capacity, and the
    /// entry count.
    ///
    /// # Errors
    ///
    /// The first violation found, in words.
    pub fn check(&self) -> Result<(), String> {
        let anchor = self.anchor.read();
        let root = anchor.children[0].clone();
        let expected_level = anchor.level - 1;
        drop(anchor);
        let mut count = 0;
        check_node(&root, expected_level, None, None, self.capacity, &mut count)?;
        if count != self.len() {
            return Err(format!(
                "{count} entries in the leaves, len() says {}",
                self.len()
            ));
        }
        Ok(())
    }
}

/// Splits an overflowing node in two; returns the separator and the new right half.
fn split<K: Clone, V>(node: &mut Node<K, V>) -> (K, Handle<K, V>) {
    let middle = node.keys.len() / 2;
    let right = if node.level == 0 {
        Node {
            keys: node.keys.split_off(middle),
            values: node.values.split_off(middle),
            children: vec![],
            level: 0,
        }
    } else {
        let keys = node.keys.split_off(middle + 1);
        let children = node.children.split_off(middle + 1);
        Node {
            keys,
            values: vec![],
            children,
            level: node.level,
        }
    };
    let separator = if node.level == 0 {
        right.keys[0].clone()
    } else {
        node.keys.pop().expect("the middle key moves up")
    };
    (separator, Arc::new(RwLock::new(right)))
}

fn collect<K: Clone, V: Clone>(node: &Handle<K, V>, entries: &mut Vec<(K, V)>) {
    let node = node.read();
    if node.level == 0 {
        entries.extend(node.keys.iter().cloned().zip(node.values.iter().cloned()));
    }
    for child in &node.children {
        collect(child, entries);
    }
}

fn check_node<K: Ord, V>(
    node: &Handle<K, V>,
    level: usize,
    low: Option<&K>,
    high: Option<&K>,
    capacity: usize,
    count: &mut usize,
) -> Result<(), String> {
    let node = node.read();
    if node.level != level {
        return Err(format!("a node at level {level} says {}", node.level));
    }
    if node.keys.len() > capacity {
        return Err(format!(
            "a node holds {} keys, capacity {capacity}",
            node.keys.len()
        ));
    }
    if !node.keys.is_sorted_by(|a, b| a < b) {
        return Err("keys out of order in a node".into());
    }
    let in_range = |key: &K| low.is_none_or(|low| key >= low) && high.is_none_or(|high| key < high);
    if !node.keys.iter().all(in_range) {
        return Err("a key outside its separators".into());
    }
    if level == 0 {
        if node.values.len() != node.keys.len() || !node.children.is_empty() {
            return Err("a malformed leaf".into());
        }
        *count += node.keys.len();
        return Ok(());
    }
    if node.children.len() != node.keys.len() + 1 {
        return Err("an inner node's children do not match its keys".into());
    }
    for (index, child) in node.children.iter().enumerate() {
        let low = if index == 0 {
            low
        } else {
            Some(&node.keys[index - 1])
        };
        let high = node.keys.get(index).or(high);
        check_node(child, level - 1, low, high, capacity, count)?;
    }
    Ok(())
}
