//! The upgradable walk mode: plain readers pass the nodes the walk holds, a step makes the
//! node it holds writable in place and goes on, upgraders exclude each other; `mkdir -p` by
//! many threads at once creates every directory exactly once.

use chainlock::chain::Upgradable;
use chainlock::parking_lot::RwLock;
use chainlock::walk::{Shared, Step, Upgrade, Walker};
use chainlock::{ChainNode, Exit};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(ChainNode, Default)]
struct Dir {
    #[chain(children)]
    entries: BTreeMap<String, Arc<RwLock<Dir>>>,
    visits: u32,
}

type Handle = Arc<RwLock<Dir>>;

/// `mkdir -p` on the upgradable mode: upgrade a directory only where a child is missing.
fn mkdir_p(root: &Handle, path: &[&str], created: &AtomicUsize) -> Result<(), Exit> {
    let mut target =
        Walker::new().descend(root, Upgrade, |dir: &mut Upgradable<RwLock<Dir>>, depth| {
            let Some(name) = path.get(depth) else {
                return Step::Here;
            };
            if let Some(child) = dir.entries.get(*name) {
                return Step::Descend(child.clone());
            }
            // Missing: write-lock this directory in place. The upgrade is atomic, so no one
            // can have created the entry between our read and now.
            let child: Handle = Arc::default();
            let previous = dir
                .upgrade()
                .entries
                .insert((*name).to_owned(), child.clone());
            assert!(
                previous.is_none(),
                "{name} was created by someone else during the upgrade"
            );
            created.fetch_add(1, Ordering::Relaxed);
            Step::Descend(child)
        })?;
    target.upgrade().visits += 1;
    Ok(())
}

#[test]
fn plain_readers_pass_until_a_step_upgrades_the_node_in_place() {
    let root: Handle = Arc::default();
    let child: Handle = Arc::default();
    let mut target = Walker::new()
        .descend(&root, Upgrade, |dir, depth| {
            if depth == 1 {
                assert!(
                    !root.is_locked(),
                    "the parent was released after the child was locked"
                );
                return Step::Here;
            }
            assert!(
                root.try_read().is_some(),
                "a plain reader passes the upgradable reader"
            );
            assert!(
                root.try_upgradable_read().is_none(),
                "upgraders exclude each other"
            );
            assert!(!dir.is_upgraded());
            dir.upgrade().entries.insert("a".into(), child.clone());
            assert!(dir.is_upgraded());
            assert!(
                root.try_read().is_none(),
                "upgraded in place: now the writer's"
            );
            Step::Descend(child.clone())
        })
        .unwrap();
    assert!(
        !child.is_locked_exclusive(),
        "the target comes back as the upgradable reader"
    );
    assert!(child.try_read().is_some(), "plain readers still pass it");
    target.upgrade().visits += 1;
    assert!(
        child.is_locked_exclusive(),
        "upgraded in place by the caller"
    );
    drop(target);
    assert_eq!(root.read().entries["a"].read().visits, 1);
}

#[test]
fn a_key_path_in_upgrade_mode_ends_as_the_upgrader_and_releases_the_path() {
    let root: Handle = Arc::default();
    let created = AtomicUsize::new(0);
    mkdir_p(&root, &["usr", "lib"], &created).unwrap();
    assert_eq!(created.load(Ordering::Relaxed), 2);
    let usr = root.read().entries["usr"].clone();
    let keys = ["usr".to_string(), "lib".to_string()];
    let lib = Walker::new().descend_keys(&root, Upgrade, &keys).unwrap();
    assert!(
        !root.is_locked() && !usr.is_locked(),
        "the path was released"
    );
    let lib_lock = usr.read().entries["lib"].clone();
    assert!(
        lib_lock.is_locked() && !lib_lock.is_locked_exclusive(),
        "held as the upgrader"
    );
    assert!(
        lib_lock.try_upgradable_read().is_none(),
        "upgraders exclude each other"
    );
    drop(lib);
    let deadline = Instant::now() + Duration::from_millis(2);
    let writer = usr.write();
    let outcome = Walker::new().descend_keys_until(&root, Upgrade, deadline, &keys);
    assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 1 }));
    drop(writer);
    assert!(!root.is_locked());
}

#[test]
fn many_threads_mkdir_p_create_every_directory_exactly_once() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 300;
    let root: Handle = Arc::default();
    let created = AtomicUsize::new(0);
    let names = ["a", "b", "c"];
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (root, created) = (&root, &created);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let mut seed = thread * 7919 + round * 104_729;
                    let depth = 1 + seed % 4;
                    let path: Vec<&str> = (0..depth)
                        .map(|_| {
                            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                            names[(seed >> 33) % names.len()]
                        })
                        .collect();
                    if round % 3 == 0 {
                        // A reader: `Shared` walks pass the upgraders.
                        let keys: Vec<String> =
                            path.iter().map(|name| (*name).to_owned()).collect();
                        let _ = Walker::new().descend_keys(root, Shared, &keys);
                    } else {
                        mkdir_p(root, &path, created).unwrap();
                    }
                }
            });
        }
    });
    // Every directory reachable once, and each was created exactly once (a duplicate
    // creation would have replaced a subtree and lost nodes from the count).
    let mut reachable = 0;
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        let dir = dir.read();
        reachable += dir.entries.len();
        pending.extend(dir.entries.values().cloned());
    }
    assert_eq!(reachable, created.load(Ordering::Relaxed));
    assert!(reachable > 0);
}
