use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children, default)]
    classes: Vec<Arc<Mutex<Class>>>,
    #[chain(children, default)]
    waitlists: Vec<Arc<Mutex<Class>>>,
}

fn main() {}
