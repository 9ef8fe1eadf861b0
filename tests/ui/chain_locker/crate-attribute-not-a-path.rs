use chainlock::chain_locker;

struct Registry;

fn main() {
    let _locker = chain_locker!(#![chain(crate = "1 + 2")] Registry);
}
