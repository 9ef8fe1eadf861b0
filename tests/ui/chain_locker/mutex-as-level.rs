use chainlock::chain_locker;

struct Registry;

chain_locker! {
    struct Locker(shared RwLock<Registry>);
}

fn main() {}
