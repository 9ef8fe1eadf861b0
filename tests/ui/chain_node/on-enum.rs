use chainlock::ChainNode;

#[derive(ChainNode)]
enum Node {
    Leaf,
}

fn main() {}
