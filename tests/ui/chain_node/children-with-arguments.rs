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
    // The one error: `children` takes no arguments; the field is read as `children`.
    #[chain(children())]
    files: EpochMap<u32, Mutex<u64>>,
}

chain_locker!(struct ToFile(optimistic Dir, u64););

fn main() {
    let root = Arc::new(HybridLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
