//! Per-level lock modes, lock families (parking_lot `Mutex`, `FairMutex`, `RwLock` in both
//! modes), deadlines and closed levels.

use chainlock::chain::Absence;
use chainlock::parking_lot::{FairMutex, Mutex, RwLock};
use chainlock::{ChainNode, Exit, chain_locker};
use std::collections::BTreeMap;
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

struct Registry {
    lectures: BTreeMap<u32, Arc<RwLock<Lecture>>>,
}
struct Lecture {
    cancelled: bool,
    classes: Vec<Arc<FairMutex<Class>>>,
}
struct Class {
    students: Vec<u32>,
}

impl ChainNode for Lecture {
    fn is_closed(&self) -> bool {
        self.cancelled
    }
}

chain_locker! {
    /// Latch crabbing: shared on the way down, exclusive at the leaf.
    pub struct Crab(shared Registry, shared Lecture, Class);
    /// Exclusive at every level (`exclusive` is the default and may be written).
    struct Exclusive(exclusive Registry, Lecture, exclusive Class);
}

fn registry() -> Arc<RwLock<Registry>> {
    let lecture = |cancelled| {
        Arc::new(RwLock::new(Lecture {
            cancelled,
            classes: vec![Arc::new(FairMutex::new(Class { students: vec![] }))],
        }))
    };
    Arc::new(RwLock::new(Registry {
        lectures: BTreeMap::from([(1, lecture(false)), (2, lecture(true))]),
    }))
}

fn lecture(id: u32) -> impl FnOnce(&Registry) -> Option<Arc<RwLock<Lecture>>> {
    move |registry| registry.lectures.get(&id).cloned()
}

fn first_class(lecture: &Lecture) -> Option<Arc<FairMutex<Class>>> {
    lecture.classes.first().cloned()
}

#[test]
fn depth_constant() {
    assert_eq!(Crab::DEPTH, 3);
    assert_eq!(Exclusive::DEPTH, 3);
}

#[test]
fn shared_levels_admit_other_readers_and_exclusive_levels_do_not() {
    let root = registry();
    let reader = root.read();
    // A shared root is entered while another reader holds it ...
    let students = Crab.run(&root, lecture(1), first_class, |class| {
        class.students.push(7);
        class.students.len()
    });
    assert_eq!(students, Ok(1));
    // ... an exclusive one is not: the descent waits and its deadline passes at level 0.
    let deadline = Instant::now() + Duration::from_millis(20);
    let outcome = Exclusive.run_until(
        &root,
        deadline,
        |r| r.lectures.get(&1).cloned(),
        |l| l.classes.first().cloned(),
        |c| c.students.len(),
    );
    assert_eq!(outcome, Err(Exit::TimedOut { level: 0 }));
    drop(reader);
    let outcome = Exclusive.run_until(
        &root,
        Instant::now() + Duration::from_secs(5),
        |r| r.lectures.get(&1).cloned(),
        |l| l.classes.first().cloned(),
        |c| c.students.len(),
    );
    assert_eq!(outcome, Ok(1));
}

#[test]
fn deadline_names_the_level_and_releases_the_levels_above() {
    let root = registry();
    let class = root.read().lectures[&1].read().classes[0].clone();
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = thread::spawn(move || {
        let _guard = class.lock();
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
    });
    held_rx.recv().unwrap();

    let deadline = Instant::now() + Duration::from_millis(30);
    let outcome = Crab
        .descend_until(&root, deadline, lecture(1), first_class)
        .map(|_| ());
    assert_eq!(outcome, Err(Exit::TimedOut { level: 2 }));
    assert!(Instant::now() >= deadline, "gave up before the deadline");
    // Levels 0 and 1 were released when the descent gave up, while level 2 is still held.
    assert!(root.try_write().is_some());
    assert!(root.read().lectures[&1].try_write().is_some());

    release_tx.send(()).unwrap();
    holder.join().unwrap();
    assert!(
        Crab.descend_until(
            &root,
            Instant::now() + Duration::from_secs(5),
            lecture(1),
            first_class
        )
        .is_ok()
    );
}

#[test]
fn closed_level_behaves_as_absent_and_threads_inside_finish() {
    let root = registry();
    assert_eq!(
        Crab.run(&root, lecture(2), first_class, |c| c.students.len()),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Closed
        })
    );
    assert_eq!(
        Crab.run(&root, lecture(3), first_class, |c| c.students.len()),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Missing
        })
    );

    // A thread already at the leaf finishes its work after the lecture is closed.
    let inside = Crab.descend(&root, lecture(1), first_class).unwrap();
    root.read().lectures[&1].write().cancelled = true;
    assert_eq!(
        Crab.run(&root, lecture(1), first_class, |c| c.students.len()),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Closed
        })
    );
    drop(inside);
    assert!(root.try_write().is_some());
}

#[test]
fn parent_stays_locked_until_the_child_is_locked() {
    // The child is held by another thread, so the descent blocks inside the hand-over-hand
    // step; while it waits, the parent must still be locked.
    let root = registry();
    let lecture_lock = root.read().lectures[&1].clone();
    let writer = lecture_lock.write();
    let started = Arc::new(Barrier::new(2));
    let descent = {
        let (root, started) = (root.clone(), started.clone());
        thread::spawn(move || {
            started.wait();
            Exclusive.run(
                &root,
                |r| r.lectures.get(&1).cloned(),
                |l| l.classes.first().cloned(),
                |c| c.students.len(),
            )
        })
    };
    started.wait();
    // Wait until the descent holds the root and waits for the lecture.
    let until = Instant::now() + Duration::from_secs(10);
    while root.try_write().is_some() {
        assert!(Instant::now() < until, "the descent never locked the root");
        thread::yield_now();
    }
    thread::sleep(Duration::from_millis(20));
    assert!(
        root.try_read().is_none(),
        "the parent was released before the child was locked"
    );
    drop(writer);
    assert_eq!(descent.join().unwrap(), Ok(0));
    assert!(root.try_write().is_some());
}

#[test]
fn plain_mutex_levels() {
    struct Dir {
        files: Vec<Arc<Mutex<u64>>>,
    }
    let root = Arc::new(Mutex::new(Dir {
        files: vec![Arc::new(Mutex::new(3))],
    }));
    let locker = chain_locker!(Dir, u64);
    let mut size = locker
        .descend(&root, |dir| dir.files.first().cloned())
        .unwrap();
    *size += 1;
    drop(size);
    assert_eq!(
        locker.run(&root, |dir| dir.files.first().cloned(), |size| *size),
        Ok(4)
    );
}
