use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    waitlists: Vec<Arc<Mutex<Class>>>,
}

fn main() {}
