use chainlock::parking_lot::RwLock;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

#[derive(ChainNode)]
struct Registry {
    #[chain(children)]
    lectures: Vec<Arc<RwLock<Lecture>>>,
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
}

fn main() {
    let registry = Arc::new(RwLock::new(Registry { lectures: Vec::new() }));
    // `lock_leaves` locks leaves exclusively: a chain with a `shared` leaf has none.
    let _ = chain_locker!(Registry, shared Lecture).lock_leaves(&registry, [&0]);
}
