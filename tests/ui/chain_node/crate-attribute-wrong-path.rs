use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(crate = "lockchain")]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
}

fn main() {}
