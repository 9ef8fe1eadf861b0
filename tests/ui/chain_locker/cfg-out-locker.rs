use chainlock::chain_locker;

struct Registry;
struct Lecture;

chain_locker! {
    // Configured out: it vanishes, as an item would.
    #[cfg(any())]
    pub struct GoneLocker(Registry, Lecture);
    // Alternatives under exclusive conditions: one name, one locker.
    #[cfg(all())]
    pub struct LectureLocker(Registry, Lecture);
    #[cfg(not(all()))]
    pub struct LectureLocker(Registry);
}

fn main() {
    assert_eq!(LectureLocker::DEPTH, 2);
    let _ = GoneLocker;
}
