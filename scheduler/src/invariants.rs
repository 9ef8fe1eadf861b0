//! The service's invariants, checked on a consistent [`Snapshot`]:
//!
//! 1. no class holds more students than the threshold;
//! 2. every student attends at most one class;
//! 3. the service's statistics equal a recount.

use crate::{Seat, Snapshot, Statistics, StudentId};
use std::collections::HashMap;

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// Invariant 1.
    #[error("class {seat:?} holds {students} students, above the threshold {threshold}")]
    OverThreshold {
        /// The class.
        seat: Seat,
        /// How many students it holds.
        students: usize,
        /// The threshold.
        threshold: u32,
    },
    /// Invariant 2 (`first` and `second` may be the same class, listing the student twice).
    #[error("student {student} attends two classes: {first:?} and {second:?}")]
    TwoClasses {
        /// The student.
        student: StudentId,
        /// One class.
        first: Seat,
        /// The other.
        second: Seat,
    },
    /// Invariant 3.
    #[error("statistics report {reported:?}, a recount finds {recounted:?}")]
    Statistics {
        /// What the service reported.
        reported: Statistics,
        /// What the snapshot holds.
        recounted: Statistics,
    },
}

/// Counts the classes and students of a snapshot.
///
/// # Examples
///
/// ```
/// use chainlock_scheduler::invariants::recount;
/// use chainlock_scheduler::{ClassSnapshot, Seat, Snapshot, Statistics};
///
/// let class = |class, students: &[u32]| ClassSnapshot {
///     seat: Seat { lecture: 0, class },
///     students: students.to_vec(),
/// };
/// let snapshot = Snapshot { classes: vec![class(0, &[1, 2]), class(1, &[3])], ..Snapshot::default() };
/// assert_eq!(recount(&snapshot), Statistics { classes: 2, students: 3 });
/// ```
pub fn recount(snapshot: &Snapshot) -> Statistics {
    Statistics {
        classes: snapshot.classes.len(),
        students: snapshot
            .classes
            .iter()
            .map(|class| class.students.len())
            .sum(),
    }
}

/// Checks every invariant on `snapshot`; returns every violation found (empty when all
/// hold).
///
/// # Examples
///
/// ```
/// use chainlock_scheduler::invariants::{Violation, check};
/// use chainlock_scheduler::{ClassSnapshot, Seat, Snapshot, Statistics};
///
/// let (a, b) = (Seat { lecture: 0, class: 0 }, Seat { lecture: 0, class: 1 });
/// let mut snapshot = Snapshot {
///     classes: vec![
///         ClassSnapshot { seat: a, students: vec![1, 2] },
///         ClassSnapshot { seat: b, students: vec![3] },
///     ],
///     statistics: Statistics { classes: 2, students: 3 },
/// };
/// assert_eq!(check(&snapshot, 2), []);
///
/// snapshot.classes[0].students.push(3); // a third student in `a`, who is also in `b`
/// assert_eq!(
///     check(&snapshot, 2),
///     [
///         Violation::OverThreshold { seat: a, students: 3, threshold: 2 },
///         Violation::TwoClasses { student: 3, first: a, second: b },
///         Violation::Statistics {
///             reported: Statistics { classes: 2, students: 3 },
///             recounted: Statistics { classes: 2, students: 4 },
///         },
///     ]
/// );
/// ```
pub fn check(snapshot: &Snapshot, threshold: u32) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut attending: HashMap<StudentId, Seat> = HashMap::new();
    for class in &snapshot.classes {
        if class.students.len() > threshold as usize {
            violations.push(Violation::OverThreshold {
                seat: class.seat,
                students: class.students.len(),
                threshold,
            });
        }
        for &student in &class.students {
            if let Some(first) = attending.insert(student, class.seat) {
                violations.push(Violation::TwoClasses {
                    student,
                    first,
                    second: class.seat,
                });
            }
        }
    }
    let recounted = recount(snapshot);
    if snapshot.statistics != recounted {
        violations.push(Violation::Statistics {
            reported: snapshot.statistics,
            recounted,
        });
    }
    violations
}
