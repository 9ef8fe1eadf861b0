//! Walks of run-time depth against a hand-written owned-guard lock-coupling loop doing the
//! same work (depth 4 and 16, exclusive, uncontended, parking_lot mutexes, one `Vec` lookup
//! per level, one counter increment at the target), side by side in one run; and the
//! optimistic walk over `HybridLock` nodes (versions down, the target locked exclusively by
//! version), its children in an `EpochVec` (`walk_optimistic`) or a plain `Vec`
//! (`walk_optimistic_vec`), both lent by reference.
//!
//! Run: `cargo bench --bench walk`. The README quotes the medians and ratios. The functions
//! are `#[inline(never)]` so that every side pays one call and so that
//! `valgrind --tool=callgrind --toggle-collect=walk::<function>` counts each one's
//! instructions: run the bench binary with `--instructions` for that (see DEVELOPMENT.md).

use chainlock::ChainNode;
use chainlock::chain::{ChildContainer, Children, EpochVec};
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::walk::{Exclusive, Step, Walker};
use criterion::{Criterion, criterion_group};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const FANOUT: usize = 4;

/// A node of a recursive tree. Every child slot of a node holds the same next node, so that
/// a path of any keys has the benchmark's depth without an exponential tree.
struct Node {
    value: u64,
    children: Vec<Arc<Mutex<Node>>>,
}

impl ChainNode for Node {}

impl Children<Node> for Node {
    type Key = usize;
    type Lock = Mutex<Node>;

    #[inline]
    fn child(&self, key: &usize) -> Option<Arc<Mutex<Node>>> {
        self.children.lookup(key)
    }
}

/// A tree whose every path from the root has `depth` nodes.
fn tree(depth: usize) -> Arc<Mutex<Node>> {
    let mut node = Arc::new(Mutex::new(Node {
        value: 0,
        children: vec![],
    }));
    for _ in 1..depth {
        node = Arc::new(Mutex::new(Node {
            value: 0,
            children: vec![node; FANOUT],
        }));
    }
    node
}

/// The key path from the root to the target: `depth - 1` keys.
fn keys(depth: usize) -> Vec<usize> {
    vec![1; depth - 1]
}

#[inline(never)]
fn walk_keys(root: &Arc<Mutex<Node>>, keys: &[usize]) -> Option<u64> {
    Walker::new()
        .run_keys(root, Exclusive, keys, |leaf| {
            leaf.value += 1;
            leaf.value
        })
        .ok()
}

#[inline(never)]
fn walk_steps(root: &Arc<Mutex<Node>>, keys: &[usize]) -> Option<u64> {
    Walker::new()
        .run(
            root,
            Exclusive,
            |node, depth| match keys.get(depth) {
                None => Step::Here,
                Some(key) => node
                    .children
                    .get(*key)
                    .cloned()
                    .map_or(Step::Absent, Step::Descend),
            },
            |leaf| {
                leaf.value += 1;
                leaf.value
            },
        )
        .ok()
}

/// `walk_steps` with no depth limit: what the limit's check costs.
#[inline(never)]
fn walk_steps_unbounded(root: &Arc<Mutex<Node>>, keys: &[usize]) -> Option<u64> {
    Walker::new()
        .max_depth(usize::MAX)
        .run(
            root,
            Exclusive,
            |node, depth| match keys.get(depth) {
                None => Step::Here,
                Some(key) => node
                    .children
                    .get(*key)
                    .cloned()
                    .map_or(Step::Absent, Step::Descend),
            },
            |leaf| {
                leaf.value += 1;
                leaf.value
            },
        )
        .ok()
}

#[inline(never)]
fn hand_written(root: &Arc<Mutex<Node>>, keys: &[usize]) -> Option<u64> {
    let mut guard = root.lock_arc();
    for key in keys {
        let next = guard.children.get(*key)?.clone();
        // The child is locked before the parent's guard is replaced (and released).
        guard = next.lock_arc();
    }
    guard.value += 1;
    Some(guard.value)
}

/// A node of the optimistic walk: what writers change is atomic, children in an `EpochVec`
/// (`epoch`) or fixed in a `Vec` (`fixed`); one of the two is empty.
#[derive(ChainNode, Default)]
struct Hybrid {
    value: AtomicU64,
    epoch: EpochVec<HybridLock<Hybrid>>,
    fixed: Vec<Arc<HybridLock<Hybrid>>>,
}

/// A hybrid tree whose every path has `depth` nodes, children in the `EpochVec` (`epoch`)
/// or the `Vec`.
fn hybrid_tree(depth: usize, epoch: bool) -> Arc<HybridLock<Hybrid>> {
    let mut node = Arc::new(HybridLock::new(Hybrid::default()));
    for _ in 1..depth {
        let children = vec![node; FANOUT];
        node = Arc::new(HybridLock::new(if epoch {
            Hybrid {
                epoch: children.into(),
                ..Hybrid::default()
            }
        } else {
            Hybrid {
                fixed: children,
                ..Hybrid::default()
            }
        }));
    }
    node
}

#[inline(never)]
fn walk_optimistic(root: &Arc<HybridLock<Hybrid>>, keys: &[usize]) -> Option<u64> {
    let found = Walker::new()
        .descend_optimistic(root, Exclusive, |node, depth, guard| {
            match keys.get(depth) {
                None => Step::Here,
                Some(key) => node
                    .epoch
                    .get(*key, guard)
                    .map_or(Step::Absent, Step::Descend),
            }
        })
        .ok()?;
    Some(found.target.value.fetch_add(1, Relaxed) + 1)
}

#[inline(never)]
fn walk_optimistic_vec(root: &Arc<HybridLock<Hybrid>>, keys: &[usize]) -> Option<u64> {
    let found = Walker::new()
        .descend_optimistic(root, Exclusive, |node, depth, _| match keys.get(depth) {
            None => Step::Here,
            Some(key) => node.fixed.get(*key).map_or(Step::Absent, Step::Descend),
        })
        .ok()?;
    Some(found.target.value.fetch_add(1, Relaxed) + 1)
}

type HybridWalk = fn(&Arc<HybridLock<Hybrid>>, &[usize]) -> Option<u64>;

/// The optimistic sides: name, function, children in the `EpochVec`.
const HYBRID_SIDES: [(&str, HybridWalk, bool); 2] = [
    ("walk_optimistic", walk_optimistic, true),
    ("walk_optimistic_vec", walk_optimistic_vec, false),
];

type Walk = fn(&Arc<Mutex<Node>>, &[usize]) -> Option<u64>;

const SIDES: [(&str, Walk); 4] = [
    ("walk_keys", walk_keys),
    ("walk_steps", walk_steps),
    ("walk_steps_unbounded", walk_steps_unbounded),
    ("hand_written", hand_written),
];

fn walk(c: &mut Criterion) {
    let mut group = c.benchmark_group("walk");
    for depth in [4, 16] {
        let (root, keys) = (tree(depth), keys(depth));
        for (round, (_, side)) in SIDES.iter().enumerate() {
            assert_eq!(
                side(&root, &keys),
                Some(round as u64 + 1),
                "every side reaches the same target"
            );
        }
        for (name, side) in SIDES {
            group.bench_function(format!("{name}/{depth}"), |b| {
                b.iter(|| side(black_box(&root), black_box(&keys)));
            });
        }
        for (name, side, epoch) in HYBRID_SIDES {
            let root = hybrid_tree(depth, epoch);
            assert_eq!(side(&root, &keys), Some(1), "{name} reaches the target");
            group.bench_function(format!("{name}/{depth}"), |b| {
                b.iter(|| side(black_box(&root), black_box(&keys)));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, walk);

/// `--instructions`: call each function a fixed number of times without criterion, for
/// callgrind's instruction counts. Otherwise: criterion.
fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        const CALLS: u64 = 10_000;
        // `WALK_DEPTH=4` (or 16) counts one depth only.
        let only: Option<usize> = std::env::var("WALK_DEPTH")
            .ok()
            .and_then(|depth| depth.parse().ok());
        for depth in [4, 16]
            .into_iter()
            .filter(|depth| only.is_none_or(|only| only == *depth))
        {
            let (root, keys) = (tree(depth), keys(depth));
            for (_, side) in SIDES {
                for _ in 0..CALLS {
                    black_box(side(black_box(&root), black_box(&keys)));
                }
            }
            for (_, side, epoch) in HYBRID_SIDES {
                let root = hybrid_tree(depth, epoch);
                for _ in 0..CALLS {
                    black_box(side(black_box(&root), black_box(&keys)));
                }
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
