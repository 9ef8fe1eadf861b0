use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

struct Class;

/// A container of its own.
struct Shelf(Vec<Arc<Mutex<Class>>>);

impl chainlock::chain::ChildContainer for Shelf {
    type Key = usize;
    type Lock = Mutex<Class>;
    fn lookup(&self, key: &usize) -> Option<Arc<Mutex<Class>>> {
        self.0.get(*key).cloned()
    }
}

#[derive(ChainNode)]
struct Lecture {
    #[chain(children, child = Class)]
    classes: Shelf,
}
