//! The optimistic descent (`Walker::descend_optimistic`): writers changing a tree of
//! `HybridLock`s (values and structure) while optimistic walkers descend; the walkers end at
//! the right, live target and never act on an inconsistent read; restarts counted, the
//! pessimistic pass taken when restarts are forced; the exits (absent, closed, cycle, too
//! deep, not exclusive, timed out). Children live in an `EpochVec` and the steps borrow them
//! (no `Arc` cloned on the way down).

use chainlock::chain::{Absence, ChildContainer, EpochGuard, EpochVec};
use chainlock::hybrid::{ArcHybridWriteGuard, HybridLock};
use chainlock::walk::{Crab, Exclusive, Shared, Step, Walker};
use chainlock::{ChainNode, Exit};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A node of a complete binary tree labelled as a heap (the root is 1, the children of `n`
/// are `2n` and `2n + 1`). Writers keep `a == b` and set `retired` on every node they unlink
/// (under its exclusive hold) before unlinking it.
struct Node {
    label: u64,
    a: AtomicU64,
    b: AtomicU64,
    retired: AtomicBool,
    closed: AtomicBool,
    children: EpochVec<HybridLock<Node>>,
}

impl ChainNode for Node {
    fn is_closed(&self) -> bool {
        self.closed.load(Relaxed)
    }
}

type Handle = Arc<HybridLock<Node>>;

/// The levels below the root: leaves are at level `LEVELS`, labelled `2^LEVELS..2^(LEVELS+1)`.
const LEVELS: u32 = 3;

fn tree(label: u64, levels: u32, value: u64) -> Handle {
    let children = if levels == 0 {
        vec![]
    } else {
        vec![
            tree(2 * label, levels - 1, value),
            tree(2 * label + 1, levels - 1, value),
        ]
    };
    Arc::new(HybridLock::new(Node {
        label,
        a: AtomicU64::new(value),
        b: AtomicU64::new(value),
        retired: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        children: children.into(),
    }))
}

/// The level of a label (the root's is 0).
fn level_of(label: u64) -> u32 {
    label.ilog2()
}

/// The child of the node at `depth` on the way to `label`, or `None` at `label` itself.
fn toward<'g>(
    node: &'g Node,
    depth: usize,
    label: u64,
    guard: &'g EpochGuard,
) -> Option<&'g Handle> {
    let below = level_of(label).checked_sub(u32::try_from(depth).unwrap() + 1)?;
    let bit = usize::try_from((label >> below) & 1).unwrap();
    node.children.get(bit, guard)
}

/// A step toward `label`, ending there in a target mode, recording the `(a, b)` each call
/// read at its depth (the last pass's records are those the walk validated).
fn step_to(
    label: u64,
    seen: &mut Vec<(u64, u64)>,
) -> impl for<'g> FnMut(&'g Node, usize, &'g EpochGuard) -> Step<&'g Handle> + '_ {
    move |node, depth, guard| {
        seen.truncate(depth);
        seen.push((node.a.load(Relaxed), node.b.load(Relaxed)));
        match toward(node, depth, label, guard) {
            None => Step::Here,
            Some(child) if depth + 1 == level_of(label) as usize => Step::Target(child),
            Some(child) => Step::Descend(child),
        }
    }
}

/// Sets `a` and `b` of the node labelled `label` to one new value, under its exclusive hold
/// taken by an optimistic descent in `Exclusive` mode.
fn bump(root: &Handle, label: u64, value: u64) {
    let mut seen = vec![];
    let mut step = step_to(label, &mut seen);
    let found = Walker::new()
        .descend_optimistic(root, Exclusive, |node: &Node, depth, guard| {
            match step(node, depth, guard) {
                Step::Target(child) => Step::Descend(child), // Exclusive ends with `Here`
                other => other,
            }
        })
        .unwrap();
    assert_eq!(found.target.label, label);
    found.target.a.store(value, Relaxed);
    found.target.b.store(value, Relaxed);
}

/// Marks every node of `node`'s subtree retired, each under its exclusive hold, top-down.
fn retire(node: &Handle) {
    let held = node.write();
    held.retired.store(true, Relaxed);
    let children = held.children.as_slice(&EpochGuard::pin()).to_vec();
    drop(held);
    for child in &children {
        retire(child);
    }
}

/// Replaces a child subtree of the internal node `parent` with a fresh copy (same labels),
/// under the parent's exclusive hold: the old one retired before it is unlinked.
fn replace_child(root: &Handle, parent: u64, which: usize, value: u64) {
    let mut seen = vec![];
    let mut step = step_to(parent, &mut seen);
    let found = Walker::new()
        .descend_optimistic(root, Exclusive, |node: &Node, depth, guard| {
            match step(node, depth, guard) {
                Step::Target(child) => Step::Descend(child),
                other => other,
            }
        })
        .unwrap();
    let parent_node: &ArcHybridWriteGuard<Node> = &found.target;
    let old = parent_node.children.lookup(&which).unwrap();
    let label = 2 * parent + which as u64;
    let fresh = tree(label, LEVELS - level_of(label), value);
    retire(&old);
    // Unlinked; freed once no walker can still reach it.
    parent_node.children.replace(which, fresh);
}

/// A reader: walks to `label` in `Shared` mode and checks everything it can.
fn check_read(root: &Handle, label: u64) -> (usize, bool) {
    let mut seen = vec![];
    let found = Walker::new()
        .descend_optimistic(root, Shared, step_to(label, &mut seen))
        .unwrap();
    assert_eq!(
        found.target.label, label,
        "the walk ended at the wrong node"
    );
    assert!(
        !found.target.retired.load(Relaxed),
        "the walk ended at an unlinked node"
    );
    assert_eq!(found.target.a.load(Relaxed), found.target.b.load(Relaxed));
    assert_eq!(found.level, level_of(label) as usize);
    for (depth, (a, b)) in seen.iter().enumerate() {
        assert_eq!(
            a, b,
            "the walk acted on an inconsistent read at depth {depth}"
        );
    }
    (found.restarts, found.pessimistic)
}

/// Counts a reader done when dropped (also while unwinding).
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

#[test]
fn walks_end_at_the_right_live_target_while_writers_change_values_and_structure() {
    const READERS: usize = 3;
    const WALKS: u64 = 20_000;
    let root = tree(1, LEVELS, 0);
    let readers_done = AtomicUsize::new(0);
    let restarts = AtomicUsize::new(0);
    let pessimistic = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        // Writers run until every reader is done.
        scope.spawn(|| {
            let mut value = 1;
            while readers_done.load(Relaxed) < READERS {
                let label = 1 + value % 15;
                bump(&root, label, value);
                value += 1;
            }
        });
        scope.spawn(|| {
            let mut value = 1_000_000;
            while readers_done.load(Relaxed) < READERS {
                let parent = 1 + value % 3; // the internal nodes above the leaves' parents
                replace_child(&root, parent, usize::try_from(value % 2).unwrap(), value);
                value += 1;
            }
        });
        for reader in 0..READERS as u64 {
            let (root, readers_done, restarts, pessimistic) =
                (&root, &readers_done, &restarts, &pessimistic);
            scope.spawn(move || {
                // Counted done even if a check panics, so that the writers stop.
                let _done = Done(readers_done);
                for walk in 0..WALKS {
                    let label = 1 + (walk * 7 + reader) % 15;
                    let (r, p) = check_read(root, label);
                    restarts.fetch_add(r, Relaxed);
                    pessimistic.fetch_add(usize::from(p), Relaxed);
                }
            });
        }
    });
    // Every node reachable now is live and consistent.
    for label in 1..16 {
        check_read(&root, label);
    }
    eprintln!(
        "{} walks: {} restarts, {} pessimistic passes",
        READERS as u64 * WALKS,
        restarts.load(Relaxed),
        pessimistic.load(Relaxed)
    );
}

/// A step at the root that takes and drops the root's exclusive hold whenever it can: every
/// optimistic pass then fails its root validation; the pessimistic pass holds the root
/// shared, so the step cannot and the pass finishes.
fn injecting<'a>(
    root: &'a Handle,
    mut inject: usize,
    label: u64,
    seen: &'a mut Vec<(u64, u64)>,
) -> impl for<'g> FnMut(&'g Node, usize, &'g EpochGuard) -> Step<&'g Handle> + 'a {
    let mut step = step_to(label, seen);
    move |node, depth, guard| {
        if depth == 0
            && inject > 0
            && let Some(held) = root.try_write()
        {
            inject -= 1;
            drop(held);
        }
        step(node, depth, guard)
    }
}

#[test]
fn restarts_are_counted_and_the_pessimistic_pass_taken_after_the_bound() {
    let root = tree(1, LEVELS, 0);
    for max in [0, 1, 3, Walker::DEFAULT_MAX_RESTARTS] {
        for label in [1, 3, 6, 13] {
            // As many restarts as allowed: still optimistic.
            let mut seen = vec![];
            let found = Walker::new()
                .max_restarts(max)
                .descend_optimistic(&root, Shared, injecting(&root, max, label, &mut seen))
                .unwrap();
            assert_eq!(
                (found.target.label, found.restarts, found.pessimistic),
                (label, max, false)
            );
            drop(found);
            // One more: pessimistic.
            let mut seen = vec![];
            let found = Walker::new()
                .max_restarts(max)
                .descend_optimistic(
                    &root,
                    Shared,
                    injecting(&root, usize::MAX, label, &mut seen),
                )
                .unwrap();
            assert_eq!(
                (found.target.label, found.restarts, found.pessimistic),
                (label, max + 1, true)
            );
        }
    }
}

#[test]
fn crab_locks_the_target_exclusively_and_refuses_here_in_both_passes() {
    let root = tree(1, LEVELS, 0);
    for inject in [0, usize::MAX] {
        let mut seen = vec![];
        let found = Walker::new()
            .descend_optimistic(&root, Crab, injecting(&root, inject, 13, &mut seen))
            .unwrap();
        assert_eq!((found.target.label, found.pessimistic), (13, inject > 0));
        assert!(
            ArcHybridWriteGuard::lock(&found.target)
                .try_read()
                .is_none()
        );
        drop(found);
        // `Here` on a node the crab path only reads.
        let mut seen = vec![];
        let mut step = injecting(&root, inject, 13, &mut seen);
        let walk = Walker::new().descend_optimistic(&root, Crab, |node: &Node, depth, guard| {
            if depth == 1 {
                Step::Here
            } else {
                step(node, depth, guard)
            }
        });
        assert_eq!(walk.err(), Some(Exit::NotExclusive { level: 1 }));
    }
    assert!(root.try_write().is_some(), "every lock released");
}

/// The injection of [`injecting`] alone, for steps of their own.
fn inject_at_root(root: &Handle, mut left: usize) -> impl FnMut(usize) + '_ {
    move |depth| {
        if depth == 0
            && left > 0
            && let Some(held) = root.try_write()
        {
            left -= 1;
            drop(held);
        }
    }
}

#[test]
fn absent_closed_cycle_and_too_deep_exit_in_both_passes() {
    let root = tree(1, LEVELS, 0);
    let child = root.read().children.lookup(&1).unwrap();
    // Label 3 lists itself last among its children (a cycle, broken at the end).
    child.read().children.push(child.clone());
    for inject in [0, usize::MAX] {
        // Absent: one level below the node that answered it.
        let mut hook = inject_at_root(&root, inject);
        let walk = Walker::new().descend_optimistic(&root, Shared, |node: &Node, depth, guard| {
            hook(depth);
            if depth == 2 {
                Step::Absent
            } else {
                Step::Descend(node.children.get(0, guard).unwrap())
            }
        });
        assert_eq!(
            walk.err(),
            Some(Exit::Absent {
                level: 3,
                cause: Absence::Missing
            })
        );
        // Closed.
        child.write().closed.store(true, Relaxed);
        let mut hook = inject_at_root(&root, inject);
        let walk = Walker::new().descend_optimistic(&root, Shared, |node: &Node, depth, guard| {
            hook(depth);
            Step::Descend(node.children.get(1, guard).unwrap())
        });
        assert_eq!(
            walk.err(),
            Some(Exit::Absent {
                level: 1,
                cause: Absence::Closed
            })
        );
        child.write().closed.store(false, Relaxed);
        // A step handing back the node it was called on.
        let mut hook = inject_at_root(&root, inject);
        let walk = Walker::new().descend_optimistic(&root, Shared, |node: &Node, depth, guard| {
            hook(depth);
            // Label 3 at depth 1, then label 3 again: the node the step was called on.
            let last = if depth == 0 { 1 } else { 2 };
            Step::Descend(node.children.get(last, guard).unwrap())
        });
        assert_eq!(walk.err(), Some(Exit::Cycle { level: 2 }));
        // Too deep: the depth limit holds in both passes.
        let mut hook = inject_at_root(&root, inject);
        let walk = Walker::new().max_depth(2).descend_optimistic(
            &root,
            Shared,
            |node: &Node, depth, guard| {
                hook(depth);
                node.children
                    .get(0, guard)
                    .map_or(Step::Here, Step::Descend)
            },
        );
        assert_eq!(
            walk.err(),
            Some(Exit::TooDeep {
                level: 3,
                max_depth: 2
            })
        );
    }
    assert!(root.try_write().is_some(), "every lock released");
    child.read().children.pop();
}

#[test]
fn a_deadline_expires_while_a_writer_holds_a_node() {
    let root = tree(1, LEVELS, 0);
    let middle = root.read().children.lookup(&0).unwrap(); // label 2
    let leaf = middle.read().children.lookup(&1).unwrap(); // label 5
    for (held, level) in [(&middle, 1), (&leaf, 2)] {
        let writer = held.write();
        for max in [0, 2] {
            // On the path (label 2) the optimistic passes restart, then the pessimistic pass
            // waits for it; at the target (label 5) every pass waits for it.
            let soon = Instant::now() + Duration::from_millis(20);
            let mut seen = vec![];
            let walk = Walker::new().max_restarts(max).descend_optimistic_until(
                &root,
                Shared,
                soon,
                step_to(5, &mut seen),
            );
            assert_eq!(walk.err(), Some(Exit::TimedOut { level }));
            let mut seen = vec![];
            let walk = Walker::new().max_restarts(max).descend_optimistic_until(
                &root,
                Crab,
                Instant::now(),
                step_to(5, &mut seen),
            );
            assert_eq!(walk.err(), Some(Exit::TimedOut { level }));
        }
        drop(writer);
        let mut seen = vec![];
        let found = Walker::new()
            .descend_optimistic_until(
                &root,
                Crab,
                Instant::now() + Duration::from_mins(1),
                step_to(5, &mut seen),
            )
            .unwrap();
        assert_eq!((found.target.label, found.restarts), (5, 0));
    }
}

#[test]
fn a_reader_that_keeps_restarting_falls_back_and_finishes_under_a_stream_of_writers() {
    // A writer that holds the leaf's parent over and over: readers still finish, through
    // the pessimistic pass when their restarts run out.
    let root = tree(1, LEVELS, 0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut value = 0;
            while !stop.load(Relaxed) {
                bump(&root, 6, value);
                value += 1;
            }
        });
        for _ in 0..200 {
            let (_, _) = check_read(&root, 13);
        }
        stop.store(true, Relaxed);
    });
}

/// Pushes and pops `Arc`s of a token's clones through an `EpochVec`, pinning between, until
/// all of them are freed (crossbeam-epoch frees them once no thread pinned since their
/// removal is still pinned). Fails the test after `HANG`.
fn removed_children_are_freed() {
    let token = Arc::new(());
    let garbage: EpochVec<Arc<()>> = EpochVec::new();
    for _ in 0..100 {
        garbage.push(Arc::new(Arc::clone(&token)));
        garbage.pop();
    }
    chainlock_suite::watchdog::eventually("the removed children freed while a walk waits", || {
        garbage.push(Arc::default());
        garbage.pop();
        drop(EpochGuard::pin());
        Arc::strong_count(&token) == 1
    });
}

/// The root's first child as the target, counting the passes at the root.
fn first_child(
    runs: &AtomicUsize,
) -> impl for<'g> FnMut(&'g Node, usize, &'g EpochGuard) -> Step<&'g Handle> + '_ {
    move |node, depth, guard| {
        runs.fetch_add(usize::from(depth == 0), Relaxed);
        match depth {
            0 => node
                .children
                .get(0, guard)
                .map_or(Step::Absent, Step::Target),
            _ => Step::Absent,
        }
    }
}

/// A walk whose target is held waits for it out of its pin: children removed meanwhile are
/// freed while it waits (a pinned waiter would hold them until it got the lock). Then it
/// walks again and uses the target it waited for, or lets it go for the one the path now
/// leads to; a deadline that passes while it waits times out at the target.
#[test]
fn a_walk_waiting_for_its_target_lets_removed_children_be_freed() {
    let _watchdog = chainlock_suite::watchdog::watchdog("a_walk_waiting_for_its_target");
    let root = tree(1, 1, 0);
    let target = Arc::clone(root.read().children.get(0, &EpochGuard::pin()).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let walk = |root: &Handle, runs: &Arc<AtomicUsize>, deadline: Option<Instant>| {
        let step = first_child(runs);
        let walker = Walker::new();
        let found = match deadline {
            None => walker.descend_optimistic(root, Crab, step),
            Some(at) => walker.descend_optimistic_until(root, Crab, at, step),
        };
        found.map(|found| (found.target.a.load(Relaxed), found.pessimistic))
    };

    // Its target held by a writer: the walk waits unpinned, then uses the target.
    let held = target.write();
    let walker = std::thread::spawn({
        let (root, runs) = (Arc::clone(&root), Arc::clone(&runs));
        move || walk(&root, &runs, None)
    });
    chainlock_suite::watchdog::eventually("the walk reached its target", || {
        runs.load(Relaxed) >= 1
    });
    removed_children_are_freed();
    held.a.store(7, Relaxed);
    drop(held);
    assert_eq!(walker.join().unwrap(), Ok((7, false)));
    assert_eq!(
        runs.load(Relaxed),
        2,
        "one pass that found it held, one that used it"
    );

    // Replaced while the walk waits: the old target let go, the new one taken.
    runs.store(0, Relaxed);
    let held = target.write();
    let walker = std::thread::spawn({
        let (root, runs) = (Arc::clone(&root), Arc::clone(&runs));
        move || walk(&root, &runs, None)
    });
    chainlock_suite::watchdog::eventually("the walk reached its target", || {
        runs.load(Relaxed) >= 1
    });
    root.write().children.replace(0, tree(2, 0, 9));
    drop(held);
    // (Pessimistic or not: the root's writer may have sent it through its restarts.)
    assert_eq!(
        walker.join().unwrap().map(|(value, _)| value),
        Ok(9),
        "the new target"
    );
    assert!(target.try_write().is_some(), "the old target let go");

    // A deadline that passes while the walk waits: timed out at the target.
    runs.store(0, Relaxed);
    let new = Arc::clone(root.read().children.get(0, &EpochGuard::pin()).unwrap());
    let held = new.write();
    let deadline = Instant::now() + Duration::from_millis(50);
    assert_eq!(
        walk(&root, &runs, Some(deadline)),
        Err(Exit::TimedOut { level: 1 })
    );
    assert!(Instant::now() >= deadline);
    assert_eq!(
        runs.load(Relaxed),
        2,
        "the wait, then the pass that timed out"
    );
    drop(held);
}

/// Down the root's first child, ending there with `Step::Here`, counting the passes at
/// the root.
fn here_at_first_child(
    runs: &AtomicUsize,
) -> impl for<'g> FnMut(&'g Node, usize, &'g EpochGuard) -> Step<&'g Handle> + '_ {
    move |node, depth, guard| {
        runs.fetch_add(usize::from(depth == 0), Relaxed);
        match depth {
            0 => node
                .children
                .get(0, guard)
                .map_or(Step::Absent, Step::Descend),
            _ => Step::Here,
        }
    }
}

/// A `Here` target (the step answers at the node itself, which it cannot see while a writer
/// holds it) and a held root are waited for out of the pin too: children removed meanwhile
/// are freed while the walk waits.
#[test]
fn a_walk_waits_for_a_held_here_target_or_root_out_of_its_pin() {
    let _watchdog = chainlock_suite::watchdog::watchdog("a_walk_waits_for_a_held_here_target");
    let root = tree(1, 1, 9);
    let runs = Arc::new(AtomicUsize::new(0));
    for hold_root in [false, true] {
        runs.store(0, Relaxed);
        let node = Arc::clone(root.read().children.get(0, &EpochGuard::pin()).unwrap());
        let held = if hold_root {
            root.write()
        } else {
            node.write()
        };
        let walker = std::thread::spawn({
            let (root, runs) = (Arc::clone(&root), Arc::clone(&runs));
            move || {
                let here =
                    Walker::new().descend_optimistic(&root, Exclusive, here_at_first_child(&runs));
                here.map(|found| found.target.a.load(Relaxed))
            }
        });
        if !hold_root {
            chainlock_suite::watchdog::eventually("the walk reached the node", || {
                runs.load(Relaxed) >= 1
            });
        }
        removed_children_are_freed();
        drop(held);
        assert_eq!(
            walker.join().unwrap(),
            Ok(9),
            "the node (root held: {hold_root})"
        );
    }
}
