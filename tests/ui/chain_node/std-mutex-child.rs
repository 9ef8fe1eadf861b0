use chainlock::ChainNode;
use std::sync::{Arc, Mutex};

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<Mutex<Class>>>,
}

fn main() {}
