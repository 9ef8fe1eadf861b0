use chainlock::chain_locker;
use chainlock::parking_lot::{Mutex, RwLock};
use std::sync::Arc;

struct Registry {
    lecture: Arc<RwLock<Lecture>>,
}
struct Lecture {
    class: Arc<Mutex<Class>>,
    seats: u32,
}
struct Class {
    size: u32,
}

chain_locker! {
    // One mistake, one error: the uses below read the misspelled level as exclusive (their
    // stage changes it) and add no error of their own.
    struct ToClass(shared Registry, exclsuive Lecture, Class);
}

fn main() {
    let class = Arc::new(Mutex::new(Class { size: 3 }));
    let lecture = Arc::new(RwLock::new(Lecture { class, seats: 0 }));
    let registry = Arc::new(RwLock::new(Registry { lecture }));
    let _ = ToClass.run(
        &registry,
        |registry| Some(registry.lecture.clone()),
        |lecture: &mut Lecture| {
            lecture.seats += 1;
            Some(lecture.class.clone())
        },
        |class| class.size,
    );
    let root = Arc::new(Mutex::new(Registry { lecture: registry.read().lecture.clone() }));
    let _ = chain_locker!(exlusive Registry, Lecture).run(
        &root,
        |registry: &mut Registry| Some(registry.lecture.clone()),
        |lecture| lecture.seats,
    );
}
