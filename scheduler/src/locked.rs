//! The `chain` and `crab` strategies: one service over the locked tree, generic over how a
//! descent locks each level.

use crate::tally::Tally;
use crate::tree::{Class, Lecture, Registry};
use crate::{
    Cancelled, ClassId, ClassSnapshot, LectureId, ScheduleError, Scheduler, Seat, ServiceConfig,
    Snapshot, Statistics, Strategy, StudentId,
};
use chainlock::chain::{Absence, ChildContainer};
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
    seats: Box<[Mutex<Option<Seat>>]>,
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
            seats: (0..config.students()).map(|_| Mutex::new(None)).collect(),
            tally: Tally::default(),
            config,
            descent: PhantomData,
        }
    }

    fn seat_lock(
        &self,
        student: StudentId,
    ) -> Result<chainlock::parking_lot::MutexGuard<'_, Option<Seat>>, ScheduleError> {
        Ok(self.seats[self.config.check_student(student)?].lock())
    }

    /// Runs `leaf` on the class at `seat`, if it still runs.
    fn at_seat<R>(&self, seat: Seat, leaf: impl FnOnce(&mut Class) -> R) -> Result<R, Exit> {
        D::class(
            &self.root,
            seat.lecture,
            |lecture| lecture.classes.lookup(&seat.class),
            leaf,
        )
    }

    /// Adds `student` (who attends no class) to a class of `lecture` with room, or to a new
    /// class when all are full.
    fn join(&self, student: StudentId, lecture: LectureId) -> Result<Seat, ScheduleError> {
        let threshold = self.config.threshold();
        let tally = &self.tally;
        let leaf_work = self.config.leaf_work();
        loop {
            let joined = D::class(
                &self.root,
                lecture,
                |lecture| lecture.classes.with_room(student, threshold),
                |class| {
                    let joined = class.try_join(student, threshold, tally);
                    if joined {
                        leaf_work.perform();
                    }
                    joined.then(|| class.seat())
                },
            );
            match joined {
                Ok(Some(seat)) => return Ok(seat),
                // The class filled up or was cancelled since its size was published.
                Ok(None)
                | Err(Exit::Absent {
                    level: 2,
                    cause: Absence::Closed,
                }) => {}
                // Every class is full: add one, unless room appeared meanwhile.
                Err(Exit::Absent {
                    level: 2,
                    cause: Absence::Missing,
                }) => {
                    let added = D::lecture(&self.root, lecture, |lecture_node| match lecture_node
                        .classes
                        .with_room(student, threshold)
                    {
                        Some(_) => None,
                        None => Some(lecture_node.add_class(lecture, student, tally)),
                    });
                    match added {
                        Ok(Some(class)) => {
                            // Only the new class is locked now.
                            leaf_work.perform();
                            return Ok(class.seat());
                        }
                        Ok(None) => {}
                        Err(_) => return Err(ScheduleError::NoSuchLecture(lecture)),
                    }
                }
                Err(_) => return Err(ScheduleError::NoSuchLecture(lecture)),
            }
        }
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
        let mut seat = self.seat_lock(student)?;
        if let Some(old) = seat.take() {
            let tally = &self.tally;
            let stays = self.at_seat(old, |class| {
                if old.lecture == lecture {
                    class.contains(student)
                } else {
                    class.leave(student, tally);
                    false
                }
            });
            if stays == Ok(true) {
                *seat = Some(old);
                return Ok(old);
            }
        }
        let joined = self.join(student, lecture)?;
        *seat = Some(joined);
        Ok(joined)
    }

    fn expel(&self, student: StudentId) -> Result<Seat, ScheduleError> {
        let mut seat = self.seat_lock(student)?;
        let old = seat.take().ok_or(ScheduleError::NotAttending(student))?;
        let tally = &self.tally;
        let leaf_work = self.config.leaf_work();
        let expelled = self.at_seat(old, |class| {
            let left = class.leave(student, tally);
            if left {
                leaf_work.perform();
            }
            left
        });
        match expelled {
            Ok(true) => Ok(old),
            _ => Err(ScheduleError::NotAttending(student)),
        }
    }

    fn cancel_class(&self, lecture: LectureId, class: ClassId) -> Result<usize, ScheduleError> {
        let seat = Seat { lecture, class };
        let tally = &self.tally;
        let logged_out = self
            .at_seat(seat, |class| class.cancel(tally))
            .map_err(|_| ScheduleError::NoSuchClass { lecture, class })?;
        // Unlink it; the lecture may have been cancelled meanwhile, which unlinks it too.
        let _ = D::lecture(&self.root, lecture, |lecture| lecture.classes.remove(class));
        Ok(logged_out)
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
        let mut seat = self.seat_lock(student)?;
        if let Some(current) = *seat
            && self.at_seat(current, |class| class.contains(student)) != Ok(true)
        {
            // Its class was cancelled since.
            *seat = None;
        }
        Ok(*seat)
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
