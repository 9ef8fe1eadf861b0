//! Shared rooms: group mutual exclusion.
//!
//! A [`Rooms`] lock has `n` rooms fixed at construction. Any number of threads may be in
//! the same room at once, but never two rooms at the same time: a maintenance phase
//! against a serving phase, the jobs of one tenant at a time on a device, readers of
//! schema version A against readers of version B. (A readers-writer lock is the special
//! case of one shared room and one room whose users also exclude each other.)
//!
//! ```
//! use chainlock::rooms::Rooms;
//!
//! const SERVE: usize = 0;
//! const MAINTAIN: usize = 1;
//!
//! let rooms = Rooms::new(2).with_exit_action(MAINTAIN, || println!("maintenance done"));
//! std::thread::scope(|s| {
//!     for _ in 0..4 {
//!         s.spawn(|| {
//!             let _serving = rooms.enter(SERVE); // many at once
//!         });
//!     }
//!     s.spawn(|| {
//!         let _maintaining = rooms.enter(MAINTAIN); // never while anyone serves
//!     });
//! });
//! ```
//!
//! # Semantics
//!
//! A thread enters at once if no room is occupied, or if the room it wants is occupied,
//! not closing, and nobody waits for any room; otherwise it waits. So a stream of
//! arrivals to the occupied room cannot starve the others: once someone waits, newcomers
//! queue too.
//!
//! When the last thread leaves a room, that thread runs the room's *exit action* (if it
//! has one) while the room still counts as occupied: nobody enters any room until it
//! returns. Then it picks the next room that has waiters, in round-robin order starting
//! after its own room (its own room comes last), admits **all** of that room's waiters as
//! one batch and wakes only them. Waiters of other rooms are not woken.
//!
//! # Guarantees
//!
//! - *Group mutual exclusion*: occupants of two different rooms never overlap, and a
//!   room's exit action never overlaps any occupant.
//! - *Exit action*: runs exactly once per occupancy (maximal period during which the room
//!   is continuously occupied), after its last occupant left and before the next room
//!   opens. Writes made by occupants happen-before the exit action, and both happen-before
//!   the next occupancy.
//! - *Bounded bypass*: a thread that waits for a room enters before any other room is
//!   opened twice (at most `n - 1` occupancies of other rooms and the one in progress).
//! - *No futile wake-up*: a woken blocking thread always enters
//!   ([`Rooms::stats`] counts them, so this can be checked).
//! - *No trace of a give-up*: a waiter that times out, or an async waiter that is
//!   dropped, withdraws; if it was admitted at that very moment it leaves properly.
//!
//! # Cost
//!
//! Entering a free lock, or the open room when nobody waits, is one compare-and-swap on
//! one word; leaving is one more. Only threads that have to wait take the internal mutex:
//! they first spin briefly while nobody waits, then register in their room's queue and
//! block on that room's own condition variable.
//!
//! # Async and owned guards
//!
//! With the `async` feature, `Rooms::enter_async` and `Rooms::enter_owned_async` wait
//! without blocking a thread (the futures work on any runtime, and are cancel safe); with
//! `tokio`, `Rooms::try_enter_for_async` and `Rooms::try_enter_until_async` wait at most
//! a while on Tokio's timer.
//! [`Rooms::enter_owned`] returns an [`OwnedRoomGuard`] for a lock in an `Arc`.
//!
//! # Exit actions that panic
//!
//! If an exit action panics, the lock still moves on (the next room is opened as if the
//! action had returned) and the panic propagates to the thread that was leaving, out of
//! the guard's `drop`. If that thread was already unwinding from another panic, the
//! process aborts, as with any panic in `drop` during unwinding.
//!
//! # Deadlocks
//!
//! As with a mutex, a thread that holds a guard and waits for another room (or for its
//! own room while others wait) waits for itself. An exit action must not enter the lock.
//!
#![doc = include_str!("../docs/rooms.md")]

mod error;
mod guards;
mod queue;
mod state;

#[cfg(feature = "async")]
mod future;
#[cfg(all(test, loom))]
mod tests;

use error::out_of_range;
pub use guards::{OwnedRoomGuard, RoomGuard};

use crate::loom::sync::atomic::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};
use crate::loom::sync::{Condvar, Mutex, MutexGuard};
use crate::telemetry::hooks::{KeyRef, Label, Probe, ProbeKind, observe_timed, observe_try};
use queue::{Queue, Waiters};
use state::{FREE, State};
use std::fmt;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rounds of [`Rooms::spin_while_nobody_waits`]; none in loom models, where a spin is
/// just more interleavings.
const SPIN_ROUNDS: u32 = if cfg!(loom) { 0 } else { 10 };

/// An exit action: runs when the last occupant leaves its room.
type ExitAction = Box<dyn Fn() + Send + Sync>;

/// A group mutual exclusion lock with a fixed number of rooms.
///
/// See the [module documentation](self) for the semantics and guarantees.
///
/// # Examples
///
/// ```
/// use chainlock::rooms::Rooms;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// static FLUSHES: AtomicUsize = AtomicUsize::new(0);
/// let rooms = Rooms::new(2).with_exit_action(0, || {
///     FLUSHES.fetch_add(1, Ordering::Relaxed);
/// });
/// let a = rooms.enter(0);
/// let b = rooms.enter(0); // same room: shared
/// assert!(rooms.try_enter(1).is_none()); // other room: excluded
/// drop((a, b)); // the last one out runs the exit action
/// assert_eq!(FLUSHES.load(Ordering::Relaxed), 1);
/// assert!(rooms.try_enter(1).is_some());
/// ```
pub struct Rooms {
    /// The lock word (see `state.rs`); the only thing the fast paths touch.
    state: AtomicU64,
    /// Wait queues; also serializes every change of the `WAITING` bit.
    waiters: Mutex<Waiters>,
    /// One condition variable per room, so that opening a room wakes only its waiters.
    condvars: Box<[Condvar]>,
    exit_actions: Box<[Option<ExitAction>]>,
    /// What telemetry records of the rooms (nothing without the feature).
    telemetry: Probe,
}

/// Counters of the waiting slow path of blocking and async entries, for diagnostics and
/// tests ([`Rooms::stats`]). Entries that get in on the fast path are not counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoomsStats {
    /// Entries that had to wait (blocking and async).
    pub waits: u64,
    /// Times a blocked thread returned from waiting on its room's condition variable
    /// because it was notified (blocking entries only: an async waiter is polled, and
    /// its polls are not counted).
    pub wakeups: u64,
    /// Wake-ups after which the thread was not admitted and had to wait again (blocking
    /// entries only). Zero by design: only the admitted batch is notified.
    pub futile_wakeups: u64,
    /// Waits given up at a deadline (or async waits dropped) before being admitted.
    pub withdrawn: u64,
}

impl Rooms {
    /// The most rooms a lock can have (2<sup>31</sup> − 1).
    pub const MAX_ROOMS: usize = state::MAX_ROOMS;

    /// Creates a lock with `rooms` rooms, numbered `0..rooms`, none occupied and without
    /// exit actions.
    ///
    /// # Panics
    ///
    /// If `rooms` is zero or greater than [`Rooms::MAX_ROOMS`].
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(3);
    /// assert_eq!(rooms.room_count(), 3);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn new(rooms: usize) -> Self {
        assert!(
            (1..=Self::MAX_ROOMS).contains(&rooms),
            "a rooms lock needs between 1 and {} rooms, not {rooms}",
            Self::MAX_ROOMS
        );
        Self {
            state: AtomicU64::new(FREE),
            waiters: Mutex::new(Waiters {
                rooms: (0..rooms).map(|_| Queue::default()).collect(),
                total: 0,
                stats: RoomsStats::default(),
                #[cfg(feature = "async")]
                next_key: 0,
            }),
            condvars: (0..rooms).map(|_| Condvar::new()).collect(),
            exit_actions: (0..rooms).map(|_| None).collect(),
            telemetry: Probe::new(ProbeKind::Rooms {
                rooms: Label::caller(),
            }),
        }
    }

    /// Sets the exit action of `room`, replacing any previous one: it runs on the thread
    /// that leaves the room last, before any room opens again.
    ///
    /// The action is `'static` (share state with it through an `Arc` or a `static`). It
    /// must not enter this lock (it would wait for itself). If it panics, the
    /// lock moves on and the panic reaches the leaving thread (see the
    /// [module documentation](self#exit-actions-that-panic)).
    ///
    /// # Panics
    ///
    /// If `room` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::rooms::Rooms;
    /// use std::sync::{Arc, Mutex};
    ///
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let (log0, log1) = (log.clone(), log.clone());
    /// let rooms = Rooms::new(2)
    ///     .with_exit_action(0, move || log0.lock().unwrap().push("closed 0"))
    ///     .with_exit_action(1, move || log1.lock().unwrap().push("closed 1"));
    /// drop(rooms.enter(1));
    /// drop(rooms.enter(0));
    /// assert_eq!(*log.lock().unwrap(), ["closed 1", "closed 0"]);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_exit_action(
        mut self,
        room: usize,
        action: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        let rooms = self.room_count();
        let Some(slot) = self.exit_actions.get_mut(room) else {
            out_of_range(room, rooms);
        };
        *slot = Some(Box::new(action));
        self
    }

    /// The number of rooms.
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(4);
    /// assert_eq!(rooms.room_count(), 4);
    /// ```
    #[must_use]
    #[inline]
    pub fn room_count(&self) -> usize {
        self.exit_actions.len()
    }

    /// The room occupied at this instant (open or running its exit action), or `None`.
    ///
    /// Only a snapshot: by the time it returns, the answer may have changed.
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// assert_eq!(rooms.current_room(), None);
    /// let _guard = rooms.enter(1);
    /// assert_eq!(rooms.current_room(), Some(1));
    /// ```
    #[must_use]
    pub fn current_room(&self) -> Option<usize> {
        State(self.state.load(Relaxed)).room()
    }

    /// Counters of the waiting slow path (blocking and async entries) since construction;
    /// see [`RoomsStats`] for which counts which.
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// drop(rooms.enter(0));
    /// let stats = rooms.stats();
    /// assert_eq!((stats.waits, stats.futile_wakeups), (0, 0));
    /// ```
    #[must_use]
    pub fn stats(&self) -> RoomsStats {
        self.waiters.lock().stats
    }

    /// Enters `room`, waiting as long as needed.
    ///
    /// # Panics
    ///
    /// If `room` is out of range (as every method that takes a room: compare an index that
    /// comes from outside with [`Rooms::room_count`] first).
    ///
    /// # Examples
    ///
    /// ```
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// let guard = rooms.enter(1);
    /// assert_eq!(guard.room(), 1);
    /// ```
    #[inline]
    #[track_caller]
    pub fn enter(&self, room: usize) -> RoomGuard<'_> {
        self.assert_room(room);
        self.observed(room, || {
            self.enter_waiting(room, |condvar, guard| {
                condvar.wait(guard);
                false
            })
        })
        .expect("an untimed wait does not give up")
    }

    /// Enters `room` if that is possible without waiting: `None` if another room is
    /// occupied, the room is closing, or someone waits (lock_api's `try_lock` shape).
    ///
    /// Until 0.1.0 this returned `Result<RoomGuard, RoomError>`; a check written for that,
    /// `rooms.try_enter(room).is_ok()` or `if let Ok(guard) = rooms.try_enter(room)`, no
    /// longer compiles, so it cannot pass without entering.
    ///
    /// # Panics
    ///
    /// If `room` is out of range, as [`Rooms::enter`] (compare an index that comes from
    /// outside with [`Rooms::room_count`] first).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::rooms::Rooms;
    ///
    /// let rooms = Rooms::new(2);
    /// let guard = rooms.try_enter(0).expect("a free lock");
    /// assert_eq!(guard.room(), 0);
    /// assert!(rooms.try_enter(1).is_none(), "another room is occupied");
    /// ```
    ///
    /// 0.1.0's way of asking does not compile (an `Option` has no `is_ok`):
    ///
    /// ```compile_fail,E0599
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// assert!(rooms.try_enter(0).is_ok());
    /// ```
    #[inline]
    #[track_caller]
    #[must_use = "if unused the room is left at once; `if let Some(guard) = ..` to stay in"]
    pub fn try_enter(&self, room: usize) -> Option<RoomGuard<'_>> {
        self.assert_room(room);
        observe_try::<_, true>(
            &self.telemetry,
            Location::caller(),
            KeyRef::Index(room),
            room,
            || self.enter_now(room),
        )
        .map(RoomGuard::holding)
    }

    /// Enters `room`, waiting at most `timeout`: `None` if the room could not be entered
    /// in time (the waiter then leaves no trace). A zero timeout is
    /// [`try_enter`](Self::try_enter); a timeout beyond what the clock can represent waits
    /// forever.
    ///
    /// # Panics
    ///
    /// If `room` is out of range, as [`Rooms::enter`].
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::rooms::Rooms;
    /// use std::time::Duration;
    ///
    /// let rooms = Rooms::new(2);
    /// let held = rooms.enter(0);
    /// std::thread::scope(|s| {
    ///     let waiter = s.spawn(|| rooms.try_enter_for(1, Duration::from_millis(10)).is_none());
    ///     assert!(waiter.join().unwrap(), "room 0 stayed occupied");
    /// });
    /// drop(held);
    /// assert!(rooms.try_enter_for(1, Duration::from_millis(10)).is_some());
    /// ```
    #[track_caller]
    #[must_use = "if unused the room is left at once; `if let Some(guard) = ..` to stay in"]
    pub fn try_enter_for(&self, room: usize, timeout: Duration) -> Option<RoomGuard<'_>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_enter_until(room, deadline),
            None => Some(self.enter(room)),
        }
    }

    /// Enters `room`, waiting until `deadline` at the latest: `None` if it passed first
    /// (the waiter then leaves no trace). If the deadline passes just as the room is
    /// opened for this thread, it enters.
    ///
    /// # Panics
    ///
    /// If `room` is out of range, as [`Rooms::enter`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let rooms = chainlock::rooms::Rooms::new(2);
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let guard = rooms.try_enter_until(0, deadline).expect("a free lock");
    /// std::thread::scope(|s| {
    ///     assert!(s.spawn(|| rooms.try_enter_until(1, deadline).is_none()).join().unwrap());
    /// });
    /// # drop(guard);
    /// ```
    #[track_caller]
    #[must_use = "if unused the room is left at once; `if let Some(guard) = ..` to stay in"]
    pub fn try_enter_until(&self, room: usize, deadline: Instant) -> Option<RoomGuard<'_>> {
        self.assert_room(room);
        self.observed(room, || {
            self.enter_waiting(room, |condvar, guard| {
                condvar.wait_until(guard, deadline).timed_out()
            })
        })
    }

    /// Like [`Rooms::enter`], for a lock in an [`Arc`]: the guard owns a reference to
    /// the lock, so it can be moved into a spawned thread or task.
    ///
    /// # Panics
    ///
    /// If `room` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::rooms::Rooms;
    /// use std::sync::Arc;
    ///
    /// let rooms = Arc::new(Rooms::new(2));
    /// let guard = rooms.enter_owned(1);
    /// std::thread::spawn(move || drop(guard)).join().unwrap();
    /// assert_eq!(rooms.current_room(), None);
    /// ```
    #[track_caller]
    pub fn enter_owned(self: &Arc<Self>, room: usize) -> OwnedRoomGuard {
        self.enter(room).into_owned(self)
    }

    /// Panics, at the caller of the public method, if `room` is out of range.
    #[inline]
    #[track_caller]
    fn assert_room(&self, room: usize) {
        if room >= self.room_count() {
            out_of_range(room, self.room_count());
        }
    }

    /// An entry of `room` as the telemetry sees it, through the one hook shape
    /// ([`observe_timed`]): when sampled, tried first (a failed try is a contended entry),
    /// then `wait` (`None`: gave up); else `wait` alone.
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn observed<'a>(
        &'a self,
        room: usize,
        wait: impl FnOnce() -> Option<RoomGuard<'a>>,
    ) -> Option<RoomGuard<'a>> {
        observe_timed::<_, true>(
            &self.telemetry,
            Location::caller(),
            KeyRef::Index(room),
            room,
            || self.enter_now(room),
            wait,
        )
        .map(RoomGuard::holding)
    }

    /// The guard of an entry of `room` on the fast path, if the rules admit us at once.
    #[inline]
    fn enter_now(&self, room: usize) -> Option<RoomGuard<'_>> {
        self.enter_fast(room).then(|| RoomGuard::new(self, room))
    }

    /// Enters `room` on the fast path, else waits in its queue with `wait` (see
    /// [`enter_slow`](Self::enter_slow)).
    #[inline]
    fn enter_waiting<'a>(
        &'a self,
        room: usize,
        wait: impl FnMut(&Condvar, &mut MutexGuard<'a, Waiters>) -> bool,
    ) -> Option<RoomGuard<'a>> {
        self.enter_now(room).or_else(|| self.enter_slow(room, wait))
    }

    /// One compare-and-swap when the rules admit us at once (retried only while other
    /// threads enter or leave the same open room concurrently).
    #[inline]
    fn enter_fast(&self, room: usize) -> bool {
        let mut current = self.state.load(Relaxed);
        while let Some(next) = State(current).admit(room) {
            match self
                .state
                .compare_exchange_weak(current, next, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    /// Retries the fast path a few times (parking_lot's `SpinWait` schedule) as long as
    /// nobody waits. An occupancy of another room is usually shorter than a park/unpark
    /// round trip, and parking sets `WAITING`, which sends every later arrival, even to
    /// the open room, to the queues too. Once someone waits, spinning is pointless: the
    /// fast path refuses everyone until the queues drain.
    fn spin_while_nobody_waits(&self, room: usize) -> bool {
        for round in 0..SPIN_ROUNDS {
            if round < 3 {
                for _ in 0..2 << round {
                    crate::loom::hint::spin_loop();
                }
            } else {
                crate::loom::thread::yield_now();
            }
            if State(self.state.load(Relaxed)).waiting() {
                return false;
            }
            if self.enter_fast(room) {
                return true;
            }
        }
        false
    }

    /// Leaves `room`; the last one out closes it.
    #[inline]
    fn leave(&self, room: usize) {
        let mut current = self.state.load(Relaxed);
        loop {
            let state = State(current);
            debug_assert!(state.room() == Some(room) && state.count() > 0, "{state:?}");
            // A lone occupant with nothing to run and nobody to hand over to frees the
            // lock in one step; otherwise count down (to zero: the room is closing).
            let next =
                if state.count() == 1 && !state.waiting() && self.exit_actions[room].is_none() {
                    FREE
                } else {
                    current - 1
                };
            match self
                .state
                .compare_exchange_weak(current, next, AcqRel, Relaxed)
            {
                Ok(_) if State(next).count() == 0 && next != FREE => return self.close(room),
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }
}

#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
impl Rooms {
    /// Names these rooms in [`telemetry`](crate::telemetry) reports (default: the location
    /// of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let phases = chainlock::rooms::Rooms::new(2).telemetry_name("phases");
    /// # drop(phases);
    /// ```
    #[must_use]
    pub fn telemetry_name(mut self, name: &str) -> Self {
        self.telemetry.rename(Label::named(name));
        self
    }
}

impl fmt::Debug for Rooms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = State(self.state.load(Relaxed));
        f.debug_struct("Rooms")
            .field("rooms", &self.room_count())
            .field("current_room", &state.room())
            .field("occupants", &state.count())
            .field("waiting", &state.waiting())
            .finish_non_exhaustive()
    }
}
