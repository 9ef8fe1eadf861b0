use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::ChainNode;
use std::sync::atomic::AtomicBool;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: AtomicBool,
    #[chain(children)]
    classes: EpochMap<u32, HybridLock<Class>>,
}

struct Class;
