use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed, default)]
    cancelled: bool,
}

fn main() {}
