//! The `chain` and `crab` strategies: one service over the locked tree, generic in its descent.

use crate::seats::{ClassTree, Seats};
use crate::tally::Tally;
use crate::tree::{Class, Lecture, OpenedClass, Registry};
use crate::{
    Cancelled, ClassId, ClassSnapshot, LectureId, ScheduleError, Scheduler, Seat, ServiceConfig,
    Snapshot, Statistics, Strategy, StudentId,
};
use chainlock::chain::ChildContainer;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::{Exit, chain_locker};
use std::marker::PhantomData;
use std::sync::Arc;

chain_locker! {
    /// Every level exclusive: plain hand-over-hand locking.
    struct ChainToClass(Registry, Lecture, Class);
    /// Registry and lecture exclusive.
    struct ChainToLecture(Registry, Lecture);
    /// Shared down to an exclusive class: latch crabbing.
    struct CrabToClass(shared Registry, shared Lecture, Class);
    /// Shared registry, exclusive lecture.
    struct CrabToLecture(shared Registry, Lecture);
}

/// How the service's descents lock the levels above the one they change.
pub trait Descent: Send + Sync + 'static {
    /// The strategy's name.
    const STRATEGY: Strategy;

    /// Descends to the lecture `lecture`, lets `pick` choose one of its classes, and runs
    /// `leaf` on that class, holding only the class by then.
    ///
    /// # Errors
    ///
    /// The [`Exit`] that ended the descent: absent or cancelled lecture (`Absent { level: 1, .. }`),
    /// no class picked or cancelled class (`Absent { level: 2, .. }`).
    fn class<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        pick: impl FnOnce(&Lecture) -> Option<Arc<Mutex<Class>>>,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit>;

    /// Descends to the lecture `lecture` and runs `change` on it, exclusively.
    ///
    /// # Errors
    ///
    /// The [`Exit`] that ended the descent: absent or cancelled lecture.
    fn lecture<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        change: impl FnOnce(&mut Lecture) -> R,
    ) -> Result<R, Exit>;
}

/// Every level locked exclusively, hand over hand.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chain;

/// Shared locks on the way down, exclusive where the operation changes data.
#[derive(Clone, Copy, Debug, Default)]
pub struct Crab;

impl Descent for Chain {
    const STRATEGY: Strategy = Strategy::Chain;

    fn class<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        pick: impl FnOnce(&Lecture) -> Option<Arc<Mutex<Class>>>,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit> {
        ChainToClass.run(
            root,
            |registry| registry.lectures.lookup(&lecture),
            |lecture| pick(lecture),
            leaf,
        )
    }

    fn lecture<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        change: impl FnOnce(&mut Lecture) -> R,
    ) -> Result<R, Exit> {
        ChainToLecture.run_keys(root, &lecture, change)
    }
}

impl Descent for Crab {
    const STRATEGY: Strategy = Strategy::Crab;

    fn class<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        pick: impl FnOnce(&Lecture) -> Option<Arc<Mutex<Class>>>,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit> {
        CrabToClass.run(
            root,
            |registry| registry.lectures.lookup(&lecture),
            pick,
            leaf,
        )
    }

    fn lecture<R>(
        root: &Arc<RwLock<Registry>>,
        lecture: LectureId,
        change: impl FnOnce(&mut Lecture) -> R,
    ) -> Result<R, Exit> {
        CrabToLecture.run_keys(root, &lecture, change)
    }
}

/// The service of the `chain` strategy.
pub type ChainScheduler = LockedScheduler<Chain>;
/// The service of the `crab` strategy.
pub type CrabScheduler = LockedScheduler<Crab>;

/// The scheduling service over the locked tree.
///
/// Each student has a seat lock that serializes their own moves. A student is added to a
/// class only by `attend`, holding their seat lock, after removing them from the one class
/// their seat names; everything else only removes students. So a student is in at most one
/// class at every instant, by construction. A seat may be stale (its class cancelled since):
/// it is checked against the class before use.
///
/// Lock order, everywhere: a seat lock, then tree locks from the root down, a parent held
/// only while its child is being locked. Snapshots take the root exclusively and then every
/// lecture and class, top down, so they never wait for a thread that waits for them.
pub struct LockedScheduler<D> {
    root: Arc<RwLock<Registry>>,
    seats: Seats,
    tally: Tally,
    config: ServiceConfig,
    descent: PhantomData<D>,
}

impl<D: Descent> LockedScheduler<D> {
    /// A service with no lectures.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{CrabScheduler, LeafWork, Scheduler, ServiceConfig, Strategy};
    ///
    /// let service = CrabScheduler::new(ServiceConfig::new(10, 2, LeafWork::None)?);
    /// assert_eq!(service.strategy(), Strategy::Crab);
    /// service.open_lecture(0)?;
    /// assert_eq!(service.attend(3, 0)?.lecture, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(config: ServiceConfig) -> Self {
        Self {
            root: Arc::new(RwLock::new(Registry::new())),
            seats: Seats::new(config),
            tally: Tally::default(),
            config,
            descent: PhantomData,
        }
    }
}

impl<D: Descent> ClassTree for LockedScheduler<D> {
    fn seats(&self) -> &Seats {
        &self.seats
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }

    fn at_seat<R>(&self, seat: Seat, leaf: impl FnOnce(&mut Class) -> R) -> Result<R, Exit> {
        D::class(
            &self.root,
            seat.lecture,
            |lecture| lecture.classes.lookup(&seat.class),
            leaf,
        )
    }

    fn at_class_with_room<R>(
        &self,
        student: StudentId,
        lecture: LectureId,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit> {
        let threshold = self.config.threshold();
        D::class(
            &self.root,
            lecture,
            |lecture| lecture.classes.with_room(student, threshold),
            leaf,
        )
    }

    fn add_class_unless_room(
        &self,
        student: StudentId,
        lecture: LectureId,
    ) -> Result<Option<OpenedClass>, Exit> {
        let threshold = self.config.threshold();
        D::lecture(&self.root, lecture, |lecture_node| {
            match lecture_node.classes.with_room(student, threshold) {
                Some(_) => None,
                None => Some(lecture_node.add_class(lecture, student, &self.tally)),
            }
        })
    }

    fn unlink_class(&self, seat: Seat) {
        // The lecture may have been cancelled meanwhile, which unlinks the class too.
        let _ = D::lecture(&self.root, seat.lecture, |lecture| {
            lecture.classes.remove(seat.class);
        });
    }
}

impl<D: Descent> Scheduler for LockedScheduler<D> {
    fn strategy(&self) -> Strategy {
        D::STRATEGY
    }

    fn config(&self) -> ServiceConfig {
        self.config
    }

    fn open_lecture(&self, lecture: LectureId) -> Result<(), ScheduleError> {
        let mut registry = self.root.write();
        if let Some(running) = registry.lectures.get(&lecture)
            && !running.read().cancelled
        {
            return Err(ScheduleError::LectureExists(lecture));
        }
        registry
            .lectures
            .insert(lecture, Arc::new(RwLock::new(Lecture::new())));
        Ok(())
    }

    fn attend(&self, student: StudentId, lecture: LectureId) -> Result<Seat, ScheduleError> {
        self.attend_from_seat(student, lecture)
    }

    fn expel(&self, student: StudentId) -> Result<Seat, ScheduleError> {
        self.expel_from_seat(student)
    }

    fn cancel_class(&self, lecture: LectureId, class: ClassId) -> Result<usize, ScheduleError> {
        self.cancel_class_at(Seat { lecture, class })
    }

    fn cancel_lecture(&self, lecture: LectureId) -> Result<Cancelled, ScheduleError> {
        let tally = &self.tally;
        let cancelled = D::lecture(&self.root, lecture, |lecture| {
            // Closed from now on; each class is locked under the lecture (top down) and
            // stopped, waiting for whoever is inside it to finish.
            lecture.cancelled = true;
            let mut cancelled = Cancelled::default();
            for class in lecture.classes.all() {
                let mut class = class.lock();
                if !class.is_cancelled() {
                    cancelled.students += class.cancel(tally);
                    cancelled.classes += 1;
                }
            }
            cancelled
        })
        .map_err(|_| ScheduleError::NoSuchLecture(lecture))?;
        // Unlink it, unless it was reopened meanwhile.
        let mut registry = self.root.write();
        if registry
            .lectures
            .get(&lecture)
            .is_some_and(|running| running.read().cancelled)
        {
            registry.lectures.remove(&lecture);
        }
        Ok(cancelled)
    }

    /// Sums counters sharded by thread, each changed under the lock of the node it counts:
    /// exact when nothing runs concurrently, and in a [`snapshot`](Self::snapshot); under
    /// concurrent operations each figure is off from its count at the call's start by at
    /// most the changes made during the call (see the `tally` module).
    fn statistics(&self) -> Statistics {
        self.tally.statistics()
    }

    fn seat(&self, student: StudentId) -> Result<Option<Seat>, ScheduleError> {
        self.checked_seat(student)
    }

    fn snapshot(&self) -> Snapshot {
        let registry = self.root.write_arc();
        let lectures: Vec<_> = registry
            .lectures
            .values()
            .map(|lecture| lecture.read_arc())
            .collect();
        let classes: Vec<_> = lectures
            .iter()
            .filter(|lecture| !lecture.cancelled)
            .flat_map(|lecture| lecture.classes.all().map(Mutex::lock_arc))
            .collect();
        // Everything is frozen: no counter can move until the guards drop.
        Snapshot {
            classes: classes
                .iter()
                .filter(|class| !class.is_cancelled())
                .map(|class| ClassSnapshot {
                    seat: class.seat(),
                    students: class.students().to_vec(),
                })
                .collect(),
            statistics: self.statistics(),
        }
    }
}
