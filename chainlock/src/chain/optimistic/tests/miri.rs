//! Generated optimistic descents racing writers, for Miri's data-race detector
//! (`cargo +nightly miri test -p chainlock --lib chain::optimistic`, tree borrows, as the
//! epoch containers' tests); natively, the same checks with more rounds.
//!
//! A chain `optimistic Root, optimistic Mid, Leaf`: the mids in the root's `EpochVec`, the
//! leaves (behind `Mutex`es) in each mid's. Writers, at every level, insert and remove
//! children (each replaced child retired under its own exclusive hold after it is unlinked,
//! and freed once no reader is pinned: a child freed too early is a use-after-free Miri
//! reports), close and reopen nodes, and bump versions with nothing changed (a restart at
//! that level). Readers descend with the generated locker and check what they get: a leaf
//! that is still linked (never retired), reached through a mid that was linked and whose
//! pair `(a, b)` was read whole; or a validated exit (absent, closed).
//!
//! The same with the mids as the repeated level of a mixed chain (`optimistic Root,
//! optimistic Mid*, Leaf`, `__private::repeat`): a top mid's nested mid is replaced (and
//! retired) too, and the readers walk into it.

use crate::chain::{EpochGuard, EpochVec};
use crate::hybrid::HybridLock;
use crate::parking_lot::Mutex;
use crate::walk::Step;
use crate::{ChainNode, Exit, chain_locker};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

struct Root {
    closed: AtomicBool,
    mids: EpochVec<HybridLock<Mid>>,
}

struct Mid {
    closed: AtomicBool,
    /// Unlinked from the root (set after, under the mid's exclusive hold).
    retired: AtomicBool,
    /// Equal under every exclusive hold's end.
    a: AtomicU64,
    b: AtomicU64,
    leaves: EpochVec<Mutex<Leaf>>,
    /// A top mid's nested mid (the repeated level's next repetition).
    mids: EpochVec<HybridLock<Mid>>,
}

struct Leaf {
    closed: bool,
    /// Unlinked from its mid (set after, under the leaf's lock).
    retired: bool,
    visits: u64,
}

impl ChainNode for Root {
    fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

impl ChainNode for Mid {
    fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

impl ChainNode for Leaf {
    fn is_closed(&self) -> bool {
        self.closed
    }
}

chain_locker! {
    #![chain(crate = "crate")]
    struct ToLeaf(optimistic Root, optimistic Mid, Leaf);
    struct ToNestedLeaf(optimistic Root, optimistic Mid*, Leaf);
}

fn leaf() -> Arc<Mutex<Leaf>> {
    Arc::new(Mutex::new(Leaf {
        closed: false,
        retired: false,
        visits: 0,
    }))
}

fn mid() -> Arc<HybridLock<Mid>> {
    let top = nested();
    top.read().mids.push(nested());
    top
}

/// A mid without nested mids.
fn nested() -> Arc<HybridLock<Mid>> {
    Arc::new(HybridLock::new(Mid {
        closed: AtomicBool::new(false),
        retired: AtomicBool::new(false),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
        leaves: [leaf(), leaf()].into_iter().collect(),
        mids: EpochVec::new(),
    }))
}

const ROUNDS: usize = if cfg!(miri) { 6 } else { 2_000 };
const READERS: usize = if cfg!(miri) { 2 } else { 5 };

/// One writer's change number `round`, at the root's level or a mid's.
fn change(root: &HybridLock<Root>, round: usize) {
    let slot = round % 2;
    let guard = EpochGuard::pin();
    match round % 7 {
        // Replace a mid: the new one linked, the old one retired under its own hold.
        0 => {
            let old = root.write().mids.replace(slot, mid());
            old.write().retired.store(true, Relaxed);
        }
        // Close a mid, then reopen it.
        1 => {
            if let Some(mid) = root.read().mids.get(slot, &guard) {
                mid.write().closed.store(true, Relaxed);
                mid.write().closed.store(false, Relaxed);
            }
        }
        // Replace a leaf under its mid's exclusive hold; retire the old one.
        2 => {
            if let Some(mid) = root.read().mids.get(slot, &guard) {
                let held = mid.write();
                held.a.fetch_add(1, Relaxed);
                let old = held.leaves.replace(slot, leaf());
                held.b.fetch_add(1, Relaxed);
                drop(held);
                old.lock().retired = true;
            }
        }
        // Remove a leaf, then put a new one back (readers meanwhile find it absent).
        3 => {
            if let Some(mid) = root.read().mids.get(slot, &guard) {
                let removed = mid.write().leaves.pop();
                if let Some(old) = removed {
                    old.lock().retired = true;
                }
                mid.write().leaves.push(leaf());
            }
        }
        // Close the root and a leaf for a moment.
        4 => {
            root.write().closed.store(true, Relaxed);
            root.write().closed.store(false, Relaxed);
            if let Some(mid) = root.read().mids.get(slot, &guard)
                && let Some(leaf) = mid.read().leaves.get(slot, &guard)
            {
                leaf.lock().closed = true;
                leaf.lock().closed = false;
            }
        }
        // Replace a top mid's nested mid under the top's exclusive hold; retire the old one.
        5 => {
            if let Some(top) = root.read().mids.get(slot, &guard) {
                let old = top.write().mids.replace(0, nested());
                old.write().retired.store(true, Relaxed);
            }
        }
        // Versions bumped with nothing changed: a restart at levels 0 and 1.
        _ => {
            drop(root.write());
            if let Some(mid) = root.read().mids.get(slot, &guard) {
                drop(mid.write());
            }
        }
    }
}

/// One reader's descent to `(mid, leaf)`, checked; the stages count their calls.
fn descend(root: &Arc<HybridLock<Root>>, at: (usize, usize), calls: &AtomicUsize) {
    let mut seen = (false, 0, 0);
    let outcome = ToLeaf.run(
        root,
        |root: &Root, guard: &EpochGuard| {
            calls.fetch_add(1, Relaxed);
            root.mids.get(at.0, guard)
        },
        |mid: &Mid, guard: &EpochGuard| {
            seen = (
                mid.retired.load(Relaxed),
                mid.a.load(Relaxed),
                mid.b.load(Relaxed),
            );
            mid.leaves.get(at.1, guard)
        },
        |leaf| {
            leaf.visits += 1;
            leaf.retired
        },
    );
    check(outcome, seen, 2, calls);
}

/// One reader's descent to `(mid, leaf)` through the mid's nested mid (the repeated level's
/// second repetition), checked as [`descend`].
fn descend_nested(root: &Arc<HybridLock<Root>>, at: (usize, usize), calls: &AtomicUsize) {
    let mut seen = (false, 0, 0);
    let outcome = ToNestedLeaf.run(
        root,
        |root: &Root, guard: &EpochGuard| {
            calls.fetch_add(1, Relaxed);
            root.mids.get(at.0, guard)
        },
        |mid: &Mid, depth, guard: &EpochGuard| match (depth, mid.mids.get(0, guard)) {
            (0, Some(nested)) => Step::Descend(nested),
            (0, None) => Step::Absent,
            _ => Step::Here,
        },
        |mid: &Mid, guard: &EpochGuard| {
            seen = (
                mid.retired.load(Relaxed),
                mid.a.load(Relaxed),
                mid.b.load(Relaxed),
            );
            mid.leaves.get(at.1, guard)
        },
        |leaf| {
            leaf.visits += 1;
            leaf.retired
        },
    );
    check(outcome, seen, 3, calls);
}

/// Checks a descent's outcome: a leaf still linked, reached through a linked mid read whole
/// (`seen`: the last, validated pass's reading of the mid: retired, `a`, `b`), or an absent
/// level no deeper than `deepest`.
fn check(outcome: Result<bool, Exit>, seen: (bool, u64, u64), deepest: usize, calls: &AtomicUsize) {
    match outcome {
        Ok(retired) => {
            assert!(!retired, "the descent locked an unlinked leaf");
            assert!(!seen.0, "the descent went through an unlinked mid");
            assert_eq!(seen.1, seen.2, "the descent acted on a mid mid-write");
        }
        Err(Exit::Absent { level, .. }) => {
            assert!(level <= deepest, "absent at {level}");
            // The root, closed for a moment (`change`'s case 4), ends a descent before its
            // first stage: counted as if the stage had run, so that `calls` counts every
            // descent (the tests assert at least one each).
            if level == 0 {
                calls.fetch_add(1, Relaxed);
            }
        }
        Err(other) => panic!("unexpected exit {other:?}"),
    }
}

/// A writer changing every level while `READERS` threads descend with `descend`.
fn race(descend: fn(&Arc<HybridLock<Root>>, (usize, usize), &AtomicUsize)) {
    let root = Arc::new(HybridLock::new(Root {
        closed: AtomicBool::new(false),
        mids: [mid(), mid()].into_iter().collect(),
    }));
    let calls = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for round in 0..ROUNDS * 2 {
                change(&root, round);
            }
        });
        for reader in 0..READERS {
            let (root, calls) = (&root, &calls);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    descend(root, ((reader + round) % 3, round % 3), calls);
                }
            });
        }
    });
    assert!(calls.load(Relaxed) >= READERS * ROUNDS);
}

#[test]
fn generated_mixed_optimistic_descents_racing_writers_at_every_repetition() {
    race(descend_nested);
}

#[test]
fn generated_optimistic_descents_racing_writers_at_every_level() {
    race(descend);
}
