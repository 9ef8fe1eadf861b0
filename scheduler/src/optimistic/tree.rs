//! The tree of the `optimistic` strategy, made of what an optimistic reader may read: the
//! registry and each lecture behind a [`HybridLock`] (which hands out `&T` only, so a writer
//! changes them through atomics and epoch containers), their children in
//! [`EpochMap`]s (looked up by reference, no `Arc` cloned per level), the closed flag an
//! [`AtomicBool`]; the class is the locked tree's [`Class`] behind a `Mutex`, the leaf that
//! every descent locks exclusively.

use crate::tally::Tally;
use crate::tree::{Class, OpenedClass};
use crate::{Cancelled, ClassId, LectureId, Seat, StudentId, first_choice};
use chainlock::ChainNode;
use chainlock::chain::{ChildContainer, EpochGuard, EpochMap, LookupRef};
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The root: every running lecture, in an [`EpochMap`] that a writer (holding the registry
/// exclusively) changes through `&self` while optimistic readers search it.
#[derive(ChainNode, Default)]
pub struct Registry {
    #[chain(children)]
    pub(crate) lectures: EpochMap<LectureId, HybridLock<Lecture>>,
}

/// A lecture and its classes. A cancelled lecture is closed: descents treat it as absent.
/// Changed only under its exclusive hold, through `&self`.
#[derive(ChainNode, Default)]
pub struct Lecture {
    /// Set under the lecture's exclusive hold; read by optimistic readers.
    #[chain(closed)]
    cancelled: AtomicBool,
    #[chain(children, child = Class)]
    classes: Classes,
    /// The next class's number, changed only under the lecture's exclusive hold.
    next_class: AtomicU32,
}

/// A lecture's classes with their published sizes, found by class number and lent by
/// reference while an [`EpochGuard`] lives.
#[derive(Default)]
pub struct Classes(EpochMap<ClassId, ClassEntry>);

/// A class and the size it publishes for joiners to read without locking it.
pub struct ClassEntry {
    class: Arc<Mutex<Class>>,
    occupancy: Arc<AtomicU32>,
}

impl ChildContainer for Classes {
    type Key = ClassId;
    type Lock = Mutex<Class>;

    fn lookup(&self, class: &ClassId) -> Option<Arc<Mutex<Class>>> {
        self.lookup_ref(class, &EpochGuard::pin()).cloned()
    }
}

impl LookupRef<ClassId> for Classes {
    type Lock = Mutex<Class>;

    #[inline]
    fn lookup_ref<'g>(
        &'g self,
        class: &ClassId,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<Mutex<Class>>> {
        self.0.get(class, guard).map(|entry| &entry.class)
    }
}

impl Classes {
    /// A class with room for `student`, by the published sizes: a hint, checked again under
    /// the class's lock. `None` when every class is at `threshold`. Reads atomics only, so an
    /// optimistic reader may call it (its answer counts once the lecture validates).
    pub(crate) fn with_room<'g>(
        &'g self,
        student: StudentId,
        threshold: u32,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<Mutex<Class>>> {
        // Two iterators over what may be two snapshots (a writer in between): only an
        // optimistic reader sees that, and its lecture's version then fails to validate.
        let start = first_choice(student, self.0.iter(guard).len());
        self.0
            .iter(guard)
            .skip(start)
            .chain(self.0.iter(guard).take(start))
            .find(|(_, entry)| entry.occupancy.load(Ordering::Relaxed) < threshold)
            .map(|(_, entry)| &entry.class)
    }

    /// Every class, for cancelling a lecture or taking a snapshot.
    pub(crate) fn all<'g>(
        &'g self,
        guard: &'g EpochGuard,
    ) -> impl Iterator<Item = &'g Arc<Mutex<Class>>> + 'g {
        self.0.iter(guard).map(|(_, entry)| &entry.class)
    }
}

impl Lecture {
    /// The lecture's classes.
    pub fn classes(&self) -> &Classes {
        &self.classes
    }

    /// Whether the lecture was cancelled (acquire: what the canceller wrote before is seen).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Adds a class with `student` in it and returns it locked, so that the caller holds the
    /// class (and nothing else) once it releases the lecture. Under the lecture's exclusive
    /// hold.
    pub(crate) fn add_class(
        &self,
        lecture: LectureId,
        student: StudentId,
        tally: &Tally,
    ) -> OpenedClass {
        let class = self.next_class.load(Ordering::Relaxed);
        self.next_class.store(class + 1, Ordering::Relaxed);
        let (node, occupancy) = Class::new(Seat { lecture, class });
        let guard = Class::open_with(&node, student, tally);
        self.classes.0.insert(
            class,
            Arc::new(ClassEntry {
                class: node,
                occupancy,
            }),
        );
        guard
    }

    /// Forgets a class (cancelled before, under its own lock). Under the lecture's exclusive
    /// hold.
    pub(crate) fn remove_class(&self, class: ClassId) {
        self.classes.0.remove(&class);
    }

    /// Closes the lecture and stops every class, each locked under the lecture (top down),
    /// waiting for whoever is inside it to finish. Under the lecture's exclusive hold.
    pub(crate) fn cancel(&self, tally: &Tally) -> Cancelled {
        self.cancelled.store(true, Ordering::Release);
        // Not pinned while waiting for the classes: a pinned thread holds back every epoch
        // container's garbage.
        let classes: Vec<Arc<Mutex<Class>>> =
            self.classes.all(&EpochGuard::pin()).cloned().collect();
        let mut cancelled = Cancelled::default();
        for class in &classes {
            let mut class = class.lock();
            if !class.is_cancelled() {
                cancelled.students += class.cancel(tally);
                cancelled.classes += 1;
            }
        }
        cancelled
    }
}
