//! The epoch child containers (`EpochMap`, `EpochVec`) with the derive and the optimistic
//! walk: `#[chain(closed)]` on an `AtomicBool`, borrowed lookups (`ChildrenRef`) on derived
//! nodes; and a stress run of 8 threads (writers inserting, closing and removing children at
//! both levels of a tree, readers descending optimistically) with an invariant checker: every
//! validated target is the node its path names, open and consistent, and every node created
//! is freed exactly once after the tree is dropped.

use chainlock::chain::{
    ChildContainer, Children, ChildrenBy, ChildrenRef, EpochGuard, EpochMap, EpochVec,
};
use chainlock::hybrid::HybridLock;
use chainlock::walk::{Exclusive, Shared, Step, Walker};
use chainlock::{ChainNode, Exit};
use chainlock_suite::watchdog::{eventually, watchdog};
use rand::Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

#[derive(ChainNode, Default)]
struct Registry {
    #[chain(children)]
    lectures: EpochMap<String, HybridLock<Lecture>>,
}

#[derive(ChainNode, Default)]
struct Lecture {
    #[chain(closed)]
    cancelled: std::sync::atomic::AtomicBool,
    #[chain(children)]
    classes: EpochVec<HybridLock<Class>>,
    #[chain(children)]
    fixed: Vec<Arc<HybridLock<Room>>>,
}

#[derive(ChainNode, Default)]
struct Class {
    #[chain(closed)]
    full: AtomicBool,
}

#[derive(ChainNode, Default)]
struct Room {}

#[test]
fn the_derive_reads_an_atomic_closed_flag_and_lends_children_by_reference() {
    let registry = Registry::default();
    let lecture = Arc::new(HybridLock::new(Lecture::default()));
    registry.lectures.insert("algebra".into(), lecture.clone());
    assert!(!lecture.read().is_closed());
    lecture.write().cancelled.store(true, Relaxed);
    assert!(
        lecture.read().is_closed(),
        "`#[chain(closed)]` on an AtomicBool"
    );

    let class = Arc::new(HybridLock::new(Class::default()));
    lecture.read().classes.push(class.clone());
    class.write().full.store(true, Relaxed);
    assert!(class.read().is_closed());

    let guard = EpochGuard::pin();
    // By reference: the `String` key found by a `&str`, the class by index.
    let found = registry.child_ref("algebra", &guard).unwrap();
    assert!(Arc::ptr_eq(found, &lecture));
    assert!(ChildrenRef::<Lecture, str>::child_ref(&registry, "geometry", &guard).is_none());
    let held = lecture.read();
    assert!(Arc::ptr_eq(
        ChildrenRef::<Class, usize>::child_ref(&*held, &0, &guard).unwrap(),
        &class
    ));
    // A `std` container lends its children too.
    assert!(ChildrenRef::<Room, usize>::child_ref(&*held, &0, &guard).is_none());
    // The owned lookups still work on the epoch containers.
    assert!(Arc::ptr_eq(
        &Children::<Class>::child(&*held, &0).unwrap(),
        &class
    ));
    assert!(ChildrenBy::<Lecture, str>::child_by(&registry, "algebra").is_some());
    assert!(registry.lectures.lookup(&"algebra".to_owned()).is_some());
}

/// A directory of the stress tree: its place (`path`) is fixed when it is made; `a == b`
/// always under its exclusive hold; `live` counts the directories not yet freed.
#[derive(ChainNode)]
struct Dir {
    path: Vec<u32>,
    #[chain(closed)]
    removed: AtomicBool,
    a: AtomicU64,
    b: AtomicU64,
    #[chain(children)]
    entries: EpochMap<u32, HybridLock<Dir>>,
    live: Arc<AtomicI64>,
}

impl Drop for Dir {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Relaxed);
    }
}

fn dir(path: Vec<u32>, live: &Arc<AtomicI64>) -> Arc<HybridLock<Dir>> {
    live.fetch_add(1, Relaxed);
    Arc::new(HybridLock::new(Dir {
        path,
        removed: AtomicBool::new(false),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
        entries: EpochMap::new(),
        live: live.clone(),
    }))
}

type Handle = Arc<HybridLock<Dir>>;

/// The step along `path`: a borrowed lookup per level.
fn along(
    path: &[u32],
) -> impl for<'g> FnMut(&'g Dir, usize, &'g EpochGuard) -> Step<&'g Handle> + '_ {
    move |dir, depth, guard| match path.get(depth) {
        None => Step::Here,
        Some(name) => dir
            .child_ref(name, guard)
            .map_or(Step::Absent, Step::Descend),
    }
}

const WRITERS: usize = 2;
const READERS: usize = 6;
const NAMES: u32 = 4;

/// One writer's change at a random place: under the exclusive hold of the parent, insert a
/// missing child or close (under its own hold) and remove a present one; or bump a node's
/// pair under its exclusive hold.
fn change(root: &Handle, live: &Arc<AtomicI64>, rng: &mut impl Rng) {
    let depth = rng.random_range(0..2_usize);
    let path: Vec<u32> = (0..depth).map(|_| rng.random_range(0..NAMES)).collect();
    let Ok(parent) = Walker::new().descend_optimistic(root, Exclusive, along(&path)) else {
        return; // the parent is absent now
    };
    let name = rng.random_range(0..NAMES);
    if rng.random_bool(0.5) {
        parent.target.a.fetch_add(1, Relaxed);
        parent.target.b.fetch_add(1, Relaxed);
    } else if let Some(child) = parent.target.entries.remove(&name) {
        child.write().removed.store(true, Relaxed);
    } else {
        let mut child_path = path.clone();
        child_path.push(name);
        parent.target.entries.insert(name, dir(child_path, live));
    }
}

/// One reader's walk to a random path, checked: a target is the node its path names, open,
/// consistent, at its level; an exit is one the tree can give.
fn check(root: &Handle, rng: &mut impl Rng) -> (usize, bool) {
    let depth = rng.random_range(0..3_usize);
    let path: Vec<u32> = (0..depth).map(|_| rng.random_range(0..NAMES)).collect();
    match Walker::new().descend_optimistic(root, Shared, along(&path)) {
        Ok(found) => {
            assert_eq!(found.target.path, path, "a walk ended at another node");
            assert_eq!(found.level, depth);
            assert!(
                !found.target.removed.load(Relaxed),
                "ended at a removed node"
            );
            assert_eq!(
                found.target.a.load(Relaxed),
                found.target.b.load(Relaxed),
                "a shared target mid-write"
            );
            (found.restarts, found.pessimistic)
        }
        Err(Exit::Absent { level, .. }) => {
            assert!((1..=depth).contains(&level), "absent at level {level}");
            (0, false)
        }
        Err(other) => panic!("unexpected exit {other:?}"),
    }
}

#[test]
fn eight_threads_insert_close_remove_and_read_optimistically_and_every_node_is_freed_once() {
    const WALKS: usize = 4_000;
    let _watchdog = watchdog("chain_epoch stress");
    let live = Arc::new(AtomicI64::new(0));
    let root = dir(vec![], &live);
    let readers_done = AtomicUsize::new(0);
    let (restarts, pessimistic) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for _ in 0..WRITERS {
            scope.spawn(|| {
                let mut rng = rand::rng();
                while readers_done.load(Relaxed) < READERS {
                    change(&root, &live, &mut rng);
                }
            });
        }
        for _ in 0..READERS {
            scope.spawn(|| {
                struct Done<'a>(&'a AtomicUsize);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_add(1, Relaxed);
                    }
                }
                let _done = Done(&readers_done);
                let mut rng = rand::rng();
                for _ in 0..WALKS {
                    let (r, p) = check(&root, &mut rng);
                    restarts.fetch_add(r, Relaxed);
                    pessimistic.fetch_add(usize::from(p), Relaxed);
                }
            });
        }
    });
    // The tree now: every reachable node where its path says, and counted live.
    let guard = EpochGuard::pin();
    let mut reachable = 1;
    let held = root.read();
    for (name, lecture) in held.entries.iter(&guard) {
        let lecture = lecture.read();
        assert_eq!(lecture.path, [*name]);
        reachable += 1;
        for (inner, leaf) in lecture.entries.iter(&guard) {
            assert_eq!(leaf.read().path, [*name, *inner]);
            reachable += 1;
        }
    }
    drop((held, guard));
    assert!(
        live.load(Relaxed) >= reachable,
        "a reachable node was freed"
    );
    eprintln!(
        "{} walks: {} restarts, {} pessimistic passes; {reachable} nodes at the end",
        READERS * WALKS,
        restarts.load(Relaxed),
        pessimistic.load(Relaxed)
    );
    // Dropped: every node is freed once the collector has run (removed ones included).
    drop(root);
    eventually("every directory freed", || {
        let guard = EpochGuard::pin();
        drop(guard);
        flush();
        live.load(Relaxed) <= 0
    });
    assert_eq!(live.load(Relaxed), 0, "a node freed twice");
}

/// Lets the collector run: a pinned write to a scratch container retires a snapshot and
/// flushes this thread's garbage.
fn flush() {
    let scratch: EpochVec<()> = EpochVec::new();
    scratch.push(Arc::new(()));
}
