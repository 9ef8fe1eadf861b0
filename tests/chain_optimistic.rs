//! The `optimistic` level mode of `chain_locker!`: optimistic lock coupling over the chain's
//! first levels (each a `HybridLock`), then the locked levels. What each method returns, the
//! exits (absent, closed, timed out) from validated reads only, stages that run again after a
//! restart, the pessimistic pass after the restart bound, `lock_leaves`, and the locks all
//! released when a stage panics.

use chainlock::chain::{EpochGuard, EpochMap, MAX_RESTARTS};
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
use chainlock_suite::watchdog::{eventually, watchdog};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

#[derive(ChainNode, Default)]
struct Registry {
    #[chain(closed)]
    closed: AtomicBool,
    #[chain(children)]
    lectures: EpochMap<u32, HybridLock<Lecture>>,
    #[chain(children)]
    halls: EpochMap<u32, RwLock<Hall>>,
}

#[derive(ChainNode, Default)]
struct Hall {
    #[chain(children)]
    rooms: Vec<Arc<Mutex<Room>>>,
}

#[derive(ChainNode, Default)]
struct Lecture {
    #[chain(closed)]
    cancelled: AtomicBool,
    #[chain(children)]
    classes: EpochMap<u32, Mutex<Class>>,
}

#[derive(ChainNode, Default)]
struct Class {
    #[chain(closed)]
    full: bool,
    students: Vec<u32>,
    /// A clone of a test's token: the class is freed when the token's count drops.
    _token: Option<Arc<()>>,
}

#[derive(ChainNode, Default)]
struct Room {
    seats: u32,
}

chain_locker! {
    /// Registry and lecture read optimistically, the class locked.
    struct ToClass(optimistic Registry, optimistic Lecture, Class);
    /// Registry optimistic, then a locked level before the leaf.
    struct ToRoom(optimistic Registry, shared Hall, Room);
    /// Registry optimistic, the leaf its upgradable reader.
    struct ToHall(optimistic Registry, upgradable Hall);
}

type Root = Arc<HybridLock<Registry>>;

/// A registry with lectures 1 and 2, each with classes 10 and 20 and room 5.
fn registry() -> Root {
    let registry = Arc::new(HybridLock::new(Registry::default()));
    for lecture in [1, 2] {
        let node = Lecture::default();
        for class in [10, 20] {
            node.classes
                .insert(class, Arc::new(Mutex::new(Class::default())));
        }
        registry
            .read()
            .lectures
            .insert(lecture, Arc::new(HybridLock::new(node)));
    }
    let hall = Hall {
        rooms: vec![Arc::new(Mutex::new(Room { seats: 30 }))],
    };
    registry.read().halls.insert(2, Arc::new(RwLock::new(hall)));
    registry
}

/// Lecture `n`, cloned out of the registry.
fn lecture(root: &Root, n: u32) -> Arc<HybridLock<Lecture>> {
    let guard = EpochGuard::pin();
    Arc::clone(root.read().lectures.get(&n, &guard).unwrap())
}

/// Class `n` of lecture `l`.
fn class(root: &Root, l: u32, n: u32) -> Arc<Mutex<Class>> {
    let guard = EpochGuard::pin();
    Arc::clone(lecture(root, l).read().classes.get(&n, &guard).unwrap())
}

/// The stages of a descent to `lecture`/`class`, each lending the child it finds.
fn to_lecture(
    lecture: u32,
) -> impl for<'g> FnMut(&'g Registry, &'g EpochGuard) -> Option<&'g Arc<HybridLock<Lecture>>> {
    move |registry, guard| registry.lectures.get(&lecture, guard)
}

fn to_class(
    class: u32,
) -> impl for<'g> FnMut(&'g Lecture, &'g EpochGuard) -> Option<&'g Arc<Mutex<Class>>> {
    move |lecture, guard| lecture.classes.get(&class, guard)
}

#[test]
fn run_descend_and_keys_reach_the_leaf_and_lock_it() {
    let root = registry();
    ToClass
        .run(&root, to_lecture(1), to_class(10), |class| {
            class.students.push(7);
        })
        .unwrap();
    let guard = ToClass.descend(&root, to_lecture(1), to_class(10)).unwrap();
    assert_eq!(guard.students, [7]);
    assert!(
        root.try_write().is_some(),
        "no lock above the leaf is held by the descent"
    );
    drop(guard);
    let mut guard = ToClass.descend_keys(&root, &1, &20).unwrap();
    guard.students.push(8);
    drop(guard);
    assert_eq!(
        ToClass.run_keys(&root, &1, &20, |class| class.students.clone()),
        Ok(vec![8])
    );
    assert_eq!(ToClass::DEPTH, 3);
    // A locked level between the optimistic root and the leaf.
    let seats = ToRoom.run_keys(&root, &2, &0, |room| room.seats);
    assert_eq!(seats, Ok(30));
}

#[test]
fn absent_and_closed_levels_end_the_descent_at_their_level() {
    let root = registry();
    let missing = |level| {
        Err(Exit::Absent {
            level,
            cause: Absence::Missing,
        })
    };
    let closed = |level| {
        Err(Exit::Absent {
            level,
            cause: Absence::Closed,
        })
    };
    assert_eq!(ToClass.run_keys(&root, &9, &10, |_| ()), missing(1));
    assert_eq!(ToClass.run_keys(&root, &1, &99, |_| ()), missing(2));
    assert_eq!(ToRoom.run_keys(&root, &3, &0, |_| ()), missing(1));
    assert_eq!(ToRoom.run_keys(&root, &2, &1, |_| ()), missing(2));
    lecture(&root, 2).write().cancelled.store(true, Relaxed);
    assert_eq!(ToClass.run_keys(&root, &2, &10, |_| ()), closed(1));
    class(&root, 2, 10).lock().full = true;
    assert_eq!(ToClass.run_keys(&root, &1, &10, |_| ()), Ok(()));
    class(&root, 1, 10).lock().full = true;
    assert_eq!(ToClass.run_keys(&root, &1, &10, |_| ()), closed(2));
    root.write().closed.store(true, Relaxed);
    assert_eq!(ToClass.run_keys(&root, &1, &20, |_| ()), closed(0));
}

/// A stage into an `optimistic` level may answer `None` without naming a type: that level's
/// lock can only be a `HybridLock` of its type, which the locker names (a stage into a locked
/// level cannot: its lock is the caller's choice; `tests/ui`, `optimistic-stage-always-none`).
#[test]
fn a_stage_into_an_optimistic_level_that_always_answers_none_needs_no_annotation() {
    let root = registry();
    let absent = ToClass.run(&root, |_, _| None, to_class(10), |_| ());
    assert_eq!(
        absent,
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Missing,
        })
    );
}

#[test]
fn a_writer_in_the_middle_of_a_pass_makes_the_stages_run_again() {
    let root = registry();
    let calls = AtomicUsize::new(0);
    // The first call of the lecture's stage changes the registry (a writer between the
    // registry's version and its validation): the pass restarts, and the stages run again.
    let found = ToClass.run(
        &root,
        |registry: &Registry, guard: &EpochGuard| {
            if calls.fetch_add(1, Relaxed) == 0 {
                drop(root.write());
            }
            registry.lectures.get(&1, guard)
        },
        to_class(10),
        |class| class.students.len(),
    );
    assert_eq!(found, Ok(0));
    assert_eq!(calls.load(Relaxed), 2, "one restart, one more pass");
}

#[test]
fn a_reader_that_keeps_meeting_writers_falls_back_to_shared_holds() {
    let root = registry();
    let calls = AtomicUsize::new(0);
    // Every optimistic pass meets a writer; the pessimistic pass holds the registry shared,
    // where a writer cannot come in (the stage's `try_write` fails).
    let found = ToClass.run(
        &root,
        |registry: &Registry, guard: &EpochGuard| {
            calls.fetch_add(1, Relaxed);
            if let Some(write) = root.try_write() {
                drop(write);
            }
            registry.lectures.get(&1, guard)
        },
        to_class(10),
        |_| (),
    );
    assert_eq!(found, Ok(()));
    assert_eq!(calls.load(Relaxed), MAX_RESTARTS + 2);
}

#[test]
fn deadlines_bound_the_locked_levels_and_the_pessimistic_pass() {
    let _watchdog = watchdog("chain_optimistic deadlines");
    let root = registry();
    let soon = || Instant::now() + Duration::from_millis(20);
    // The leaf is held: timed out at the leaf.
    let class = class(&root, 1, 10);
    let held = class.lock();
    assert_eq!(
        ToClass.descend_keys_until(&root, soon(), &1, &10).err(),
        Some(Exit::TimedOut { level: 2 })
    );
    drop(held);
    assert!(ToClass.descend_keys_until(&root, soon(), &1, &10).is_ok());
    // A writer holds the lecture: every optimistic pass restarts there, and the pessimistic
    // pass waits for its shared hold until the deadline.
    let lecture = lecture(&root, 1);
    let writer = lecture.write();
    assert_eq!(
        ToClass.run_keys_until(&root, soon(), &1, &10, |_| ()),
        Err(Exit::TimedOut { level: 1 })
    );
    assert_eq!(
        ToClass.run_until(&root, soon(), to_lecture(1), to_class(10), |_| ()),
        Err(Exit::TimedOut { level: 1 })
    );
    // Without a deadline the pessimistic pass waits for the writer, then finishes.
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| ToClass.run_keys(&root, &1, &10, |class| class.students.len()));
        drop(writer);
        assert_eq!(reader.join().unwrap(), Ok(0));
    });
}

#[test]
fn lock_leaves_finds_each_leaf_through_validated_passes() {
    let root = registry();
    let mut leaves = ToClass
        .lock_leaves(&root, [(&1, &10), (&2, &20), (&1, &20)])
        .unwrap();
    assert_eq!(leaves.len(), 3);
    leaves[0].students.push(1);
    drop(leaves);
    assert_eq!(
        ToClass.run_keys(&root, &1, &10, |class| class.students.clone()),
        Ok(vec![1])
    );
    let absent = ToClass.lock_leaves(&root, [(&1, &10), (&3, &10)]).err();
    assert!(
        matches!(
            absent,
            Some(chainlock::chain::LeavesExit::Path {
                path: 1,
                exit: Exit::Absent { level: 1, .. }
            })
        ),
        "{absent:?}"
    );
    let soon = Instant::now() + Duration::from_millis(20);
    assert_eq!(
        ToClass
            .lock_leaves_until(&root, soon, [(&2, &10)])
            .map(|leaves| leaves.len()),
        Ok(1)
    );
}

#[test]
fn a_panicking_stage_leaves_every_lock_free() {
    let root = registry();
    let lecture = lecture(&root, 1);
    for pessimistic in [false, true] {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ToClass.run(
                &root,
                to_lecture(1),
                |_: &Lecture, _: &EpochGuard| -> Option<&Arc<Mutex<Class>>> {
                    // Asked for the pessimistic pass: each optimistic pass meets a writer of
                    // the lecture (its validation fails); the pessimistic pass holds it shared,
                    // so the writer cannot come in, and the stage panics there.
                    if pessimistic && let Some(write) = lecture.try_write() {
                        drop(write);
                        return None;
                    }
                    panic!("a stage panics");
                },
                |_| (),
            )
        }));
        assert!(outcome.is_err(), "the stage panicked");
        assert!(root.try_write().is_some(), "the registry is free");
        assert!(lecture.try_write().is_some(), "the lecture is free");
    }
}

/// The stress tree: lectures replaced, classes replaced and removed, every node retired
/// under its own exclusive hold after it is unlinked; `gen` names a lecture's generation,
/// and each class says which generation it was made for.
mod stress {
    use super::*;
    use rand::Rng;

    #[derive(ChainNode, Default)]
    pub(super) struct Registry {
        #[chain(children)]
        pub(super) lectures: EpochMap<u32, HybridLock<Lecture>>,
    }

    #[derive(ChainNode, Default)]
    pub(super) struct Lecture {
        #[chain(closed)]
        pub(super) retired: AtomicBool,
        pub(super) generation: u64,
        /// Equal at the end of every exclusive hold.
        pub(super) a: std::sync::atomic::AtomicU64,
        pub(super) b: std::sync::atomic::AtomicU64,
        #[chain(children)]
        pub(super) classes: EpochMap<u32, Mutex<Class>>,
    }

    #[derive(ChainNode, Default)]
    pub(super) struct Class {
        pub(super) generation: u64,
        pub(super) retired: bool,
        pub(super) visits: u64,
    }

    chain_locker!(pub(super) struct ToClass(optimistic Registry, optimistic Lecture, Class););

    pub(super) const NAMES: u32 = 3;

    pub(super) fn lecture(generation: u64) -> Arc<HybridLock<Lecture>> {
        let lecture = Lecture {
            generation,
            ..Lecture::default()
        };
        for name in 0..NAMES {
            lecture.classes.insert(name, class(generation));
        }
        Arc::new(HybridLock::new(lecture))
    }

    fn class(generation: u64) -> Arc<Mutex<Class>> {
        Arc::new(Mutex::new(Class {
            generation,
            ..Class::default()
        }))
    }

    /// One writer's change: replace a lecture (the old one retired), replace or remove a
    /// class (retired under its lock), or change a lecture's pair under its exclusive hold.
    pub(super) fn change(
        root: &Arc<HybridLock<Registry>>,
        generation: &std::sync::atomic::AtomicU64,
        rng: &mut impl Rng,
    ) {
        let name = rng.random_range(0..NAMES);
        let guard = EpochGuard::pin();
        match rng.random_range(0..4) {
            0 => {
                let fresh = lecture(generation.fetch_add(1, Relaxed) + 1);
                if let Some(old) = root.write().lectures.insert(name, fresh) {
                    old.write().retired.store(true, Relaxed);
                }
            }
            1 | 2 => {
                let Some(lecture) = root.read().lectures.get(&name, &guard).cloned() else {
                    return;
                };
                let held = lecture.write();
                let class_name = rng.random_range(0..NAMES);
                let old = if rng.random_bool(0.5) {
                    held.classes.insert(class_name, class(held.generation))
                } else {
                    held.classes.remove(&class_name)
                };
                drop(held);
                if let Some(old) = old {
                    old.lock().retired = true;
                }
            }
            _ => {
                if let Some(lecture) = root.read().lectures.get(&name, &guard) {
                    let held = lecture.write();
                    held.a.fetch_add(1, Relaxed);
                    held.b.fetch_add(1, Relaxed);
                }
            }
        }
    }
}

/// The forcing of the stress test below, alone: a call whose every optimistic pass bumps the
/// registry's version restarts at each and ends on the pessimistic pass (under the stress
/// test's writers its bump fails while one of them holds the registry shared).
#[test]
fn a_call_that_meets_a_writer_at_every_pass_falls_back() {
    use stress::{NAMES, Registry, ToClass};
    let root = Arc::new(HybridLock::new(Registry::default()));
    for name in 0..NAMES {
        root.read().lectures.insert(name, stress::lecture(0));
    }
    let mut passes = 0;
    let answer = ToClass.run(
        &root,
        |registry: &Registry, guard: &EpochGuard| {
            passes += 1;
            drop(root.try_write());
            registry.lectures.get(&0, guard)
        },
        |lecture: &stress::Lecture, guard: &EpochGuard| lecture.classes.get(&0, guard),
        |class| class.generation,
    );
    assert_eq!(answer, Ok(0));
    assert_eq!(
        passes,
        MAX_RESTARTS + 2,
        "every optimistic pass restarted, then the fallback"
    );
}

/// 8 threads: 2 writers changing the tree at both levels, 1 thread bumping the registry's and
/// the lectures' versions without changing anything (a restart at either level for every
/// reader it meets), 5 readers; one reader in two forces every optimistic pass of some of
/// its calls to restart, so they end on the pessimistic pass. Every call returns (the scope
/// joins under the watchdog) and every answer is checked: a class reached is linked (never
/// retired), of the generation of the lecture the descent validated, whose pair was read
/// whole; an exit is an absent lecture or class.
#[test]
fn eight_threads_with_restarts_forced_at_every_level_get_no_stale_answer() {
    use rand::Rng;
    use stress::{NAMES, Registry, ToClass};
    const READERS: usize = 5;
    const CALLS: usize = 3_000;
    let _watchdog = watchdog("chain_optimistic stress");
    let root = Arc::new(HybridLock::new(Registry::default()));
    let generation = std::sync::atomic::AtomicU64::new(0);
    for name in 0..NAMES {
        root.read().lectures.insert(name, stress::lecture(0));
    }
    let readers_done = AtomicUsize::new(0);
    let (stage_calls, reached, fallbacks) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut rng = rand::rng();
                while readers_done.load(Relaxed) < READERS {
                    stress::change(&root, &generation, &mut rng);
                }
            });
        }
        scope.spawn(|| {
            let mut name = 0;
            while readers_done.load(Relaxed) < READERS {
                drop(root.write());
                let guard = EpochGuard::pin();
                if let Some(lecture) = root.read().lectures.get(&name, &guard) {
                    drop(lecture.write());
                }
                name = (name + 1) % NAMES;
            }
        });
        for reader in 0..READERS {
            let (root, stage_calls, reached, fallbacks) =
                (&root, &stage_calls, &reached, &fallbacks);
            let readers_done = &readers_done;
            scope.spawn(move || {
                // Counted even if a check panics, so that the writers stop and the panic is
                // reported instead of a hang.
                let _done = Done(readers_done);
                let mut rng = rand::rng();
                for call in 0..CALLS {
                    let (lecture, class) = (rng.random_range(0..NAMES), rng.random_range(0..NAMES));
                    // Every 100th call of an even reader: each optimistic pass bumps the
                    // registry's version when it can (not on the pessimistic pass, which holds
                    // the registry shared), so the call restarts, likely up to the fallback.
                    let force = reader % 2 == 0 && call % 100 == 0;
                    let mut passes = 0;
                    let mut seen = (0, 0, 0);
                    let outcome = ToClass.run(
                        root,
                        |registry: &Registry, guard: &EpochGuard| {
                            passes += 1;
                            if force {
                                drop(root.try_write());
                            }
                            registry.lectures.get(&lecture, guard)
                        },
                        |lecture: &stress::Lecture, guard: &EpochGuard| {
                            seen = (
                                lecture.generation,
                                lecture.a.load(Relaxed),
                                lecture.b.load(Relaxed),
                            );
                            lecture.classes.get(&class, guard)
                        },
                        |class| {
                            class.visits += 1;
                            (class.generation, class.retired)
                        },
                    );
                    stage_calls.fetch_add(passes, Relaxed);
                    if passes > MAX_RESTARTS + 1 {
                        fallbacks.fetch_add(1, Relaxed);
                    }
                    match outcome {
                        Ok((generation, retired)) => {
                            assert!(!retired, "a retired class");
                            assert_eq!(generation, seen.0, "a class of another lecture generation");
                            assert_eq!(seen.1, seen.2, "a lecture read mid-write");
                            reached.fetch_add(1, Relaxed);
                        }
                        Err(Exit::Absent { level: 1 | 2, .. }) => {}
                        Err(other) => panic!("unexpected exit {other:?}"),
                    }
                }
            });
        }
    });
    let calls = READERS * CALLS;
    assert!(reached.load(Relaxed) > 0);
    println!(
        "{calls} calls, {} reached a class, {} passes, {} on the pessimistic pass",
        reached.load(Relaxed),
        stage_calls.load(Relaxed),
        fallbacks.load(Relaxed)
    );
}

/// Counts a finished reader when dropped.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// A tree of hybrid locks only (directories): read optimistically down to the last one,
/// held shared while the leaf reads it (a `HybridLock` is a `SharedLock`); its deadline
/// form gives up while a writer holds it, and a writer waits for the held leaf.
#[test]
fn a_hybrid_tree_ends_at_a_directory_held_shared() {
    #[derive(ChainNode, Default)]
    struct Dir {
        files: AtomicUsize,
        #[chain(children)]
        dirs: EpochMap<u8, HybridLock<Dir>>,
    }
    chain_locker!(struct ReadDir(optimistic Dir, optimistic Dir, shared Dir););
    fn down(
        key: u8,
    ) -> impl for<'g> FnMut(&'g Dir, &'g EpochGuard) -> Option<&'g Arc<HybridLock<Dir>>> {
        move |dir, guard| dir.dirs.get(&key, guard)
    }
    let _watchdog = watchdog("a_hybrid_tree_ends_at_a_directory_held_shared");
    let root = Arc::new(HybridLock::new(Dir::default()));
    let middle = Arc::new(HybridLock::new(Dir::default()));
    let last = Arc::new(HybridLock::new(Dir::default()));
    last.write().files.store(3, Relaxed);
    middle.write().dirs.insert(2, Arc::clone(&last));
    root.write().dirs.insert(1, Arc::clone(&middle));
    let files = ReadDir
        .run(&root, down(1), down(2), |dir| {
            assert!(
                last.try_write().is_none(),
                "the last directory is held shared"
            );
            assert!(root.try_write().is_some() && middle.try_write().is_some());
            dir.files.load(Relaxed)
        })
        .unwrap();
    assert_eq!(files, 3);
    assert_eq!(
        ReadDir.run(&root, down(1), down(9), |_| ()).unwrap_err(),
        Exit::Absent {
            level: 2,
            cause: Absence::Missing
        }
    );
    let writer = last.write();
    let soon = Instant::now() + Duration::from_millis(20);
    assert_eq!(
        ReadDir
            .run_until(&root, soon, down(1), down(2), |_| ())
            .unwrap_err(),
        Exit::TimedOut { level: 2 }
    );
    drop(writer);
    let held = ReadDir.descend(&root, down(1), down(2)).unwrap();
    assert_eq!(held.files.load(Relaxed), 3);
    assert!(last.try_write().is_none() && last.try_read().is_some());
}

/// A deadline that passes while the first locked level waits for a child its optimistic
/// parent no longer leads to (unlinked and replaced meanwhile, the old one held) is a
/// restart, not a time-out: the next pass finds the new child. Here the stage itself plays
/// the writer on its first run (one thread: the old child stays held by it until the end).
#[test]
fn a_deadline_at_a_child_unlinked_meanwhile_restarts_instead_of_timing_out() {
    let _watchdog = watchdog("a_deadline_at_a_child_unlinked_meanwhile_restarts");
    let soon = || Instant::now() + Duration::from_millis(20);
    // The leaf's level: class 10 of lecture 1 replaced under the reader.
    let root = registry();
    let lecture_1 = lecture(&root, 1);
    let mut old = None;
    let mut runs = 0;
    let answer = ToClass.run_until(
        &root,
        soon(),
        to_lecture(1),
        |lecture: &Lecture, guard: &EpochGuard| {
            runs += 1;
            let found = lecture.classes.get(&10, guard);
            if old.is_none() {
                old = Some(Arc::clone(found.unwrap()).lock_arc());
                let new = Class {
                    students: vec![1],
                    ..Class::default()
                };
                lecture_1
                    .write()
                    .classes
                    .insert(10, Arc::new(Mutex::new(new)));
            }
            found
        },
        |class| class.students.clone(),
    );
    assert_eq!(answer, Ok(vec![1]), "the new class, after a restart");
    assert_eq!(runs, 2);
    drop(old);
    // A locked level above the leaf: hall 2 replaced under the reader.
    let root = registry();
    let mut old = None;
    let answer = ToRoom.run_until(
        &root,
        soon(),
        |registry: &Registry, guard: &EpochGuard| {
            let found = registry.halls.get(&2, guard);
            if old.is_none() {
                old = Some(Arc::clone(found.unwrap()).write_arc());
                let hall = Hall {
                    rooms: vec![Arc::new(Mutex::new(Room { seats: 40 }))],
                };
                root.write().halls.insert(2, Arc::new(RwLock::new(hall)));
            }
            found
        },
        |hall: &Hall| hall.rooms.first().cloned(),
        |room| room.seats,
    );
    assert_eq!(answer, Ok(40), "the new hall's room, after a restart");
    drop(old);
}

/// Removes `count` classes from lecture 2 (each holding a clone of a token), then writes and
/// pins until all of them are freed (the token's count back to one): crossbeam-epoch frees
/// them once no thread is pinned since they were removed. Fails the test after `HANG`.
fn removed_classes_are_freed(root: &Root, count: u32) {
    let token = Arc::new(());
    let lecture_2 = lecture(root, 2);
    for n in 0..count {
        let class = Class {
            _token: Some(Arc::clone(&token)),
            ..Class::default()
        };
        let class = Arc::new(Mutex::new(class));
        lecture_2.write().classes.insert(1_000 + n, class);
        lecture_2.write().classes.remove(&(1_000 + n));
    }
    eventually("the removed classes freed while a call waits", || {
        // More writes and pins: a thread's retired snapshots are sealed 64 at a time, and
        // the epoch moves on only past threads that are not pinned.
        lecture_2.write().classes.insert(999, Arc::default());
        lecture_2.write().classes.remove(&999);
        drop(EpochGuard::pin());
        Arc::strong_count(&token) == 1
    });
}

/// A call that finds its first locked level held waits for it out of its pin: children
/// removed meanwhile anywhere are freed while it waits (a pinned waiter would hold them all
/// until it got the lock). Then it reads its path again and uses the level it waited for.
/// Each shape of first locked level: the leaf (exclusive, upgradable) and a shared level
/// above the leaf.
#[test]
fn a_call_waiting_for_its_first_locked_level_lets_removed_children_be_freed() {
    let _watchdog = watchdog("a_call_waiting_for_its_first_locked_level");
    let root = registry();
    // Each case: hold the level, start the call on a thread, wait until its stage above the
    // level ran (it then tries the level and waits), remove children, let the level go.
    let runs = Arc::new(AtomicUsize::new(0));
    let waiting_for = |runs: &Arc<AtomicUsize>| {
        eventually("the call reached its first locked level", || {
            runs.load(Relaxed) >= 1
        });
    };

    // The leaf, exclusive.
    let held = class(&root, 1, 10).lock_arc();
    let call = thread::spawn({
        let (root, runs) = (root.clone(), runs.clone());
        move || {
            let answer = ToClass.run(
                &root,
                to_lecture(1),
                |lecture: &Lecture, guard: &EpochGuard| {
                    runs.fetch_add(1, Relaxed);
                    lecture.classes.get(&10, guard)
                },
                |class| class.students.clone(),
            );
            (answer, runs.load(Relaxed))
        }
    });
    waiting_for(&runs);
    removed_classes_are_freed(&root, 100);
    let mut held = held;
    held.students.push(7);
    drop(held);
    let (answer, passes) = call.join().unwrap();
    assert_eq!(answer, Ok(vec![7]), "the class it waited for");
    assert_eq!(passes, 2, "one pass that found it held, one that used it");

    // A shared level above the leaf.
    runs.store(0, Relaxed);
    let hall = {
        let guard = EpochGuard::pin();
        Arc::clone(root.read().halls.get(&2, &guard).unwrap())
    };
    let held = hall.write_arc();
    let call = thread::spawn({
        let (root, runs) = (root.clone(), runs.clone());
        move || {
            ToRoom.run(
                &root,
                |registry: &Registry, guard: &EpochGuard| {
                    runs.fetch_add(1, Relaxed);
                    registry.halls.get(&2, guard)
                },
                |hall: &Hall| hall.rooms.first().cloned(),
                |room| room.seats,
            )
        }
    });
    waiting_for(&runs);
    removed_classes_are_freed(&root, 100);
    drop(held);
    assert_eq!(call.join().unwrap(), Ok(30));
    assert_eq!(runs.load(Relaxed), 2);

    // The leaf as the upgradable reader.
    runs.store(0, Relaxed);
    let held = hall.write_arc();
    let call = thread::spawn({
        let (root, runs) = (root.clone(), runs.clone());
        move || {
            ToHall.run(
                &root,
                |registry: &Registry, guard: &EpochGuard| {
                    runs.fetch_add(1, Relaxed);
                    registry.halls.get(&2, guard)
                },
                |hall| hall.upgrade().rooms.len(),
            )
        }
    });
    waiting_for(&runs);
    removed_classes_are_freed(&root, 100);
    drop(held);
    assert_eq!(call.join().unwrap(), Ok(1));
    assert_eq!(runs.load(Relaxed), 2);
}

/// The level a call waited for out of its pin is used only if its path still leads there:
/// unlinked and replaced while the call waited, it is let go and the new one taken. With a
/// deadline that passes while it waits, the call times out at that level, after a pass that
/// validated its path to it.
#[test]
fn a_level_waited_for_is_used_only_where_the_path_still_leads() {
    let _watchdog = watchdog("a_level_waited_for_is_used_only_where_the_path_still_leads");
    let root = registry();
    let runs = Arc::new(AtomicUsize::new(0));
    let old = class(&root, 1, 10);
    let held = old.lock_arc();
    let call = thread::spawn({
        let (root, runs) = (root.clone(), runs.clone());
        move || {
            ToClass.run(
                &root,
                to_lecture(1),
                |lecture: &Lecture, guard: &EpochGuard| {
                    runs.fetch_add(1, Relaxed);
                    lecture.classes.get(&10, guard)
                },
                |class| class.students.clone(),
            )
        }
    });
    eventually("the call reached the class", || runs.load(Relaxed) >= 1);
    let new = Class {
        students: vec![2],
        ..Class::default()
    };
    lecture(&root, 1)
        .write()
        .classes
        .insert(10, Arc::new(Mutex::new(new)));
    drop(held);
    assert_eq!(
        call.join().unwrap(),
        Ok(vec![2]),
        "the new class, not the old"
    );
    assert!(old.try_lock().is_some(), "the old class let go");

    // A deadline that passes while the call waits.
    runs.store(0, Relaxed);
    let held = class(&root, 1, 20).lock_arc();
    let started = Instant::now();
    let call = thread::spawn({
        let (root, runs) = (root.clone(), runs.clone());
        move || {
            ToClass.run_until(
                &root,
                Instant::now() + Duration::from_millis(50),
                to_lecture(1),
                |lecture: &Lecture, guard: &EpochGuard| {
                    runs.fetch_add(1, Relaxed);
                    lecture.classes.get(&20, guard)
                },
                |class| class.students.clone(),
            )
        }
    });
    assert_eq!(call.join().unwrap(), Err(Exit::TimedOut { level: 2 }));
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(
        runs.load(Relaxed),
        2,
        "the wait, then the pass that timed out"
    );
    drop(held);
}
