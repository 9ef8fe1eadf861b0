//! The seat moves every tree service shares (the `chain`, `crab` and `optimistic` strategies):
//! a student's seat lock, attend (leave the old class, then join), expel, a seat's check, and
//! the join loop, over the few descents each strategy's tree provides ([`ClassTree`]).
//!
//! Each student has a seat lock that serializes their own moves. A student is added to a
//! class only by attend, holding their seat lock, after removing them from the one class
//! their seat names; everything else only removes students. So a student is in at most one
//! class at every instant, by construction. A seat may be stale (its class cancelled since):
//! it is checked against the class before use.

use crate::tally::Tally;
use crate::tree::{Class, OpenedClass};
use crate::{LectureId, ScheduleError, Scheduler, Seat, ServiceConfig, StudentId};
use chainlock::Exit;
use chainlock::chain::Absence;
use chainlock::parking_lot::{Mutex, MutexGuard};

/// The students' seat locks, one per student; taken before any lock of the tree.
pub(crate) struct Seats(Box<[Mutex<Option<Seat>>]>);

impl Seats {
    /// One empty seat per student of `config`.
    pub(crate) fn new(config: ServiceConfig) -> Self {
        Self((0..config.students()).map(|_| Mutex::new(None)).collect())
    }
}

/// What a tree service provides to the seat moves: its seats and tally, and three descents.
pub(crate) trait ClassTree: Scheduler {
    fn seats(&self) -> &Seats;

    fn tally(&self) -> &Tally;

    /// Runs `leaf` on the class at `seat`, if it still runs.
    fn at_seat<R>(&self, seat: Seat, leaf: impl FnOnce(&mut Class) -> R) -> Result<R, Exit>;

    /// Runs `leaf` on a class of `lecture` whose published size has room for `student`.
    ///
    /// # Errors
    ///
    /// `Absent { level: 2, cause: Missing }` when no class has room; `Absent { level: 2,
    /// cause: Closed }` when the class picked was cancelled since; any other exit when the
    /// lecture is absent or cancelled.
    fn at_class_with_room<R>(
        &self,
        student: StudentId,
        lecture: LectureId,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit>;

    /// Under `lecture`'s exclusive hold: a new class with `student` in it, returned locked,
    /// unless a class has room by now (`None`).
    ///
    /// # Errors
    ///
    /// The lecture is absent or cancelled.
    fn add_class_unless_room(
        &self,
        student: StudentId,
        lecture: LectureId,
    ) -> Result<Option<OpenedClass>, Exit>;

    /// Unlinks the class at `seat` from its lecture (cancelled already).
    fn unlink_class(&self, seat: Seat);

    /// `student`'s seat lock.
    fn seat_lock(&self, student: StudentId) -> Result<MutexGuard<'_, Option<Seat>>, ScheduleError> {
        Ok(self.seats().0[self.config().check_student(student)?].lock())
    }

    /// Adds `student` (who attends no class) to a class of `lecture` with room, or to a new
    /// class when all are full.
    fn join(&self, student: StudentId, lecture: LectureId) -> Result<Seat, ScheduleError> {
        let threshold = self.config().threshold();
        let leaf_work = self.config().leaf_work();
        let tally = self.tally();
        loop {
            let joined = self.at_class_with_room(student, lecture, |class| {
                let joined = class.try_join(student, threshold, tally);
                if joined {
                    leaf_work.perform();
                }
                joined.then(|| class.seat())
            });
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
                }) => match self.add_class_unless_room(student, lecture) {
                    Ok(Some(class)) => {
                        // Only the new class is locked now.
                        leaf_work.perform();
                        return Ok(class.seat());
                    }
                    Ok(None) => {}
                    Err(_) => return Err(ScheduleError::NoSuchLecture(lecture)),
                },
                Err(_) => return Err(ScheduleError::NoSuchLecture(lecture)),
            }
        }
    }

    /// [`Scheduler::attend`]: under the seat lock, stays in the class the seat names if it
    /// is of `lecture` and still runs, else leaves it and joins one of `lecture`.
    fn attend_from_seat(
        &self,
        student: StudentId,
        lecture: LectureId,
    ) -> Result<Seat, ScheduleError> {
        let mut seat = self.seat_lock(student)?;
        if let Some(old) = seat.take() {
            let tally = self.tally();
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

    /// [`Scheduler::expel`]: under the seat lock, leaves the class the seat names.
    fn expel_from_seat(&self, student: StudentId) -> Result<Seat, ScheduleError> {
        let mut seat = self.seat_lock(student)?;
        let old = seat.take().ok_or(ScheduleError::NotAttending(student))?;
        let tally = self.tally();
        let leaf_work = self.config().leaf_work();
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

    /// [`Scheduler::seat`]: the seat, cleared under the seat lock if its class was
    /// cancelled since.
    fn checked_seat(&self, student: StudentId) -> Result<Option<Seat>, ScheduleError> {
        let mut seat = self.seat_lock(student)?;
        if let Some(current) = *seat
            && self.at_seat(current, |class| class.contains(student)) != Ok(true)
        {
            *seat = None;
        }
        Ok(*seat)
    }

    /// [`Scheduler::cancel_class`]: cancels the class at `seat` under its lock (its
    /// students logged out), then unlinks it.
    fn cancel_class_at(&self, seat: Seat) -> Result<usize, ScheduleError> {
        let tally = self.tally();
        let logged_out = self
            .at_seat(seat, |class| class.cancel(tally))
            .map_err(|_| ScheduleError::NoSuchClass {
                lecture: seat.lecture,
                class: seat.class,
            })?;
        self.unlink_class(seat);
        Ok(logged_out)
    }
}
