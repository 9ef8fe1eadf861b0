//! What `examples/quickstart.rs` becomes after macro expansion, simplified by hand: the
//! derive's trait impls and two of the locker's methods (`descend` and `run_keys`; the
//! deadline, async and multi-leaf methods follow the same pattern). The exact expansion of
//! every case is in `tests/expand/**/*.expanded.rs`.
//!
//! Run: `cargo run --example quickstart-expanded`.

use chainlock::chain::{Absence, ChildContainer, Children, ExclusiveLock, SharedLock};
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{ChainNode, Exit};
use std::collections::HashMap;
use std::sync::Arc;

/// The root: lectures by id.
pub struct Registry {
    lectures: HashMap<u32, Arc<RwLock<Lecture>>>,
}

/// A lecture: its classes, and whether it was cancelled.
pub struct Lecture {
    cancelled: bool,
    classes: Vec<Arc<Mutex<Class>>>,
}

/// A class: its students.
pub struct Class {
    students: Vec<u32>,
}

// #[derive(ChainNode)] on Registry: never closed; its `lectures` are `Lecture` children.
impl ChainNode for Registry {}
impl Children<Lecture> for Registry {
    type Key = <HashMap<u32, Arc<RwLock<Lecture>>> as ChildContainer>::Key; // u32
    type Lock = <HashMap<u32, Arc<RwLock<Lecture>>> as ChildContainer>::Lock; // RwLock<Lecture>
    fn child(&self, key: &Self::Key) -> Option<Arc<Self::Lock>> {
        self.lectures.lookup(key)
    }
}

// #[derive(ChainNode)] on Lecture: closed when `cancelled`; its `classes` are found by index.
impl ChainNode for Lecture {
    fn is_closed(&self) -> bool {
        self.cancelled
    }
}
impl Children<Class> for Lecture {
    type Key = usize;
    type Lock = Mutex<Class>;
    fn child(&self, key: &usize) -> Option<Arc<Mutex<Class>>> {
        self.classes.lookup(key)
    }
}

// #[derive(ChainNode)] on Class: a leaf, never closed.
impl ChainNode for Class {}

// chain_locker!(pub struct ClassLocker(shared Registry, shared Lecture, Class));
/// Registry (shared) → lecture (shared) → class (exclusive). (The real expansion writes
/// these four impls by hand, inside the block that imports chainlock once.)
#[derive(Clone, Copy, Debug, Default)]
pub struct ClassLocker;

impl ClassLocker {
    /// The number of levels of this chain, root included.
    pub const DEPTH: usize = 3;

    /// Locks the chain hand over hand and returns the class's owned guard.
    ///
    /// # Errors
    ///
    /// The [`Exit`] that ended the descent early; nothing stays locked.
    pub fn descend<L0, L1, L2>(
        &self,
        root: &Arc<L0>,
        stage0: impl FnOnce(&Registry) -> Option<Arc<L1>>,
        stage1: impl FnOnce(&Lecture) -> Option<Arc<L2>>,
    ) -> Result<L2::Guard, Exit>
    where
        L0: SharedLock<Target = Registry> + ?Sized,
        L1: SharedLock<Target = Lecture> + ?Sized,
        L2: ExclusiveLock<Target = Class> + ?Sized,
    {
        let guard0 = L0::lock_shared(root);
        if guard0.is_closed() {
            // a closed root behaves as absent too
            return Err(Exit::Absent {
                level: 0,
                cause: Absence::Closed,
            });
        }
        let Some(next) = stage0(&guard0) else {
            return Err(Exit::Absent {
                level: 1,
                cause: Absence::Missing,
            });
        };
        let guard1 = L1::lock_shared(&next); // the lecture is locked while the registry is held,
        drop(guard0); // only then is the registry released
        if guard1.is_closed() {
            // (the real expansion asks `ChainNode` only of types that implement it)
            return Err(Exit::Absent {
                level: 1,
                cause: Absence::Closed,
            });
        }
        let Some(next) = stage1(&guard1) else {
            return Err(Exit::Absent {
                level: 2,
                cause: Absence::Missing,
            });
        };
        let guard2 = L2::lock_exclusive(&next);
        drop(guard1);
        if guard2.is_closed() {
            return Err(Exit::Absent {
                level: 2,
                cause: Absence::Closed,
            });
        }
        Ok(guard2)
    }

    /// The same descent by key path, running `leaf` on the class.
    ///
    /// # Errors
    ///
    /// The [`Exit`] that ended the descent early; nothing stays locked.
    ///
    /// Only the root's lock is a generic parameter: every later level's lock is what the
    /// parent's `Children` impl says (a projection), so a chain over one recursive node type
    /// (`Dir → Dir → Dir`) is unified by the compiler. The real expansion writes these bounds
    /// through the root's lock (`L0: LinkS<Registry, Lecture>`), so that a chain whose types
    /// have no `Children` impls still compiles (only calling `run_keys` needs them).
    pub fn run_keys<L0, R>(
        &self,
        root: &Arc<L0>,
        key0: &<Registry as Children<Lecture>>::Key,
        key1: &<Lecture as Children<Class>>::Key,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit>
    where
        L0: SharedLock<Target = Registry> + ?Sized,
        Registry: Children<Lecture, Lock: SharedLock<Target = Lecture>>,
        Lecture: Children<Class, Lock: ExclusiveLock<Target = Class>>,
    {
        let mut guard = self.descend(
            root,
            |registry| registry.child(key0),
            |lecture| lecture.child(key1),
        )?;
        Ok(leaf(&mut guard))
    }
}

fn main() {
    let class = Arc::new(Mutex::new(Class {
        students: Vec::new(),
    }));
    let lecture = Arc::new(RwLock::new(Lecture {
        cancelled: false,
        classes: vec![class],
    }));
    let registry = Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([(42, lecture)]),
    }));
    let joined = ClassLocker.run_keys(&registry, &42, &0, |class| {
        class.students.push(7);
        class.students.len()
    });
    println!("joined: {joined:?} (depth {})", ClassLocker::DEPTH);
    assert_eq!(joined, Ok(1));
}
