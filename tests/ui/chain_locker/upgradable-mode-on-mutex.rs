use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Lecture {
    class: Arc<Mutex<Class>>,
}
struct Class;

fn main() {
    let lecture = Arc::new(Mutex::new(Lecture {
        class: Arc::new(Mutex::new(Class)),
    }));
    // A `Mutex` has no upgradable read: only an `RwLock` level can be `upgradable`.
    let _ = chain_locker!(upgradable Lecture, Class).run(&lecture, |l| Some(l.class.clone()), |_| ());
}
