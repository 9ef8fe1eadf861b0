//! The obvious rooms lock, to compare `chainlock::rooms::Rooms` against: one global
//! mutex, one condition variable, `notify_all`. Same semantics (entry rules, round-robin
//! batches; exit actions left out, the benchmarks use none), so the comparison isolates
//! the design: every entry takes the mutex, and every hand-off wakes every waiter.
//!
//! Used by `tests/rooms.rs` and `benches/rooms.rs`.

use parking_lot::{Condvar, Mutex};

/// Group mutual exclusion over one mutex and one condition variable.
pub struct CondvarRooms {
    inner: Mutex<Inner>,
    condvar: Condvar,
}

struct Inner {
    room: Option<usize>,
    count: usize,
    waiting: Vec<usize>,
    batch: Vec<u64>,
    total: usize,
    wakeups: u64,
    futile_wakeups: u64,
}

/// Leaves the room on drop.
pub struct CondvarRoomGuard<'a> {
    rooms: &'a CondvarRooms,
    room: usize,
}

impl CondvarRooms {
    /// A lock with `rooms` rooms, all empty.
    pub fn new(rooms: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                room: None,
                count: 0,
                waiting: vec![0; rooms],
                batch: vec![0; rooms],
                total: 0,
                wakeups: 0,
                futile_wakeups: 0,
            }),
            condvar: Condvar::new(),
        }
    }

    /// Enters `room`, waiting until it is admitted; leaves when the guard drops.
    pub fn enter(&self, room: usize) -> CondvarRoomGuard<'_> {
        let mut inner = self.inner.lock();
        if inner.room.is_none() || (inner.room == Some(room) && inner.count > 0 && inner.total == 0)
        {
            inner.room = Some(room);
            inner.count += 1;
            return CondvarRoomGuard { rooms: self, room };
        }
        inner.waiting[room] += 1;
        inner.total += 1;
        let batch = inner.batch[room];
        loop {
            self.condvar.wait(&mut inner);
            inner.wakeups += 1;
            if inner.batch[room] != batch {
                return CondvarRoomGuard { rooms: self, room };
            }
            inner.futile_wakeups += 1;
        }
    }

    /// Threads registered as waiting (and so, once the mutex is free, on the condvar).
    pub fn waiting(&self) -> usize {
        self.inner.lock().total
    }

    /// `(wake-ups, futile wake-ups)` so far.
    pub fn wakeups(&self) -> (u64, u64) {
        let inner = self.inner.lock();
        (inner.wakeups, inner.futile_wakeups)
    }

    fn leave(&self, room: usize) {
        let mut inner = self.inner.lock();
        inner.count -= 1;
        if inner.count > 0 {
            return;
        }
        // (An exit action would run here, under the global mutex.)
        let n = inner.waiting.len();
        match (1..=n)
            .map(|i| (room + i) % n)
            .find(|&q| inner.waiting[q] > 0)
        {
            None => inner.room = None,
            Some(next) => {
                let admitted = std::mem::take(&mut inner.waiting[next]);
                inner.total -= admitted;
                inner.batch[next] += 1;
                inner.room = Some(next);
                inner.count = admitted;
                self.condvar.notify_all();
            }
        }
    }
}

impl Drop for CondvarRoomGuard<'_> {
    fn drop(&mut self) {
        self.rooms.leave(self.room);
    }
}
