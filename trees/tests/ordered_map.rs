//! The B+-tree against `std::collections::BTreeMap` on random operation sequences, and
//! under concurrent inserts, gets and removes with its invariants checked.

use chainlock_trees::{OrderedMap, Rng};
use std::collections::BTreeMap;
use std::sync::Arc;

#[test]
fn random_sequences_answer_as_btreemap_does() {
    for capacity in [2, 3, 4, 5, 8, 32] {
        for seed in 1..=8u64 {
            let map = OrderedMap::with_node_capacity(capacity);
            let mut model = BTreeMap::new();
            let mut rng = Rng::new(seed);
            let keys = [16, 256, 4096][seed as usize % 3];
            for step in 0..4_000 {
                let key = rng.below(keys);
                match rng.below(10) {
                    0..5 => assert_eq!(
                        map.insert(key, step),
                        model.insert(key, step),
                        "insert {key}"
                    ),
                    5..8 => assert_eq!(map.get(&key), model.get(&key).copied(), "get {key}"),
                    _ => assert_eq!(map.remove(&key), model.remove(&key), "remove {key}"),
                }
                assert_eq!(map.len(), model.len());
            }
            map.check().unwrap_or_else(|violation| {
                panic!("capacity {capacity}, seed {seed}: {violation}")
            });
            let entries: Vec<(u64, u64)> = model.into_iter().collect();
            assert_eq!(map.to_vec(), entries, "capacity {capacity}, seed {seed}");
        }
    }
}

#[test]
fn ascending_and_descending_inserts_split_every_level_correctly() {
    for capacity in [2, 3, 4] {
        let up = OrderedMap::with_node_capacity(capacity);
        let down = OrderedMap::with_node_capacity(capacity);
        for key in 0..2_000u32 {
            assert_eq!(up.insert(key, key), None);
            assert_eq!(down.insert(2_000 - key, key), None);
        }
        up.check().unwrap();
        down.check().unwrap();
        assert_eq!(up.to_vec().len(), 2_000);
        assert!(up.restarts() > 0, "full leaves made inserts restart");
    }
}

#[test]
fn concurrent_inserts_gets_and_removes_keep_the_tree_valid_and_lose_nothing() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 4_000;
    let map = Arc::new(OrderedMap::with_node_capacity(4));
    let views: Vec<BTreeMap<u64, u64>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let map = &map;
                scope.spawn(move || {
                    let mut rng = Rng::new(thread);
                    // Each thread owns the keys `k * THREADS + thread`: its own view is exact.
                    let mut mine = BTreeMap::new();
                    for step in 0..PER_THREAD {
                        let key = rng.below(PER_THREAD) * THREADS + thread;
                        match rng.below(10) {
                            0..6 => assert_eq!(map.insert(key, step), mine.insert(key, step)),
                            6..8 => assert_eq!(map.get(&key), mine.get(&key).copied()),
                            _ => assert_eq!(map.remove(&key), mine.remove(&key)),
                        }
                    }
                    mine
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect()
    });
    map.check().unwrap();
    // The union of the threads' exact views is the map.
    let mut expected: Vec<(u64, u64)> = views.into_iter().flatten().collect();
    expected.sort_unstable();
    assert_eq!(map.to_vec(), expected);
}

#[test]
#[should_panic(expected = "at least 2 keys")]
fn a_capacity_below_two_is_refused() {
    let _ = OrderedMap::<u8, u8>::with_node_capacity(1);
}

#[test]
fn only_an_insert_that_may_split_restarts() {
    let map = OrderedMap::with_node_capacity(4);
    for key in 0..4 {
        map.insert(key, 0);
    }
    assert_eq!(map.restarts(), 0, "the leaf had room for each");
    // The leaf is full: replacing a value cannot split it, so the shared pass suffices.
    assert_eq!(map.insert(2, 1), Some(0));
    assert_eq!(map.restarts(), 0);
    // A new key in the full leaf splits it: one restart, as a retaining descent.
    assert_eq!(map.insert(4, 0), None);
    assert_eq!(map.restarts(), 1);
    map.check().unwrap();
}

/// A key whose comparison panics on the `n`-th call on this thread, once armed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Flaky(u64);

thread_local! {
    static COMPARISONS_LEFT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

fn arm(after: Option<u64>) {
    COMPARISONS_LEFT.with(|left| left.set(after));
}

impl Ord for Flaky {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        COMPARISONS_LEFT.with(|left| match left.get() {
            Some(0) => {
                left.set(None);
                panic!("injected comparison panic");
            }
            Some(n) => left.set(Some(n - 1)),
            None => {}
        });
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for Flaky {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl chainlock_trees::Word for Flaky {
    fn to_word(self) -> u64 {
        self.0
    }
    fn from_word(word: u64) -> Self {
        Flaky(word)
    }
}

/// Inserts (and removes) of new keys into full and non-full leaves at every depth, with a
/// panic injected at each comparison in turn: the panicking call changes no entry, every
/// other entry stays, `len()` stays exact and the tree stays valid. Also on the fallback
/// paths (every optimistic validation failing).
#[test]
fn a_panicking_comparison_loses_no_entry_and_keeps_len_exact() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for fallback in [false, true] {
        for capacity in [2, 3, 4] {
            for target in [0_u64, 1, 37, 61, 999, 1_001] {
                let mut n = 0;
                loop {
                    let map = OrderedMap::with_node_capacity(capacity);
                    let mut model = BTreeMap::new();
                    // Even keys, dense enough that leaves are full at several depths.
                    for key in (0..400).step_by(2) {
                        map.insert(Flaky(key), key);
                        model.insert(key, key);
                    }
                    if fallback {
                        map.inject_restarts(anchor_level(&map), 1);
                    }
                    arm(Some(n));
                    let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        map.insert(Flaky(target), 7)
                    }));
                    arm(None);
                    if let Ok(old) = inserted {
                        assert_eq!(old, model.insert(target, 7));
                    }
                    // A remove with the same injection, on the same map.
                    arm(Some(n));
                    let removed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        map.remove(&Flaky(200))
                    }));
                    arm(None);
                    if let Ok(old) = removed {
                        assert_eq!(old, model.remove(&200));
                    }
                    map.inject_restarts(0, 0);
                    map.check().unwrap_or_else(|violation| {
                        panic!("capacity {capacity}, target {target}, panic at comparison {n}: {violation}")
                    });
                    assert_eq!(
                        map.len(),
                        model.len(),
                        "len() exact after a panic at comparison {n}"
                    );
                    let expected: Vec<(Flaky, u64)> =
                        model.iter().map(|(&k, &v)| (Flaky(k), v)).collect();
                    assert_eq!(map.to_vec(), expected, "no entry lost (comparison {n})");
                    if inserted.is_ok() && removed.is_ok() {
                        break;
                    }
                    n += 1;
                }
                assert!(n > 0, "some comparison panicked");
            }
        }
    }
    std::panic::set_hook(hook);
}

/// The level of the anchor (the root's plus one): a restart injected there on every
/// validation sends every operation to its fallback path.
fn anchor_level<K: chainlock_trees::Word + Ord, V: chainlock_trees::Word>(
    map: &OrderedMap<K, V>,
) -> usize {
    map.injected_restarts_by_level().len() - 1
}

/// Restarts injected at each level in turn (every 2nd validation there fails), and at the
/// anchor on every validation (every operation on its fallback path), single- and
/// multi-threaded: answers as `BTreeMap` does.
#[test]
fn injected_restarts_at_every_level_change_no_answer() {
    let levels = {
        let map = OrderedMap::with_node_capacity(3);
        for key in (0..3_000_u64).step_by(3) {
            map.insert(key, key);
        }
        anchor_level(&map) + 1
    };
    assert!(levels >= 6, "a deep tree: {levels} levels");
    for (level, every) in (0..levels).map(|level| (level, 2)).chain([(usize::MAX, 1)]) {
        let map = OrderedMap::with_node_capacity(3);
        let mut model = BTreeMap::new();
        for key in (0..3_000_u64).step_by(3) {
            map.insert(key, key);
            model.insert(key, key);
        }
        let level = if level == usize::MAX {
            anchor_level(&map)
        } else {
            level
        };
        map.inject_restarts(level, every);
        let mut rng = Rng::new(level as u64);
        for step in 0..2_000 {
            let key = rng.below(4_000);
            match rng.below(10) {
                0..4 => assert_eq!(map.insert(key, step), model.insert(key, step)),
                4..8 => assert_eq!(map.get(&key), model.get(&key).copied()),
                _ => assert_eq!(map.remove(&key), model.remove(&key)),
            }
        }
        let by_level = map.injected_restarts_by_level();
        assert!(
            by_level[level] > 0,
            "restarts injected at level {level}: {by_level:?}"
        );
        map.inject_restarts(0, 0);
        map.check().unwrap();
        let entries: Vec<(u64, u64)> = model.into_iter().collect();
        assert_eq!(map.to_vec(), entries, "level {level}, every {every}");
    }
    // Concurrently, on the fallback paths and with restarts at the leaves.
    for fallback in [true, false] {
        let map = OrderedMap::with_node_capacity(3);
        if fallback {
            map.inject_restarts(anchor_level(&map), 1);
        } else {
            map.inject_restarts(0, 3);
        }
        let views: Vec<BTreeMap<u64, u64>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4_u64)
                .map(|thread| {
                    let map = &map;
                    scope.spawn(move || {
                        let mut rng = Rng::new(thread + 10);
                        let mut mine = BTreeMap::new();
                        for step in 0..1_500 {
                            let key = rng.below(1_000) * 4 + thread;
                            match rng.below(10) {
                                0..6 => assert_eq!(map.insert(key, step), mine.insert(key, step)),
                                6..8 => assert_eq!(map.get(&key), mine.get(&key).copied()),
                                _ => assert_eq!(map.remove(&key), mine.remove(&key)),
                            }
                        }
                        mine
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        map.inject_restarts(0, 0);
        map.check().unwrap();
        let mut expected: Vec<(u64, u64)> = views.into_iter().flatten().collect();
        expected.sort_unstable();
        assert_eq!(map.to_vec(), expected);
    }
}
