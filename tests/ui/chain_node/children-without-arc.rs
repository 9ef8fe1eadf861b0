use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Mutex<Class>>,
}

fn main() {}
