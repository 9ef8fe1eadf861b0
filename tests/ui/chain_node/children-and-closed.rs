use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children, closed)]
    cancelled: bool,
}

fn main() {}
