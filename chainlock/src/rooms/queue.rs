//! The waiters of a [`Rooms`] lock, under its queue mutex: one queue per room (a count and a
//! batch number, not a list of threads), the slow path of an entry that registers and waits
//! to be admitted or gives up, and the hand-off when a room closes: the exit action, then
//! the next room with waiters opened for its whole batch, which is woken (blocked threads
//! through the room's condition variable, async waiters through their [`Wakers`]).

use super::state::{FREE, MAX_OCCUPANTS, State, WAITING};
use super::{RoomGuard, Rooms, RoomsStats};
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::loom::sync::{Condvar, MutexGuard};

/// The wait queues, under `Rooms::waiters`.
#[derive(Debug)]
pub(super) struct Waiters {
    pub(super) rooms: Box<[Queue]>,
    /// Sum of `rooms[_].waiting`; `WAITING` is set exactly when it is not zero.
    pub(super) total: usize,
    pub(super) stats: RoomsStats,
    /// Identifies an async waiter's waker in its queue.
    #[cfg(feature = "async")]
    pub(super) next_key: u64,
}

/// One room's waiters. Rather than a list of blocked threads, a count and a batch
/// number: a waiter remembers the batch number when it registers and has been admitted
/// once the number changes; admitting a batch moves all of `waiting` into the room.
#[derive(Debug, Default)]
pub(super) struct Queue {
    pub(super) waiting: usize,
    pub(super) batch: u64,
    #[cfg(feature = "async")]
    pub(super) wakers: Vec<(u64, std::task::Waker)>,
}

/// What the slow path of an entry decided, under the queue mutex.
pub(super) enum Registration {
    /// Entered without waiting.
    Entered,
    /// Registered in the room's queue; admitted once its batch number differs.
    Waiting { batch: u64 },
}

impl Rooms {
    /// Enters or registers as a waiter, then waits with `wait` (which returns `true` when
    /// it gives up) until admitted or giving up.
    #[cold]
    pub(super) fn enter_slow<'a>(
        &'a self,
        room: usize,
        mut wait: impl FnMut(&Condvar, &mut MutexGuard<'a, Waiters>) -> bool,
    ) -> Option<RoomGuard<'a>> {
        if self.spin_while_nobody_waits(room) {
            return Some(RoomGuard::new(self, room));
        }
        let mut waiters = self.waiters.lock();
        let Registration::Waiting { batch } = self.register(&mut waiters, room) else {
            return Some(RoomGuard::new(self, room));
        };
        loop {
            let gave_up = wait(&self.condvars[room], &mut waiters);
            let admitted = waiters.rooms[room].batch != batch;
            if !gave_up {
                waiters.stats.wakeups += 1;
                waiters.stats.futile_wakeups += u64::from(!admitted);
            }
            if admitted {
                // Even if the deadline passed meanwhile: the batch counted us in.
                return Some(RoomGuard::new(self, room));
            }
            if gave_up {
                let wakers = self.withdraw(&mut waiters, room);
                drop(waiters);
                wakers.wake_all();
                return None;
            }
        }
    }

    /// Under the queue mutex: enters `room` if the rules allow it now, otherwise sets
    /// `WAITING` (in the same atomic step as the decision) and registers in its queue.
    pub(super) fn register(&self, waiters: &mut Waiters, room: usize) -> Registration {
        let mut current = self.state.load(Relaxed);
        loop {
            let (next, outcome) = match State(current).admit(room) {
                Some(next) => (next, Registration::Entered),
                None => (
                    current | WAITING,
                    Registration::Waiting {
                        batch: waiters.rooms[room].batch,
                    },
                ),
            };
            if next != current
                && let Err(actual) = self
                    .state
                    .compare_exchange_weak(current, next, Acquire, Relaxed)
            {
                current = actual;
                continue;
            }
            if let Registration::Waiting { .. } = outcome {
                waiters.rooms[room].waiting += 1;
                waiters.total += 1;
                waiters.stats.waits += 1;
            }
            return outcome;
        }
    }

    /// Under the queue mutex: removes a registered, not admitted waiter of `room`. Returns
    /// the async waiters it let in, to wake after the mutex is released.
    pub(super) fn withdraw(&self, waiters: &mut Waiters, room: usize) -> Wakers {
        waiters.rooms[room].waiting -= 1;
        waiters.total -= 1;
        waiters.stats.withdrawn += 1;
        if waiters.total == 0 {
            self.state.fetch_and(!WAITING, Relaxed);
            return Wakers::default();
        }
        // If everyone left waiting wants the open room, they only waited because of us:
        // nobody waits for another room any more, so let them in now.
        let mut current = self.state.load(Relaxed);
        loop {
            let state = State(current);
            let Some(open) = state.room() else {
                return Wakers::default();
            };
            let batch = waiters.rooms[open].waiting as u64;
            if state.count() == 0 || batch as usize != waiters.total {
                // Closing (its closer hands off), or someone waits for another room.
                return Wakers::default();
            }
            let count = state.count() + batch;
            assert!(count <= MAX_OCCUPANTS, "too many occupants in one room");
            match self.state.compare_exchange_weak(
                current,
                State::open(open, count).0,
                AcqRel,
                Relaxed,
            ) {
                Ok(_) => {
                    waiters.admit(open);
                    return self.wake(waiters, open);
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// The last occupant left `room`: run its exit action, then open the next room, even
    /// if the action panics.
    #[cold]
    pub(super) fn close(&self, room: usize) {
        /// Opens the next room when dropped, so that a panicking exit action cannot
        /// leave the lock closed forever.
        struct OpenNext<'a>(&'a Rooms, usize);
        impl Drop for OpenNext<'_> {
            fn drop(&mut self) {
                self.0.open_next(self.1);
            }
        }
        let _open_next = OpenNext(self, room);
        if let Some(action) = &self.exit_actions[room] {
            action();
        }
    }

    /// `room` is closing (count zero) and its exit action is done: free the lock, or
    /// hand it to the next room with waiters.
    pub(super) fn open_next(&self, room: usize) {
        let closing = State::open(room, 0).0;
        // Nobody waits: free the lock without the mutex. (A thread registering now
        // sets WAITING under the mutex with a CAS, so exactly one of us succeeds.)
        if self
            .state
            .compare_exchange(closing, FREE, Release, Relaxed)
            .is_ok()
        {
            return;
        }
        let mut waiters = self.waiters.lock();
        let n = self.room_count();
        let next = (1..=n)
            .map(|i| (room + i) % n)
            .find(|&q| waiters.rooms[q].waiting > 0);
        // While the room is closing only code under the mutex changes the word, so a
        // plain store cannot overwrite anybody's update.
        let Some(next) = next else {
            self.state.store(FREE, Release);
            return;
        };
        let batch = waiters.admit(next);
        let mut word = State::open(next, batch).0;
        if waiters.total > 0 {
            word |= WAITING;
        }
        self.state.store(word, Release);
        let wakers = self.wake(&mut waiters, next);
        drop(waiters);
        wakers.wake_all();
    }

    /// Wakes the admitted batch of `room` (and no one else): blocked threads now, async
    /// waiters through the returned [`Wakers`] once the caller released the mutex.
    pub(super) fn wake(&self, waiters: &mut Waiters, room: usize) -> Wakers {
        self.condvars[room].notify_all();
        #[cfg(feature = "async")]
        return Wakers(
            waiters.rooms[room]
                .wakers
                .drain(..)
                .map(|(_, waker)| waker)
                .collect(),
        );
        #[cfg(not(feature = "async"))]
        {
            let _ = waiters;
            Wakers::default()
        }
    }
}

/// Async waiters to wake once the queue mutex is released: a waker may run any code, even
/// poll its task inline and take the mutex again.
#[must_use = "the admitted async waiters must be woken"]
#[derive(Default)]
pub(super) struct Wakers(#[cfg(feature = "async")] Vec<std::task::Waker>);

impl Wakers {
    #[cfg_attr(
        not(feature = "async"),
        expect(clippy::unused_self, reason = "`self` is used by the async face")
    )]
    pub(super) fn wake_all(self) {
        #[cfg(feature = "async")]
        for waker in self.0 {
            waker.wake();
        }
    }
}

impl Waiters {
    /// Moves all of `room`'s waiters into the room; returns how many.
    pub(super) fn admit(&mut self, room: usize) -> u64 {
        let queue = &mut self.rooms[room];
        let batch = std::mem::take(&mut queue.waiting);
        queue.batch = queue.batch.wrapping_add(1);
        self.total -= batch;
        assert!(
            batch as u64 <= MAX_OCCUPANTS,
            "too many occupants in one room"
        );
        batch as u64
    }
}
