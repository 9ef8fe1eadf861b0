use chainlock::chain_locker;

struct Registry;

chain_locker! {
    #![chain(path = "chainlock")]
    struct Locker(Registry);
}

fn main() {}
