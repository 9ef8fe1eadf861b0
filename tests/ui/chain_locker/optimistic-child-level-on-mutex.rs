use chainlock::chain::EpochGuard;
use chainlock::chain_locker;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Registry {
    lecture: Arc<Mutex<Lecture>>,
}
struct Lecture {
    class: Arc<Mutex<Class>>,
}
struct Class;

chain_locker!(struct ClassLocker(optimistic Registry, optimistic Lecture, Class););

fn main() {
    let class = Arc::new(Mutex::new(Class));
    let lecture = Arc::new(Mutex::new(Lecture { class }));
    let root = Arc::new(HybridLock::new(Registry { lecture }));
    // The lecture level is `optimistic`: its lock must be a `HybridLock`, not a `Mutex`.
    let _ = ClassLocker.run(
        &root,
        |registry: &Registry, _: &EpochGuard| Some(&registry.lecture),
        |lecture: &Lecture, _: &EpochGuard| Some(&lecture.class),
        |_class| (),
    );
}
