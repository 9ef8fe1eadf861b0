use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
    #[chain(closed)]
    archived: bool,
}

fn main() {}
