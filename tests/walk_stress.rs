//! Walks of run-time depth under contention: latch crabbing keeps the path shared and only
//! the target exclusive; many threads on a recursive tree with random paths in every mode,
//! checked by invariants; the speculative descent's restarts.

use chainlock::parking_lot::RwLock;
use chainlock::walk::{Crab, Exclusive, Shared, Step, Walker};
use chainlock::{ChainNode, Exit};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A node of a complete tree: `pair` is changed only as a whole, `(n, n)`, under an
/// exclusive lock, so a reader that sees unequal halves saw a torn write.
#[derive(ChainNode)]
struct Node {
    #[chain(children)]
    children: Vec<Arc<RwLock<Node>>>,
    pair: (u64, u64),
    depth: usize,
}

/// A complete tree of `fanout` children per node, `depth` levels below the root.
fn tree(fanout: usize, depth: usize, level: usize) -> Arc<RwLock<Node>> {
    let children = if level == depth {
        vec![]
    } else {
        (0..fanout)
            .map(|_| tree(fanout, depth, level + 1))
            .collect()
    };
    Arc::new(RwLock::new(Node {
        children,
        pair: (0, 0),
        depth: level,
    }))
}

fn for_each(node: &Arc<RwLock<Node>>, visit: &mut impl FnMut(&Node)) {
    let node = node.read();
    visit(&node);
    for child in &node.children {
        for_each(child, visit);
    }
}

#[test]
fn crabbing_read_locks_the_path_and_write_locks_only_the_target() {
    let root = tree(2, 6, 0);
    // The root cannot be a crab walk's target by `Here` (it is only read-locked)...
    let here = Walker::new().descend(&root, Crab, |_, _| Step::Here);
    assert_eq!(here.err(), Some(Exit::NotExclusive { level: 0 }));
    assert!(!root.is_locked());
    // ...but an empty key path makes it the exclusive target.
    let root_target = Walker::new()
        .descend_keys(&root, Crab, [0usize; 0])
        .unwrap();
    assert!(root.is_locked_exclusive());
    drop(root_target);

    let mut nodes = vec![root.clone()];
    for _ in 0..6 {
        let next = nodes.last().unwrap().read().children[1].clone();
        nodes.push(next);
    }
    for len in 1..=6 {
        let mut seen = Vec::new();
        let mut target = Walker::new()
            .descend(&root, Crab, |node, depth| {
                seen.push(depth);
                if depth > 0 {
                    assert!(
                        !nodes[depth - 1].is_locked(),
                        "depth {depth}: the parent was released"
                    );
                }
                let child = node.children[1].clone();
                assert!(
                    !child.is_locked(),
                    "the child is not locked before the step asks"
                );
                if depth + 1 == len {
                    Step::Target(child)
                } else {
                    Step::Descend(child)
                }
            })
            .unwrap();
        assert!(
            nodes[len].is_locked_exclusive(),
            "the target is write-locked"
        );
        assert!(
            !nodes[len - 1].is_locked(),
            "the target's parent was released"
        );
        assert_eq!(target.depth, len);
        assert_eq!(seen, (0..len).collect::<Vec<_>>());
        assert!(!root.is_locked(), "the path was released");
        target.pair.0 += 1;
        target.pair.1 += 1;
    }
}

/// Each node the crab walk passes through is read-locked, not write-locked, while the step
/// runs on it.
#[test]
fn crab_path_nodes_are_read_locked_while_the_step_runs() {
    let root = tree(2, 4, 0);
    let mut nodes = vec![root.clone()];
    for _ in 0..4 {
        let next = nodes.last().unwrap().read().children[0].clone();
        nodes.push(next);
    }
    let target = Walker::new()
        .descend(&root, Crab, |node, depth| {
            let this = &nodes[depth];
            assert!(
                this.is_locked() && !this.is_locked_exclusive(),
                "depth {depth}"
            );
            assert!(this.try_read().is_some(), "other readers get in");
            let child = node.children[0].clone();
            if depth == 3 {
                Step::Target(child)
            } else {
                Step::Descend(child)
            }
        })
        .unwrap();
    assert!(nodes[4].is_locked_exclusive());
    drop(target);
}

#[test]
fn a_crab_path_node_is_shared_with_other_readers_while_the_walk_holds_it() {
    let root = tree(2, 3, 0);
    let other_reader = root.read(); // a long reader at the root does not stop the walk
    let mut target = Walker::new().descend_keys(&root, Crab, [0, 1, 0]).unwrap();
    target.pair = (7, 7);
    drop(target);
    drop(other_reader);
    let leaf = Walker::new()
        .descend_keys(&root, Shared, [0, 1, 0])
        .unwrap();
    assert_eq!(leaf.pair, (7, 7));
}

/// A small xorshift generator: deterministic per thread, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn many_threads_walk_random_paths_in_every_mode_without_a_torn_write_or_a_lost_update() {
    const THREADS: u64 = 8;
    const OPS: u64 = 3_000;
    const FANOUT: usize = 3;
    const DEPTH: usize = 4;
    let root = tree(FANOUT, DEPTH, 0);
    let writes = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for seed in 0..THREADS {
            let (root, writes) = (&root, &writes);
            scope.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (seed + 1));
                for _ in 0..OPS {
                    let len = rng.below(DEPTH + 1);
                    let path: Vec<usize> = (0..len).map(|_| rng.below(FANOUT)).collect();
                    match rng.below(4) {
                        0 => {
                            let node = Walker::new().descend_keys(root, Shared, &path).unwrap();
                            assert_eq!(node.pair.0, node.pair.1, "torn write seen by a reader");
                            assert_eq!(node.depth, len);
                        }
                        1 => {
                            let mut node = Walker::new().descend_keys(root, Crab, &path).unwrap();
                            node.pair.0 += 1;
                            node.pair.1 += 1;
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                        2 => {
                            let mut node =
                                Walker::new().descend_keys(root, Exclusive, &path).unwrap();
                            node.pair.0 += 1;
                            node.pair.1 += 1;
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            // Retain everything below depth 1: every node on the path gets
                            // the write, all at once, as a propagated change would.
                            let mut path_guards = Walker::new()
                                .descend_retaining(
                                    root,
                                    |node, depth| {
                                        path.get(depth).map_or(Step::Here, |&key| {
                                            Step::Descend(node.children[key].clone())
                                        })
                                    },
                                    |_, depth| depth <= 1,
                                )
                                .unwrap();
                            let mut changed = 0;
                            for node in path_guards.iter_mut() {
                                node.pair.0 += 1;
                                node.pair.1 += 1;
                                changed += 1;
                            }
                            assert_eq!(changed, path_guards.len());
                            assert_eq!(path_guards.len(), if len <= 1 { 1 } else { len });
                            writes.fetch_add(changed as u64, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let mut total = 0;
    for_each(&root, &mut |node| {
        assert_eq!(node.pair.0, node.pair.1);
        total += node.pair.0;
    });
    assert_eq!(total, writes.load(Ordering::Relaxed), "no update lost");
    assert!(!root.is_locked());
}

#[test]
fn the_speculative_descent_restarts_exactly_when_the_target_is_unsafe() {
    let root = tree(2, 3, 0);
    // Walk to the leaf under [1, 0, 1]; "safe" is an even first half of `pair`.
    let keys = [1usize, 0, 1];
    let step = |node: &Node, depth: usize| {
        let child = node.children[keys[depth]].clone();
        if depth + 1 == keys.len() {
            Step::Target(child)
        } else {
            Step::Descend(child)
        }
    };
    let safe = |node: &Node, _| node.pair.0.is_multiple_of(2);
    for round in 0..6u64 {
        let mut found = Walker::new()
            .descend_speculative(&root, step, safe)
            .unwrap();
        let unsafe_target = round % 2 == 1;
        assert_eq!(found.restarts, usize::from(unsafe_target), "round {round}");
        assert_eq!(found.path.target().depth, 3);
        // A restart retains the target and its parent, the lowest safe node (only targets
        // are ever changed here, so every inner node stays even).
        let retained = found.path.len();
        assert_eq!(retained, if unsafe_target { 2 } else { 1 }, "round {round}");
        assert_eq!(found.path.top_depth(), if unsafe_target { 2 } else { 3 });
        let target = found.path.target_mut();
        target.pair.0 += 1;
        target.pair.1 += 1;
    }
    assert!(!root.is_locked());
}

#[test]
fn a_walks_target_can_be_narrowed_to_a_field_and_still_holds_the_lock() {
    use chainlock::mapped::MappedGuard;
    let root = tree(2, 2, 0);
    let target = Walker::new().descend_keys(&root, Crab, [1, 0]).unwrap();
    let mut pair = MappedGuard::map(target, |node| &mut node.pair);
    pair.0 += 5;
    pair.1 += 5;
    let leaf = root.read().children[1].read().children[0].clone();
    assert!(
        leaf.try_read().is_none(),
        "the narrowed guard keeps the write lock"
    );
    drop(pair);
    assert_eq!(leaf.read().pair, (5, 5));
}
