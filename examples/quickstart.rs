//! The README's quick start: a registry of lectures, each with classes, locked hand over
//! hand by key path, with a shared root and an exclusive leaf.
//!
//! Run: `cargo run --example quickstart`. `examples/quickstart-expanded.rs` shows what the
//! two macros generate for it, simplified.

use chainlock::chain::Absence;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, Exit, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;
use std::thread;

#[derive(ChainNode)]
struct Registry {
    #[chain(children)]
    lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
    #[chain(children)]
    classes: Vec<Arc<Mutex<Class>>>,
}

#[derive(ChainNode)]
struct Class {
    students: Vec<u32>,
}

chain_locker! {
    /// Registry (shared) → lecture (shared) → class (exclusive).
    pub struct ClassLocker(shared Registry, shared Lecture, Class);
}

fn main() {
    let classes = (0..2)
        .map(|_| {
            Arc::new(Mutex::new(Class {
                students: Vec::new(),
            }))
        })
        .collect();
    let lecture = Arc::new(RwLock::new(Lecture {
        cancelled: false,
        classes,
    }));
    let registry = Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([(42, lecture)]),
    }));

    // Threads join different classes of the same lecture in parallel: the registry and the
    // lecture are only read-locked on the way down, and each is released as soon as the
    // next level is locked.
    let joins: Vec<_> = (0..8u32)
        .map(|student| {
            let registry = registry.clone();
            thread::spawn(move || {
                let class = (student % 2) as usize;
                ClassLocker.run_keys(&registry, &42, &class, |class| class.students.push(student))
            })
        })
        .collect();
    for join in joins {
        join.join()
            .unwrap()
            .expect("lecture 42 and its classes exist");
    }

    // A closure stage and a key stage mix; the outcome tells where a path broke.
    let sizes = ClassLocker.run(
        &registry,
        |r| r.lectures.get(&42).cloned(),
        |l| l.classes.first().cloned(),
        |c| c.students.len(),
    );
    println!("class 0 of lecture 42 has {} students", sizes.unwrap());
    assert_eq!(
        ClassLocker.run_keys(&registry, &7, &0, |c| c.students.len()),
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Missing
        })
    );

    // Cancelling a lecture closes it: later requests fail as if it never existed.
    registry.read().lectures[&42].write().cancelled = true;
    let after = ClassLocker.run_keys(&registry, &42, &0, |c| c.students.len());
    println!("after cancelling lecture 42: {after:?}");
    assert_eq!(
        after,
        Err(Exit::Absent {
            level: 1,
            cause: Absence::Closed
        })
    );
}
