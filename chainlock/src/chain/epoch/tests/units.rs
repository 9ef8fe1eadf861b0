//! The containers alone: what each operation leaves, and that a removed child outlives the
//! readers pinned when it was removed, and no more (a drop counter).

use crate::chain::{ChildContainer, EpochGuard, EpochMap, EpochVec, LookupBy, LookupRef};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

#[test]
fn a_map_inserts_replaces_and_removes_in_key_order() {
    let map: EpochMap<String, u32> = EpochMap::new();
    assert!(map.insert("b".into(), Arc::new(2)).is_none());
    assert!(map.insert("a".into(), Arc::new(1)).is_none());
    assert_eq!(map.insert("b".into(), Arc::new(20)).as_deref(), Some(&2));
    let guard = EpochGuard::pin();
    let entries: Vec<(&str, u32)> = map
        .iter(&guard)
        .map(|(key, child)| (key.as_str(), **child))
        .collect();
    assert_eq!(entries, [("a", 1), ("b", 20)]);
    assert_eq!(map.get("b", &guard).map(|child| **child), Some(20));
    assert_eq!(map.lookup_ref("a", &guard).map(|child| **child), Some(1));
    assert_eq!(map.lookup_by("a").as_deref(), Some(&1));
    assert_eq!(map.lookup(&"b".to_owned()).as_deref(), Some(&20));
    assert_eq!(map.remove("a").as_deref(), Some(&1));
    assert!(map.remove("a").is_none());
    assert!(map.get("a", &guard).is_none());
    assert_eq!((map.len(), map.is_empty()), (1, false));
    assert_eq!(format!("{map:?}"), r#"{"b": 20}"#);
}

#[test]
fn a_map_collected_keeps_the_last_child_of_a_key() {
    let map: EpochMap<u8, char> = [(2, 'x'), (1, 'a'), (2, 'y'), (2, 'z'), (0, 'o')]
        .into_iter()
        .map(|(key, value)| (key, Arc::new(value)))
        .collect();
    let guard = EpochGuard::pin();
    let entries: Vec<(u8, char)> = map.iter(&guard).map(|(k, v)| (*k, **v)).collect();
    assert_eq!(entries, [(0, 'o'), (1, 'a'), (2, 'z')]);
}

#[test]
fn a_vec_pushes_pops_removes_and_replaces() {
    let children: EpochVec<u8> = EpochVec::new();
    assert!(children.pop().is_none());
    for value in 0..4 {
        children.push(Arc::new(value));
    }
    assert_eq!(children.remove(1).as_deref(), Some(&1));
    assert!(
        children.remove(3).is_none(),
        "out of range: nothing removed"
    );
    assert_eq!(*children.replace(0, Arc::new(10)), 0);
    assert_eq!(children.pop().as_deref(), Some(&3));
    let guard = EpochGuard::pin();
    let values: Vec<u8> = children.as_slice(&guard).iter().map(|c| **c).collect();
    assert_eq!(values, [10, 2]);
    assert_eq!(children.lookup_ref(&1, &guard).map(|c| **c), Some(2));
    assert_eq!(children.lookup(&0).as_deref(), Some(&10));
    assert!(children.get(2, &guard).is_none());
    assert_eq!(format!("{children:?}"), "[10, 2]");
}

#[test]
#[should_panic(expected = "EpochVec::replace: index 1 out of range for length 1")]
fn replacing_out_of_range_panics_and_names_the_index() {
    let children: EpochVec<u8> = vec![Arc::new(0)].into();
    children.replace(1, Arc::new(1));
}

/// A child that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Pins and flushes until `dropped` reaches `count` (the collector frees a batch two epochs
/// after it was retired); false at the deadline.
fn collected(dropped: &AtomicUsize, count: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(if cfg!(miri) { 60 } else { 10 });
    while dropped.load(SeqCst) < count {
        if Instant::now() > deadline {
            return false;
        }
        crossbeam_epoch::pin().flush();
        std::thread::yield_now();
    }
    true
}

#[test]
fn a_removed_child_lives_while_a_reader_is_pinned_and_is_freed_after() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let map = EpochMap::new();
    map.insert(1_u8, Arc::new(Counted(dropped.clone())));
    let reader = EpochGuard::pin();
    let child = map.get(&1, &reader).unwrap();
    drop(map.remove(&1).expect("present"));
    // The snapshot that held it is retired, not freed: the reader's reference is good.
    for _ in 0..4 {
        crossbeam_epoch::pin().flush();
    }
    assert_eq!(dropped.load(SeqCst), 0, "freed while a reader was pinned");
    assert!(Arc::ptr_eq(&child.0, &dropped));
    drop(reader);
    assert!(collected(&dropped, 1), "a removed child was never freed");
    // The container's own drop frees what it holds at once.
    let vec: EpochVec<Counted> = vec![Arc::new(Counted(dropped.clone()))].into();
    drop(vec);
    assert_eq!(dropped.load(SeqCst), 2);
}

/// The container holds one count per child, whatever the snapshots: copying a snapshot writes
/// none, a change writes one (the child added, or the one handed back), and every child is
/// dropped exactly once: writers racing without a lock (a lost compare-and-swap releases the
/// count of the entry it would have added), removals, replacements and the container's drop.
#[test]
fn the_container_holds_one_count_per_child_and_each_child_drops_once() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let counted = || Arc::new(Counted(dropped.clone()));
    let map: EpochMap<u32, Counted> = EpochMap::new();
    let first = counted();
    map.insert(0, first.clone());
    for key in 1..8 {
        map.insert(key, counted());
        assert_eq!(
            Arc::strong_count(&first),
            2,
            "a copied snapshot wrote a count"
        );
    }
    // The one returned, and the container's until the grace period ends.
    assert_eq!(
        Arc::strong_count(&map.remove(&0).unwrap()),
        3,
        "with `first`"
    );
    let replaced = map.insert(1, counted()).unwrap();
    assert_eq!(Arc::strong_count(&replaced), 2);
    drop((first, replaced));
    let per_writer = if cfg!(miri) { 4 } else { 200 };
    std::thread::scope(|scope| {
        for writer in 0..3 {
            let (map, counted) = (&map, &counted);
            scope.spawn(move || {
                for round in 0..per_writer {
                    let key = 100 + writer * 1_000 + round;
                    map.insert(key, counted());
                    if round % 2 == 1 {
                        drop(map.remove(&(key - 1)));
                    }
                }
            });
        }
    });
    assert_eq!(map.len(), 7 + 3 * per_writer as usize / 2, "no update lost");
    let vec: EpochVec<Counted> = (0..4).map(|_| counted()).collect();
    vec.push(counted());
    drop(vec.replace(0, counted()));
    drop(vec.remove(1));
    drop(vec.pop());
    let made = 8 + 1 + 3 * per_writer as usize + 6;
    drop((map, vec));
    assert!(collected(&dropped, made), "a child was never dropped");
    assert_eq!(dropped.load(SeqCst), made, "a child dropped twice");
}
