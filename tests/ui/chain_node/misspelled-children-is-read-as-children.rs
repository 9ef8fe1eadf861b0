use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

#[derive(ChainNode, Default)]
struct Dir {
    // The one error, which says what was meant; the field is read as meant.
    #[chain(childs)]
    files: EpochMap<u32, Mutex<u64>>,
}

chain_locker!(struct ToFile(optimistic Dir, u64););

fn main() {
    // No error here: `files` is the `u64` children.
    let root = Arc::new(HybridLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
