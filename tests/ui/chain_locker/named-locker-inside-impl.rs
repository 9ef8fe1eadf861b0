use chainlock::chain_locker;

struct Registry;
struct Lecture;

struct Service;

impl Service {
    // Items cannot be defined inside an `impl` block: use the expression form, or define the
    // locker outside.
    chain_locker! {
        struct LectureLocker(Registry, Lecture);
    }
}

fn main() {}
