//! Fixed chains over one recursive node type (issue 10, item 1): every mode mix of a
//! three-level `Dir → Dir → Dir` chain, and the same type spelled several ways (a path, an
//! alias, a generic instantiation), lock in the hand-over-hand order the modes say, by key
//! path and by closures.

use chainlock::{ChainNode, Exit, chain::Absence, chain::LeavesExit, chain_locker};
use chainlock_suite::logged::{Event, LoggedRwLock, rw_id_of, take_log};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A directory: the tree's one node type.
#[derive(ChainNode, Default)]
struct Dir {
    #[chain(children)]
    entries: HashMap<String, Arc<LoggedRwLock<Dir>>>,
    files: u32,
}

type D = Dir;

mod nested {
    pub(crate) type Directory = super::Dir;
}

/// `/a/b` and `/a/c`: the root, `a`, and two leaves.
struct Tree {
    root: Arc<LoggedRwLock<Dir>>,
    a: Arc<LoggedRwLock<Dir>>,
    b: Arc<LoggedRwLock<Dir>>,
    c: Arc<LoggedRwLock<Dir>>,
}

fn dir(entries: &[(&str, &Arc<LoggedRwLock<Dir>>)]) -> Arc<LoggedRwLock<Dir>> {
    let entries = entries
        .iter()
        .map(|(name, child)| ((*name).to_owned(), Arc::clone(child)))
        .collect();
    Arc::new(LoggedRwLock::new(Dir { entries, files: 0 }))
}

fn tree() -> Tree {
    let (b, c) = (dir(&[]), dir(&[]));
    let a = dir(&[("b", &b), ("c", &c)]);
    let root = dir(&[("a", &a)]);
    take_log();
    Tree { root, a, b, c }
}

impl Tree {
    fn all_unlocked(&self) -> bool {
        [&self.root, &self.a, &self.b, &self.c]
            .iter()
            .all(|lock| !lock.is_locked())
    }
}

/// The log of a hand-over-hand descent root → a → b, each level taken as `modes` say.
fn expected(tree: &Tree, modes: [fn(usize) -> Event; 3]) -> Vec<Event> {
    let ids = [rw_id_of(&tree.root), rw_id_of(&tree.a), rw_id_of(&tree.b)];
    vec![
        modes[0](ids[0]),
        modes[1](ids[1]),
        Event::Unlocked(ids[0]),
        modes[2](ids[2]),
        Event::Unlocked(ids[1]),
        Event::Unlocked(ids[2]),
    ]
}

fn key(name: &str) -> String {
    name.to_owned()
}

chain_locker! {
    /// Latch crabbing down a recursive tree: shared on the way, exclusive at the target.
    struct Crab(shared Dir, shared Dir, Dir);
    struct AllExclusive(Dir, Dir, Dir);
    struct AllShared(shared Dir, shared Dir, shared Dir);
    struct SharedMiddle(Dir, shared Dir, Dir);
    struct SharedRoot(shared Dir, Dir, Dir);
    struct SharedLeaf(Dir, Dir, shared Dir);
    struct ExclusiveRoot(Dir, shared Dir, shared Dir);
    struct SharedEnds(shared Dir, Dir, shared Dir);
    /// The same type spelled four ways.
    struct Spellings(shared Dir, shared self::Dir, crate::nested::Directory);
    struct Aliased(shared D, shared Dir, D);
}

/// Runs one locker down root → a → b by keys and by closures, and checks the order.
macro_rules! check_modes {
    ($locker:ident, $leaf:ident => $body:expr, [$($mode:expr),*]) => {{
        let tree = tree();
        let value = $locker.run_keys(&tree.root, &key("a"), &key("b"), |$leaf| $body);
        assert_eq!(value, Ok(1), "{}", stringify!($locker));
        assert_eq!(take_log(), expected(&tree, [$($mode),*]), "{} by keys", stringify!($locker));
        assert!(tree.all_unlocked());

        let value = $locker.run(
            &tree.root,
            |root| root.entries.get("a").cloned(),
            |a| a.entries.get("b").cloned(),
            |$leaf| $body,
        );
        assert_eq!(value, Ok(1));
        assert_eq!(take_log(), expected(&tree, [$($mode),*]), "{} by closures", stringify!($locker));
        assert!(tree.all_unlocked());
    }};
}

#[test]
fn every_mode_mix_locks_in_hand_over_hand_order() {
    let (x, s) = (
        Event::Locked as fn(usize) -> Event,
        Event::Shared as fn(usize) -> Event,
    );
    check_modes!(Crab, leaf => { leaf.files = 1; leaf.files }, [s, s, x]);
    check_modes!(AllExclusive, leaf => { leaf.files = 1; leaf.files }, [x, x, x]);
    check_modes!(AllShared, leaf => leaf.files + 1, [s, s, s]);
    check_modes!(SharedMiddle, leaf => { leaf.files = 1; leaf.files }, [x, s, x]);
    check_modes!(SharedRoot, leaf => { leaf.files = 1; leaf.files }, [s, x, x]);
    check_modes!(SharedLeaf, leaf => leaf.files + 1, [x, x, s]);
    check_modes!(ExclusiveRoot, leaf => leaf.files + 1, [x, s, s]);
    check_modes!(SharedEnds, leaf => leaf.files + 1, [s, x, s]);
    check_modes!(Spellings, leaf => { leaf.files = 1; leaf.files }, [s, s, x]);
    check_modes!(Aliased, leaf => { leaf.files = 1; leaf.files }, [s, s, x]);
}

#[test]
fn crabbing_writes_the_target_and_reports_a_missing_entry() {
    let tree = tree();
    let written = Crab.run_keys(&tree.root, &key("a"), &key("c"), |c| {
        c.files += 7;
        c.files
    });
    assert_eq!(written, Ok(7));
    assert_eq!(tree.c.read().files, 7);
    assert_eq!(
        Crab.run_keys(&tree.root, &key("a"), &key("zz"), |_| ()),
        Err(Exit::Absent {
            level: 2,
            cause: Absence::Missing
        })
    );
    assert!(tree.all_unlocked());

    // The owned guard of the target outlives the descent, with only the target held.
    let mut guard = Crab.descend_keys(&tree.root, &key("a"), &key("b")).unwrap();
    guard.files += 1;
    assert!(!tree.root.is_locked() && !tree.a.is_locked() && tree.b.is_locked());
    drop(guard);
    let deadline = Instant::now() + Duration::from_secs(5);
    let guard = Crab
        .descend_keys_until(&tree.root, deadline, &key("a"), &key("b"))
        .unwrap();
    assert_eq!(guard.files, 1);
}

#[test]
fn several_recursive_leaves_at_once() {
    let tree = tree();
    let paths = [(&key("a"), &key("c")), (&key("a"), &key("b"))];
    let mut leaves = AllExclusive.lock_leaves(&tree.root, paths).unwrap();
    leaves[0].files = 3;
    leaves[1].files = 4;
    assert!(!tree.root.is_locked() && tree.b.is_locked() && tree.c.is_locked());
    drop(leaves);
    assert_eq!((tree.b.read().files, tree.c.read().files), (4, 3));
    let same = [(&key("a"), &key("b")), (&key("a"), &key("b"))];
    assert!(matches!(
        AllExclusive.lock_leaves(&tree.root, same),
        Err(LeavesExit::SameLeaf { .. })
    ));
    assert!(tree.all_unlocked());
}

/// A generic recursive node: each instantiation is its own chain type.
#[derive(ChainNode)]
struct Node<T: 'static> {
    value: T,
    #[chain(children)]
    next: Option<Arc<LoggedRwLock<Node<T>>>>,
}

type IntNode = Node<u32>;

#[test]
fn generic_instantiations_spelled_two_ways() {
    let leaf = Arc::new(LoggedRwLock::new(Node {
        value: 3_u32,
        next: None,
    }));
    let middle = Arc::new(LoggedRwLock::new(Node {
        value: 2,
        next: Some(leaf.clone()),
    }));
    let root = Arc::new(LoggedRwLock::new(Node {
        value: 1,
        next: Some(middle.clone()),
    }));
    let locker = chain_locker!(shared Node<u32>, shared IntNode, Node<u32>);
    take_log();
    let sum = locker.run_keys(&root, &(), &(), |node| {
        node.value += 10;
        node.value
    });
    assert_eq!(sum, Ok(13));
    let ids = [rw_id_of(&root), rw_id_of(&middle), rw_id_of(&leaf)];
    assert_eq!(
        take_log(),
        [
            Event::Shared(ids[0]),
            Event::Shared(ids[1]),
            Event::Unlocked(ids[0]),
            Event::Locked(ids[2]),
            Event::Unlocked(ids[1]),
            Event::Unlocked(ids[2]),
        ]
    );
}

chain_locker! {
    /// Upgradable reads in the middle of a recursive chain.
    struct UpgradeMiddle(shared Dir, upgradable Dir, Dir);
}

#[test]
fn an_upgradable_level_in_a_recursive_chain() {
    let (u, x) = (
        Event::Upgradable as fn(usize) -> Event,
        Event::Locked as fn(usize) -> Event,
    );
    let s = Event::Shared as fn(usize) -> Event;
    let tree = tree();
    let files = UpgradeMiddle.run_keys(&tree.root, &key("a"), &key("b"), |b| {
        b.files += 1;
        b.files
    });
    assert_eq!(files, Ok(1));
    assert_eq!(take_log(), expected(&tree, [s, u, x]));
    // The stage on the upgradable level adds an entry in place when the key is missing.
    let created = UpgradeMiddle.run(
        &tree.root,
        |root| root.entries.get("a").cloned(),
        |a| {
            let found = a.entries.get("new").cloned();
            found.or_else(|| {
                let new = Arc::new(LoggedRwLock::new(Dir::default()));
                a.upgrade().entries.insert("new".into(), new.clone());
                Some(new)
            })
        },
        |new| new.entries.len(),
    );
    assert_eq!(created, Ok(0));
    assert!(tree.a.read().entries.contains_key("new"));
    assert!(tree.all_unlocked());
}

/// The same recursive chain over tokio's locks, through the async key-path methods.
mod on_tokio {
    use chainlock::{ChainNode, chain_locker};
    use std::collections::HashMap;
    use std::sync::Arc;
    use tokio::sync::RwLock;

    #[derive(ChainNode, Default)]
    struct Dir {
        #[chain(children)]
        entries: HashMap<String, Arc<RwLock<Dir>>>,
        files: u32,
    }

    chain_locker! {
        struct Crab(shared Dir, shared Dir, Dir);
    }

    #[tokio::test]
    async fn crabbing_down_a_recursive_tree_asynchronously() {
        let b = Arc::new(RwLock::new(Dir::default()));
        let mut a = Dir::default();
        a.entries.insert("b".into(), b.clone());
        let mut root = Dir::default();
        root.entries.insert("a".into(), Arc::new(RwLock::new(a)));
        let root = Arc::new(RwLock::new(root));
        let (ka, kb) = ("a".to_owned(), "b".to_owned());
        let files = Crab
            .run_keys_async(&root, &ka, &kb, |dir| {
                dir.files += 2;
                dir.files
            })
            .await;
        assert_eq!(files, Ok(2));
        let mut guard = Crab.descend_keys_async(&root, &ka, &kb).await.unwrap();
        guard.files += 1;
        assert!(root.try_write().is_ok(), "only the target is held");
        drop(guard);
        assert_eq!(b.read().await.files, 3);
    }
}

/// Many threads crabbing down random paths of one recursive tree while others take whole
/// paths exclusively: no update is lost and nothing stays locked.
mod stress {
    use chainlock::parking_lot::RwLock;
    use chainlock::{ChainNode, chain_locker};
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::thread;

    #[derive(ChainNode, Default)]
    struct Dir {
        #[chain(children)]
        entries: HashMap<String, Arc<RwLock<Dir>>>,
        count: u64,
    }

    chain_locker! {
        struct Crab(shared Dir, shared Dir, Dir);
        struct Exclusive(Dir, Dir, Dir);
    }

    const FANOUT: usize = 4;
    const THREADS: usize = 6;
    const ROUNDS: usize = 2_000;

    fn tree() -> Arc<RwLock<Dir>> {
        let mut root = Dir::default();
        for i in 0..FANOUT {
            let mut middle = Dir::default();
            for j in 0..FANOUT {
                middle
                    .entries
                    .insert(j.to_string(), Arc::new(RwLock::new(Dir::default())));
            }
            root.entries
                .insert(i.to_string(), Arc::new(RwLock::new(middle)));
        }
        Arc::new(RwLock::new(root))
    }

    #[test]
    fn no_update_is_lost_under_concurrent_crabbing() {
        let root = tree();
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let root = root.clone();
                thread::spawn(move || {
                    // A cheap deterministic sequence of paths per thread.
                    let mut state = thread as u64 * 7 + 1;
                    for round in 0..ROUNDS {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        let (i, j) = (
                            (state >> 33) as usize % FANOUT,
                            (state >> 45) as usize % FANOUT,
                        );
                        let (a, b) = (i.to_string(), j.to_string());
                        let done = if round % 4 == 0 {
                            Exclusive.run_keys(&root, &a, &b, |leaf| leaf.count += 1)
                        } else {
                            Crab.run_keys(&root, &a, &b, |leaf| leaf.count += 1)
                        };
                        assert_eq!(done, Ok(()));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no thread panicked");
        }
        let root = root.read();
        let total: u64 = root
            .entries
            .values()
            .flat_map(|middle| {
                let middle = middle.read();
                middle
                    .entries
                    .values()
                    .map(|leaf| leaf.read().count)
                    .collect::<Vec<_>>()
            })
            .sum();
        assert_eq!(total, (THREADS * ROUNDS) as u64);
    }
}
