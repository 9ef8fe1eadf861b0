use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(ChainNode, Default)]
pub struct Dir {
    // The lock (and its `Arc`) forgotten: the one error.
    #[chain(children)]
    dirs: HashMap<u8, Dir>,
    #[chain(children)]
    files: HashMap<u8, Arc<Mutex<u8>>>,
}

chain_locker!(struct ToFile(shared Dir, u8););

fn main() {
    // The field that validated is still a child field: this line adds no error.
    let root = Arc::new(RwLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &2, |file| *file);
}
