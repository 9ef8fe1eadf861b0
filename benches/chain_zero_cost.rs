//! Zero cost: generated lockers against hand-written hand-over-hand code doing the same
//! work (3 and 8 levels, uncontended, parking_lot locks), side by side in one run; and a
//! generated 3-level locker with two `optimistic` levels against the same optimistic lock
//! coupling written by hand with the public API (`HybridLock::optimistic`, `validate`,
//! `EpochVec::get`, a restart bound and a pessimistic pass).
//!
//! Run: `cargo bench --bench chain_zero_cost`. The README quotes the medians and ratios.
//! The four functions are `#[inline(never)]` so that both sides pay one call and so that
//! `valgrind --tool=callgrind --toggle-collect=<function>` can count each one's
//! instructions: run the bench binary with `--instructions` for that (see DEVELOPMENT.md).

use chainlock::chain::{EpochGuard, EpochVec, MAX_RESTARTS};
use chainlock::chain_locker;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::{Mutex, RwLock};
use criterion::{Criterion, criterion_group};
use std::hint::black_box;
use std::sync::Arc;

/// A node with a few children; every level has the same shape so that both sides do the
/// same lookups.
struct Node {
    value: u64,
    children: Vec<Arc<Mutex<Node>>>,
}

/// The root is an `RwLock` read in shared mode, as in latch crabbing.
struct Root {
    children: Vec<Arc<Mutex<Node>>>,
}

const FANOUT: usize = 4;

fn tree(depth: usize) -> Vec<Arc<Mutex<Node>>> {
    (0..FANOUT)
        .map(|_| {
            let children = if depth > 1 {
                tree(depth - 1)
            } else {
                Vec::new()
            };
            Arc::new(Mutex::new(Node { value: 0, children }))
        })
        .collect()
}

fn root(depth: usize) -> Arc<RwLock<Root>> {
    Arc::new(RwLock::new(Root {
        children: tree(depth - 1),
    }))
}

chain_locker! {
    struct Three(shared Root, Node, Node);
    struct Eight(shared Root, Node, Node, Node, Node, Node, Node, Node);
    struct OptimisticThree(optimistic Upper, optimistic Upper, Node);
}

/// A node read optimistically: its children in an epoch container (the leaves' level is
/// `Node`s behind `Mutex`es).
struct Upper {
    uppers: EpochVec<HybridLock<Upper>>,
    leaves: EpochVec<Mutex<Node>>,
}

fn optimistic_root() -> Arc<HybridLock<Upper>> {
    let leaves = || {
        (0..FANOUT).map(|_| {
            Arc::new(Mutex::new(Node {
                value: 0,
                children: Vec::new(),
            }))
        })
    };
    let middle = || {
        Arc::new(HybridLock::new(Upper {
            uppers: EpochVec::new(),
            leaves: leaves().collect(),
        }))
    };
    Arc::new(HybridLock::new(Upper {
        uppers: (0..FANOUT).map(|_| middle()).collect(),
        leaves: EpochVec::new(),
    }))
}

#[inline(never)]
fn optimistic_generated_3(root: &Arc<HybridLock<Upper>>, key: usize) -> Option<u64> {
    OptimisticThree
        .run(
            root,
            |r: &Upper, g: &EpochGuard| r.uppers.get(key, g),
            |n: &Upper, g: &EpochGuard| n.leaves.get(key, g),
            |leaf| {
                leaf.value += 1;
                leaf.value
            },
        )
        .ok()
}

/// The same descent by hand: versions down, the leaf locked before its parent validates, a
/// restart from the root on a changed version, after `MAX_RESTARTS` a pessimistic pass.
#[inline(never)]
fn optimistic_hand_written_3(root: &Arc<HybridLock<Upper>>, key: usize) -> Option<u64> {
    let pin = EpochGuard::pin();
    for _ in 0..=MAX_RESTARTS {
        let Ok(read0) = root.optimistic() else {
            continue;
        };
        let Some(next) = read0.uppers.get(key, &pin) else {
            read0.validate().ok()?;
            return None;
        };
        let Ok(read1) = next.optimistic() else {
            continue;
        };
        if read0.validate().is_err() {
            continue;
        }
        let Some(leaf) = read1.leaves.get(key, &pin) else {
            read1.validate().ok()?;
            return None;
        };
        let mut guard = leaf.lock_arc();
        if read1.validate().is_err() {
            continue;
        }
        guard.value += 1;
        return Some(guard.value);
    }
    // The cold path: the public guards lend the data for their own life, so the child is
    // cloned to outlive its parent's guard.
    let guard0 = root.read();
    let next = Arc::clone(guard0.uppers.get(key, &pin)?);
    let guard1 = next.read();
    drop(guard0);
    let mut guard = guard1.leaves.get(key, &pin)?.lock_arc();
    drop(guard1);
    guard.value += 1;
    Some(guard.value)
}

/// The hand-written descent as the generated one now waits: the leaf tried, and, held,
/// waited for out of the pin, then the path read again and the leaf kept if the path still
/// leads there (the natural alternative with the same guarantee: a holder of the leaf
/// holds back no reclamation).
#[inline(never)]
fn optimistic_hand_written_unpinned_3(root: &Arc<HybridLock<Upper>>, key: usize) -> Option<u64> {
    let mut carried: Option<chainlock::lock_api::ArcMutexGuard<_, Node>> = None;
    'pin: loop {
        let pin = EpochGuard::pin();
        for _ in 0..=MAX_RESTARTS {
            let Ok(read0) = root.optimistic() else {
                continue;
            };
            let Some(next) = read0.uppers.get(key, &pin) else {
                read0.validate().ok()?;
                return None;
            };
            let Ok(read1) = next.optimistic() else {
                continue;
            };
            if read0.validate().is_err() {
                continue;
            }
            let Some(leaf) = read1.leaves.get(key, &pin) else {
                read1.validate().ok()?;
                return None;
            };
            let guard = match carried.take() {
                Some(guard)
                    if Arc::ptr_eq(chainlock::lock_api::ArcMutexGuard::mutex(&guard), leaf) =>
                {
                    Some(guard)
                }
                _ => leaf.try_lock_arc(),
            };
            let Some(mut guard) = guard else {
                if read1.validate().is_err() {
                    continue;
                }
                let leaf = Arc::clone(leaf);
                drop(pin);
                carried = Some(leaf.lock_arc());
                continue 'pin;
            };
            if read1.validate().is_err() {
                continue;
            }
            guard.value += 1;
            return Some(guard.value);
        }
        drop(carried);
        let guard0 = root.read();
        let next = Arc::clone(guard0.uppers.get(key, &pin)?);
        let guard1 = next.read();
        drop(guard0);
        let mut guard = guard1.leaves.get(key, &pin)?.lock_arc();
        drop(guard1);
        guard.value += 1;
        return Some(guard.value);
    }
}

fn child(node: &mut Node, key: usize) -> Option<Arc<Mutex<Node>>> {
    node.children.get(key).cloned()
}

#[inline(never)]
fn generated_3(root: &Arc<RwLock<Root>>, key: usize) -> Option<u64> {
    Three
        .run(
            root,
            |r| r.children.get(key).cloned(),
            |n| child(n, key),
            |leaf| {
                leaf.value += 1;
                leaf.value
            },
        )
        .ok()
}

#[inline(never)]
fn hand_written_3(root: &Arc<RwLock<Root>>, key: usize) -> Option<u64> {
    let guard0 = root.read_arc();
    let next = guard0.children.get(key)?.clone();
    let guard1 = next.lock_arc();
    drop(guard0);
    let next = guard1.children.get(key)?.clone();
    let mut guard2 = next.lock_arc();
    drop(guard1);
    guard2.value += 1;
    Some(guard2.value)
}

#[inline(never)]
fn generated_8(root: &Arc<RwLock<Root>>, key: usize) -> Option<u64> {
    let step = |n: &mut Node| child(n, key);
    Eight
        .run(
            root,
            |r| r.children.get(key).cloned(),
            step,
            step,
            step,
            step,
            step,
            step,
            |leaf| {
                leaf.value += 1;
                leaf.value
            },
        )
        .ok()
}

#[inline(never)]
fn hand_written_8(root: &Arc<RwLock<Root>>, key: usize) -> Option<u64> {
    // Straight-line, one guard per level, each parent released after its child is locked.
    let guard0 = root.read_arc();
    let next = guard0.children.get(key)?.clone();
    let guard1 = next.lock_arc();
    drop(guard0);
    let next = guard1.children.get(key)?.clone();
    let guard2 = next.lock_arc();
    drop(guard1);
    let next = guard2.children.get(key)?.clone();
    let guard3 = next.lock_arc();
    drop(guard2);
    let next = guard3.children.get(key)?.clone();
    let guard4 = next.lock_arc();
    drop(guard3);
    let next = guard4.children.get(key)?.clone();
    let guard5 = next.lock_arc();
    drop(guard4);
    let next = guard5.children.get(key)?.clone();
    let guard6 = next.lock_arc();
    drop(guard5);
    let next = guard6.children.get(key)?.clone();
    let mut guard7 = next.lock_arc();
    drop(guard6);
    guard7.value += 1;
    Some(guard7.value)
}

fn zero_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_zero_cost");
    for (depth, generated, hand_written) in [
        (
            3,
            generated_3 as fn(&Arc<RwLock<Root>>, usize) -> Option<u64>,
            hand_written_3 as fn(&_, _) -> _,
        ),
        (8, generated_8, hand_written_8),
    ] {
        let root = root(depth);
        assert_eq!(generated(&root, 1), Some(1));
        assert_eq!(
            hand_written(&root, 1),
            Some(2),
            "both sides reach the same leaf"
        );
        group.bench_function(format!("generated/{depth}"), |b| {
            b.iter(|| generated(black_box(&root), black_box(1)));
        });
        group.bench_function(format!("hand_written/{depth}"), |b| {
            b.iter(|| hand_written(black_box(&root), black_box(1)));
        });
    }
    let root = optimistic_root();
    assert_eq!(optimistic_generated_3(&root, 1), Some(1));
    assert_eq!(
        optimistic_hand_written_3(&root, 1),
        Some(2),
        "the same leaf"
    );
    group.bench_function("optimistic_generated/3", |b| {
        b.iter(|| optimistic_generated_3(black_box(&root), black_box(1)));
    });
    group.bench_function("optimistic_hand_written/3", |b| {
        b.iter(|| optimistic_hand_written_3(black_box(&root), black_box(1)));
    });
    assert_eq!(
        optimistic_hand_written_unpinned_3(&root, 1).map(|n| n > 2),
        Some(true)
    );
    group.bench_function("optimistic_hand_written_unpinned/3", |b| {
        b.iter(|| optimistic_hand_written_unpinned_3(black_box(&root), black_box(1)));
    });
    group.finish();
}

criterion_group!(benches, zero_cost);

/// `--instructions`: call each function a fixed number of times without criterion, for
/// callgrind's instruction counts. Otherwise: criterion.
fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        const CALLS: u64 = 10_000;
        chainlock_suite::bench::telemetry_from_env();
        for (depth, function) in [
            (
                3,
                generated_3 as fn(&Arc<RwLock<Root>>, usize) -> Option<u64>,
            ),
            (3, hand_written_3),
            (8, generated_8),
            (8, hand_written_8),
        ] {
            let root = root(depth);
            for _ in 0..CALLS {
                black_box(function(black_box(&root), black_box(1)));
            }
        }
        let root = optimistic_root();
        // The thread's first pin registers it with crossbeam-epoch (an allocation, which
        // after the trees above were freed consolidates the heap): done here, not counted
        // against the first function measured.
        drop(EpochGuard::pin());
        for function in [
            optimistic_generated_3 as fn(&Arc<HybridLock<Upper>>, usize) -> Option<u64>,
            optimistic_hand_written_3,
            optimistic_hand_written_unpinned_3,
        ] {
            for _ in 0..CALLS {
                black_box(function(black_box(&root), black_box(1)));
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
