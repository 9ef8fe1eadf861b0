//! A raw mutex that records every lock and unlock, so tests can check the order in which a
//! chain locker takes and releases its locks.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// What happened to a lock, identified by the address of its raw mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The lock was acquired (exclusively, for a reader-writer lock).
    Locked(usize),
    /// A reader-writer lock was acquired in shared mode.
    Shared(usize),
    /// A reader-writer lock was acquired as the upgradable reader.
    Upgradable(usize),
    /// An upgradable read was upgraded to the write lock, in place.
    Upgraded(usize),
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

/// parking_lot's raw reader-writer lock, logging on the current thread: exclusive
/// acquisitions as [`Event::Locked`], shared ones as [`Event::Shared`], upgradable reads as
/// [`Event::Upgradable`], upgrades as [`Event::Upgraded`], and every release as
/// [`Event::Unlocked`].
pub struct LoggedRawRwLock(parking_lot::RawRwLock);

impl LoggedRawRwLock {
    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Records `event` for a guard that was taken, and passes it on.
    fn logged<G>(&self, guard: Option<G>, event: fn(usize) -> Event) -> Option<G> {
        if guard.is_some() {
            record(event(self.id()));
        }
        guard
    }

    fn upgraded<E, U>(&self, result: Result<E, U>) -> Result<E, U> {
        if result.is_ok() {
            record(Event::Upgraded(self.id()));
        }
        result
    }
}

type Raw = parking_lot::RawRwLock;

// SAFETY: every method forwards to parking_lot's `RawRwLock`, which upholds the contract;
// logging happens after acquiring and before releasing, and never panics.
unsafe impl lock_api::RawRwLock for LoggedRawRwLock {
    const INIT: Self = LoggedRawRwLock(<Raw as lock_api::RawRwLock>::INIT);
    type SharedGuard = <Raw as lock_api::RawRwLock>::SharedGuard;
    type ExclusiveGuard = <Raw as lock_api::RawRwLock>::ExclusiveGuard;

    fn lock_shared(&self) -> Self::SharedGuard {
        let guard = self.0.lock_shared();
        record(Event::Shared(self.id()));
        guard
    }

    fn try_lock_shared(&self) -> Option<Self::SharedGuard> {
        self.logged(self.0.try_lock_shared(), Event::Shared)
    }

    unsafe fn unlock_shared(&self, guard: Self::SharedGuard) {
        record(Event::Unlocked(self.id()));
        // SAFETY: forwarded from our caller: a shared lock is held and `guard` is its state.
        unsafe { self.0.unlock_shared(guard) }
    }

    fn lock_exclusive(&self) -> Self::ExclusiveGuard {
        let guard = self.0.lock_exclusive();
        record(Event::Locked(self.id()));
        guard
    }

    fn try_lock_exclusive(&self) -> Option<Self::ExclusiveGuard> {
        self.logged(self.0.try_lock_exclusive(), Event::Locked)
    }

    unsafe fn unlock_exclusive(&self, guard: Self::ExclusiveGuard) {
        record(Event::Unlocked(self.id()));
        // SAFETY: forwarded from our caller: the exclusive lock is held.
        unsafe { self.0.unlock_exclusive(guard) }
    }

    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }

    fn is_locked_exclusive(&self) -> bool {
        self.0.is_locked_exclusive()
    }
}

// SAFETY: forwards to parking_lot's timed raw lock, logging successful acquisitions.
unsafe impl lock_api::RawRwLockTimed for LoggedRawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_shared_for(&self, timeout: Duration) -> Option<Self::SharedGuard> {
        self.logged(self.0.try_lock_shared_for(timeout), Event::Shared)
    }

    fn try_lock_shared_until(&self, deadline: Instant) -> Option<Self::SharedGuard> {
        self.logged(self.0.try_lock_shared_until(deadline), Event::Shared)
    }

    fn try_lock_exclusive_for(&self, timeout: Duration) -> Option<Self::ExclusiveGuard> {
        self.logged(self.0.try_lock_exclusive_for(timeout), Event::Locked)
    }

    fn try_lock_exclusive_until(&self, deadline: Instant) -> Option<Self::ExclusiveGuard> {
        self.logged(self.0.try_lock_exclusive_until(deadline), Event::Locked)
    }
}

// SAFETY: forwards to parking_lot's upgradable raw lock, logging as above.
unsafe impl lock_api::RawRwLockUpgrade for LoggedRawRwLock {
    type UpgradableGuard = <Raw as lock_api::RawRwLockUpgrade>::UpgradableGuard;

    fn lock_upgradable(&self) -> Self::UpgradableGuard {
        let guard = self.0.lock_upgradable();
        record(Event::Upgradable(self.id()));
        guard
    }

    fn try_lock_upgradable(&self) -> Option<Self::UpgradableGuard> {
        self.logged(self.0.try_lock_upgradable(), Event::Upgradable)
    }

    unsafe fn unlock_upgradable(&self, guard: Self::UpgradableGuard) {
        record(Event::Unlocked(self.id()));
        // SAFETY: forwarded from our caller: the upgradable lock is held.
        unsafe { self.0.unlock_upgradable(guard) }
    }

    unsafe fn upgrade(&self, guard: Self::UpgradableGuard) -> Self::ExclusiveGuard {
        // SAFETY: forwarded from our caller: the upgradable lock is held.
        let guard = unsafe { self.0.upgrade(guard) };
        record(Event::Upgraded(self.id()));
        guard
    }

    unsafe fn try_upgrade(
        &self,
        guard: Self::UpgradableGuard,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from our caller: the upgradable lock is held.
        self.upgraded(unsafe { self.0.try_upgrade(guard) })
    }
}

// SAFETY: forwards to parking_lot's timed upgradable raw lock, logging as above.
unsafe impl lock_api::RawRwLockUpgradeTimed for LoggedRawRwLock {
    fn try_lock_upgradable_for(&self, timeout: Duration) -> Option<Self::UpgradableGuard> {
        self.logged(self.0.try_lock_upgradable_for(timeout), Event::Upgradable)
    }

    fn try_lock_upgradable_until(&self, deadline: Instant) -> Option<Self::UpgradableGuard> {
        self.logged(
            self.0.try_lock_upgradable_until(deadline),
            Event::Upgradable,
        )
    }

    unsafe fn try_upgrade_for(
        &self,
        guard: Self::UpgradableGuard,
        timeout: Duration,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from our caller: the upgradable lock is held.
        self.upgraded(unsafe { self.0.try_upgrade_for(guard, timeout) })
    }

    unsafe fn try_upgrade_until(
        &self,
        guard: Self::UpgradableGuard,
        deadline: Instant,
    ) -> Result<Self::ExclusiveGuard, Self::UpgradableGuard> {
        // SAFETY: forwarded from our caller: the upgradable lock is held.
        self.upgraded(unsafe { self.0.try_upgrade_until(guard, deadline) })
    }
}

/// A reader-writer lock whose acquisitions and releases are logged.
pub type LoggedRwLock<T> = lock_api::RwLock<LoggedRawRwLock, T>;

/// The id under which `lock`'s events are logged.
pub fn rw_id_of<T: ?Sized>(lock: &LoggedRwLock<T>) -> usize {
    // SAFETY: the raw lock is only used for its address, never locked or unlocked here.
    std::ptr::from_ref(unsafe { lock.raw() }) as usize
}
