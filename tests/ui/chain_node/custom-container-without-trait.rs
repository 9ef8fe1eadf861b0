use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;
struct Shelf(Vec<Arc<Mutex<Class>>>);

#[derive(ChainNode)]
struct Lecture {
    #[chain(children, child = Class)]
    classes: Shelf,
}

fn main() {}
