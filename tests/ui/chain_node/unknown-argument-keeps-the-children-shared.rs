use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, chain_locker};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(ChainNode, Default)]
struct Dir {
    // The one error: an unknown argument, near no known one.
    #[chain(gone)]
    removed: bool,
    #[chain(children)]
    files: BTreeMap<u32, Arc<Mutex<u64>>>,
}

chain_locker!(struct ToFile(shared Dir, u64););

fn main() {
    // The other field is still a child field: this line adds no error.
    let root = Arc::new(RwLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
