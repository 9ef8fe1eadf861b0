use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(closed = ended)]
struct Lecture {
    end: u32,
}

impl Lecture {
    fn ended(&self) -> u32 {
        self.end
    }
}

fn main() {}
