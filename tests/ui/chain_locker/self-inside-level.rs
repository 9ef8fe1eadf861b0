use chainlock::chain_locker;

struct Registry;

chain_locker! {
    struct Locker(Registry, Vec<Self>);
}

fn main() {}
