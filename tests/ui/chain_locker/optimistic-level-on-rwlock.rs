use chainlock::chain::EpochGuard;
use chainlock::chain_locker;
use chainlock::hybrid::HybridRwLock;
use chainlock::parking_lot::{Mutex, RwLock};
use std::sync::Arc;

struct Registry {
    lecture: Arc<Mutex<Lecture>>,
}
struct Lecture;

chain_locker!(struct LectureLocker(optimistic Registry, Lecture););

fn main() {
    let lecture = Arc::new(Mutex::new(Lecture));
    // A writer of an `RwLock` (or a `HybridRwLock`) holds `&mut Registry`: no optimistic read.
    let root = Arc::new(RwLock::new(Registry { lecture: lecture.clone() }));
    let _ = LectureLocker.descend(&root, |registry: &Registry, _: &EpochGuard| Some(&registry.lecture));
    let root = Arc::new(HybridRwLock::new(Registry { lecture }));
    let _ = LectureLocker.descend(&root, |registry: &Registry, _: &EpochGuard| Some(&registry.lecture));
}
