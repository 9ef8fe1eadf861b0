use chainlock::chain::EpochGuard;
use chainlock::chain_locker;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::walk::Step;
use chainlock::ChainNode;
use std::sync::Arc;

struct Dir {
    file: Arc<Mutex<File>>,
}
impl ChainNode for Dir {}
struct File;

chain_locker!(struct Open(optimistic Dir*, File););

fn main() {
    // A writer of an `RwLock` holds `&mut Dir`: its repetitions cannot be read optimistically.
    let root = Arc::new(RwLock::new(Dir { file: Arc::new(Mutex::new(File)) }));
    let _ = Open.descend(
        &root,
        |_: &Dir, _, _: &EpochGuard| Step::Here,
        |dir: &Dir, _: &EpochGuard| Some(&dir.file),
    );
}
