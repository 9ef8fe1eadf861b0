use chainlock_macros::chain_locker;

struct Registry;
struct Lecture;

chain_locker! {
    pub struct LectureLocker(Registry, Lecture);
}

fn main() {
    let _ = LectureLocker;
}
