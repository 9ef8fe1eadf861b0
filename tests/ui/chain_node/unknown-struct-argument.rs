use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(open = is_open)]
struct Lecture {
    open: bool,
}

fn main() {}
