use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

struct Class;

#[derive(ChainNode)]
struct Lecture {
    #[chain(children)]
    classes: HashMap<u32, Arc<Mutex<Class>>>,
}
