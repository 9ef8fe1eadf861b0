//! A raw mutex that records every lock and unlock, so tests can check the order in which a
//! chain locker takes and releases its locks.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// What happened to a lock, identified by the address of its raw mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The lock was acquired.
    Locked(usize),
    /// The lock was released.
    Unlocked(usize),
}

thread_local! {
    static LOG: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// Takes the events recorded on this thread so far.
pub fn take_log() -> Vec<Event> {
    LOG.with(|log| std::mem::take(&mut *log.borrow_mut()))
}

fn record(event: Event) {
    LOG.with(|log| log.borrow_mut().push(event));
}

/// parking_lot's raw mutex, logging each acquisition and release on the current thread.
pub struct LoggedRawMutex(parking_lot::RawMutex);

impl LoggedRawMutex {
    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

// SAFETY: every method forwards to parking_lot's `RawMutex`, which upholds the contract;
// logging happens after acquiring and before releasing, and never panics.
unsafe impl lock_api::RawMutex for LoggedRawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LoggedRawMutex(<parking_lot::RawMutex as lock_api::RawMutex>::INIT);
    type Guard = <parking_lot::RawMutex as lock_api::RawMutex>::Guard;

    fn lock(&self) -> Self::Guard {
        let guard = self.0.lock();
        record(Event::Locked(self.id()));
        guard
    }

    fn try_lock(&self) -> Option<Self::Guard> {
        let guard = self.0.try_lock()?;
        record(Event::Locked(self.id()));
        Some(guard)
    }

    unsafe fn unlock(&self, guard: Self::Guard) {
        record(Event::Unlocked(self.id()));
        // SAFETY: forwarded from our caller: the lock is held and `guard` is its state.
        unsafe { self.0.unlock(guard) }
    }

    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: forwards to parking_lot's timed raw mutex, logging successful acquisitions.
unsafe impl lock_api::RawMutexTimed for LoggedRawMutex {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_for(&self, timeout: Duration) -> Option<Self::Guard> {
        let guard = self.0.try_lock_for(timeout)?;
        record(Event::Locked(self.id()));
        Some(guard)
    }

    fn try_lock_until(&self, deadline: Instant) -> Option<Self::Guard> {
        let guard = self.0.try_lock_until(deadline)?;
        record(Event::Locked(self.id()));
        Some(guard)
    }
}

/// A mutex whose acquisitions and releases are logged.
pub type LoggedMutex<T> = lock_api::Mutex<LoggedRawMutex, T>;

/// The id under which `mutex`'s events are logged.
pub fn id_of<T: ?Sized>(mutex: &LoggedMutex<T>) -> usize {
    // SAFETY: the raw mutex is only used for its address, never locked or unlocked here.
    std::ptr::from_ref(unsafe { mutex.raw() }) as usize
}
