use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain]
    cancelled: bool,
}

fn main() {}
