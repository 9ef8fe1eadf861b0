use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Registry {
    lecture: Arc<Mutex<Lecture>>,
}
struct Lecture;

chain_locker!(struct LectureLocker(Registry, Lecture););

fn main() {
    let lecture = Arc::new(Mutex::new(Lecture));
    let root = Arc::new(Mutex::new(Registry { lecture }));
    let guard = LectureLocker.descend(&root, |registry| Some(registry.lecture.clone())).unwrap();
    // parking_lot guards stay on their thread: hold a tokio lock across threads instead.
    std::thread::spawn(move || drop(guard));
}
