use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(closed = is_cancelled)]
struct Lecture {
    cancelled: bool,
}

fn main() {}
