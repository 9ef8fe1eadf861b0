use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

struct Class;

struct Room;

#[derive(ChainNode)]
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
    #[chain(children, default)]
    classes: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    waitlists: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    room: Option<Arc<Mutex<Room>>>,
}
