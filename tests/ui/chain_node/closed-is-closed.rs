use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(closed = is_closed)]
struct Lecture {
    cancelled: bool,
}

fn main() {}
