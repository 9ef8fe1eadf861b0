use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{Exit, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;

struct Registry {
    lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
}
struct Lecture {
    classes: Vec<Arc<Mutex<Class>>>,
}
struct Class {
    students: Vec<u32>,
}

chain_locker! {
    /// Registry → lecture → class.
    pub struct ClassLocker(shared Registry, shared Lecture, Class);
}

#[test]
fn smoke() {
    let class = Arc::new(Mutex::new(Class { students: vec![] }));
    let lecture = Arc::new(RwLock::new(Lecture {
        classes: vec![class.clone()],
    }));
    let root = Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([(1, lecture)]),
    }));
    let r = ClassLocker.run(
        &root,
        |reg| reg.lectures.get(&1).cloned(),
        |lec| lec.classes.first().cloned(),
        |class| {
            class.students.push(7);
            class.students.len()
        },
    );
    assert_eq!(r, Ok(1));
    let r = ClassLocker.run(
        &root,
        |reg| reg.lectures.get(&2).cloned(),
        |lec| lec.classes.first().cloned(),
        |c| c.students.len(),
    );
    assert_eq!(r, Err(Exit::Absent { stage: 0 }));
    let anon = chain_locker!(Registry, shared Lecture);
    let g = anon.descend(
        &Arc::new(Mutex::new(Registry {
            lectures: HashMap::new(),
        })),
        |r| r.lectures.get(&1).cloned(),
    );
    assert!(g.is_err());
    let g = ClassLocker
        .descend_until(
            &root,
            std::time::Instant::now(),
            |reg| reg.lectures.get(&1).cloned(),
            |lec| lec.classes.first().cloned(),
        )
        .unwrap();
    assert_eq!(g.students, vec![7]);
}
