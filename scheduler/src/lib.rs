//! A scheduling service for online classes, the README's main job: lectures split into
//! classes of at most `threshold` students, served by four locking strategies over the same
//! operations.
//!
//! - [`Strategy::Chain`]: the tree `Registry → Lecture → Class → students` locked hand over
//!   hand with `chain_locker!`, every level exclusive.
//! - [`Strategy::Crab`]: the same tree and code, shared locks on the way down and an exclusive
//!   lock at the class (latch crabbing).
//! - [`Strategy::Optimistic`]: optimistic lock coupling over [`optimistic::tree`]'s nodes:
//!   versions read (nothing written) at the registry and the lecture, an exclusive lock at
//!   the class.
//! - [`Strategy::Coarse`]: one global `parking_lot::Mutex` over everything.
//!
//! All four implement [`Scheduler`]; [`invariants`] checks a consistent [`Snapshot`] of any of
//! them, and [`load`] drives them with client threads.
//!
//! The command-line program (`cargo run --release -p chainlock-scheduler`, `src/main.rs`)
//! runs them side by side; `tests/service.rs` checks every operation's semantics and the
//! invariants under load; `benches/scheduler.rs` measures throughput against client threads.
//!
//! # Examples
//!
//! ```
//! use chainlock_scheduler::load::{LoadConfig, Session, Stop};
//! use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
//!
//! let config = ServiceConfig::new(1_000, 8, LeafWork::None)?;
//! let service = Strategy::Crab.build(config);
//! service.open_lecture(7)?;
//! let seat = service.attend(42, 7)?;
//! assert_eq!(service.seat(42)?, Some(seat));
//!
//! // Or under load: client threads, a random mix, the invariants checked at the end.
//! let session = Session::new(Strategy::Chain.build(config), 4);
//! let load = LoadConfig { threads: 2, stop: Stop::Ops(1_000), ..LoadConfig::default() };
//! let report = session.run(&load, &mut |_progress| {});
//! assert_eq!(report.ops, 1_000);
//! assert!(report.invariants_hold());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod coarse;
pub mod invariants;
pub mod leaf_work;
pub mod load;
mod locked;
pub mod optimistic;
mod seats;
pub mod stats;
mod tally;
pub mod tree;

pub use coarse::CoarseScheduler;
pub use leaf_work::LeafWork;
pub use locked::{Chain, ChainScheduler, Crab, CrabScheduler, Descent, LockedScheduler};
pub use optimistic::OptimisticScheduler;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Lectures running at once in the command-line program and the benchmark.
pub const DEFAULT_LECTURES: u32 = 64;
/// Students in the command-line program and the benchmark.
pub const DEFAULT_STUDENTS: u32 = 10_000;
/// The most students a class holds in the command-line program and the benchmark.
pub const DEFAULT_THRESHOLD: u32 = 8;

/// A student, numbered `0..students`.
pub type StudentId = u32;
/// A lecture.
pub type LectureId = u32;
/// A class, numbered within its lecture.
pub type ClassId = u32;

/// Where a student sits: a class of a lecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Seat {
    /// The lecture.
    pub lecture: LectureId,
    /// The class within the lecture.
    pub class: ClassId,
}

/// Why an operation of the service failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The lecture does not exist, or has been cancelled (which looks the same).
    #[error("lecture {0} does not exist")]
    NoSuchLecture(LectureId),
    /// The class does not exist, or has been cancelled.
    #[error("class {class} of lecture {lecture} does not exist")]
    NoSuchClass {
        /// The lecture asked for.
        lecture: LectureId,
        /// The class asked for.
        class: ClassId,
    },
    /// `open_lecture` for a lecture that is running.
    #[error("lecture {0} is already running")]
    LectureExists(LectureId),
    /// The student attends no class.
    #[error("student {0} attends no class")]
    NotAttending(StudentId),
    /// The student's number is not below the configured number of students.
    #[error("student {student} is unknown (the service has {students} students)")]
    UnknownStudent {
        /// The student asked for.
        student: StudentId,
        /// How many students the service knows.
        students: u32,
    },
}

/// A rejected [`ServiceConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A class must hold at least one student.
    #[error("the class threshold must be at least 1")]
    ZeroThreshold,
    /// The service needs at least one student.
    #[error("the service needs at least one student")]
    NoStudents,
}

/// The size of a service and the work done at a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceConfig {
    students: u32,
    threshold: u32,
    leaf_work: LeafWork,
}

impl ServiceConfig {
    /// A service for students `0..students`, classes of at most `threshold` students, doing
    /// `leaf_work` whenever a student joins or is expelled from a class (while that class,
    /// and only it, is locked).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `threshold` or `students` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{ConfigError, LeafWork, ServiceConfig};
    ///
    /// let config = ServiceConfig::new(10_000, 8, LeafWork::Cpu)?;
    /// assert_eq!((config.students(), config.threshold()), (10_000, 8));
    /// assert_eq!(config.leaf_work(), LeafWork::Cpu);
    /// assert_eq!(ServiceConfig::new(10, 0, LeafWork::None), Err(ConfigError::ZeroThreshold));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(students: u32, threshold: u32, leaf_work: LeafWork) -> Result<Self, ConfigError> {
        if threshold == 0 {
            return Err(ConfigError::ZeroThreshold);
        }
        if students == 0 {
            return Err(ConfigError::NoStudents);
        }
        Ok(Self {
            students,
            threshold,
            leaf_work,
        })
    }

    /// How many students the service knows.
    pub fn students(&self) -> u32 {
        self.students
    }

    /// The most students a class may hold.
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The work done at a class.
    pub fn leaf_work(&self) -> LeafWork {
        self.leaf_work
    }

    fn check_student(&self, student: StudentId) -> Result<usize, ScheduleError> {
        if student < self.students {
            Ok(student as usize)
        } else {
            Err(ScheduleError::UnknownStudent {
                student,
                students: self.students,
            })
        }
    }
}

/// Classes running and students attending them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Classes that are running (created and not cancelled).
    pub classes: usize,
    /// Students attending a class.
    pub students: usize,
}

/// What a cancelled lecture stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cancelled {
    /// Classes stopped.
    pub classes: usize,
    /// Students logged out.
    pub students: usize,
}

/// One running class in a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSnapshot {
    /// Where the class is.
    pub seat: Seat,
    /// Its students, in no particular order.
    pub students: Vec<StudentId>,
}

/// The whole service at one instant: every running class with its students, and what
/// [`Scheduler::statistics`] reported at that same instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every running class, in no particular order.
    pub classes: Vec<ClassSnapshot>,
    /// The service's own statistics, read while the snapshot was frozen.
    pub statistics: Statistics,
}

/// The operations of the scheduling service, the same for every strategy.
///
/// Every operation is linearizable except [`statistics`](Self::statistics), whose
/// consistency each implementation documents.
pub trait Scheduler: Send + Sync {
    /// The strategy this service implements.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
    ///
    /// let config = ServiceConfig::new(100, 2, LeafWork::None)?;
    /// for strategy in Strategy::ALL {
    ///     let service = strategy.build(config);
    ///     assert_eq!((service.strategy(), service.config()), (strategy, config));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn strategy(&self) -> Strategy;

    /// The service's size and leaf work.
    fn config(&self) -> ServiceConfig;

    /// Opens `lecture` with no classes yet. A cancelled lecture's number may be reused.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::LectureExists`] when it is already running.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// assert_eq!(service.open_lecture(1), Err(ScheduleError::LectureExists(1)));
    /// service.cancel_lecture(1)?;
    /// service.open_lecture(1)?; // the number is free again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn open_lecture(&self, lecture: LectureId) -> Result<(), ScheduleError>;

    /// `student` attends `lecture`: they are logged out of the class they attend (if it is
    /// in another lecture; attending the lecture they are in keeps their seat), then join a
    /// class of `lecture` with room. When every class of the lecture is at the threshold, a
    /// new class is added. Returns the student's seat.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::NoSuchLecture`] when the lecture does not exist or is cancelled; the
    /// student has then still left their previous class.
    /// [`ScheduleError::UnknownStudent`] for a student out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// service.open_lecture(2)?;
    /// // Classes of 2: the third student opens a second class.
    /// let seats: Vec<_> = (0..3).map(|student| service.attend(student, 1)).collect::<Result<_, _>>()?;
    /// assert_eq!(seats.iter().filter(|seat| seat.class == seats[2].class).count(), 1);
    /// // Attending another lecture leaves the first one's class.
    /// let moved = service.attend(0, 2)?;
    /// assert_eq!((moved.lecture, service.seat(0)?), (2, Some(moved)));
    /// assert_eq!(service.attend(0, 9), Err(ScheduleError::NoSuchLecture(9)));
    /// assert_eq!(service.seat(0)?, None, "left the old class even so");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn attend(&self, student: StudentId, lecture: LectureId) -> Result<Seat, ScheduleError>;

    /// Expels `student` from the class they attend, and returns where they were.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::NotAttending`] when they attend no class,
    /// [`ScheduleError::UnknownStudent`] for a student out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// let seat = service.attend(7, 1)?;
    /// assert_eq!(service.expel(7), Ok(seat));
    /// assert_eq!(service.expel(7), Err(ScheduleError::NotAttending(7)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn expel(&self, student: StudentId) -> Result<Seat, ScheduleError>;

    /// Cancels a class: it stops, its students are logged out, and later requests for it
    /// fail. Returns how many students were logged out.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::NoSuchClass`] when the class does not exist (or is cancelled).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// let seat = service.attend(3, 1)?;
    /// service.attend(4, 1)?;
    /// assert_eq!(service.cancel_class(seat.lecture, seat.class), Ok(2));
    /// assert_eq!(service.seat(3)?, None);
    /// let gone = ScheduleError::NoSuchClass { lecture: seat.lecture, class: seat.class };
    /// assert_eq!(service.cancel_class(seat.lecture, seat.class), Err(gone));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn cancel_class(&self, lecture: LectureId, class: ClassId) -> Result<usize, ScheduleError>;

    /// Cancels a lecture: all its classes stop, their students are logged out, and later
    /// requests for it fail as if it never existed.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::NoSuchLecture`] when it does not exist (or is already cancelled).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// for student in 0..3 {
    ///     service.attend(student, 1)?;
    /// }
    /// let stopped = service.cancel_lecture(1)?;
    /// assert_eq!((stopped.classes, stopped.students), (2, 3));
    /// assert_eq!(service.attend(0, 1), Err(ScheduleError::NoSuchLecture(1)));
    /// assert_eq!(service.cancel_lecture(1), Err(ScheduleError::NoSuchLecture(1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn cancel_lecture(&self, lecture: LectureId) -> Result<Cancelled, ScheduleError>;

    /// Classes running and students attending overall.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// for student in 0..3 {
    ///     service.attend(student, 1)?;
    /// }
    /// let statistics = service.statistics();
    /// assert_eq!((statistics.classes, statistics.students), (2, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn statistics(&self) -> Statistics;

    /// The class `student` attends, if any.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownStudent`] for a student out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// assert_eq!(service.seat(5)?, None);
    /// let seat = service.attend(5, 1)?;
    /// assert_eq!(service.seat(5)?, Some(seat));
    /// let unknown = ScheduleError::UnknownStudent { student: 100, students: 100 };
    /// assert_eq!(service.seat(100), Err(unknown));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn seat(&self, student: StudentId) -> Result<Option<Seat>, ScheduleError>;

    /// A consistent picture of the whole service (every class frozen at once), for the
    /// invariant checker. Stops the world while it is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ScheduleError, ServiceConfig, Strategy};
    ///
    /// let service = Strategy::Crab.build(ServiceConfig::new(100, 2, LeafWork::None)?);
    /// service.open_lecture(1)?;
    /// let seat = service.attend(5, 1)?;
    /// let snapshot = service.snapshot();
    /// assert_eq!(snapshot.classes.len(), 1);
    /// assert_eq!((snapshot.classes[0].seat, &snapshot.classes[0].students[..]), (seat, &[5][..]));
    /// assert_eq!(snapshot.statistics, service.statistics());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn snapshot(&self) -> Snapshot;
}

/// How the service locks its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strategy {
    /// Exclusive hand over hand with `chain_locker!`.
    Chain,
    /// Shared hand over hand down to an exclusive class lock, with `chain_locker!`.
    Crab,
    /// Versions read (optimistic lock coupling) down to an exclusive class lock.
    Optimistic,
    /// One global mutex.
    Coarse,
}

impl Strategy {
    /// Every strategy, in the order tables show them.
    pub const ALL: [Strategy; 4] = [
        Strategy::Chain,
        Strategy::Crab,
        Strategy::Optimistic,
        Strategy::Coarse,
    ];

    /// The strategy's name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Chain => "chain",
            Strategy::Crab => "crab",
            Strategy::Optimistic => "optimistic",
            Strategy::Coarse => "coarse",
        }
    }

    /// A new, empty service (no lectures) of this strategy.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
    ///
    /// let strategy: Strategy = "crab".parse()?;
    /// assert_eq!(strategy.name(), "crab");
    /// let service = strategy.build(ServiceConfig::new(100, 8, LeafWork::None)?);
    /// assert_eq!(service.statistics().classes, 0);
    /// assert!("fast".parse::<Strategy>().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self, config: ServiceConfig) -> Arc<dyn Scheduler> {
        match self {
            Strategy::Chain => Arc::new(ChainScheduler::new(config)),
            Strategy::Crab => Arc::new(CrabScheduler::new(config)),
            Strategy::Optimistic => {
                Arc::new(OptimisticScheduler::<optimistic::Generated>::new(config))
            }
            Strategy::Coarse => Arc::new(CoarseScheduler::new(config)),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// An unknown name for a [`Strategy`] or [`LeafWork`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{name}` (expected one of: {expected})")]
pub struct UnknownName {
    what: &'static str,
    name: String,
    expected: String,
}

impl UnknownName {
    /// The item of `all` that `name_of` calls `name`, or the error listing their names.
    fn find<T: Copy>(
        what: &'static str,
        all: &[T],
        name_of: fn(T) -> &'static str,
        name: &str,
    ) -> Result<T, UnknownName> {
        all.iter()
            .copied()
            .find(|&item| name_of(item) == name)
            .ok_or_else(|| UnknownName {
                what,
                name: name.to_owned(),
                expected: all
                    .iter()
                    .map(|&item| name_of(item))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

impl FromStr for Strategy {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, UnknownName> {
        UnknownName::find("strategy", &Strategy::ALL, Strategy::name, name)
    }
}

/// Where a student joining a lecture starts looking for a class with room among `classes`
/// of them: spread by student so that joiners do not all queue at the same class.
fn first_choice(student: StudentId, classes: usize) -> usize {
    // A multiplicative hash: consecutive students land far apart.
    (student.wrapping_mul(0x9E37_79B9) as usize) % classes.max(1)
}

/// The Rust blocks of `scheduler/README.md`, compiled and run as doc tests so that they
/// cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
