//! A small concurrent run for Miri's data-race detector
//! (`cargo +nightly miri test -p chainlock --lib walk::optimistic`): optimistic walkers racing
//! a writer that changes values and relinks a child kept in an `EpochVec` (the walk borrows
//! it, clones no `Arc` on the way down: a child freed too early is a use-after-free Miri
//! reports); natively, the same checks.

use crate::ChainNode;
use crate::chain::{EpochGuard, EpochVec};
use crate::hybrid::HybridLock;
use crate::walk::{Crab, Shared, Step, Walker};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Node {
    a: AtomicU64,
    b: AtomicU64,
    retired: AtomicBool,
    child: EpochVec<HybridLock<Node>>,
}

impl ChainNode for Node {}

fn node(value: u64, child: Option<Arc<HybridLock<Node>>>) -> Arc<HybridLock<Node>> {
    Arc::new(HybridLock::new(Node {
        a: AtomicU64::new(value),
        b: AtomicU64::new(value),
        retired: AtomicBool::new(false),
        child: child.into_iter().collect(),
    }))
}

/// The step to the root's child, recording the root's `(a, b)` as read.
fn to_leaf(
    seen: &mut (u64, u64),
) -> impl for<'g> FnMut(&'g Node, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<Node>>> + '_ {
    move |n, _, guard| {
        *seen = (n.a.load(Relaxed), n.b.load(Relaxed));
        n.child.get(0, guard).map_or(Step::Absent, Step::Target)
    }
}

const ROUNDS: u64 = if cfg!(miri) { 12 } else { 2_000 };

#[test]
fn optimistic_walkers_racing_a_writer_end_at_a_live_consistent_leaf() {
    let root = node(0, Some(node(0, None)));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for value in 1..=ROUNDS {
                let held = root.write();
                held.a.store(value, Relaxed);
                held.b.store(value, Relaxed);
                // Relink the leaf: the old one retired under its exclusive hold, then unlinked
                // (freed once no walker can reach it).
                let old = held.child.replace(0, node(value, None));
                old.write().retired.store(true, Relaxed);
            }
        });
        for mode_crab in [false, true] {
            let root = &root;
            scope.spawn(move || {
                for _ in 0..ROUNDS {
                    let mut seen = (0, 0);
                    let step = to_leaf(&mut seen);
                    let (retired, a, b) = if mode_crab {
                        let found = Walker::new()
                            .max_restarts(2)
                            .descend_optimistic(root, Crab, step)
                            .unwrap();
                        (
                            found.target.retired.load(Relaxed),
                            found.target.a.load(Relaxed),
                            found.target.b.load(Relaxed),
                        )
                    } else {
                        let found = Walker::new()
                            .max_restarts(2)
                            .descend_optimistic(root, Shared, step)
                            .unwrap();
                        (
                            found.target.retired.load(Relaxed),
                            found.target.a.load(Relaxed),
                            found.target.b.load(Relaxed),
                        )
                    };
                    assert!(!retired, "the walk ended at an unlinked leaf");
                    assert_eq!(a, b);
                    assert_eq!(seen.0, seen.1, "the walk acted on an inconsistent root");
                }
            });
        }
    });
}
