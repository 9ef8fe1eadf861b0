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
