use chainlock::chain::Upgradable;
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
    // One mistake, one error: the uses below read the misspelled level as `upgradable`
    // (their stage upgrades it) and add no error of their own.
    struct ToClass(shared Registry, upgradeable Lecture, Class);
}

fn main() {
    let class = Arc::new(Mutex::new(Class { size: 3 }));
    let lecture = Arc::new(RwLock::new(Lecture { class, seats: 0 }));
    let registry = Arc::new(RwLock::new(Registry { lecture }));
    let _ = ToClass.run(
        &registry,
        |registry| Some(registry.lecture.clone()),
        |lecture: &mut Upgradable<RwLock<Lecture>>| {
            lecture.upgrade().seats += 1;
            Some(lecture.class.clone())
        },
        |class| class.size,
    );
    let _ = chain_locker!(Registry, upgradabel Lecture).run(
        &registry,
        |registry| Some(registry.lecture.clone()),
        |lecture| lecture.upgrade().seats,
    );
}
