use chainlock::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    #[chain(crate = "chainlock")]
    cancelled: bool,
}

fn main() {}
