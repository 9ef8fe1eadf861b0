use chainlock::chain_locker;
use std::sync::{Arc, Mutex};

struct Registry;

fn main() {
    let registry = Arc::new(Mutex::new(Registry));
    let _ = chain_locker!(Registry).run(&registry, |_registry| ());
}
