use chainlock::chain::{EpochGuard, EpochMap};
use chainlock::chain_locker;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::ChainNode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(ChainNode, Default)]
struct Registry {
    #[chain(children)]
    lectures: EpochMap<String, HybridLock<Lecture>>,
}
#[derive(ChainNode, Default)]
struct Lecture {
    #[chain(closed)]
    cancelled: AtomicBool,
    #[chain(children)]
    classes: EpochMap<u32, Mutex<Class>>,
}
#[derive(ChainNode, Default)]
struct Class {
    size: u32,
}

chain_locker! {
    // One mistake, one error: the leaf's type forgotten after `shared` (rustc cannot find a
    // type `shared`: a type may be named so).
    struct ToClass(optimistic Registry, optimistic Lecture, shared);
}

fn main() {
    let registry = Arc::new(HybridLock::new(Registry::default()));
    let _ = ToClass.run_keys(&registry, &"a".to_string(), &1, |class| class.size);
    let _ = ToClass.run(
        &registry,
        |registry: &Registry, guard: &EpochGuard| registry.lectures.get("a", guard),
        |lecture: &Lecture, guard: &EpochGuard| lecture.classes.get(&1, guard),
        |class| class.size,
    );
}
