use chainlock::chain_locker;

struct Registry;

chain_locker! {
    struct Locker(Registry);
    #![chain(crate = "chainlock")]
}

fn main() {}
