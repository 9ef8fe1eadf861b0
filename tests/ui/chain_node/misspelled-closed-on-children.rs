use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(ChainNode, Default)]
struct Dir {
    #[chain(closed)]
    removed: AtomicBool,
    // The one error. `closd` is nearest `closed`, which a map cannot be (and the node has its
    // marker): the field is read by its type, as children, without a second error.
    #[chain(closd)]
    files: EpochMap<u32, Mutex<u64>>,
}

chain_locker!(struct ToFile(optimistic Dir, u64););

fn main() {
    let root = Arc::new(HybridLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
