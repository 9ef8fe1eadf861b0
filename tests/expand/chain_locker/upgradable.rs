use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

chain_locker! {
    /// The lecture is held as the upgradable reader; its stage may upgrade it in place.
    struct Enrol(shared Registry, upgradable Lecture, Class);
}

fn main() {}
