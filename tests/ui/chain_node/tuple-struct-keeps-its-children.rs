use chainlock::chain::EpochMap;
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

// The one error: a tuple struct. Its fields are read all the same, by index.
#[derive(ChainNode, Default)]
struct Dir(#[chain(children)] EpochMap<u8, Mutex<u8>>);

chain_locker!(struct ToFile(optimistic Dir, u8););

fn main() {
    // No error here: field `0` is the `u8` children.
    let root = Arc::new(HybridLock::new(Dir::default()));
    let _ = ToFile.run_keys(&root, &1, |file| *file);
}
