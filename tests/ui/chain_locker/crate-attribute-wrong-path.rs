use chainlock::chain_locker;

struct Registry;

chain_locker! {
    #![chain(crate = "lockchain")]
    struct Locker(Registry);
}

fn main() {}
