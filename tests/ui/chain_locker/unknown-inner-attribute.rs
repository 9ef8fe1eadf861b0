use chainlock::chain_locker;

struct Registry;

chain_locker! {
    #![serde(crate = "chainlock")]
    struct Locker(Registry);
}

fn main() {}
