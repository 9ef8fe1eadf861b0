use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(ChainNode, Default)]
struct Dir {
    // `child` needs `= Type`; the one error asks whether `children` was meant, and the
    // field is read so.
    #[chain(child)]
    files: HashMap<u32, Arc<Mutex<u64>>>,
}

chain_locker!(struct ToFile(shared Dir, u64););

fn main() {
    // No error here: `files` is the `u64` children.
    let root = Arc::new(RwLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
