//! Many threads descend random paths of a shared tree with mixed modes, add and close
//! branches, and check invariants: the leaf is never entered by two threads at once, no
//! update is lost, and every descent that reports success really reached its leaf.

use chainlock::chain::Absence;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, Exit, chain_locker};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

const LECTURES: usize = 6;
const THREADS: usize = 8;
const OPS_PER_THREAD: usize = 4_000;

struct Registry {
    lectures: Vec<Arc<RwLock<Lecture>>>,
}
struct Lecture {
    closed: bool,
    classes: Vec<Arc<Mutex<Class>>>,
}
struct Class {
    /// Set while a thread is inside; finding it set means two threads are inside.
    occupied: AtomicBool,
    /// Updated non-atomically (read, pause, write): a lost update shows in the sum.
    count: u64,
}

impl ChainNode for Lecture {
    fn is_closed(&self) -> bool {
        self.closed
    }
}

chain_locker! {
    /// Shared down, exclusive at the class.
    struct ToClass(shared Registry, shared Lecture, Class);
    /// Exclusive at the lecture, to add classes and open or close it.
    struct ToLecture(shared Registry, Lecture);
}

fn new_class() -> Arc<Mutex<Class>> {
    Arc::new(Mutex::new(Class {
        occupied: AtomicBool::new(false),
        count: 0,
    }))
}

#[test]
fn random_paths_keep_the_invariants() {
    let root = Arc::new(RwLock::new(Registry {
        lectures: (0..LECTURES)
            .map(|_| {
                Arc::new(RwLock::new(Lecture {
                    closed: false,
                    classes: vec![new_class()],
                }))
            })
            .collect(),
    }));
    let increments = Arc::new(AtomicU64::new(0));

    let workers: Vec<_> = (0..THREADS)
        .map(|seed| {
            let (root, increments) = (root.clone(), increments.clone());
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed as u64);
                for _ in 0..OPS_PER_THREAD {
                    let lecture = rng.random_range(0..LECTURES);
                    match rng.random_range(0..100) {
                        0..=89 => {
                            let pick = rng.random_range(0..8usize);
                            let outcome = ToClass.run(
                                &root,
                                |r| r.lectures.get(lecture).cloned(),
                                |l| l.classes.get(pick % l.classes.len()).cloned(),
                                |class| {
                                    assert!(
                                        !class.occupied.swap(true, Ordering::SeqCst),
                                        "two threads in one class"
                                    );
                                    let count = class.count;
                                    thread::yield_now();
                                    class.count = count + 1;
                                    class.occupied.store(false, Ordering::SeqCst);
                                },
                            );
                            match outcome {
                                Ok(()) => {
                                    increments.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(Exit::Absent {
                                    level: 1,
                                    cause: Absence::Closed,
                                }) => {}
                                Err(other) => panic!("unexpected exit {other:?}"),
                            }
                        }
                        90..=95 => {
                            let added = ToLecture.run(
                                &root,
                                |r| r.lectures.get(lecture).cloned(),
                                |l| {
                                    if l.classes.len() < 4 {
                                        l.classes.push(new_class());
                                    }
                                },
                            );
                            assert!(matches!(
                                added,
                                Ok(())
                                    | Err(Exit::Absent {
                                        level: 1,
                                        cause: Absence::Closed
                                    })
                            ));
                        }
                        _ => {
                            // Close or reopen: reopening needs the lock without the closed check.
                            let lock = root.read().lectures[lecture].clone();
                            let mut guard = lock.write();
                            guard.closed = !guard.closed;
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker failed");
    }

    let total: u64 = root
        .read()
        .lectures
        .iter()
        .flat_map(|lecture| lecture.read().classes.clone())
        .map(|class| class.lock().count)
        .sum();
    assert_eq!(
        total,
        increments.load(Ordering::Relaxed),
        "an update was lost or invented"
    );
    assert!(total > 0);
}
