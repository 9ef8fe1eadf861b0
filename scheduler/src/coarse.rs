//! The `coarse` strategy: the whole service behind one global mutex.

use crate::{
    Cancelled, ClassId, ClassSnapshot, LectureId, ScheduleError, Scheduler, Seat, ServiceConfig,
    Snapshot, Statistics, Strategy, StudentId, first_choice,
};
use chainlock::chain_locker;
use chainlock::parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

chain_locker! {
    /// The one global lock, as a chain of one level: costs what `Mutex::lock` costs (the
    /// zero-cost benchmark), and the telemetry names it (`Global level 0 (World)`).
    struct Global(World);
}

/// The scheduling service behind one `parking_lot::Mutex`: every operation, leaf work
/// included, holds it from start to end. Trivially consistent; the baseline of the
/// comparison.
pub struct CoarseScheduler {
    world: Arc<Mutex<World>>,
    config: ServiceConfig,
}

struct World {
    lectures: HashMap<LectureId, Lecture>,
    /// Exact at all times: cancelling a class clears its students' seats.
    seats: Vec<Option<Seat>>,
    statistics: Statistics,
}

#[derive(Default)]
struct Lecture {
    classes: BTreeMap<ClassId, Vec<StudentId>>,
    next_class: ClassId,
}

impl CoarseScheduler {
    /// A service with no lectures.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{CoarseScheduler, LeafWork, Scheduler, ServiceConfig, Strategy};
    ///
    /// let service = CoarseScheduler::new(ServiceConfig::new(10, 2, LeafWork::None)?);
    /// assert_eq!(service.strategy(), Strategy::Coarse);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(config: ServiceConfig) -> Self {
        Self {
            world: Arc::new(Mutex::new(World {
                lectures: HashMap::new(),
                seats: vec![None; config.students() as usize],
                statistics: Statistics::default(),
            })),
            config,
        }
    }
}

impl CoarseScheduler {
    /// Runs `operation` holding the global lock.
    fn locked<R>(&self, operation: impl FnOnce(&mut World) -> R) -> R {
        Global
            .run(&self.world, operation)
            .expect("a chain of one level without a closed marker never ends early")
    }
}

impl World {
    /// Removes `student` from the class at `seat`.
    fn leave(&mut self, student: StudentId, seat: Seat) {
        let students = self
            .lectures
            .get_mut(&seat.lecture)
            .and_then(|lecture| lecture.classes.get_mut(&seat.class))
            .expect("seats are exact under the global lock");
        let index = students
            .iter()
            .position(|&s| s == student)
            .expect("seats are exact under the global lock");
        students.swap_remove(index);
        self.seats[student as usize] = None;
        self.statistics.students -= 1;
    }

    /// Stops a class's students' attendance; returns how many there were.
    fn log_out(&mut self, students: &[StudentId]) -> usize {
        for &student in students {
            self.seats[student as usize] = None;
        }
        self.statistics.students -= students.len();
        self.statistics.classes -= 1;
        students.len()
    }
}

impl Scheduler for CoarseScheduler {
    fn strategy(&self) -> Strategy {
        Strategy::Coarse
    }

    fn config(&self) -> ServiceConfig {
        self.config
    }

    fn open_lecture(&self, lecture: LectureId) -> Result<(), ScheduleError> {
        self.locked(|world| {
            if world.lectures.contains_key(&lecture) {
                return Err(ScheduleError::LectureExists(lecture));
            }
            world.lectures.insert(lecture, Lecture::default());
            Ok(())
        })
    }

    fn attend(&self, student: StudentId, lecture: LectureId) -> Result<Seat, ScheduleError> {
        let index = self.config.check_student(student)?;
        let threshold = self.config.threshold() as usize;
        self.locked(|world| {
            if let Some(old) = world.seats[index] {
                if old.lecture == lecture {
                    return Ok(old);
                }
                world.leave(student, old);
            }
            let target = world
                .lectures
                .get_mut(&lecture)
                .ok_or(ScheduleError::NoSuchLecture(lecture))?;
            let start = first_choice(student, target.classes.len());
            let with_room = target
                .classes
                .iter()
                .skip(start)
                .chain(target.classes.iter().take(start))
                .find(|(_, students)| students.len() < threshold)
                .map(|(&class, _)| class);
            let class = if let Some(class) = with_room {
                class
            } else {
                let class = target.next_class;
                target.next_class += 1;
                target.classes.insert(class, Vec::new());
                world.statistics.classes += 1;
                class
            };
            let seat = Seat { lecture, class };
            world
                .lectures
                .get_mut(&lecture)
                .and_then(|lecture| lecture.classes.get_mut(&class))
                .expect("just found or added")
                .push(student);
            world.seats[index] = Some(seat);
            world.statistics.students += 1;
            self.config.leaf_work().perform();
            Ok(seat)
        })
    }

    fn expel(&self, student: StudentId) -> Result<Seat, ScheduleError> {
        let index = self.config.check_student(student)?;
        self.locked(|world| {
            let seat = world.seats[index].ok_or(ScheduleError::NotAttending(student))?;
            world.leave(student, seat);
            self.config.leaf_work().perform();
            Ok(seat)
        })
    }

    fn cancel_class(&self, lecture: LectureId, class: ClassId) -> Result<usize, ScheduleError> {
        self.locked(|world| {
            let students = world
                .lectures
                .get_mut(&lecture)
                .and_then(|lecture| lecture.classes.remove(&class))
                .ok_or(ScheduleError::NoSuchClass { lecture, class })?;
            Ok(world.log_out(&students))
        })
    }

    fn cancel_lecture(&self, lecture: LectureId) -> Result<Cancelled, ScheduleError> {
        self.locked(|world| {
            let removed = world
                .lectures
                .remove(&lecture)
                .ok_or(ScheduleError::NoSuchLecture(lecture))?;
            let mut cancelled = Cancelled::default();
            for students in removed.classes.values() {
                cancelled.students += world.log_out(students);
                cancelled.classes += 1;
            }
            Ok(cancelled)
        })
    }

    /// Exact: read under the global lock.
    fn statistics(&self) -> Statistics {
        self.locked(|world| world.statistics)
    }

    fn seat(&self, student: StudentId) -> Result<Option<Seat>, ScheduleError> {
        let index = self.config.check_student(student)?;
        Ok(self.locked(|world| world.seats[index]))
    }

    fn snapshot(&self) -> Snapshot {
        self.locked(|world| Snapshot {
            classes: world
                .lectures
                .iter()
                .flat_map(|(&lecture, lecture_node)| {
                    lecture_node
                        .classes
                        .iter()
                        .map(move |(&class, students)| ClassSnapshot {
                            seat: Seat { lecture, class },
                            students: students.clone(),
                        })
                })
                .collect(),
            statistics: world.statistics,
        })
    }
}
