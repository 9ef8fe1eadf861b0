//! loom models of the epoch containers' publication protocol, reclamation abstracted (a
//! replaced snapshot is kept until the container drops; use-after-free is Miri's to find):
//! writers racing without a lock lose no update, and a reader whose parent validates saw the
//! children of exactly one version of it.

use crate::chain::{EpochGuard, EpochMap};
use crate::hybrid::HybridLock;
use crate::loom::sync::Arc as LoomArc;
use crate::loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
use crate::loom::thread;
use std::sync::Arc;

/// Two writers insert at once, with no lock between them: the compare-and-swap retries, so
/// both children are there at the end and a reader in between sees a whole snapshot.
#[test]
fn loom_racing_writers_lose_no_update() {
    loom::model(|| {
        let map: LoomArc<EpochMap<u8, u8>> = LoomArc::new(EpochMap::new());
        let writers: Vec<_> = [1, 2]
            .into_iter()
            .map(|key| {
                let map = map.clone();
                thread::spawn(move || {
                    assert!(map.insert(key, Arc::new(key * 10)).is_none());
                })
            })
            .collect();
        {
            let guard = EpochGuard::pin();
            for (key, child) in map.iter(&guard) {
                assert_eq!(**child, key * 10, "a torn snapshot");
            }
        }
        for writer in writers {
            writer.join().unwrap();
        }
        let guard = EpochGuard::pin();
        let keys: Vec<u8> = map.iter(&guard).map(|(key, _)| *key).collect();
        assert_eq!(keys, [1, 2]);
    });
}

struct Parent {
    children: EpochMap<u8, HybridLock<AtomicU64>>,
}

/// A writer, holding the parent exclusively, replaces child 1 by child 2 (the value of a
/// child is its key); an optimistic reader looks both up, reads each child's value, and
/// validates the parent: if it validates, it saw exactly one of them, with its value.
#[test]
fn loom_a_validated_parent_saw_the_children_of_one_version() {
    loom::model(|| {
        let parent = LoomArc::new(HybridLock::new(Parent {
            children: EpochMap::new(),
        }));
        parent
            .read()
            .children
            .insert(1, Arc::new(HybridLock::new(AtomicU64::new(1))));
        let writer = {
            let parent = parent.clone();
            thread::spawn(move || {
                let held = parent.write();
                held.children
                    .insert(2, Arc::new(HybridLock::new(AtomicU64::new(2))));
                held.children.remove(&1);
            })
        };
        let guard = EpochGuard::pin();
        if let Ok(seen) = parent.optimistic() {
            let mut found = Vec::new();
            for key in [1_u8, 2] {
                if let Some(child) = seen.children.get(&key, &guard) {
                    // Reachable even if the writer removed it meanwhile.
                    found.push((key, child.read_optimistic(|value| value.load(Relaxed))));
                }
            }
            if seen.validate().is_ok() {
                assert_eq!(
                    found.len(),
                    1,
                    "a validated read mixed two versions: {found:?}"
                );
                let (key, value) = found[0];
                assert_eq!(value, Ok(u64::from(key)));
            }
        }
        drop(guard);
        writer.join().unwrap();
        let guard = EpochGuard::pin();
        let keys: Vec<u8> = parent
            .read()
            .children
            .iter(&guard)
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(keys, [2]);
    });
}
