use chainlock_macros::ChainNode;

#[derive(ChainNode)]
struct Lecture {
    seats: u32,
}

fn main() {
    let _ = Lecture { seats: 1 }.seats;
}
