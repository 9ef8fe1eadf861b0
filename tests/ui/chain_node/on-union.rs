use chainlock::ChainNode;

#[derive(ChainNode)]
union Node {
    a: u32,
}

fn main() {}
