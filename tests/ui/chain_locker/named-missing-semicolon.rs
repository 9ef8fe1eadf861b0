use chainlock::chain_locker;

struct Registry;
struct Lecture;

chain_locker! {
    struct First(Registry, Lecture)
    struct Second(Lecture)
}

fn main() {}
