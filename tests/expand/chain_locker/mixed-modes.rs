use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

fn main() {
    // Latch crabbing: shared on the way down, exclusive at the leaf.
    let _locker = chain_locker!(shared Registry, shared Lecture, exclusive Class);
}
