use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;
type ClassLock = Mutex<Class>;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<ClassLock>>,
}

fn main() {}
