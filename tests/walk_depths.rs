//! Walks of run-time depth, 1 to 64, on instrumented locks: the exact hand-over-hand order
//! of every acquisition and release, an early exit, a panic, a timeout and a closed node at
//! every depth; the retaining descent releasing exactly the ancestors above the lowest safe
//! node; cycles refused; the depth limit.

use chainlock::chain::{Absence, Children};
use chainlock::walk::{Exclusive, Step, Walker};
use chainlock::{ChainNode, Exit};
use chainlock_suite::logged::{Event, LoggedMutex, id_of, take_log};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_DEPTH: usize = 64;

struct Node {
    depth: usize,
    closed: bool,
    /// Whether a structural change below may need this node changed (retaining descents).
    unsafe_: bool,
    next: Option<Arc<LoggedMutex<Node>>>,
}

impl ChainNode for Node {
    fn is_closed(&self) -> bool {
        self.closed
    }
}

/// A list as a tree: the one child of a node is under the key `()`, so that a key path of
/// `n` keys walks `n` links.
impl Children<Node> for Node {
    type Key = ();
    type Lock = LoggedMutex<Node>;

    fn child(&self, (): &()) -> Option<Lock> {
        self.next.clone()
    }
}

type Lock = Arc<LoggedMutex<Node>>;
/// What a step of an exclusive walk holds.
type Guard = chainlock::lock_api::ArcMutexGuard<chainlock_suite::logged::LoggedRawMutex, Node>;

/// A list of `len` nodes, head first.
fn list(len: usize) -> Vec<Lock> {
    let mut nodes: Vec<Lock> = Vec::new();
    for depth in (0..len).rev() {
        let next = nodes.last().cloned();
        nodes.push(Arc::new(LoggedMutex::new(Node {
            depth,
            closed: false,
            unsafe_: false,
            next,
        })));
    }
    nodes.reverse();
    nodes
}

/// Follows `next` until depth `target`, which is the target.
fn to_depth(target: usize) -> impl FnMut(&mut Guard, usize) -> Step<Lock> {
    move |node, depth| {
        assert_eq!(node.depth, depth, "the step sees the node at its depth");
        if depth == target {
            Step::Here
        } else {
            node.next.clone().map_or(Step::Absent, Step::Descend)
        }
    }
}

/// `L0, L1, U0, L2, U1, ..., L(last), U(last - 1)`: locked `0..=last` hand over hand.
fn hand_over_hand(nodes: &[Lock], last: usize) -> Vec<Event> {
    let mut log = vec![Event::Locked(id_of(&nodes[0]))];
    for depth in 1..=last {
        log.push(Event::Locked(id_of(&nodes[depth])));
        log.push(Event::Unlocked(id_of(&nodes[depth - 1])));
    }
    log
}

fn assert_all_unlocked(nodes: &[Lock]) {
    for (depth, node) in nodes.iter().enumerate() {
        assert!(!node.is_locked(), "depth {depth} is still locked");
    }
}

#[test]
fn every_depth_is_walked_hand_over_hand() {
    for len in 1..=MAX_DEPTH {
        let nodes = list(len);
        take_log();
        let target = Walker::new()
            .descend(&nodes[0], Exclusive, to_depth(len - 1))
            .unwrap();
        assert_eq!(target.depth, len - 1);
        assert_eq!(take_log(), hand_over_hand(&nodes, len - 1), "length {len}");
        drop(target);
        assert_eq!(take_log(), [Event::Unlocked(id_of(&nodes[len - 1]))]);
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn an_absent_node_at_every_depth_ends_the_walk_there() {
    for len in 1..=MAX_DEPTH {
        let nodes = list(len);
        take_log();
        // The list ends at `len - 1`; asking for one more is absent at depth `len`.
        let outcome = Walker::new().descend(&nodes[0], Exclusive, to_depth(len));
        assert_eq!(
            outcome.err(),
            Some(Exit::Absent {
                level: len,
                cause: Absence::Missing
            })
        );
        let mut expected = hand_over_hand(&nodes, len - 1);
        expected.push(Event::Unlocked(id_of(&nodes[len - 1])));
        assert_eq!(take_log(), expected, "length {len}");
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn a_panic_at_every_depth_releases_what_the_walk_holds() {
    let nodes = list(MAX_DEPTH);
    for at in 0..MAX_DEPTH {
        take_log();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            Walker::new().descend(&nodes[0], Exclusive, |node, depth| {
                assert!(depth != at, "injected panic at depth {at}");
                node.next.clone().map_or(Step::Here, Step::Descend)
            })
        }));
        assert!(outcome.is_err(), "depth {at}: the panic reaches the caller");
        let mut expected = hand_over_hand(&nodes, at);
        expected.push(Event::Unlocked(id_of(&nodes[at])));
        assert_eq!(take_log(), expected, "panic at depth {at}");
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn a_closed_node_at_every_depth_behaves_as_absent() {
    let nodes = list(MAX_DEPTH);
    for at in 0..MAX_DEPTH {
        nodes[at].lock().closed = true;
        take_log();
        let outcome = Walker::new().descend(&nodes[0], Exclusive, to_depth(MAX_DEPTH - 1));
        assert_eq!(
            outcome.err(),
            Some(Exit::Absent {
                level: at,
                cause: Absence::Closed
            })
        );
        let mut expected = hand_over_hand(&nodes, at);
        expected.push(Event::Unlocked(id_of(&nodes[at])));
        assert_eq!(take_log(), expected, "closed at depth {at}");
        assert_all_unlocked(&nodes);
        nodes[at].lock().closed = false;
    }
}

#[test]
fn a_deadline_at_every_depth_names_the_depth_and_releases_everything() {
    let nodes = list(16);
    for at in 0..16 {
        // Held by this very thread: the walk's timed wait cannot succeed.
        let held = nodes[at].lock();
        take_log();
        let deadline = Instant::now() + Duration::from_millis(2);
        let outcome = Walker::new().descend_until(&nodes[0], Exclusive, deadline, to_depth(15));
        assert_eq!(outcome.err(), Some(Exit::TimedOut { level: at }));
        drop(held);
        let mut expected = if at == 0 {
            vec![]
        } else {
            hand_over_hand(&nodes, at - 1)
        };
        if at > 0 {
            expected.push(Event::Unlocked(id_of(&nodes[at - 1])));
        }
        expected.push(Event::Unlocked(id_of(&nodes[at])));
        assert_eq!(take_log(), expected, "timed out at depth {at}");
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn a_step_handing_back_its_own_lock_is_a_cycle_not_a_deadlock() {
    let nodes = list(4);
    for at in 0..4 {
        let this = nodes[at].clone();
        let outcome = Walker::new().descend(&nodes[0], Exclusive, |node, depth| {
            if depth == at {
                Step::Descend(this.clone())
            } else {
                node.next.clone().map_or(Step::Here, Step::Descend)
            }
        });
        assert_eq!(outcome.err(), Some(Exit::Cycle { level: at + 1 }));
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn the_depth_limit_stops_a_walk_before_it_goes_deeper() {
    let nodes = list(10);
    for limit in 0..9 {
        let walker = Walker::new().max_depth(limit);
        let outcome = walker.descend(&nodes[0], Exclusive, to_depth(9));
        assert_eq!(
            outcome.err(),
            Some(Exit::TooDeep {
                level: limit + 1,
                max_depth: limit
            })
        );
        assert_all_unlocked(&nodes);
        // Exactly at the limit is allowed.
        assert_eq!(
            walker
                .descend(&nodes[0], Exclusive, to_depth(limit))
                .unwrap()
                .depth,
            limit
        );
    }
}

/// Which depths are still locked.
fn locked(nodes: &[Lock]) -> Vec<usize> {
    (0..nodes.len())
        .filter(|&depth| nodes[depth].is_locked())
        .collect()
}

#[test]
fn the_retaining_descent_keeps_exactly_the_ancestors_below_the_lowest_safe_node() {
    const LEN: usize = 10;
    // Every pattern of unsafe nodes over the last few depths, and a few spread ones.
    let patterns: Vec<u32> = (0..(1 << 6))
        .map(|bits| bits << (LEN - 6))
        .chain([0b10_1010_1010, 0b11_1111_1111, 1])
        .collect();
    for pattern in patterns {
        let nodes = list(LEN);
        for (depth, node) in nodes.iter().enumerate() {
            node.lock().unsafe_ = pattern & (1 << depth) != 0;
        }
        let path = Walker::new()
            .descend_retaining(&nodes[0], to_depth(LEN - 1), |node, _| !node.unsafe_)
            .unwrap();
        // The top of the path is the lowest safe node (or the root when none is safe).
        let top = (0..LEN)
            .rev()
            .find(|&depth| pattern & (1 << depth) == 0)
            .unwrap_or(0);
        assert_eq!(path.top_depth(), top, "pattern {pattern:#b}");
        assert_eq!(path.target_depth(), LEN - 1);
        assert_eq!(
            locked(&nodes),
            (top..LEN).collect::<Vec<_>>(),
            "pattern {pattern:#b}"
        );
        let depths: Vec<usize> = path.iter().map(|node| node.depth).collect();
        assert_eq!(
            depths,
            (top..LEN).rev().collect::<Vec<_>>(),
            "leaf first, upward"
        );
        take_log();
        drop(path);
        // Released top-down: the top-most ancestor first, the target last.
        let expected: Vec<Event> = (top..LEN)
            .map(|depth| Event::Unlocked(id_of(&nodes[depth])))
            .collect();
        assert_eq!(take_log(), expected, "pattern {pattern:#b}");
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn the_retaining_descent_releases_its_path_on_every_early_exit() {
    let nodes = list(12);
    for node in &nodes {
        node.lock().unsafe_ = true; // retain everything
    }
    // A panic at every depth.
    for at in 0..12 {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            Walker::new().descend_retaining(
                &nodes[0],
                |node, depth| {
                    assert!(depth != at, "injected panic");
                    node.next.clone().map_or(Step::Here, Step::Descend)
                },
                |node, _| !node.unsafe_,
            )
        }));
        assert!(outcome.is_err());
        assert_all_unlocked(&nodes);
    }
    // A closed node, an absent one, a timeout and a cycle through a retained ancestor.
    nodes[5].lock().closed = true;
    let outcome = Walker::new().descend_retaining(&nodes[0], to_depth(11), |node, _| !node.unsafe_);
    assert_eq!(
        outcome.err(),
        Some(Exit::Absent {
            level: 5,
            cause: Absence::Closed
        })
    );
    assert_all_unlocked(&nodes);
    nodes[5].lock().closed = false;

    let outcome = Walker::new().descend_retaining(&nodes[0], to_depth(12), |node, _| !node.unsafe_);
    assert_eq!(
        outcome.err(),
        Some(Exit::Absent {
            level: 12,
            cause: Absence::Missing
        })
    );
    assert_all_unlocked(&nodes);

    let held = nodes[7].lock();
    let deadline = Instant::now() + Duration::from_millis(2);
    let outcome =
        Walker::new()
            .descend_retaining_until(&nodes[0], deadline, to_depth(11), |node, _| !node.unsafe_);
    assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 7 }));
    drop(held);
    assert_all_unlocked(&nodes);

    let ancestor = nodes[2].clone();
    let outcome = Walker::new().descend_retaining(
        &nodes[0],
        |node, depth| {
            if depth == 6 {
                Step::Descend(ancestor.clone())
            } else {
                node.next.clone().map_or(Step::Here, Step::Descend)
            }
        },
        |node, _| !node.unsafe_,
    );
    assert_eq!(outcome.err(), Some(Exit::Cycle { level: 7 }));
    assert_all_unlocked(&nodes);
}

#[test]
fn a_retained_path_can_release_its_upper_part_early() {
    let nodes = list(6);
    let mut path = Walker::new()
        .descend_retaining(&nodes[0], to_depth(5), |_, _| false)
        .unwrap();
    assert_eq!(locked(&nodes), [0, 1, 2, 3, 4, 5]);
    path.get_mut(1).unwrap().unsafe_ = true; // the parent, through the path
    take_log();
    path.release_above(2);
    assert_eq!(
        take_log(),
        [0, 1, 2, 3].map(|d| Event::Unlocked(id_of(&nodes[d])))
    );
    assert_eq!((path.top_depth(), path.len()), (4, 2));
    assert!(path.get(1).unwrap().unsafe_);
    let target = path.into_target();
    assert_eq!(locked(&nodes), [5]);
    drop(target);
    assert_all_unlocked(&nodes);
}

#[test]
fn a_key_path_is_held_to_the_depth_limit_whatever_its_iterator_says_of_its_length() {
    let nodes = list(10);
    for limit in 0..9 {
        let walker = Walker::new().max_depth(limit);
        // A path longer than the limit, with an exact length (a slice) and with none
        // (`size_hint` is `(0, None)`): both stop at the limit.
        let exact = vec![(); limit + 1];
        let unknown = {
            let mut left = limit + 1;
            std::iter::from_fn(move || (left > 0).then(|| left -= 1))
        };
        for outcome in [
            walker.descend_keys(&nodes[0], Exclusive, exact),
            walker.descend_keys(&nodes[0], Exclusive, unknown),
        ] {
            assert_eq!(
                outcome.err(),
                Some(Exit::TooDeep {
                    level: limit + 1,
                    max_depth: limit
                })
            );
            assert_all_unlocked(&nodes);
        }
        // A path exactly as long as the limit reaches its node.
        let target = walker
            .descend_keys(&nodes[0], Exclusive, vec![(); limit])
            .unwrap();
        assert_eq!(target.depth, limit);
        drop(target);
        assert_all_unlocked(&nodes);
    }
}

/// `len` keys whose iterator claims there are at most `claimed` (which the standard library
/// allows an iterator to get wrong).
struct LyingKeys {
    left: usize,
    claimed: usize,
}

impl Iterator for LyingKeys {
    type Item = ();

    fn next(&mut self) -> Option<()> {
        (self.left > 0).then(|| self.left -= 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.claimed))
    }
}

#[test]
fn a_key_path_whose_iterator_understates_its_length_still_stops_at_the_depth_limit() {
    let nodes = list(60);
    let walker = Walker::new().max_depth(10);
    let lying = || LyingKeys {
        left: 50,
        claimed: 2,
    };
    // Every mode's loop: `Exclusive` (its path is its target) through the blocking and the
    // deadline flavors.
    let deadline = Instant::now() + Duration::from_mins(1);
    // (`.err()` at once: a walk that wrongly succeeds releases its target before the next.)
    for exit in [
        walker.descend_keys(&nodes[0], Exclusive, lying()).err(),
        walker
            .descend_keys_until(&nodes[0], Exclusive, deadline, lying())
            .err(),
        walker.run_keys(&nodes[0], Exclusive, lying(), |_| ()).err(),
    ] {
        assert_eq!(
            exit,
            Some(Exit::TooDeep {
                level: 11,
                max_depth: 10
            })
        );
        assert_all_unlocked(&nodes);
    }
    // Honest about its length, the same path at the same limit: the same exit.
    let honest = vec![(); 50];
    assert_eq!(
        walker.descend_keys(&nodes[0], Exclusive, honest).err(),
        Some(Exit::TooDeep {
            level: 11,
            max_depth: 10
        })
    );
    // Within the limit, the lie does not matter: the walk ends where the keys do.
    let short = LyingKeys {
        left: 10,
        claimed: 2,
    };
    assert_eq!(
        walker
            .descend_keys(&nodes[0], Exclusive, short)
            .unwrap()
            .depth,
        10
    );
    assert_all_unlocked(&nodes);
}

#[test]
fn an_endless_key_path_round_a_ring_ends_at_the_depth_limit() {
    let nodes = list(3);
    nodes[2].lock().next = Some(nodes[0].clone());
    let outcome =
        Walker::new()
            .max_depth(1000)
            .descend_keys(&nodes[0], Exclusive, std::iter::repeat(()));
    assert_eq!(
        outcome.err(),
        Some(Exit::TooDeep {
            level: 1001,
            max_depth: 1000
        })
    );
    assert_all_unlocked(&nodes);
    nodes[2].lock().next = None;
}

#[test]
fn a_ring_ends_at_the_default_depth_limit_instead_of_walking_forever() {
    let nodes = list(3);
    // The last node links back to the first: each node is released before the walk comes
    // back to it, so only the depth limit can stop it.
    nodes[2].lock().next = Some(nodes[0].clone());
    let outcome = Walker::new().descend(&nodes[0], Exclusive, |node, _| {
        node.next.clone().map_or(Step::Here, Step::Descend)
    });
    assert_eq!(
        outcome.err(),
        Some(Exit::TooDeep {
            level: Walker::DEFAULT_MAX_DEPTH + 1,
            max_depth: Walker::DEFAULT_MAX_DEPTH
        })
    );
    assert_all_unlocked(&nodes);
    nodes[2].lock().next = None; // break the ring so the nodes are freed
}

/// Follows `next`, answering `Target` for the node at depth `target`.
fn target_at(target: usize) -> impl FnMut(&mut Guard, usize) -> Step<Lock> {
    move |node, depth| {
        let next = node.next.clone().expect("the list is long enough");
        if depth + 1 == target {
            Step::Target(next)
        } else {
            Step::Descend(next)
        }
    }
}

#[test]
fn every_depth_reached_by_a_target_step_is_walked_hand_over_hand() {
    for len in 2..=MAX_DEPTH {
        let nodes = list(len);
        take_log();
        let target = Walker::new()
            .descend(&nodes[0], Exclusive, target_at(len - 1))
            .unwrap();
        assert_eq!(target.depth, len - 1);
        // The target is locked before its parent is released, as every other level.
        assert_eq!(take_log(), hand_over_hand(&nodes, len - 1), "length {len}");
        drop(target);
        assert_all_unlocked(&nodes);
    }
}

#[test]
fn the_retaining_descent_locks_each_node_before_releasing_the_ancestors_above_it() {
    const LEN: usize = 12;
    for pattern in [
        0u32,
        0b1111_1111_1111,
        0b1010_1010_1010,
        0b0110_0011_0001,
        1 << 11,
    ] {
        let nodes = list(LEN);
        let safe = |depth: usize| pattern & (1 << depth) != 0;
        take_log();
        let path = Walker::new()
            .descend_retaining(&nodes[0], target_at(LEN - 1), |node, _| safe(node.depth))
            .unwrap();
        // Expected: lock each node, then, if it is safe, release every ancestor held above
        // it, top-most first.
        let mut expected = vec![];
        let mut top = 0;
        for depth in 0..LEN {
            expected.push(Event::Locked(id_of(&nodes[depth])));
            if safe(depth) && depth > top {
                expected.extend((top..depth).map(|held| Event::Unlocked(id_of(&nodes[held]))));
                top = depth;
            }
        }
        assert_eq!(take_log(), expected, "pattern {pattern:#b}");
        assert_eq!(path.top_depth(), top);
        drop(path);
        assert_all_unlocked(&nodes);
    }
}
