//! Async chains over `tokio::sync::{Mutex, RwLock}` with owned guards.

use chainlock::chain::Absence;
use chainlock::{Exit, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock};

struct Registry {
    lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
}
struct Lecture {
    classes: Vec<Arc<Mutex<Class>>>,
}
struct Class {
    students: Vec<u32>,
}

chain_locker!(
    /// Crabbing over tokio locks.
    pub struct ClassLocker(shared Registry, shared Lecture, Class);
);

fn registry() -> Arc<RwLock<Registry>> {
    let class = Arc::new(Mutex::new(Class { students: vec![] }));
    let lecture = Arc::new(RwLock::new(Lecture {
        classes: vec![class],
    }));
    Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([(1, lecture)]),
    }))
}

fn lecture(id: u32) -> impl FnOnce(&Registry) -> Option<Arc<RwLock<Lecture>>> {
    move |registry| registry.lectures.get(&id).cloned()
}

fn first_class(lecture: &Lecture) -> Option<Arc<Mutex<Class>>> {
    lecture.classes.first().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descents_run_on_spawned_tasks() {
    let root = registry();
    let tasks: Vec<_> = (0..32)
        .map(|student| {
            let root = root.clone();
            // `tokio::spawn` proves the future is `Send`: owned tokio guards may be held
            // across `.await`.
            tokio::spawn(async move {
                let mut class = ClassLocker
                    .descend_async(&root, lecture(1), first_class)
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
                class.students.push(student);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let count = ClassLocker
        .run_async(&root, lecture(1), first_class, |class| class.students.len())
        .await;
    assert_eq!(count, Ok(32));
    assert_eq!(
        ClassLocker
            .run_async(&root, lecture(9), first_class, |c| c.students.len())
            .await,
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Missing
        })
    );
}

#[tokio::test]
async fn async_deadline_names_the_level() {
    let root = registry();
    let class = root.read().await.lectures[&1].read().await.classes[0].clone();
    let held = class.lock_owned().await;
    let deadline = Instant::now() + Duration::from_millis(20);
    let outcome = ClassLocker
        .run_until_async(&root, deadline, lecture(1), first_class, |c| {
            c.students.len()
        })
        .await;
    assert_eq!(outcome, Err(Exit::TimedOut { level: 2 }));
    // The levels above were released when the descent gave up.
    assert!(root.try_write().is_ok());
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    assert_eq!(
        ClassLocker
            .run_until_async(&root, deadline, lecture(1), first_class, |c| c
                .students
                .len())
            .await,
        Ok(0)
    );
}

#[tokio::test]
async fn dropped_descent_releases_everything() {
    // Cancelling a descent while it waits for the leaf releases the levels above.
    let root = registry();
    let class = root.read().await.lectures[&1].read().await.classes[0].clone();
    let held = class.clone().lock_owned().await;
    let pending = ClassLocker.descend_async(&root, lecture(1), first_class);
    let timed_out = tokio::time::timeout(Duration::from_millis(20), pending).await;
    assert!(timed_out.is_err());
    assert!(root.try_write().is_ok());
    assert!(root.read().await.lectures[&1].try_write().is_ok());
    drop(held);
    assert!(class.try_lock().is_ok());
}

mod by_keys {
    //! Key-path descents over tokio locks, with derived nodes.
    use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
    use std::collections::HashMap;
    use std::sync::Arc;
    use tokio::sync::{Mutex, RwLock};

    #[derive(ChainNode)]
    struct School {
        #[chain(children)]
        rooms: HashMap<&'static str, Arc<RwLock<Room>>>,
    }

    #[derive(ChainNode)]
    struct Room {
        #[chain(closed)]
        closed: bool,
        #[chain(children)]
        desks: Vec<Arc<Mutex<u32>>>,
    }

    chain_locker!(struct ToDesk(shared School, shared Room, u32););

    #[tokio::test]
    async fn descends_by_keys_and_respects_closed_rooms() {
        let room = Arc::new(RwLock::new(Room {
            closed: false,
            desks: vec![Arc::new(Mutex::new(0))],
        }));
        let school = Arc::new(RwLock::new(School {
            rooms: HashMap::from([("lab", room.clone())]),
        }));
        let task = {
            let school = school.clone();
            tokio::spawn(async move {
                let mut desk = ToDesk
                    .descend_keys_async(&school, &"lab", &0)
                    .await
                    .unwrap();
                *desk += 1;
            })
        };
        task.await.unwrap();
        assert_eq!(
            ToDesk
                .run_keys_async(&school, &"lab", &0, |desk| *desk)
                .await,
            Ok(1)
        );
        assert_eq!(
            ToDesk
                .run_keys_async(&school, &"lab", &3, |desk| *desk)
                .await,
            Err(Exit::Absent {
                level: 2,
                cause: Absence::Missing
            })
        );
        room.write().await.closed = true;
        assert_eq!(
            ToDesk
                .run_keys_async(&school, &"lab", &0, |desk| *desk)
                .await,
            Err(Exit::Absent {
                level: 1,
                cause: Absence::Closed
            })
        );
    }
}
