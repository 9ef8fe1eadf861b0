use chainlock::chain_locker;

struct Registry;

chain_locker! {
    #![chain(crate = "chainlock", crate = "chainlock")]
    struct Locker(Registry);
}

fn main() {}
