use chainlock::ChainNode;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;

struct Class;
type Section = Class;

// One child type, spelled two ways: the derive cannot tell them apart by their tokens.
#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    sections: Vec<Arc<Mutex<Section>>>,
}

fn main() {}
