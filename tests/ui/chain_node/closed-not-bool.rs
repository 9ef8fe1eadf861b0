use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: u8,
}

fn main() {}
