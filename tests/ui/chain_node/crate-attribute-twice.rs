use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(crate = "chainlock", crate = "chainlock")]
struct Lecture {
    cancelled: bool,
}

fn main() {}
