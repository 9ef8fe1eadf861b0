use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

#[derive(ChainNode, Default)]
pub struct Dir {
    // `HybridLock<Dir>` forgotten: the one error.
    #[chain(children)]
    dirs: EpochMap<u8, Dir>,
    #[chain(children)]
    files: EpochMap<u8, Mutex<u8>>,
}

chain_locker!(struct ToFile(optimistic Dir, u8););

fn main() {
    // The field that validated is still a child field: this line adds no error.
    let root = Arc::new(HybridLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &2, |file| *file);
}
