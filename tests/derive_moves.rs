//! Many threads move students between classes in opposite directions with `lock_leaves`,
//! while others descend to single classes hand over hand. A deadlock would show as a
//! timed-out move (every move has a generous deadline), so the test fails instead of
//! hanging. Invariant: every student is in exactly one class, always and at the end.

use chainlock::chain::LeavesExit;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[derive(ChainNode)]
struct School {
    #[chain(children)]
    lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<Mutex<Class>>>,
}

#[derive(ChainNode)]
struct Class {
    students: Vec<u32>,
}

chain_locker!(struct ToClass(shared School, shared Lecture, Class););

const LECTURES: u32 = 3;
const CLASSES: usize = 3;
const STUDENTS_PER_CLASS: u32 = 5;
const THREADS: u64 = 8;
const MOVES: usize = 2_000;

#[test]
fn opposite_direction_moves_never_deadlock_and_lose_no_student() {
    let mut next_student = 0;
    let school = School {
        lectures: (0..LECTURES)
            .map(|lecture| {
                let classes = (0..CLASSES)
                    .map(|_| {
                        let students = (0..STUDENTS_PER_CLASS)
                            .map(|_| {
                                next_student += 1;
                                next_student
                            })
                            .collect();
                        Arc::new(Mutex::new(Class { students }))
                    })
                    .collect();
                (lecture, Arc::new(RwLock::new(Lecture { classes })))
            })
            .collect(),
    };
    let total = next_student as usize;
    let root = Arc::new(RwLock::new(school));

    let workers: Vec<_> = (0..THREADS)
        .map(|seed| {
            let root = root.clone();
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                let mut moved = 0;
                for _ in 0..MOVES {
                    let from = (rng.random_range(0..LECTURES), rng.random_range(0..CLASSES));
                    let to = (rng.random_range(0..LECTURES), rng.random_range(0..CLASSES));
                    if rng.random_bool(0.2) {
                        // A single-class visit, hand over hand, between the moves.
                        ToClass
                            .run_keys(&root, &from.0, &from.1, |class| {
                                assert!(class.students.len() <= total);
                            })
                            .unwrap();
                        continue;
                    }
                    let deadline = Instant::now() + Duration::from_secs(20);
                    match ToClass.lock_leaves_until(
                        &root,
                        deadline,
                        [(&from.0, &from.1), (&to.0, &to.1)],
                    ) {
                        Ok(mut guards) => {
                            if let Some(student) = guards[0].students.pop() {
                                guards[1].students.push(student);
                                moved += 1;
                            }
                        }
                        Err(LeavesExit::SameLeaf { .. }) => assert_eq!(from, to),
                        Err(other) => {
                            panic!("move {from:?} -> {to:?} failed: {other:?} (a deadlock?)")
                        }
                    }
                }
                moved
            })
        })
        .collect();
    let moved: usize = workers
        .into_iter()
        .map(|worker| worker.join().expect("a mover failed"))
        .sum();
    assert!(moved > 0);

    let mut seen: Vec<u32> = root
        .read()
        .lectures
        .values()
        .flat_map(|lecture| lecture.read().classes.clone())
        .flat_map(|class| class.lock().students.clone())
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1..=total as u32).collect::<Vec<_>>(),
        "a student was lost or duplicated"
    );
}
