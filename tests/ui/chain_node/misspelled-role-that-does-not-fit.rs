use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(ChainNode, Default)]
struct Dir {
    // The one error. Read as `children` (what `Children` misses), an `AtomicBool` would be a
    // second error: a guess that does not fit the field is dropped without one.
    #[chain(Children)]
    removed: AtomicBool,
    #[chain(children)]
    files: HashMap<u32, Arc<Mutex<u64>>>,
}

chain_locker!(struct ToFile(shared Dir, u64););

fn main() {
    let root = Arc::new(RwLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
