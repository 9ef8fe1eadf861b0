use chainlock::ChainNode;

#[derive(ChainNode)]
struct Node(u32);

fn main() {}
