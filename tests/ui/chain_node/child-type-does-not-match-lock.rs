use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;
struct Lecture;

#[derive(ChainNode)]
struct Registry {
    #[chain(children, child = Lecture)]
    lectures: Vec<Arc<Mutex<Class>>>,
}

fn main() {}
