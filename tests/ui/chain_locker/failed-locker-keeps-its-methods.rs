use chainlock::chain_locker;
use chainlock::parking_lot::{Mutex, RwLock};
use std::sync::Arc;

struct Registry {
    lecture: Arc<RwLock<Lecture>>,
}
struct Lecture {
    class: Arc<Mutex<Class>>,
}
struct Class {
    size: u32,
}

chain_locker! {
    // Two mistakes: a misspelled modifier and a lock written as a level. Each is reported
    // once, and the uses below add no error of their own: the locker still has its methods.
    struct ClassLocker(shraed Registry, shared Arc<RwLock<Lecture>>, Class);
}

fn main() {
    let class = Arc::new(Mutex::new(Class { size: 3 }));
    let lecture = Arc::new(RwLock::new(Lecture { class }));
    // Behind an `RwLock`: `shraed` is read as the `shared` it misspells.
    let registry = Arc::new(RwLock::new(Registry { lecture }));
    let size = ClassLocker.run(
        &registry,
        |registry| Some(registry.lecture.clone()),
        |lecture| Some(lecture.class.clone()),
        |class| class.size,
    );
    let _: Result<u32, chainlock::Exit> = size;
    let _guard = ClassLocker.descend_until(
        &registry,
        std::time::Instant::now(),
        |registry| Some(registry.lecture.clone()),
        |lecture| Some(lecture.class.clone()),
    );
    let _ = chain_locker!(Registry, sharde Lecture).run(&registry, |r| Some(r.lecture.clone()), |l| l.class.clone());
}
