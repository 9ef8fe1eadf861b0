use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

// `T` may be `u32`: the two children types overlap.
#[derive(ChainNode)]
struct Node<T> {
    #[chain(children)]
    items: Vec<Arc<Mutex<T>>>,
    #[chain(children)]
    counts: Vec<Arc<Mutex<u32>>>,
}

fn main() {}
