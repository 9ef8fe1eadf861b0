use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::collections::BTreeMap;

struct Dir;

#[derive(ChainNode)]
struct Root {
    // A `Box` where the `Arc` goes.
    #[chain(children)]
    dirs: BTreeMap<u8, Box<Mutex<Dir>>>,
}

fn main() {}
