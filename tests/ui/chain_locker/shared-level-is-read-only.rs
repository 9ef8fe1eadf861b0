use chainlock::chain_locker;
use chainlock::parking_lot::RwLock;
use std::sync::Arc;

struct Registry {
    visits: u64,
    lecture: Arc<RwLock<Lecture>>,
}
struct Lecture;

chain_locker!(struct LectureLocker(shared Registry, Lecture););

fn main() {
    let lecture = Arc::new(RwLock::new(Lecture));
    let root = Arc::new(RwLock::new(Registry { visits: 0, lecture }));
    let _ = LectureLocker.descend(&root, |registry| {
        registry.visits += 1;
        Some(registry.lecture.clone())
    });
}
