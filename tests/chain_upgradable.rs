//! The `upgradable` level mode of `chain_locker!` (issue 10, item 5): a lecture held as the
//! upgradable reader while its classes are searched, upgraded in place to add a class when
//! every class is full; plain readers pass meanwhile, and the order of every acquisition,
//! upgrade and release is logged.

use chainlock::chain::Upgradable;
use chainlock::{ChainNode, Exit, chain_locker};
use chainlock_suite::logged::{Event, LoggedMutex, LoggedRwLock, id_of, rw_id_of, take_log};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CAPACITY: usize = 2;

#[derive(ChainNode)]
struct Registry {
    #[chain(children)]
    lectures: BTreeMap<u32, Arc<LoggedRwLock<Lecture>>>,
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<LoggedMutex<Class>>>,
}

#[derive(ChainNode)]
struct Class {
    students: Vec<u32>,
}

chain_locker! {
    /// Enrolment: readers share the registry; one enroller at a time holds the lecture as
    /// the upgradable reader (other readers of the lecture still pass) and upgrades it only
    /// to add a class.
    struct Enrol(shared Registry, upgradable Lecture, Class);
    struct ToLecture(shared Registry, upgradable Lecture);
}

/// The stage on the lecture: the first class with room, or a new class added in place.
fn class_with_room(
    lecture: &mut Upgradable<LoggedRwLock<Lecture>>,
) -> Option<Arc<LoggedMutex<Class>>> {
    let open = lecture
        .classes
        .iter()
        .find(|class| class.lock().students.len() < CAPACITY)
        .cloned();
    open.or_else(|| {
        let class = Arc::new(LoggedMutex::new(Class { students: vec![] }));
        lecture.upgrade().classes.push(class.clone());
        Some(class)
    })
}

fn registry(classes: usize) -> (Arc<LoggedRwLock<Registry>>, Arc<LoggedRwLock<Lecture>>) {
    let classes = (0..classes)
        .map(|_| {
            Arc::new(LoggedMutex::new(Class {
                students: vec![1, 2],
            }))
        })
        .collect();
    let lecture = Arc::new(LoggedRwLock::new(Lecture { classes }));
    let registry = Arc::new(LoggedRwLock::new(Registry {
        lectures: BTreeMap::from([(7, lecture.clone())]),
    }));
    (registry, lecture)
}

#[test]
fn a_full_lecture_is_upgraded_in_place_to_add_a_class() {
    let (registry, lecture) = registry(1);
    let full = lecture.read().classes[0].clone();
    take_log();
    let enrolled = Enrol.run(
        &registry,
        |registry| registry.lectures.get(&7).cloned(),
        class_with_room,
        |class| {
            class.students.push(3);
            class.students.len()
        },
    );
    assert_eq!(enrolled, Ok(1));
    let added = lecture.read().classes[1].clone();
    let (reg, lec) = (rw_id_of(&registry), rw_id_of(&lecture));
    let (full, added) = (id_of(&full), id_of(&added));
    assert_eq!(lecture.read().classes.len(), 2);
    take_log(); // the first run's and the reads just above

    // Once more, now with room in the added class: no upgrade this time.
    let enrolled = Enrol.run(
        &registry,
        |registry| registry.lectures.get(&7).cloned(),
        class_with_room,
        |class| {
            class.students.push(4);
            class.students.len()
        },
    );
    assert_eq!(enrolled, Ok(2));
    assert_eq!(
        take_log(),
        [
            Event::Shared(reg),
            Event::Upgradable(lec),
            Event::Unlocked(reg),
            Event::Locked(full),
            Event::Unlocked(full),
            Event::Locked(added),
            Event::Unlocked(added),
            Event::Locked(added),
            Event::Unlocked(lec),
            Event::Unlocked(added),
        ]
    );
    assert!(!registry.is_locked() && !lecture.is_locked());
}

#[test]
fn the_upgrade_happens_while_the_lecture_stays_held() {
    let (registry, lecture) = registry(1);
    take_log();
    let enrolled = Enrol.run(
        &registry,
        |registry| registry.lectures.get(&7).cloned(),
        class_with_room,
        |class| class.students.len(),
    );
    assert_eq!(enrolled, Ok(0));
    let log = take_log();
    let lec = rw_id_of(&lecture);
    let position = |event: Event| log.iter().position(|logged| *logged == event);
    let (held, upgraded, released) = (
        position(Event::Upgradable(lec)).expect("held as the upgradable reader"),
        position(Event::Upgraded(lec)).expect("upgraded"),
        position(Event::Unlocked(lec)).expect("released"),
    );
    assert!(held < upgraded && upgraded < released, "{log:?}");
    assert_eq!(
        log.iter()
            .filter(|event| **event == Event::Unlocked(lec))
            .count(),
        1
    );
}

#[test]
fn readers_pass_an_upgradable_leaf_and_deadlines_apply_to_it() {
    let (registry, lecture) = registry(2);
    let mut held = ToLecture.descend_keys(&registry, &7).unwrap();
    assert!(!held.is_upgraded());
    assert!(
        lecture.try_read().is_some(),
        "plain readers pass the upgradable reader"
    );
    assert!(
        lecture.try_upgradable_read().is_none(),
        "one upgradable reader at a time"
    );
    held.upgrade().classes.clear();
    assert!(held.is_upgraded() && lecture.try_read().is_none());
    drop(held);
    assert!(lecture.read().classes.is_empty());

    let deadline = Instant::now() + Duration::from_secs(5);
    let count = ToLecture.run_keys_until(&registry, deadline, &7, |lecture| lecture.classes.len());
    assert_eq!(count, Ok(0));

    // Someone else is the upgradable reader: the timed flavor gives up at the lecture.
    let other = lecture.upgradable_read();
    let soon = Instant::now() + Duration::from_millis(5);
    assert_eq!(
        ToLecture.run_until(&registry, soon, |r| r.lectures.get(&7).cloned(), |_| ()),
        Err(Exit::TimedOut { level: 1 })
    );
    drop(other);
    assert!(!registry.is_locked());
}
