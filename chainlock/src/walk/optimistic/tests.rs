//! A small concurrent run for Miri's data-race detector
//! (`cargo +nightly miri test -p chainlock --lib walk::optimistic`): optimistic walkers racing
//! a writer that changes values and relinks a child; natively, the same checks.

use super::{Crab, Shared, Step, Walker};
use crate::ChainNode;
use crate::hybrid::HybridLock;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Node {
    a: AtomicU64,
    b: AtomicU64,
    retired: AtomicBool,
    child: Mutex<Option<Arc<HybridLock<Node>>>>,
}

impl ChainNode for Node {}

fn node(value: u64, child: Option<Arc<HybridLock<Node>>>) -> Arc<HybridLock<Node>> {
    Arc::new(HybridLock::new(Node {
        a: AtomicU64::new(value),
        b: AtomicU64::new(value),
        retired: AtomicBool::new(false),
        child: Mutex::new(child),
    }))
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
                // Relink the leaf: the old one retired under its exclusive hold first.
                let mut child = held.child.lock().unwrap();
                let old = child.take().unwrap();
                let old_held = old.write();
                old_held.retired.store(true, Relaxed);
                drop(old_held);
                *child = Some(node(value, None));
            }
        });
        for mode_crab in [false, true] {
            let root = &root;
            scope.spawn(move || {
                for _ in 0..ROUNDS {
                    let mut seen = (0, 0);
                    let step = |n: &Node, _| {
                        seen = (n.a.load(Relaxed), n.b.load(Relaxed));
                        n.child
                            .lock()
                            .unwrap()
                            .clone()
                            .map_or(Step::Absent, Step::Target)
                    };
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
