//! The telemetry of chain lockers, walks and distributed locks (feature `telemetry`): exact
//! counts under deterministic schedules, contended waits seen through `live()`, and the
//! sites of the caller's own lines; the optimistic walk's restarts and fallbacks, per depth.
#![cfg(feature = "telemetry")]

use chainlock::distributed::LockClient;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::telemetry::{self, Config, LockName, LockStats, Report};
use chainlock::walk::{Exclusive, Shared, Step, Walker};
use chainlock::{ChainNode, chain_locker};
use chainlock_suite::watchdog::{eventually, watchdog};
use std::cell::Cell;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::thread;

/// The telemetry is one per process: the tests of this file take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This test's turn, with the telemetry zeroed and recording every acquisition.
fn turn() -> MutexGuard<'static, ()> {
    let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    telemetry::enable(Config::new().sample_every(1));
    telemetry::reset();
    turn
}

fn stats(report: &Report, name: &LockName) -> LockStats {
    report
        .locks
        .iter()
        .find(|lock| &lock.lock == name)
        .cloned()
        .unwrap_or_else(|| panic!("no statistics for {name} in\n{report}"))
}

fn is_waiting_on(name: &LockName) -> bool {
    telemetry::live()
        .waiters
        .iter()
        .any(|waiting| &waiting.lock == name)
}

struct Registry {
    lecture: Arc<Mutex<Lecture>>,
}
struct Lecture {
    class: Arc<Mutex<Class>>,
}
struct Class {
    seats: u32,
}

chain_locker! {
    /// Registry → lecture → class, every level exclusive.
    struct HooksLocker(Registry, Lecture, Class);
}

fn tree() -> (Arc<Mutex<Registry>>, Arc<Mutex<Lecture>>) {
    let class = Arc::new(Mutex::new(Class { seats: 0 }));
    let lecture = Arc::new(Mutex::new(Lecture { class }));
    let root = Arc::new(Mutex::new(Registry {
        lecture: Arc::clone(&lecture),
    }));
    (root, lecture)
}

fn level(level: usize, name: &'static str) -> LockName {
    LockName::Level {
        locker: "HooksLocker",
        level,
        name,
    }
}

#[test]
fn chain_levels_count_every_acquisition() {
    let _turn = turn();
    let (root, _) = tree();
    let lecture = |r: &mut Registry| Some(Arc::clone(&r.lecture));
    let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
    for _ in 0..3 {
        HooksLocker
            .run(&root, lecture, class, |c| c.seats += 1)
            .unwrap();
    }
    for _ in 0..2 {
        drop(HooksLocker.descend(&root, lecture, class).unwrap());
    }
    let report = telemetry::report();
    for (index, name) in ["Registry", "Lecture", "Class"].into_iter().enumerate() {
        let lock = stats(&report, &level(index, name));
        assert_eq!(lock.acquisitions, 5, "{report}");
        assert_eq!(lock.contended, 0, "{report}");
    }
    // The two upper levels are released inside every descent: each hold is seen.
    for (index, name) in [(0, "Registry"), (1, "Lecture")] {
        assert_eq!(
            stats(&report, &level(index, name)).hold.count,
            5,
            "{report}"
        );
    }
    assert_eq!(root.lock().lecture.lock().class.lock().seats, 3);
}

/// Sampling 1 in 4: a call whose acquisitions the sampler does not pick runs without hooks
/// (the countdown moves past its three levels at once), and one that stops early at level 1
/// still counts as three in the countdown; each level's estimate stays near its true count.
/// (Were the unvisited class level's chances given to the next call's levels instead, or a
/// call's levels counted once, the estimates would be off by a third or more.)
#[test]
fn chain_levels_estimates_under_sampling_are_near_the_counts() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(4));
    let (root, _) = tree();
    let lecture = |r: &mut Registry| Some(Arc::clone(&r.lecture));
    let (mut full, mut stopped) = (0_u64, 0_u64);
    for call in 0..12_000_u32 {
        // Every third call stops at the lecture (no class): its class level is not taken.
        let stops = call % 3 == 0;
        let class = |l: &mut Lecture| (!stops).then(|| Arc::clone(&l.class));
        if HooksLocker.run(&root, lecture, class, |_| ()).is_ok() {
            full += 1;
        } else {
            stopped += 1;
        }
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    assert_eq!((full, stopped), (8_000, 4_000));
    for (index, name, count) in [
        (0, "Registry", 12_000),
        (1, "Lecture", 12_000),
        (2, "Class", 8_000),
    ] {
        let estimate = stats(&report, &level(index, name)).acquisitions;
        assert!(
            estimate * 10 >= count * 8 && estimate * 10 <= count * 12,
            "level {index}: {estimate} estimated for {count}\n{report}"
        );
    }
}

/// Half the calls stop at the registry (no lecture): they take one lock where a full call
/// takes three. The estimates must stay near the true counts at a tight tolerance: a call
/// the sampler skips spends three chances, the recording copy one per acquisition made,
/// so early exits make the next acquisitions sampled too often (issue #30, found in
/// session 14: the scheduler's optimistic class level 1.76 acquisitions per operation at
/// 1 in 100 for 1.43 at 1 in 1). FAILS today; the fix is planned in the closing note.
#[test]
fn chain_levels_estimates_with_many_early_exits_are_unbiased() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(8));
    let (root, _) = tree();
    let mut taken = [0_u64; 3];
    for call in 0..80_000_u32 {
        let stops = call % 2 == 0;
        let lecture = |r: &mut Registry| (!stops).then(|| Arc::clone(&r.lecture));
        let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
        taken[0] += 1;
        if HooksLocker.run(&root, lecture, class, |_| ()).is_ok() {
            taken[1] += 1;
            taken[2] += 1;
        }
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    for (index, name) in [(0, "Registry"), (1, "Lecture"), (2, "Class")] {
        let (estimate, count) = (
            stats(&report, &level(index, name)).acquisitions,
            taken[index],
        );
        assert!(
            estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
            "level {index}: {estimate} estimated for {count}\n{report}"
        );
    }
}

chain_locker! {
    /// A second locker over the same node types, called from inside `HooksLocker`'s stages.
    struct NestedLocker(Registry, Lecture, Class);
}

/// As above, with a whole call of another locker made inside the leaf closure of the calls
/// that do not end early: the nested call's levels are its own, not the outer call's
/// (counted as the outer call's, they would hide its unreached levels), and both lockers'
/// estimates stay near their counts. (A nested call made inside a *stage* is the case the
/// guide's Limits describe: the recording copy spends its unreached levels' chances after
/// it, the copy the sampler skips before it.)
#[test]
fn chain_levels_estimates_with_nested_calls_in_the_leaf_are_unbiased() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(8));
    let (root, _) = tree();
    let (inner, _) = tree();
    let mut taken = [0_u64; 3];
    let nested = Cell::new(0_u64);
    for call in 0..80_000_u32 {
        let stops = call % 2 == 0;
        let lecture = |r: &mut Registry| (!stops).then(|| Arc::clone(&r.lecture));
        let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
        let leaf = |_: &mut Class| {
            let nested_ok = NestedLocker
                .run(
                    &inner,
                    |r| Some(Arc::clone(&r.lecture)),
                    |l| Some(Arc::clone(&l.class)),
                    |_| (),
                )
                .is_ok();
            assert!(nested_ok);
            nested.set(nested.get() + 1);
        };
        taken[0] += 1;
        if HooksLocker.run(&root, lecture, class, leaf).is_ok() {
            taken[1] += 1;
            taken[2] += 1;
        }
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    let nested_name = |level, name| LockName::Level {
        locker: "NestedLocker",
        level,
        name,
    };
    for (index, name) in [(0, "Registry"), (1, "Lecture"), (2, "Class")] {
        for (lock, count) in [
            (level(index, name), taken[index]),
            (nested_name(index, name), nested.get()),
        ] {
            let estimate = stats(&report, &lock).acquisitions;
            assert!(
                estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
                "{lock}: {estimate} estimated for {count}\n{report}"
            );
        }
    }
}

/// A whole call of another locker made inside the stage that ends the outer call early:
/// the outer call still spends its two unreached levels' chances (the nested call's
/// levels are its own, not the outer call's), and the outer estimates stay near their
/// counts. The nested call's own estimates are not asserted: its chances come before the
/// outer call's unreached ones in the copy that records and after them in the other (the
/// guide's Limits: 1.8 times too high here).
#[test]
fn chain_levels_estimates_with_nested_calls_in_a_stage_are_the_outer_calls_own() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(8));
    let (root, _) = tree();
    let (inner, _) = tree();
    let mut taken = [0_u64; 3];
    for call in 0..80_000_u32 {
        let stops = call % 2 == 0;
        let lecture = |r: &mut Registry| {
            if stops {
                let nested = NestedLocker.run(
                    &inner,
                    |r| Some(Arc::clone(&r.lecture)),
                    |l| Some(Arc::clone(&l.class)),
                    |_| (),
                );
                assert!(nested.is_ok());
            }
            (!stops).then(|| Arc::clone(&r.lecture))
        };
        let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
        taken[0] += 1;
        if HooksLocker.run(&root, lecture, class, |_| ()).is_ok() {
            taken[1] += 1;
            taken[2] += 1;
        }
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    for (index, name) in [(0, "Registry"), (1, "Lecture"), (2, "Class")] {
        let (estimate, count) = (
            stats(&report, &level(index, name)).acquisitions,
            taken[index],
        );
        assert!(
            estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
            "level {index}: {estimate} estimated for {count}\n{report}"
        );
    }
}

struct AsyncRegistry {
    lecture: Arc<tokio::sync::Mutex<AsyncLecture>>,
}
struct AsyncLecture {
    class: Arc<tokio::sync::Mutex<AsyncClass>>,
}
struct AsyncClass;

chain_locker! {
    /// Registry → lecture → class over Tokio's mutexes, for the async flavor.
    struct AsyncHooksLocker(AsyncRegistry, AsyncLecture, AsyncClass);
}

/// The early-exit bias, in the async flavor: its recording copy ends early through `?`
/// inside the future, and must spend its unreached levels' chances too.
#[test]
fn async_chain_levels_estimates_with_many_early_exits_are_unbiased() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(8));
    let class = Arc::new(tokio::sync::Mutex::new(AsyncClass));
    let lecture = Arc::new(tokio::sync::Mutex::new(AsyncLecture { class }));
    let root = Arc::new(tokio::sync::Mutex::new(AsyncRegistry { lecture }));
    let taken = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let mut taken = [0_u64; 3];
            for call in 0..80_000_u32 {
                let stops = call % 2 == 0;
                let lecture = |r: &mut AsyncRegistry| (!stops).then(|| Arc::clone(&r.lecture));
                let class = |l: &mut AsyncLecture| Some(Arc::clone(&l.class));
                taken[0] += 1;
                let outcome = AsyncHooksLocker
                    .run_async(&root, lecture, class, |_| ())
                    .await;
                if outcome.is_ok() {
                    taken[1] += 1;
                    taken[2] += 1;
                }
            }
            taken
        });
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    for (index, name) in [(0, "AsyncRegistry"), (1, "AsyncLecture"), (2, "AsyncClass")] {
        let lock = LockName::Level {
            locker: "AsyncHooksLocker",
            level: index,
            name,
        };
        let (estimate, count) = (stats(&report, &lock).acquisitions, taken[index]);
        assert!(
            estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
            "{lock}: {estimate} estimated for {count}\n{report}"
        );
    }
}

#[derive(ChainNode)]
struct Shelf {
    #[chain(children)]
    boxes: std::collections::BTreeMap<u32, Arc<Mutex<Crate>>>,
}

#[derive(ChainNode)]
struct Crate {
    items: u32,
}

chain_locker! {
    /// Shelf → crate, for `lock_leaves`.
    struct ShelfLocker(Shelf, Crate);
}

/// `lock_leaves` finds each path's leaf without taking it (`Found`): each path's descent
/// makes one acquisition of its two levels, and the copy the sampler skips spends the
/// chances of both. The recording copy spends the unreached leaf's too, so the shelf's
/// estimate stays near its count (it was too high by the share of the chances the found
/// leaves left unspent).
#[test]
fn lock_leaves_paths_estimates_are_unbiased() {
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(8));
    let boxes = (0..4)
        .map(|key| (key, Arc::new(Mutex::new(Crate { items: 0 }))))
        .collect();
    let shelf = Arc::new(Mutex::new(Shelf { boxes }));
    let calls = 40_000_u64;
    for call in 0..calls {
        let first = u32::try_from(call % 4).unwrap();
        let second = (first + 1) % 4;
        let mut guards = ShelfLocker
            .lock_leaves(&shelf, [&first, &second])
            .unwrap_or_else(|exit| panic!("{exit}"));
        guards[0].items += 1;
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    let shelf_level = LockName::Level {
        locker: "ShelfLocker",
        level: 0,
        name: "Shelf",
    };
    // Each call takes two leaves (together, at the end) too: their chances are theirs.
    for name in [shelf_level, crate_level()] {
        let (estimate, count) = (stats(&report, &name).acquisitions, calls * 2);
        assert!(
            estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
            "{name}: {estimate} estimated for {count}\n{report}"
        );
    }
}

/// The leaf level of `ShelfLocker`.
fn crate_level() -> LockName {
    LockName::Level {
        locker: "ShelfLocker",
        level: 1,
        name: "Crate",
    }
}

/// The leaves `lock_leaves` and `lock_leaves_until` take together at the end are recorded at
/// the leaf level: each counted (as the paths' levels are), a leaf held by another thread
/// waited for in `live()` and counted as contended, at the caller's line. Their holds are
/// not followed (the guards returned are the lock's own, as a `descend`'s leaf).
#[test]
fn lock_leaves_leaves_are_recorded_at_the_leaf_level() {
    let _turn = turn();
    let _watchdog = watchdog("lock_leaves_leaves_are_recorded_at_the_leaf_level");
    let boxes = (0..4)
        .map(|key| (key, Arc::new(Mutex::new(Crate { items: 0 }))))
        .collect();
    let shelf = Arc::new(Mutex::new(Shelf { boxes }));
    for _ in 0..5 {
        let guards = ShelfLocker.lock_leaves(&shelf, [&0, &1, &2]).unwrap();
        assert_eq!(guards.len(), 3);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    for _ in 0..4 {
        let guards = ShelfLocker
            .lock_leaves_until(&shelf, deadline, [&3, &1])
            .unwrap();
        assert_eq!(guards.len(), 2);
    }
    let report = telemetry::report();
    assert_eq!(
        stats(&report, &crate_level()).acquisitions,
        5 * 3 + 4 * 2,
        "{report}"
    );
    // A leaf held outside the locker: the call waits for it at the leaf level.
    let third = Arc::clone(&shelf.lock().boxes[&2]);
    let held = third.lock();
    let line = thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let (line, guards) = (line!(), ShelfLocker.lock_leaves(&shelf, [&2, &0]));
            guards.unwrap()[0].items += 1;
            line
        });
        eventually("lock_leaves waits for its leaf", || {
            is_waiting_on(&crate_level())
        });
        drop(held);
        waiter.join().unwrap()
    });
    let report = telemetry::report();
    let leaves = stats(&report, &crate_level());
    assert_eq!(leaves.acquisitions, 5 * 3 + 4 * 2 + 2, "{report}");
    assert_eq!(leaves.contended, 1, "{report}");
    assert_eq!(leaves.wait.count, leaves.acquisitions, "{report}");
    // The leaves' site is the caller's line (`lock_leaves` is tracked).
    let site = leaves.waiter_sites.first().expect("a waiter site");
    assert_eq!(
        (site.site.file(), site.site.line()),
        (file!(), line),
        "{report}"
    );
    let shelf_level = LockName::Level {
        locker: "ShelfLocker",
        level: 0,
        name: "Shelf",
    };
    assert_eq!(stats(&report, &shelf_level).acquisitions, 5 * 3 + 4 * 2 + 2);
}

/// A stage or leaf that panics in a recorded call (the recording copy of the body runs out
/// of line): every level is released, and no hold stays in the live table.
#[test]
fn chain_panic_in_a_recorded_call_releases_every_level() {
    let _turn = turn();
    let (root, lecture_lock) = tree();
    let lecture = |r: &mut Registry| Some(Arc::clone(&r.lecture));
    let stage = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        HooksLocker.run(
            &root,
            lecture,
            |_: &mut Lecture| -> Option<Arc<Mutex<Class>>> { panic!("stage") },
            |_| (),
        )
    }));
    assert!(stage.is_err(), "the stage's panic reaches the caller");
    let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
    let leaf = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        HooksLocker.run(&root, lecture, class, |_| panic!("leaf"))
    }));
    assert!(leaf.is_err(), "the leaf's panic reaches the caller");
    assert!(root.try_lock().is_some(), "the registry is free");
    assert!(lecture_lock.try_lock().is_some(), "the lecture is free");
    assert!(
        lecture_lock.lock().class.try_lock().is_some(),
        "the class is free"
    );
    let live = telemetry::live();
    assert!(
        !live.holders.iter().any(|holding| matches!(
            &holding.lock,
            LockName::Level {
                locker: "HooksLocker",
                ..
            }
        )),
        "no level is still held in the live table:\n{live}"
    );
    // Both calls were recorded up to where they panicked.
    let report = telemetry::report();
    assert_eq!(
        stats(&report, &level(1, "Lecture")).acquisitions,
        2,
        "{report}"
    );
    assert_eq!(
        stats(&report, &level(2, "Class")).acquisitions,
        1,
        "{report}"
    );
}

/// The early-exit bias, through a panic: half the calls panic in their first stage (after
/// the registry, before the lecture and the class). The recording copy that unwinds must
/// spend its two unreached levels' chances as one that returns does (they were left
/// unspent: the registry estimated about a third too high), so the estimates stay near the
/// counts.
#[test]
fn chain_levels_estimates_with_panicking_stages_are_unbiased() {
    let _turn = turn();
    quiet_panics("sampled stage");
    telemetry::enable(Config::new().sample_every(8));
    let (root, _) = tree();
    let mut taken = [0_u64; 3];
    for call in 0..40_000_u32 {
        let panics = call % 2 == 0;
        let lecture = |r: &mut Registry| {
            assert!(!panics, "sampled stage");
            Some(Arc::clone(&r.lecture))
        };
        let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
        taken[0] += 1;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            HooksLocker.run(&root, lecture, class, |_| ())
        }));
        if out.is_ok() {
            taken[1] += 1;
            taken[2] += 1;
        }
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    assert_eq!(taken, [40_000, 20_000, 20_000]);
    for (index, name) in [(0, "Registry"), (1, "Lecture"), (2, "Class")] {
        let (estimate, count) = (
            stats(&report, &level(index, name)).acquisitions,
            taken[index],
        );
        assert!(
            estimate * 100 >= count * 93 && estimate * 100 <= count * 107,
            "level {index}: {estimate} estimated for {count}\n{report}"
        );
    }
}

/// Panics whose message is `message` print nothing (thousands of them, caught by the test);
/// the others go to the hook in place before.
fn quiet_panics(message: &'static str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&message)
                && info.payload().downcast_ref::<String>().map(String::as_str) != Some(message)
            {
                before(info);
            }
        }));
    });
}

#[test]
fn chain_contended_level_names_the_callers_line() {
    let _watchdog = watchdog("chain_contended_level_names_the_callers_line");
    let _turn = turn();
    let (root, lecture_lock) = tree();
    let held = lecture_lock.lock();
    let descent = thread::spawn({
        let root = Arc::clone(&root);
        move || {
            let lecture = |r: &mut Registry| Some(Arc::clone(&r.lecture));
            let class = |l: &mut Lecture| Some(Arc::clone(&l.class));
            let (line, outcome) = (line!(), HooksLocker.run(&root, lecture, class, |c| c.seats));
            (line, outcome)
        }
    });
    let lecture = level(1, "Lecture");
    eventually("the descent waits at level 1", || is_waiting_on(&lecture));
    // How long it had waited when seen: the recorded wait can only be longer. (Not the time
    // the release took: a release preempted after it unlocked can take longer than the
    // waiter's whole wait.)
    let seen_waiting = telemetry::live()
        .waiters
        .iter()
        .find(|waiting| waiting.lock == lecture)
        .expect("still waiting: the lock is held")
        .waited_for;
    drop(held);
    let (line, outcome) = descent.join().unwrap();
    assert_eq!(outcome, Ok(0));
    let report = telemetry::report();
    let contended = stats(&report, &lecture);
    assert_eq!(
        (contended.acquisitions, contended.contended),
        (1, 1),
        "{report}"
    );
    assert!(contended.wait.max >= seen_waiting, "{report}");
    let site = contended.waiter_sites.first().expect("a waiter site");
    assert_eq!(
        (site.site.file(), site.site.line()),
        (file!(), line),
        "{report}"
    );
    assert_eq!(site.count, 1, "{report}");
    let root_level = stats(&report, &level(0, "Registry"));
    assert_eq!(
        (root_level.acquisitions, root_level.contended),
        (1, 0),
        "{report}"
    );
}

struct Node {
    next: Option<Arc<Mutex<Node>>>,
}
impl ChainNode for Node {}

/// A list of `len` nodes, and its nodes.
fn list(len: usize) -> Vec<Arc<Mutex<Node>>> {
    let mut nodes: Vec<Arc<Mutex<Node>>> = Vec::new();
    for _ in 0..len {
        let next = nodes.last().cloned();
        nodes.push(Arc::new(Mutex::new(Node { next })));
    }
    nodes.reverse(); // nodes[0] is the head
    nodes
}

fn depth(depth: usize) -> LockName {
    LockName::Depth {
        walk: "walk",
        depth,
    }
}

#[test]
fn walk_depths_count_every_acquisition() {
    let _turn = turn();
    let nodes = list(4);
    for _ in 0..2 {
        let end = Walker::new()
            .descend(&nodes[0], Exclusive, |node, _| {
                node.next.clone().map_or(Step::Here, Step::Descend)
            })
            .unwrap();
        assert!(end.next.is_none());
    }
    let report = telemetry::report();
    for at in 0..4 {
        let lock = stats(&report, &depth(at));
        assert_eq!((lock.acquisitions, lock.contended), (2, 0), "{report}");
    }
    assert!(
        !report.locks.iter().any(|lock| lock.lock == depth(4)),
        "{report}"
    );
}

type Guard = chainlock::lock_api::ArcMutexGuard<chainlock::parking_lot::RawMutex, Node>;

fn next(node: &mut Node) -> Step<Arc<Mutex<Node>>> {
    node.next.clone().map_or(Step::Here, Step::Descend)
}

fn last(node: &mut Node) -> bool {
    node.next.is_none()
}

#[test]
fn walk_contended_depth_names_the_callers_line() {
    let _watchdog = watchdog("walk_contended_depth_names_the_callers_line");
    let _turn = turn();
    let nodes = list(3);
    let held = nodes[2].lock();
    let descent = thread::spawn({
        let first = Arc::clone(&nodes[0]);
        move || {
            let step = |node: &mut Guard, _| next(node);
            let end = |node: &mut Guard| last(node);
            let (line, end) = (line!(), Walker::new().run(&first, Exclusive, step, end));
            (line, end)
        }
    });
    eventually("the walk waits at depth 2", || is_waiting_on(&depth(2)));
    drop(held);
    let (line, end) = descent.join().unwrap();
    assert_eq!(end, Ok(true));
    let report = telemetry::report();
    let contended = stats(&report, &depth(2));
    assert_eq!(
        (contended.acquisitions, contended.contended),
        (1, 1),
        "{report}"
    );
    let site = contended.waiter_sites.first().expect("a waiter site");
    assert_eq!(
        (site.site.file(), site.site.line()),
        (file!(), line),
        "{report}"
    );
    for at in 0..2 {
        let lock = stats(&report, &depth(at));
        assert_eq!((lock.acquisitions, lock.contended), (1, 0), "{report}");
    }
}

/// A node of an optimistic walk: a list of hybrid locks.
struct Hybrid {
    next: Option<Arc<HybridLock<Hybrid>>>,
}
impl ChainNode for Hybrid {}

/// A list of `len` hybrid nodes, the head first.
fn hybrid_list(len: usize) -> Vec<Arc<HybridLock<Hybrid>>> {
    let mut nodes: Vec<Arc<HybridLock<Hybrid>>> = Vec::new();
    for _ in 0..len {
        let next = nodes.last().cloned();
        nodes.push(Arc::new(HybridLock::new(Hybrid { next })));
    }
    nodes.reverse();
    nodes
}

#[test]
fn optimistic_walk_counts_restarts_and_fallbacks_at_the_failed_depth() {
    let _turn = turn();
    let nodes = hybrid_list(3);
    // A walk whose step, at depth 1, lets a writer pass through that node `forced` times in
    // all (once per optimistic pass while any are left): each pass's validation of depth 1
    // fails and the walk restarts. Never more than the optimistic passes (the pessimistic
    // pass holds the node shared: a write there would wait for itself).
    let walk = |max_restarts: usize, forced: usize| {
        let left = Cell::new(forced);
        let found = Walker::new()
            .max_restarts(max_restarts)
            .descend_optimistic(&nodes[0], Shared, |node: &Hybrid, depth, _| {
                if depth == 1 && left.get() > 0 {
                    left.set(left.get() - 1);
                    drop(nodes[1].write());
                }
                node.next.as_ref().map_or(Step::Here, Step::Descend)
            })
            .unwrap();
        (found.level, found.restarts, found.pessimistic)
    };
    assert_eq!(walk(2, 0), (2, 0, false));
    let quiet = telemetry::report();
    assert!(
        quiet.locks.iter().all(|lock| lock.restarts == 0),
        "a walk without writers restarts nowhere:\n{quiet}"
    );
    // One restart, then an optimistic pass that validates.
    assert_eq!(walk(2, 1), (2, 1, false));
    // Two restarts with a bound of one: the second sends the walk to its pessimistic pass.
    assert_eq!(walk(1, 2), (2, 2, true));
    let report = telemetry::report();
    let failed = stats(&report, &depth(1));
    assert_eq!((failed.restarts, failed.fallbacks), (3, 1), "{report}");
    for other in [0, 2] {
        let lock = report.locks.iter().find(|lock| lock.lock == depth(other));
        assert!(
            lock.is_none_or(|lock| (lock.restarts, lock.fallbacks) == (0, 0)),
            "{report}"
        );
    }
    assert!(
        report
            .table()
            .contains("optimistic restarts: 3, of which fell back to locking: 1"),
        "{report}"
    );
}

/// An optimistic walk's pessimistic pass holds its path nodes (here shared): each hold is in
/// `live()` with its thread while it lasts, so that a writer waiting for the node sees who
/// holds it. The walk is sent to its pessimistic pass by a forced restart; there, its step at
/// the root lets the test take the next node's writer first, so the pass waits for it while
/// holding the root.
#[test]
fn optimistic_walk_pessimistic_holds_are_live() {
    use std::sync::mpsc;
    use std::time::Duration;
    let _watchdog = watchdog("optimistic_walk_pessimistic_holds_are_live");
    let _turn = turn();
    let nodes = hybrid_list(3);
    let (at_root, root_reached) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let walk = thread::Builder::new()
        .name("pessimistic-walk".into())
        .spawn({
            let nodes = nodes.clone();
            move || {
                let (mut forced, mut roots) = (false, 0);
                let found = Walker::new()
                    .max_restarts(0)
                    .descend_optimistic(&nodes[0], Shared, |node: &Hybrid, depth, _| {
                        if depth == 1 && !forced {
                            forced = true;
                            drop(nodes[1].write());
                        }
                        if depth == 0 {
                            roots += 1;
                            if roots == 2 {
                                // The pessimistic pass, the root held shared.
                                at_root.send(()).unwrap();
                                wait_go.recv_timeout(Duration::from_secs(20)).unwrap();
                            }
                        }
                        node.next.as_ref().map_or(Step::Here, Step::Descend)
                    })
                    .unwrap();
                (found.level, found.restarts, found.pessimistic)
            }
        })
        .unwrap();
    let holds_root = || {
        telemetry::live()
            .holders
            .iter()
            .any(|holding| holding.lock == depth(0) && holding.thread == "pessimistic-walk")
    };
    root_reached
        .recv_timeout(Duration::from_secs(20))
        .expect("the walk's pessimistic pass reaches its root");
    let writer = nodes[1].write();
    go.send(()).unwrap();
    eventually("the pessimistic pass waits at depth 1", || {
        is_waiting_on(&depth(1))
    });
    assert!(
        holds_root(),
        "the root's shared hold is live:\n{}",
        telemetry::live()
    );
    drop(writer);
    assert_eq!(walk.join().unwrap(), (2, 1, true));
    assert!(!holds_root(), "released:\n{}", telemetry::live());
    let report = telemetry::report();
    assert_eq!(stats(&report, &depth(0)).hold.count, 1, "{report}");
    assert_eq!(stats(&report, &depth(1)).hold.count, 1, "{report}");
}

#[test]
fn optimistic_walk_counts_its_locks_and_not_its_reads() {
    let _watchdog = watchdog("optimistic_walk_counts_its_locks_and_not_its_reads");
    let _turn = turn();
    let nodes = hybrid_list(3);
    // Optimistic all the way: the target's lock alone is an acquisition.
    let found = Walker::new()
        .descend_optimistic(&nodes[0], Shared, |node: &Hybrid, _, _| {
            node.next.as_ref().map_or(Step::Here, Step::Descend)
        })
        .unwrap();
    assert_eq!((found.level, found.restarts), (2, 0));
    drop(found);
    let report = telemetry::report();
    let target = stats(&report, &depth(2));
    assert_eq!((target.acquisitions, target.contended), (1, 0), "{report}");
    for read in [0, 1] {
        assert!(
            !report.locks.iter().any(|lock| lock.lock == depth(read)),
            "an optimistic read is not an acquisition:\n{report}"
        );
    }
    // A writer holds the target (a `Here` node: the step cannot see it while it is held):
    // the walk waits for it out of its pin, then walks again, with no restart; the wait is
    // a contended acquisition at depth 2 (taken shared and let go), the target another.
    telemetry::reset();
    let held = nodes[2].write();
    let walk = thread::spawn({
        let first = Arc::clone(&nodes[0]);
        move || {
            let found = Walker::new()
                .max_restarts(0)
                .descend_optimistic(&first, Shared, |node: &Hybrid, _, _| {
                    node.next.as_ref().map_or(Step::Here, Step::Descend)
                })
                .unwrap();
            (found.level, found.restarts, found.pessimistic)
        }
    });
    eventually("the walk waits at depth 2", || is_waiting_on(&depth(2)));
    drop(held);
    assert_eq!(walk.join().unwrap(), (2, 0, false));
    let report = telemetry::report();
    let waited = stats(&report, &depth(2));
    assert_eq!(
        (
            waited.acquisitions,
            waited.contended,
            waited.restarts,
            waited.fallbacks
        ),
        (2, 1, 0, 0),
        "{report}"
    );
    let site = waited.waiter_sites.first().expect("a waiter site");
    assert_eq!(site.site.file(), file!(), "the caller's line: {report}");
    for read in [0, 1] {
        assert!(
            !report.locks.iter().any(|lock| lock.lock == depth(read)),
            "no pessimistic pass, no lock on the path:\n{report}"
        );
    }
}

/// The class of the hybrid locks over `Hybrid` taken by themselves.
fn standalone_hybrid() -> LockName {
    LockName::Hybrid {
        data: std::any::type_name::<Hybrid>().into(),
    }
}

fn is_holding(name: &LockName) -> bool {
    telemetry::live()
        .holders
        .iter()
        .any(|holding| &holding.lock == name)
}

/// A hybrid lock taken by itself is recorded in its data type's class: each hold of
/// `read`, `write`, a `try_` form that succeeds and an optimistic read's `upgrade` (a failed
/// try or upgrade holds nothing and is not), a wait with the waiter's line and the holder, a
/// hold until its guard drops (a downgraded write's too); an optimistic read is not recorded.
#[test]
fn hybrid_lock_taken_by_itself_is_recorded_by_its_data_type() {
    let _watchdog = watchdog("hybrid_lock_taken_by_itself_is_recorded_by_its_data_type");
    let _turn = turn();
    let class = standalone_hybrid();
    assert_eq!(
        class.to_string(),
        format!("HybridLock<{}>", std::any::type_name::<Hybrid>())
    );
    let lock = Arc::new(HybridLock::new(Hybrid { next: None }));
    drop(lock.read());
    drop(lock.write());
    drop(lock.try_read().unwrap());
    drop(lock.try_write().unwrap());
    drop(lock.optimistic().unwrap().upgrade().unwrap());
    for _ in 0..10 {
        lock.read_optimistic(|node| node.next.is_none()).unwrap();
    }
    let stale = lock.optimistic().unwrap();
    {
        let write = lock.write();
        assert!(lock.try_read().is_none() && lock.try_write().is_none());
        drop(write);
    }
    assert!(stale.upgrade().is_err(), "a writer came in between");
    let report = telemetry::report();
    let counted = stats(&report, &class);
    assert_eq!(
        (counted.acquisitions, counted.contended, counted.hold.count),
        (6, 0, 6),
        "{report}"
    );

    // A downgraded write holds on, shared, until its guard drops.
    let read = lock.write().downgrade();
    assert!(is_holding(&class), "the downgraded hold is live");
    drop(read);
    assert!(!is_holding(&class), "no hold after the guard dropped");

    // A reader waits for a writer: contended, at this file's line, the writer its holder.
    telemetry::reset();
    let write = lock.write();
    let reader = thread::spawn({
        let lock = Arc::clone(&lock);
        move || drop(lock.read())
    });
    eventually("the reader waits for the writer", || is_waiting_on(&class));
    let live = telemetry::live();
    let waiting = live.waiters.iter().find(|w| w.lock == class).unwrap();
    assert_eq!(waiting.site.file(), file!());
    assert_eq!(waiting.holders.len(), 1, "the writer holds it: {live:?}");
    drop(write);
    reader.join().unwrap();
    let report = telemetry::report();
    let waited = stats(&report, &class);
    assert_eq!((waited.acquisitions, waited.contended), (2, 1), "{report}");
    assert_eq!(waited.waiter_sites[0].site.file(), file!(), "{report}");

    // A descent over hybrid locks records its depths, not the locks by themselves.
    telemetry::reset();
    let nodes = hybrid_list(3);
    drop(
        Walker::new()
            .descend_optimistic(&nodes[0], Shared, |node: &Hybrid, _, _| {
                node.next.as_ref().map_or(Step::Here, Step::Descend)
            })
            .unwrap(),
    );
    drop(
        Walker::new()
            .descend_optimistic(&nodes[0], Exclusive, |node: &Hybrid, _, _| {
                node.next.as_ref().map_or(Step::Here, Step::Descend)
            })
            .unwrap(),
    );
    let report = telemetry::report();
    assert_eq!(stats(&report, &depth(2)).acquisitions, 2, "{report}");
    assert!(
        report
            .locks
            .iter()
            .find(|lock| lock.lock == class)
            .is_none_or(|lock| lock.acquisitions == 0),
        "{report}"
    );
}

/// One lock taken through two lockers (each level its own class) is one lock to the live
/// table: a waiter through one locker lists the holder through the other, and two threads
/// crossing the lockers over two classes close a wait-for cycle that `cycles()` reports (it
/// checks in debug builds only).
#[test]
fn one_lock_through_two_lockers_is_one_lock_to_waiters_and_cycles() {
    use chainlock::parking_lot::RwLock;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    struct Lecture {
        classes: Vec<Arc<Mutex<u32>>>,
    }
    chain_locker!(struct Join(shared Lecture, u32););
    chain_locker!(struct Leave(shared Lecture, u32););
    let _watchdog = watchdog("one_lock_through_two_lockers_is_one_lock_to_waiters_and_cycles");
    let _turn = turn();
    let lecture = Arc::new(RwLock::new(Lecture {
        classes: vec![Arc::new(Mutex::new(0)), Arc::new(Mutex::new(0))],
    }));
    let class = |i: usize| move |l: &Lecture| l.classes.get(i).cloned();
    let join_class = LockName::Level {
        locker: "Join",
        level: 1,
        name: "u32",
    };
    let leave_class = LockName::Level {
        locker: "Leave",
        level: 1,
        name: "u32",
    };

    // A holds class 0 through `Join` until told; B waits for it through `Leave`.
    let (release, released) = mpsc::channel::<()>();
    let (held, is_held) = mpsc::channel::<()>();
    let a = thread::spawn({
        let lecture = Arc::clone(&lecture);
        move || {
            Join.run(&lecture, class(0), |_| {
                held.send(()).unwrap();
                released.recv().unwrap();
            })
        }
    });
    is_held.recv().unwrap();
    let b = thread::spawn({
        let lecture = Arc::clone(&lecture);
        move || Leave.run(&lecture, class(0), |seats| *seats += 1)
    });
    eventually("B waits through Leave", || is_waiting_on(&leave_class));
    let live = telemetry::live();
    let waiting = live.waiters.iter().find(|w| w.lock == leave_class).unwrap();
    assert!(
        waiting.holders.iter().any(|h| h.lock == join_class),
        "the holder through the other locker is listed: {live}"
    );
    release.send(()).unwrap();
    a.join().unwrap().unwrap();
    b.join().unwrap().unwrap();
    // The release through `Join` ended a wait through `Leave`: charged to `Leave`'s row.
    let report = telemetry::report();
    let waited = stats(&report, &leave_class);
    assert_eq!(waited.contended, 1, "{report}");
    let charged = waited
        .holder_sites
        .first()
        .expect("a holder charged: {report}");
    assert_eq!(charged.site.file(), file!(), "{report}");
    assert!(waited.waiters_at_release >= 1, "{report}");

    // A holds class 0 (Join) and waits for class 1; B holds class 1 (Leave) and, once A
    // waits, waits for class 0 until a deadline: B's wait closes the cycle.
    assert!(telemetry::cycles().is_empty() || cfg!(not(debug_assertions)));
    let (b_holds, b_is_holding) = mpsc::channel::<()>();
    let b = thread::spawn({
        let lecture = Arc::clone(&lecture);
        move || {
            Leave.run(&lecture, class(1), |_| {
                b_holds.send(()).unwrap();
                eventually("A waits for class 1 through Join", || {
                    is_waiting_on(&join_class)
                });
                let deadline = Instant::now() + Duration::from_millis(100);
                let closing = Join.run_until(&lecture, deadline, class(0), |_| ());
                assert!(closing.is_err(), "A holds class 0 past the deadline");
            })
        }
    });
    b_is_holding.recv().unwrap();
    let a = thread::spawn({
        let lecture = Arc::clone(&lecture);
        move || Join.run(&lecture, class(0), |_| Join.run(&lecture, class(1), |_| ()))
    });
    b.join().unwrap().unwrap();
    a.join().unwrap().unwrap().unwrap();
    if cfg!(debug_assertions) {
        let cycles = telemetry::cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(cycles[0].edges.len(), 2, "{}", cycles[0]);
    }
}

/// A fresh directory for the file backend.
fn scratch(test: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("chainlock-telemetry-{test}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// The file backend's lock `name`: `LockName::Distributed` as the design names it.
fn distributed(name: &str) -> LockName {
    LockName::Distributed {
        backend: "file",
        name: name.into(),
    }
}

fn is_distributed(lock: &LockName, name: &str) -> bool {
    match lock {
        LockName::Distributed { backend, name: n } => *backend == "file" && &**n == name,
        _ => false,
    }
}

fn distributed_stats(report: &Report, name: &str) -> LockStats {
    report
        .locks
        .iter()
        .find(|lock| is_distributed(&lock.lock, name))
        .cloned()
        .unwrap_or_else(|| panic!("no statistics for {} in\n{report}", distributed(name)))
}

#[test]
fn distributed_names_count_every_acquisition() {
    let _watchdog = watchdog("distributed_names_count_every_acquisition");
    let _turn = turn();
    let dir = scratch("names");
    let locks = LockClient::file(&dir).unwrap();
    for _ in 0..3 {
        locks
            .blocking_lock("orders")
            .unwrap()
            .blocking_release()
            .unwrap();
    }
    drop(locks.blocking_lock("invoices").unwrap());
    // Contended: held here, wanted by another thread until released.
    let held = locks.blocking_lock("orders").unwrap();
    let descent = thread::spawn({
        let locks = locks.clone();
        move || locks.blocking_lock("orders").map(drop)
    });
    eventually("the second thread waits for orders", || {
        telemetry::live()
            .waiters
            .iter()
            .any(|waiting| is_distributed(&waiting.lock, "orders"))
    });
    held.blocking_release().unwrap();
    descent.join().unwrap().unwrap();
    // An async hold: a task's, counted across `.await`.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let guard = locks.lock("in-a-task").await.unwrap();
            tokio::task::yield_now().await;
            guard.release().await.unwrap();
        });
    let report = telemetry::report();
    let orders = distributed_stats(&report, "orders");
    assert_eq!((orders.acquisitions, orders.contended), (5, 1), "{report}");
    assert_eq!(orders.hold.count, 5, "{report}");
    assert_eq!(orders.hold_across_await.count, 0, "{report}");
    let invoices = distributed_stats(&report, "invoices");
    assert_eq!(
        (invoices.acquisitions, invoices.contended),
        (1, 0),
        "{report}"
    );
    let task = distributed_stats(&report, "in-a-task");
    assert_eq!(
        (task.hold.count, task.hold_across_await.count),
        (0, 1),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A chain locker's optimistic levels: a restart is counted at the level whose validation
/// failed, the last one before the pessimistic pass as a fallback; a descent that meets no
/// writer counts none.
#[test]
fn optimistic_locker_counts_restarts_and_fallbacks_at_the_failed_level() {
    use chainlock::chain::{EpochGuard, MAX_RESTARTS};
    struct Top {
        middle: Arc<HybridLock<Middle>>,
    }
    struct Middle {
        leaf: Arc<Mutex<u32>>,
    }
    chain_locker!(struct OptimisticLocker(optimistic Top, optimistic Middle, u32););
    let name = |level, name| LockName::Level {
        locker: "OptimisticLocker",
        level,
        name,
    };
    let _turn = turn();
    let middle = Arc::new(HybridLock::new(Middle {
        leaf: Arc::new(Mutex::new(0)),
    }));
    let root = Arc::new(HybridLock::new(Top {
        middle: Arc::clone(&middle),
    }));
    // The middle level's stage lets a writer through that level `forced` times (once per
    // optimistic pass while any are left): each pass's validation of level 1 fails.
    let run = |forced: usize| {
        let left = Cell::new(forced);
        OptimisticLocker.run(
            &root,
            |top: &Top, _: &EpochGuard| Some(&top.middle),
            |m: &Middle, _: &EpochGuard| {
                if left.get() > 0 {
                    left.set(left.get() - 1);
                    drop(middle.write());
                }
                Some(&m.leaf)
            },
            |leaf| *leaf += 1,
        )
    };
    run(0).unwrap();
    let quiet = telemetry::report();
    assert!(
        quiet.locks.iter().all(|lock| lock.restarts == 0),
        "a descent without writers restarts nowhere:\n{quiet}"
    );
    run(2).unwrap();
    run(MAX_RESTARTS + 1).unwrap();
    let report = telemetry::report();
    let failed = stats(&report, &name(1, "Middle"));
    assert_eq!(
        (failed.restarts, failed.fallbacks),
        (MAX_RESTARTS as u64 + 3, 1),
        "{report}"
    );
    let top = report.locks.iter().find(|lock| lock.lock == name(0, "Top"));
    assert!(
        top.is_none_or(|lock| (lock.restarts, lock.fallbacks) == (0, 0)),
        "{report}"
    );
    assert_eq!(*root.read().middle.read().leaf.lock(), 3);
}

/// An optimistic descent's pessimistic pass holds its levels shared: each hold is in
/// `live()` (with its thread) while it lasts, so that a waiter for it sees its holder, and
/// a wait-for cycle through it is found. Here a writer holds the middle level: the
/// optimistic passes restart there until the pessimistic pass, which holds the top level
/// and waits for the middle one.
#[test]
fn optimistic_locker_pessimistic_holds_are_live_and_close_cycles() {
    use chainlock::chain::EpochGuard;
    use std::time::{Duration, Instant};
    struct Top {
        middle: Arc<HybridLock<Middle>>,
    }
    struct Middle {
        leaf: Arc<Mutex<u32>>,
    }
    chain_locker!(struct Pessimistic(optimistic Top, optimistic Middle, u32););
    #[expect(clippy::unnecessary_wraps, reason = "a stage answers an Option")]
    fn to_middle<'a>(top: &'a Top, _: &EpochGuard) -> Option<&'a Arc<HybridLock<Middle>>> {
        Some(&top.middle)
    }
    #[expect(clippy::unnecessary_wraps, reason = "a stage answers an Option")]
    fn to_leaf<'a>(m: &'a Middle, _: &EpochGuard) -> Option<&'a Arc<Mutex<u32>>> {
        Some(&m.leaf)
    }
    let name = |level, name| LockName::Level {
        locker: "Pessimistic",
        level,
        name,
    };
    let _watchdog = watchdog("optimistic_locker_pessimistic_holds_are_live_and_close_cycles");
    let _turn = turn();
    let middle = Arc::new(HybridLock::new(Middle {
        leaf: Arc::new(Mutex::new(0)),
    }));
    let root = Arc::new(HybridLock::new(Top {
        middle: Arc::clone(&middle),
    }));
    let spawn_descent = |deadline: Option<Instant>| {
        let root = Arc::clone(&root);
        thread::Builder::new()
            .name("pessimistic".into())
            .spawn(move || match deadline {
                None => Pessimistic.run(&root, to_middle, to_leaf, |n| *n += 1),
                Some(at) => Pessimistic.run_until(&root, at, to_middle, to_leaf, |n| *n += 1),
            })
            .unwrap()
    };
    let holds_top = || {
        telemetry::live()
            .holders
            .iter()
            .any(|holding| holding.lock == name(0, "Top") && holding.thread == "pessimistic")
    };

    // The pessimistic pass waits for the middle level, holding the top one.
    let writer = middle.write();
    let descent = spawn_descent(None);
    eventually("the pessimistic pass waits for the middle level", || {
        is_waiting_on(&name(1, "Middle"))
    });
    assert!(
        holds_top(),
        "the top level's shared hold is live:\n{}",
        telemetry::live()
    );
    drop(writer);
    descent.join().unwrap().unwrap();
    assert!(!holds_top(), "released:\n{}", telemetry::live());
    let report = telemetry::report();
    assert_eq!(stats(&report, &name(0, "Top")).hold.count, 1, "{report}");

    // A cycle through that hold: the middle level's writer waits for the top level (as a
    // writer), held shared by the pessimistic pass, which waits for the middle level until
    // its deadline.
    assert!(telemetry::cycles().is_empty() || cfg!(not(debug_assertions)));
    let writer = middle.write();
    let descent = spawn_descent(Some(Instant::now() + Duration::from_secs(2)));
    eventually("the pessimistic pass waits for the middle level", || {
        is_waiting_on(&name(1, "Middle"))
    });
    drop(root.write());
    drop(writer);
    let exit = descent.join().unwrap();
    assert_eq!(exit, Err(chainlock::Exit::TimedOut { level: 1 }));
    if cfg!(debug_assertions) {
        let cycles = telemetry::cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(cycles[0].edges.len(), 2, "{}", cycles[0]);
    }
}

/// Sampling 1 in 4 over a chain whose first two levels are optimistic: only the leaf is
/// taken, so only the leaf has sampling chances; its estimate stays near its true count (when
/// the optimistic levels spent chances too, the leaf was sampled about three times as often
/// as its weight says, and estimated about three times its count).
#[test]
fn optimistic_locker_estimates_under_sampling_are_near_the_counts() {
    struct Top {
        middle: Arc<HybridLock<Middle>>,
    }
    struct Middle {
        leaf: Arc<Mutex<u32>>,
    }
    chain_locker!(struct SampledOptimistic(optimistic Top, optimistic Middle, u32););
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(4));
    let root = Arc::new(HybridLock::new(Top {
        middle: Arc::new(HybridLock::new(Middle {
            leaf: Arc::new(Mutex::new(0)),
        })),
    }));
    let calls = 12_000_u64;
    for _ in 0..calls {
        SampledOptimistic
            .run(
                &root,
                |top: &Top, _: &chainlock::chain::EpochGuard| Some(&top.middle),
                |middle: &Middle, _: &chainlock::chain::EpochGuard| Some(&middle.leaf),
                |leaf| *leaf += 1,
            )
            .unwrap();
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    let leaf = LockName::Level {
        locker: "SampledOptimistic",
        level: 2,
        name: "u32",
    };
    let estimate = stats(&report, &leaf).acquisitions;
    assert!(
        estimate * 10 >= calls * 8 && estimate * 10 <= calls * 12,
        "the leaf: {estimate} estimated for {calls}\n{report}"
    );
    assert_eq!(u64::from(*root.read().middle.read().leaf.lock()), calls);
}

/// A mixed chain's optimistic repeated level: a restart at any repetition is counted at the
/// repeated level's place (`level: 1`), the fallback too; the pessimistic pass's shared holds
/// of the repetitions are counted there as well.
#[test]
fn optimistic_repeated_level_counts_restarts_at_its_place() {
    use chainlock::chain::{EpochGuard, MAX_RESTARTS};
    struct Top {
        first: Arc<HybridLock<Dir>>,
    }
    struct Dir {
        next: Option<Arc<HybridLock<Dir>>>,
        leaf: Arc<Mutex<u32>>,
    }
    impl ChainNode for Dir {}
    chain_locker!(struct MixedLocker(optimistic Top, optimistic Dir*, u32););
    let name = |level, name| LockName::Level {
        locker: "MixedLocker",
        level,
        name,
    };
    let _turn = turn();
    let leaf = Arc::new(Mutex::new(0));
    let second = Arc::new(HybridLock::new(Dir {
        next: None,
        leaf: Arc::clone(&leaf),
    }));
    let first = Arc::new(HybridLock::new(Dir {
        next: Some(Arc::clone(&second)),
        leaf: Arc::clone(&leaf),
    }));
    let root = Arc::new(HybridLock::new(Top { first }));
    // The step at the second repetition lets a writer through it `forced` times: each pass's
    // validation of that repetition fails.
    let run = |forced: usize| {
        let left = Cell::new(forced);
        MixedLocker.run(
            &root,
            |top: &Top, _: &EpochGuard| Some(&top.first),
            |dir: &Dir, depth, _: &EpochGuard| {
                if depth == 1 && left.get() > 0 {
                    left.set(left.get() - 1);
                    drop(second.write());
                }
                dir.next.as_ref().map_or(Step::Here, Step::Descend)
            },
            |dir: &Dir, _: &EpochGuard| Some(&dir.leaf),
            |leaf| *leaf += 1,
        )
    };
    run(0).unwrap();
    let quiet = telemetry::report();
    assert!(
        quiet.locks.iter().all(|lock| lock.restarts == 0),
        "a descent without writers restarts nowhere:\n{quiet}"
    );
    run(2).unwrap();
    run(MAX_RESTARTS + 1).unwrap();
    let report = telemetry::report();
    let failed = stats(&report, &name(1, "Dir"));
    assert_eq!(
        (failed.restarts, failed.fallbacks),
        (MAX_RESTARTS as u64 + 3, 1),
        "{report}"
    );
    // The pessimistic pass held each of the two repetitions shared, counted at level 1.
    assert_eq!(failed.acquisitions, 2, "{report}");
    assert_eq!(*leaf.lock(), 3);
}

/// A chain-locker call that restarts and falls back keeps its estimates right under
/// sampling: its restarts and its pessimistic pass's acquisitions, whose number the call
/// does not know when it decides whether it records, are sampled on a countdown of their
/// own, which both of its copies ask alike (found from outside: every call restarting nine
/// times, at 1 in 10 the root's pessimistic acquisitions were estimated 1,760 for 20,000
/// and the restarts 199,700 for 180,000; at 1 in 100 the leaf had no row).
#[test]
fn optimistic_calls_that_fall_back_keep_their_estimates_under_sampling() {
    use chainlock::chain::{EpochGuard, MAX_RESTARTS};
    use chainlock::lock_api::RawRwLock as _;
    struct Top {
        middle: Arc<HybridLock<Middle>>,
    }
    struct Middle {
        leaf: Arc<Mutex<u32>>,
    }
    chain_locker!(struct FallingBack(optimistic Top, optimistic Middle, u32););
    let _turn = turn();
    telemetry::enable(Config::new().sample_every(10));
    let root = Arc::new(HybridLock::new(Top {
        middle: Arc::new(HybridLock::new(Middle {
            leaf: Arc::new(Mutex::new(0)),
        })),
    }));
    let calls = 20_000_u64;
    for _ in 0..calls {
        FallingBack
            .run(
                &root,
                |top: &Top, _: &EpochGuard| {
                    // A writer at the root in every optimistic pass (not recorded: the raw
                    // lock); the pessimistic pass holds the root shared, so it cannot.
                    if let Some(token) = root.raw().try_lock_exclusive() {
                        // SAFETY: taken just above.
                        unsafe { root.raw().unlock_exclusive(token) };
                    }
                    Some(&top.middle)
                },
                |middle: &Middle, _: &EpochGuard| Some(&middle.leaf),
                |leaf| *leaf += 1,
            )
            .unwrap();
    }
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    assert_eq!(u64::from(*root.read().middle.read().leaf.lock()), calls);
    let level = |level, name| {
        stats(
            &report,
            &LockName::Level {
                locker: "FallingBack",
                level,
                name,
            },
        )
    };
    let near = |what: &str, estimate: u64, exact: u64, percent: u64| {
        assert!(
            estimate * 100 >= exact * (100 - percent) && estimate * 100 <= exact * (100 + percent),
            "{what}: {estimate} estimated for {exact}\n{report}"
        );
    };
    let (top, middle, leaf) = (level(0, "Top"), level(1, "Middle"), level(2, "u32"));
    let restarts = calls * (u64::try_from(MAX_RESTARTS).unwrap() + 1);
    near("the root's restarts", top.restarts, restarts, 6);
    near("the root's fallbacks", top.fallbacks, calls, 15);
    near(
        "the root held by the pessimistic passes",
        top.acquisitions,
        calls,
        15,
    );
    near(
        "the middle held by the pessimistic passes",
        middle.acquisitions,
        calls,
        15,
    );
    near("the leaf", leaf.acquisitions, calls, 15);
}

/// The pessimistic pass's acquisitions of a call that does not record its locked levels are
/// sampled too (on their own countdown): their waits are recorded at the user's call, as
/// the recording copy's are (found from outside: at 1 in 10, 93 % of them were recorded at
/// a line of chainlock's own telemetry code).
#[test]
fn sampled_pessimistic_waits_are_recorded_at_the_users_call() {
    use chainlock::chain::EpochGuard;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::time::{Duration, Instant};
    struct Top {
        middle: Arc<HybridLock<Middle>>,
    }
    struct Middle {
        leaf: Arc<Mutex<u32>>,
    }
    chain_locker!(struct Sited(optimistic Top, optimistic Middle, u32););
    let _turn = turn();
    let _watchdog = watchdog("sampled_pessimistic_waits_are_recorded_at_the_users_call");
    telemetry::enable(Config::new().sample_every(2));
    let root = Arc::new(HybridLock::new(Top {
        middle: Arc::new(HybridLock::new(Middle {
            leaf: Arc::new(Mutex::new(0)),
        })),
    }));
    let top = LockName::Level {
        locker: "Sited",
        level: 0,
        name: "Top",
    };
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        // A writer that keeps the root most of the time: readers restart, fall back, and
        // their pessimistic pass waits for the root (contention, not synchronization).
        scope.spawn(|| {
            while !stop.load(Relaxed) {
                let held = root.write();
                let until = Instant::now() + Duration::from_micros(200);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                drop(held);
                thread::yield_now();
            }
        });
        let waits = || {
            let report = telemetry::report();
            let stats = report.locks.iter().find(|lock| lock.lock == top).cloned();
            stats.map_or(0, |stats| {
                stats.waiter_sites.iter().map(|site| site.count).sum()
            })
        };
        eventually("sampled waits of the pessimistic pass at the root", || {
            for _ in 0..20 {
                Sited
                    .run(
                        &root,
                        |top: &Top, _: &EpochGuard| Some(&top.middle),
                        |middle: &Middle, _: &EpochGuard| Some(&middle.leaf),
                        |leaf| *leaf += 1,
                    )
                    .unwrap();
            }
            waits() >= 10
        });
        stop.store(true, Relaxed);
    });
    let report = telemetry::report();
    telemetry::enable(Config::new().sample_every(1));
    let stats = stats(&report, &top);
    for site in &stats.waiter_sites {
        assert_eq!(
            site.site.file(),
            file!(),
            "a wait recorded at {}\n{report}",
            site.site
        );
    }
}

/// An `upgradable` level taken while a writer holds it is a contended acquisition, its
/// waiter seen live and its wait timed, as a `shared` level's (found from outside: its
/// "try" waited, so the wait was recorded as none and the waiter never listed, and a
/// wait-for cycle through such a level could not be found).
#[test]
fn a_contended_upgradable_level_is_seen_waiting_and_timed() {
    use chainlock::parking_lot::RwLock;
    struct Top {
        node: Arc<RwLock<u32>>,
    }
    chain_locker!(struct Upgrading(shared Top, upgradable u32););
    let _watchdog = watchdog("a_contended_upgradable_level_is_seen_waiting_and_timed");
    let _turn = turn();
    let node = Arc::new(RwLock::new(0));
    let root = Arc::new(RwLock::new(Top {
        node: Arc::clone(&node),
    }));
    let held = node.write();
    let descent = thread::spawn({
        let root = Arc::clone(&root);
        move || Upgrading.run(&root, |top: &Top| Some(Arc::clone(&top.node)), |n| **n)
    });
    let upgradable = LockName::Level {
        locker: "Upgrading",
        level: 1,
        name: "u32",
    };
    eventually("the descent waits at its upgradable level", || {
        is_waiting_on(&upgradable)
    });
    let seen_waiting = telemetry::live()
        .waiters
        .iter()
        .find(|waiting| waiting.lock == upgradable)
        .expect("still waiting: the lock is held")
        .waited_for;
    drop(held);
    assert_eq!(descent.join().unwrap(), Ok(0));
    let report = telemetry::report();
    let level = stats(&report, &upgradable);
    assert_eq!((level.acquisitions, level.contended), (1, 1), "{report}");
    assert!(level.wait.max >= seen_waiting, "{report}");
}
