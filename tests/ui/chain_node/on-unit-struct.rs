use chainlock::ChainNode;

#[derive(ChainNode)]
struct Node;

fn main() {}
