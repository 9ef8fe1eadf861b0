use chainlock::ChainNode;
use std::collections::HashSet;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: HashSet<u32>,
}

fn main() {}
