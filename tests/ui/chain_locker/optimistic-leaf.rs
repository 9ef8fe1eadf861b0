use chainlock::chain_locker;

struct Registry;
struct Lecture;

// The leaf is locked: a descent ends holding it.
chain_locker!(struct LectureLocker(optimistic Registry, optimistic Lecture););

fn main() {}
