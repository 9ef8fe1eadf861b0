//! `#[derive(ChainNode)]` trees: descent by key path through every container kind, closed
//! nodes (field and method), keys mixed with closures, generic nodes, and multi-leaf
//! locking (all or nothing, deadlines, same leaf twice).

use chainlock::chain::{Absence, ChildContainer, Children, LeavesExit};
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, Exit, chain_locker};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(ChainNode)]
struct Registry {
    #[chain(children)]
    lectures: HashMap<String, Arc<RwLock<Lecture>>>,
    /// Not a child field: ignored by the derive.
    name: &'static str,
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
    #[chain(children, default)]
    classes: BTreeMap<u32, Arc<Mutex<Class>>>,
    #[chain(children)]
    overflow: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    room: Option<Arc<Mutex<Room>>>,
}

#[derive(ChainNode)]
#[chain(closed = Class::is_full)]
struct Class {
    capacity: usize,
    students: Vec<u32>,
    #[chain(children)]
    teacher: Arc<Mutex<Teacher>>,
}

impl Class {
    fn is_full(&self) -> bool {
        self.students.len() >= self.capacity
    }
}

#[derive(ChainNode)]
struct Room {
    seats: u32,
}

#[derive(ChainNode)]
struct Teacher {
    name: &'static str,
}

chain_locker! {
    struct ToClass(shared Registry, shared Lecture, Class);
    struct ToRoom(shared Registry, shared Lecture, Room);
    struct ToTeacher(shared Registry, shared Lecture, Class, Teacher);
}

fn class(capacity: usize, students: &[u32]) -> Arc<Mutex<Class>> {
    let teacher = Arc::new(Mutex::new(Teacher { name: "Ada" }));
    Arc::new(Mutex::new(Class {
        capacity,
        students: students.to_vec(),
        teacher,
    }))
}

fn registry() -> Arc<RwLock<Registry>> {
    let lecture = Lecture {
        cancelled: false,
        classes: BTreeMap::from([
            (1, class(3, &[10])),
            (2, class(3, &[20])),
            (3, class(1, &[30])),
        ]),
        overflow: vec![class(9, &[99])],
        room: Some(Arc::new(Mutex::new(Room { seats: 40 }))),
    };
    Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([("math".to_owned(), Arc::new(RwLock::new(lecture)))]),
        name: "spring",
    }))
}

fn lecture(registry: &Arc<RwLock<Registry>>) -> Arc<RwLock<Lecture>> {
    registry.read().lectures["math"].clone()
}

#[test]
fn descends_by_key_path_through_every_container_kind() {
    let root = registry();
    assert_eq!(root.read().name, "spring");
    // HashMap<String, ..> (key `String`), BTreeMap (key `u32`), Arc (key `()`).
    let math = "math".to_owned();
    assert_eq!(
        ToClass.run_keys(&root, &math, &2, |class| class.students.clone()),
        Ok(vec![20])
    );
    assert_eq!(
        ToTeacher.run_keys(&root, &math, &1, &(), |teacher| teacher.name),
        Ok("Ada")
    );
    // Option<Arc<..>> (key `()`).
    assert_eq!(
        ToRoom.run_keys(&root, &math, &(), |room| room.seats),
        Ok(40)
    );
    lecture(&root).write().room = None;
    assert_eq!(
        ToRoom.run_keys(&root, &math, &(), |room| room.seats),
        Err(Exit::Absent {
            level: 2,
            cause: Absence::Missing
        })
    );
    // Where the path breaks.
    assert_eq!(
        ToClass.run_keys(&root, &"art".to_owned(), &1, |c| c.capacity),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Missing
        })
    );
    assert_eq!(
        ToClass.run_keys(&root, &math, &7, |c| c.capacity),
        Err(Exit::Absent {
            level: 2,
            cause: Absence::Missing
        })
    );
}

#[test]
fn guard_descent_by_keys_leaves_only_the_leaf_locked() {
    let root = registry();
    let mut class = ToClass.descend_keys(&root, &"math".to_owned(), &1).unwrap();
    class.students.push(11);
    assert!(root.try_write().is_some());
    assert!(lecture(&root).try_write().is_some());
    drop(class);
    assert_eq!(lecture(&root).read().classes[&1].lock().students, [10, 11]);
}

#[test]
fn keys_and_closures_mix_and_same_type_fields_are_reached_by_name() {
    let root = registry();
    // Stage 0 by key (through the derived `Children`), stage 1 by name (the `overflow` field).
    let outcome = ToClass.run(
        &root,
        |registry| Children::<Lecture>::child(registry, &"math".to_owned()),
        |lecture| lecture.overflow.lookup(&0),
        |class| class.students.clone(),
    );
    assert_eq!(outcome, Ok(vec![99]));
    // `default` chose `classes` for the descent by type.
    let by_type = ToClass.run(
        &root,
        |r| r.lectures.lookup(&"math".to_owned()),
        |l| Children::<Class>::child(l, &2),
        |c| c.students.clone(),
    );
    assert_eq!(by_type, Ok(vec![20]));
}

#[test]
fn closed_nodes_behave_as_absent_field_and_method() {
    let root = registry();
    let math = "math".to_owned();
    // Class 3 is full: its closed method says so.
    assert_eq!(
        ToClass.run_keys(&root, &math, &3, |c| c.capacity),
        Err(Exit::Absent {
            level: 2,
            cause: Absence::Closed
        })
    );
    // A thread inside class 1 finishes after the lecture is cancelled; new descents fail.
    let mut inside = ToClass.descend_keys(&root, &math, &1).unwrap();
    lecture(&root).write().cancelled = true;
    assert_eq!(
        ToClass.run_keys(&root, &math, &2, |c| c.capacity),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Closed
        })
    );
    inside.students.push(12);
    drop(inside);
    assert!(lecture(&root).read().is_closed());
    assert!(
        !Registry {
            lectures: HashMap::new(),
            name: ""
        }
        .is_closed()
    );
}

#[test]
fn generic_nodes_derive() {
    #[derive(ChainNode)]
    struct Tree<T: Send + 'static> {
        value: T,
        #[chain(children)]
        kids: Vec<Arc<Mutex<Tree<T>>>>,
    }
    let leaf = Arc::new(Mutex::new(Tree {
        value: 7u8,
        kids: vec![],
    }));
    let root = Arc::new(Mutex::new(Tree {
        value: 1u8,
        kids: vec![leaf],
    }));
    let locker = chain_locker!(Tree<u8>, Tree<u8>);
    assert_eq!(locker.run_keys(&root, &0, |leaf| leaf.value), Ok(7));
}

#[test]
fn lock_leaves_is_all_or_nothing() {
    let root = registry();
    let math = "math".to_owned();
    let moved = ToClass
        .lock_leaves(&root, [(&math, &2), (&math, &1)])
        .map(|mut guards| {
            let student = guards[0].students.pop().unwrap();
            guards[1].students.push(student);
            guards.len()
        });
    assert_eq!(moved, Ok(2));
    assert_eq!(lecture(&root).read().classes[&1].lock().students, [10, 20]);

    // A missing, a closed or a repeated leaf: nothing is locked, nothing stays locked.
    assert_eq!(
        ToClass
            .lock_leaves(&root, [(&math, &8), (&math, &1)])
            .map(|_| ()),
        Err(LeavesExit::Path {
            path: 0,
            exit: Exit::Absent {
                level: 2,
                cause: Absence::Missing
            }
        })
    );
    assert_eq!(
        ToClass
            .lock_leaves(&root, [(&math, &1), (&math, &3)])
            .map(|_| ()),
        Err(LeavesExit::Path {
            path: 1,
            exit: Exit::Absent {
                level: 2,
                cause: Absence::Closed
            }
        })
    );
    assert_eq!(
        ToClass
            .lock_leaves(&root, [(&math, &1), (&math, &1)])
            .map(|_| ()),
        Err(LeavesExit::SameLeaf {
            first: 0,
            second: 1
        })
    );
    for class in lecture(&root).read().classes.values() {
        assert!(!class.is_locked());
    }

    // With a deadline: a leaf held elsewhere makes the whole set time out and release.
    let held = lecture(&root).read().classes[&2].clone();
    let guard = held.lock();
    let deadline = Instant::now() + Duration::from_millis(20);
    let outcome = ToClass
        .lock_leaves_until(&root, deadline, [(&math, &1), (&math, &2)])
        .map(|_| ());
    assert_eq!(
        outcome,
        Err(LeavesExit::Path {
            path: 1,
            exit: Exit::TimedOut { level: 2 }
        })
    );
    assert!(!lecture(&root).read().classes[&1].is_locked());
    drop(guard);
}
