use chainlock::chain_locker;
use chainlock::hybrid::HybridLock;
use std::sync::Arc;

struct Registry;
struct Lecture;

chain_locker!(struct LectureLocker(optimistic Registry, Lecture););

fn main() {
    let root = Arc::new(HybridLock::new(Registry));
    // Nothing says which lock the lecture is behind.
    let _ = LectureLocker.run(&root, |_, _| None, |_lecture| ());
}
