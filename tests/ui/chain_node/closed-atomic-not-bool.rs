use chainlock::ChainNode;
use std::sync::atomic::AtomicU8;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: AtomicU8,
}

fn main() {}
