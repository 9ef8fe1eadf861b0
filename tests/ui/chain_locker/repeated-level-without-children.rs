use chainlock::chain_locker;
use chainlock::parking_lot::RwLock;
use chainlock::ChainNode;
use std::sync::Arc;

/// A directory that holds files but no directories: it cannot repeat by key.
#[derive(ChainNode)]
struct Dir {
    #[chain(children)]
    files: Vec<Arc<RwLock<File>>>,
}
struct File;

chain_locker!(struct Open(shared Dir*, File););

fn main() {
    let root = Arc::new(RwLock::new(Dir { files: vec![] }));
    let _ = Open.run_keys(&root, [0_usize], &0, |_file| ());
}
