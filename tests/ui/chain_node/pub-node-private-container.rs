use chainlock::chain::ChildContainer;
use chainlock::parking_lot::Mutex;
use chainlock::ChainNode;
use std::sync::Arc;

pub struct Class;

// A container of the module's own: private.
struct Shelf(Vec<Arc<Mutex<Class>>>);

impl ChildContainer for Shelf {
    type Key = usize;
    type Lock = Mutex<Class>;
    fn lookup(&self, index: &usize) -> Option<Arc<Mutex<Class>>> {
        self.0.get(*index).cloned()
    }
}

// A `pub` node: its derived impls are public, and name the field's container.
#[derive(ChainNode)]
pub struct Lecture {
    #[chain(children, child = Class)]
    classes: Shelf,
}

fn main() {}
