//! Concurrent optimistic readers and writers of `OrderedMap`, small enough for Miri's
//! data-race detector (`cargo +nightly miri test -p chainlock-trees --test ordered_map_miri`):
//! readers racing inserts that split nodes (leaves, inner nodes, the root) and removes. A
//! data race, a use of freed memory or an unpublished node anywhere in the optimistic paths
//! is reported as undefined behaviour; natively the test checks the answers.

use chainlock_trees::OrderedMap;

const KEYS: u64 = if cfg!(miri) { 40 } else { 4_000 };

#[test]
fn optimistic_readers_race_splitting_writers() {
    let map = OrderedMap::with_node_capacity(2);
    std::thread::scope(|scope| {
        // Two writers, each on its own keys (even, odd), so their answers are exact.
        for parity in 0..2 {
            let map = &map;
            scope.spawn(move || {
                for key in (parity..KEYS).step_by(2) {
                    assert_eq!(map.insert(key, key * 10), None);
                }
                for key in (parity..KEYS).step_by(4) {
                    assert_eq!(map.remove(&key), Some(key * 10));
                }
            });
        }
        // Two readers: a value, when present, is the one written for its key.
        for reader in 0..2 {
            let map = &map;
            scope.spawn(move || {
                for round in 0..3 {
                    for key in (reader + round..KEYS).step_by(3) {
                        if let Some(value) = map.get(&key) {
                            assert_eq!(value, key * 10);
                        }
                    }
                }
            });
        }
    });
    map.check().unwrap();
    assert_eq!(map.len() as u64, KEYS / 2);
    for key in 0..KEYS {
        let expected = (key % 4 >= 2).then_some(key * 10);
        assert_eq!(map.get(&key), expected, "key {key}");
    }
}
