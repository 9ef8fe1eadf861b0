use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Registry;
struct Lecture;

fn main() {
    let registry = Arc::new(Mutex::new(Registry));
    let _ = chain_locker!(Registry, Lecture).run_keys(&registry, &1, |_lecture| ());
}
