use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{chain_locker, ChainNode};

#[derive(ChainNode, Default)]
pub struct Dir {
    #[chain(children)]
    dirs: EpochMap<String, HybridLock<Dir>>,
    #[chain(children)]
    files: EpochMap<String, Mutex<u64>>,
}

// The same mistake with one recursive node type: its one error, the locker's methods
// (defined for the rest of the program) adding none.
chain_locker!(struct Open(optimistic Dir, shared Dir*, u64););

fn main() {}
