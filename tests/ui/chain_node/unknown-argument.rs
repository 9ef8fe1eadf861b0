use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(childs)]
    classes: Vec<Arc<Mutex<Class>>>,
}

fn main() {}
