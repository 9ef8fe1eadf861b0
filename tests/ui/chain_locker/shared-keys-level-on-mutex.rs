use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

#[derive(ChainNode)]
struct Registry {
    #[chain(children)]
    lectures: Vec<Arc<Mutex<Lecture>>>,
}

struct Lecture;

fn main() {
    let registry = Arc::new(RwLock::new(Registry { lectures: Vec::new() }));
    // By keys, the `shared` level's lock is the child lock the parent holds: a `Mutex`.
    let _ = chain_locker!(shared Registry, shared Lecture).run_keys(&registry, &0, |_lecture| ());
}
