//! Optimistic lookups racing a writer that inserts, removes and closes children, small enough
//! for Miri's data-race detector (`cargo +nightly miri test -p chainlock --lib chain::epoch`):
//! a removed child freed too early would be a use-after-free Miri reports; natively, the same
//! checks with more rounds.

use crate::ChainNode;
use crate::chain::{EpochGuard, EpochMap};
use crate::hybrid::HybridLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Child {
    /// The key it was inserted under, set before it is shared.
    key: u64,
    /// Written under the child's exclusive hold; a writer keeps `a == b`.
    a: AtomicU64,
    b: AtomicU64,
    closed: AtomicBool,
}

impl ChainNode for Child {
    fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

struct Parent {
    children: EpochMap<u64, HybridLock<Child>>,
}

fn child(key: u64) -> Arc<HybridLock<Child>> {
    Arc::new(HybridLock::new(Child {
        key,
        a: AtomicU64::new(key),
        b: AtomicU64::new(key),
        closed: AtomicBool::new(false),
    }))
}

const ROUNDS: u64 = if cfg!(miri) { 10 } else { 3_000 };

/// The writer, under the parent's exclusive hold each round: inserts child `round`, bumps
/// child `round - 1`, closes (under its own hold) and removes child `round - 2`. So at every
/// version of the parent, the children are one or two consecutive keys, all open.
fn write(parent: &HybridLock<Parent>) {
    for round in 1..=ROUNDS {
        let held = parent.write();
        held.children.insert(round, child(round));
        if let Some(previous) = held.children.get(&(round - 1), &EpochGuard::pin()) {
            let previous = previous.write();
            previous.a.fetch_add(1, Relaxed);
            previous.b.fetch_add(1, Relaxed);
        }
        if round >= 2 {
            let removed = held
                .children
                .remove(&(round - 2))
                .expect("inserted two rounds ago");
            removed.write().closed.store(true, Relaxed);
        }
    }
}

/// A reader: optimistic lookups of keys near the writer, each child read optimistically, the
/// parent validated last; what validates must be what the writer's invariant says.
fn read(parent: &HybridLock<Parent>) -> u64 {
    let mut validated = 0;
    for probe in 0..ROUNDS {
        let guard = EpochGuard::pin();
        let Ok(seen) = parent.optimistic() else {
            continue;
        };
        let mut found = Vec::new();
        for key in probe.saturating_sub(1)..=probe + 2 {
            let Some(lock) = seen.children.get(&key, &guard) else {
                continue;
            };
            // The child may have been removed a moment ago: it is still allocated (pinned).
            let Ok(state) = lock
                .read_optimistic(|c| (c.key, c.a.load(Relaxed), c.b.load(Relaxed), c.is_closed()))
            else {
                continue;
            };
            found.push((key, state));
        }
        if seen.validate().is_err() {
            continue;
        }
        validated += 1;
        for (key, (own_key, a, b, closed)) in found {
            assert_eq!(own_key, key, "a child found under another key");
            assert_eq!(a, b, "a validated child read mixed two writes");
            assert!(!closed, "a validated parent still lists a closed child");
        }
    }
    validated
}

#[test]
fn optimistic_lookups_racing_inserts_removes_and_closes_see_live_children() {
    let parent = HybridLock::new(Parent {
        children: [(0, child(0))].into_iter().collect(),
    });
    std::thread::scope(|scope| {
        scope.spawn(|| write(&parent));
        let readers: Vec<_> = (0..2).map(|_| scope.spawn(|| read(&parent))).collect();
        for reader in readers {
            reader.join().unwrap();
        }
    });
    let guard = EpochGuard::pin();
    let keys: Vec<u64> = parent
        .read()
        .children
        .iter(&guard)
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(keys, [ROUNDS - 1, ROUNDS]);
}
