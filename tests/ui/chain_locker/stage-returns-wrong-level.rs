use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Registry {
    lecture: Arc<Mutex<Lecture>>,
}
struct Lecture {
    class: Arc<Mutex<Class>>,
}
struct Class;

chain_locker!(struct ClassLocker(Registry, Lecture, Class););

fn main() {
    let class = Arc::new(Mutex::new(Class));
    let lecture = Arc::new(Mutex::new(Lecture { class: class.clone() }));
    let root = Arc::new(Mutex::new(Registry { lecture }));
    // Stage 0 must return the lecture's lock, not a class's.
    let _ = ClassLocker.descend(&root, |_registry| Some(class.clone()), |lecture| Some(lecture.class.clone()));
}
