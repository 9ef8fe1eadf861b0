//! The locked tree of the `chain` and `crab` strategies: `Registry → Lecture → Class`, each
//! node behind its own lock, built with `#[derive(ChainNode)]`. Its [`Class`] is the
//! `optimistic` strategy's leaf too (`crate::optimistic::tree`).

use crate::tally::Tally;
use crate::{ClassId, DEFAULT_THRESHOLD, LectureId, Seat, StudentId, first_choice};
use chainlock::ChainNode;
use chainlock::chain::ChildContainer;
use chainlock::parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The root: every running lecture.
#[derive(ChainNode)]
pub struct Registry {
    #[chain(children)]
    pub(crate) lectures: HashMap<LectureId, Arc<RwLock<Lecture>>>,
}

/// A lecture and its classes. A cancelled lecture is closed: descents treat it as absent.
#[derive(ChainNode)]
pub struct Lecture {
    #[chain(closed)]
    pub(crate) cancelled: bool,
    #[chain(children, child = Class)]
    pub(crate) classes: Classes,
    next_class: ClassId,
}

/// A class. A cancelled class is closed.
#[derive(ChainNode)]
pub struct Class {
    #[chain(closed)]
    cancelled: bool,
    seat: Seat,
    /// Inline up to the default threshold: in the class's own allocation, beside its lock,
    /// not one pointer further (a cache line less per class a descent locks).
    students: SmallVec<[StudentId; DEFAULT_THRESHOLD as usize]>,
    /// The class's size, published for the lecture to read without locking the class.
    occupancy: Arc<AtomicU32>,
}

/// Marks a cancelled class's occupancy so that no joiner picks it.
const CANCELLED: u32 = u32::MAX;

/// A lecture's classes with their published sizes: a custom child container, found by
/// class number.
#[derive(Default)]
pub struct Classes(BTreeMap<ClassId, ClassEntry>);

struct ClassEntry {
    class: Arc<Mutex<Class>>,
    occupancy: Arc<AtomicU32>,
}

impl ChildContainer for Classes {
    type Key = ClassId;
    type Lock = Mutex<Class>;

    fn lookup(&self, class: &ClassId) -> Option<Arc<Mutex<Class>>> {
        self.0.get(class).map(|entry| entry.class.clone())
    }
}

impl Classes {
    /// A class with room for `student`, by the published sizes: a hint, checked again under
    /// the class's lock. `None` when every class is at `threshold`.
    pub(crate) fn with_room(
        &self,
        student: StudentId,
        threshold: u32,
    ) -> Option<Arc<Mutex<Class>>> {
        let start = first_choice(student, self.0.len());
        let entries = self.0.values();
        entries
            .clone()
            .skip(start)
            .chain(entries.take(start))
            .find(|entry| entry.occupancy.load(Ordering::Relaxed) < threshold)
            .map(|entry| entry.class.clone())
    }

    /// Every class, for cancelling a lecture or taking a snapshot.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<Mutex<Class>>> {
        self.0.values().map(|entry| &entry.class)
    }

    /// Forgets a class (cancelled before, under its own lock).
    pub(crate) fn remove(&mut self, class: ClassId) {
        self.0.remove(&class);
    }
}

impl Registry {
    pub(crate) fn new() -> Self {
        Self {
            lectures: HashMap::new(),
        }
    }
}

impl Lecture {
    pub(crate) fn new() -> Self {
        Self {
            cancelled: false,
            classes: Classes::default(),
            next_class: 0,
        }
    }

    /// Adds a class with `student` in it and returns it locked, so that the caller holds the
    /// class (and nothing else) once it releases the lecture.
    pub(crate) fn add_class(
        &mut self,
        lecture: LectureId,
        student: StudentId,
        tally: &Tally,
    ) -> OpenedClass {
        let seat = Seat {
            lecture,
            class: self.next_class,
        };
        self.next_class += 1;
        let (class, occupancy) = Class::new(seat);
        let guard = Class::open_with(&class, student, tally);
        self.classes
            .0
            .insert(seat.class, ClassEntry { class, occupancy });
        guard
    }
}

/// A class locked by the one who opened it: the caller holds it (and nothing else) once it
/// releases the lecture.
pub(crate) type OpenedClass =
    chainlock::lock_api::ArcMutexGuard<chainlock::parking_lot::RawMutex, Class>;

impl Class {
    /// An empty class at `seat`, and its published size (0).
    pub(crate) fn new(seat: Seat) -> (Arc<Mutex<Class>>, Arc<AtomicU32>) {
        let occupancy = Arc::new(AtomicU32::new(0));
        let class = Arc::new(Mutex::new(Class {
            cancelled: false,
            seat,
            students: SmallVec::new(),
            occupancy: occupancy.clone(),
        }));
        (class, occupancy)
    }

    /// Locks a new `class`, puts `student` in it and counts it, before anyone else can find
    /// it.
    pub(crate) fn open_with(
        class: &Arc<Mutex<Class>>,
        student: StudentId,
        tally: &Tally,
    ) -> OpenedClass {
        let mut guard = class.lock_arc();
        guard.join(student, tally);
        tally.classes(1);
        guard
    }

    /// Where the class is.
    pub(crate) fn seat(&self) -> Seat {
        self.seat
    }

    pub(crate) fn students(&self) -> &[StudentId] {
        &self.students
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    pub(crate) fn contains(&self, student: StudentId) -> bool {
        self.students.contains(&student)
    }

    /// Adds `student` if the class has room; the caller made sure they attend no class.
    pub(crate) fn try_join(&mut self, student: StudentId, threshold: u32, tally: &Tally) -> bool {
        let room = self.students.len() < threshold as usize;
        if room {
            self.join(student, tally);
        }
        room
    }

    fn join(&mut self, student: StudentId, tally: &Tally) {
        debug_assert!(!self.cancelled && !self.contains(student));
        self.students.push(student);
        self.publish();
        tally.students(1);
    }

    /// Removes `student`; `false` if they were not here.
    pub(crate) fn leave(&mut self, student: StudentId, tally: &Tally) -> bool {
        let Some(index) = self.students.iter().position(|&s| s == student) else {
            return false;
        };
        self.students.swap_remove(index);
        self.publish();
        tally.students(-1);
        true
    }

    /// Stops the class and logs its students out; returns how many there were.
    pub(crate) fn cancel(&mut self, tally: &Tally) -> usize {
        debug_assert!(!self.cancelled);
        self.cancelled = true;
        self.occupancy.store(CANCELLED, Ordering::Relaxed);
        let students = std::mem::take(&mut self.students).len();
        tally.students(-isize::try_from(students).expect("a class holds few students"));
        tally.classes(-1);
        students
    }

    fn publish(&self) {
        self.occupancy
            .store(self.students.len() as u32, Ordering::Relaxed);
    }
}
