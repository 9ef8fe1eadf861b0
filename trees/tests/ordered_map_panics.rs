//! `OrderedMap` under keys whose `Ord` or `Clone` panics: a panic injected at every call into
//! a key's code during an insert (the k-th comparison or clone, for every k until the insert
//! gets through), through leaf and inner splits and root splits, must leave every other entry
//! in place, `len()` exact, no lock held, and the tree valid.
//!
//! Uses only the map's public operations (`with_node_capacity`, `insert`, `get`, `remove`,
//! `len`, `to_vec`, `check`), so that any ordered map with them can be put under it.

use chainlock_trees::{OrderedMap, Rng};
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Calls into key code left before the injected panic (`None`: disarmed). Per thread,
    /// so that tests running at once do not disarm each other.
    static FUSE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The payload of an injected panic (the panic hook stays quiet about these).
struct Injected;

/// One call into key code: panics if it is the one the fuse was set for.
fn tick() {
    FUSE.with(|fuse| {
        if let Some(left) = fuse.get() {
            if left <= 1 {
                fuse.set(None);
                panic::panic_any(Injected);
            }
            fuse.set(Some(left - 1));
        }
    });
}

/// A key whose comparisons and clones count down the thread's fuse.
#[derive(PartialEq, Eq, Debug)]
struct Key(u64);

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        tick();
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Clone for Key {
    fn clone(&self) -> Self {
        tick();
        Key(self.0)
    }
}

fn quiet_injected_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Injected>() {
                default(info);
            }
        }));
    });
}

/// Runs `operation` with a panic injected at the `k`-th call into key code; `None` if it came.
fn with_fuse<T>(k: u64, operation: impl FnOnce() -> T) -> Option<T> {
    FUSE.with(|fuse| fuse.set(Some(k)));
    let outcome = panic::catch_unwind(AssertUnwindSafe(operation));
    FUSE.with(|fuse| fuse.set(None));
    match outcome {
        Ok(value) => Some(value),
        Err(payload) if payload.is::<Injected>() => None,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// The map holds exactly `model`, except that `failed` (the key of the insert that panicked)
/// may hold its old value, the new one, or be absent if it had none.
fn assert_exact(
    map: &OrderedMap<Key, u64>,
    model: &BTreeMap<u64, u64>,
    failed: (u64, u64),
    context: &str,
) {
    map.check()
        .unwrap_or_else(|violation| panic!("{context}: {violation}"));
    let entries: BTreeMap<u64, u64> = map.to_vec().into_iter().map(|(k, v)| (k.0, v)).collect();
    assert_eq!(
        map.len(),
        entries.len(),
        "{context}: len() against the leaves"
    );
    let mut rest = entries.clone();
    let (key, value) = failed;
    let theirs = rest.remove(&key);
    let mut others = model.clone();
    let before = others.remove(&key);
    assert_eq!(rest, others, "{context}: entries of other keys");
    assert!(
        theirs == before || theirs == Some(value),
        "{context}: the failed key holds {theirs:?}, before {before:?}, inserting {value}"
    );
}

/// Inserts a random sequence of keys (new ones and replacements), each first attempted with a
/// panic at its 1st, 2nd, ... call into key code until it goes through; after every panic the
/// map is checked exact, then a `get` proves no lock is left held.
fn every_comparison_of_every_insert(capacity: usize, seed: u64, inserts: u64, keys: u64) {
    quiet_injected_panics();
    let map = OrderedMap::with_node_capacity(capacity);
    let mut model = BTreeMap::new();
    let mut rng = Rng::new(seed);
    let mut panics = 0;
    for step in 0..inserts {
        let key = rng.below(keys);
        let mut k = 1;
        loop {
            let context = format!(
                "capacity {capacity}, seed {seed}, insert {step} of key {key}, panic at call {k}"
            );
            if let Some(old) = with_fuse(k, || map.insert(Key(key), step)) {
                assert_eq!(old, model.insert(key, step), "{context}: returned");
                break;
            }
            panics += 1;
            assert_exact(&map, &model, (key, step), &context);
            // The failed insert may have gone in: the model follows the map.
            match map.get(&Key(key)) {
                Some(value) => model.insert(key, value),
                None => model.remove(&key),
            };
            k += 1;
        }
    }
    assert_exact(&map, &model, (u64::MAX, 0), "at the end");
    assert!(
        panics > inserts,
        "panics were injected ({panics} for {inserts} inserts)"
    );
}

#[test]
fn a_panic_at_any_comparison_of_an_insert_loses_no_other_entry() {
    for capacity in [2, 3, 5] {
        for seed in 1..=2 {
            every_comparison_of_every_insert(capacity, seed, 250, 400);
        }
    }
}

#[test]
fn a_panic_at_any_comparison_of_ascending_and_descending_inserts_loses_nothing() {
    // Every insert lands in the rightmost (or leftmost) leaf: splits at every level, root
    // splits included.
    quiet_injected_panics();
    for capacity in [2, 3] {
        for descending in [false, true] {
            let map = OrderedMap::with_node_capacity(capacity);
            let mut model = BTreeMap::new();
            for step in 0..200u64 {
                let key = if descending { 1_000 - step } else { step };
                let mut k = 1;
                while with_fuse(k, || map.insert(Key(key), step)).is_none() {
                    let context = format!("capacity {capacity}, key {key}, panic at call {k}");
                    assert_exact(&map, &model, (key, step), &context);
                    if let Some(value) = map.get(&Key(key)) {
                        model.insert(key, value);
                    }
                    k += 1;
                }
                model.insert(key, step);
            }
            assert_exact(&map, &model, (u64::MAX, 0), "at the end");
        }
    }
}

#[test]
fn a_panic_in_get_or_remove_changes_nothing() {
    quiet_injected_panics();
    let map = OrderedMap::with_node_capacity(3);
    let mut model = BTreeMap::new();
    for key in 0..100u64 {
        map.insert(Key(key * 2), key);
        model.insert(key * 2, key);
    }
    let mut rng = Rng::new(5);
    for _ in 0..100 {
        let key = rng.below(200);
        for k in 1.. {
            let context = format!("get {key}, panic at call {k}");
            if let Some(value) = with_fuse(k, || map.get(&Key(key))) {
                assert_eq!(value, model.get(&key).copied(), "{context}");
                break;
            }
            assert_exact(&map, &model, (u64::MAX, 0), &context);
        }
        for k in 1.. {
            let context = format!("remove {key}, panic at call {k}");
            if let Some(value) = with_fuse(k, || map.remove(&Key(key))) {
                assert_eq!(value, model.remove(&key), "{context}");
                break;
            }
            assert_exact(&map, &model, (u64::MAX, 0), &context);
        }
    }
    assert_exact(&map, &model, (u64::MAX, 0), "at the end");
}
