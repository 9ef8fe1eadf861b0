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
    // One mistake, one error: the uses below read the misspelled level as `shared` (their
    // stage takes `&Registry`) and add no error of their own.
    struct ToClass(shraed Registry, shared Lecture, Class);
}

fn main() {
    let class = Arc::new(Mutex::new(Class { size: 3 }));
    let lecture = Arc::new(RwLock::new(Lecture { class }));
    let registry = Arc::new(RwLock::new(Registry { lecture }));
    let _ = ToClass.run(
        &registry,
        |registry: &Registry| Some(registry.lecture.clone()),
        |lecture: &Lecture| Some(lecture.class.clone()),
        |class| class.size,
    );
    let _ = chain_locker!(Shared Registry, Lecture)
        .run(&registry, |registry: &Registry| Some(registry.lecture.clone()), |lecture| lecture.class.clone());
}
