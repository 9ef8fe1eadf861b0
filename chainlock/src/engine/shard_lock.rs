//! The lock of one registry shard: test-and-test-and-set, spinning briefly, then yielding.
//!
//! A shard's critical sections are a few hash-table operations long and never block, so
//! a waiter is better off spinning than sleeping. Unlike a parking mutex, unlocking is a
//! plain release store (no read-modify-write to learn about sleepers): an uncontended
//! lock + unlock of a key touches its shard with one atomic read-modify-write per
//! operation instead of two, which is most of the manager's uncontended cost.

use crate::loom::cell::UnsafeCell;
use crate::loom::hint::spin_loop;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::loom::thread::yield_now;

/// Busy-wait rounds before a waiter starts yielding its time slice to the holder.
const SPINS_BEFORE_YIELD: u32 = 64;

/// The registry's shard lock. Under loom, a blocking lock with the same contract: the spin
/// loops of [`SpinLock`] multiply a model's schedules past loom's branch limit, so the
/// registry's models run on [`BlockingLock`] and [`SpinLock`] is model-checked on its own
/// (`loom_shard_spin_lock_*`).
#[cfg(not(loom))]
pub(crate) type ShardLock<T> = SpinLock<T>;
#[cfg(loom)]
pub(crate) type ShardLock<T> = BlockingLock<T>;

/// A spin lock around `T`, used only through [`with`](Self::with).
#[derive(Debug)]
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only reached by the one thread that set `locked` (acquire) until it
// clears it (release), so `&ShardLock` hands out `&mut T` to one thread at a time, which
// is sound when `T` may move between threads.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` with exclusive access to the value. If `f` panics, the lock is released.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        let _unlock = Unlock(&self.locked);
        // SAFETY: `locked` is ours until `_unlock` drops: no other access to `value`.
        self.value.with_mut(|value| f(unsafe { &mut *value }))
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0_u32;
        loop {
            // Wait on a plain load, so that waiters don't bounce the cache line.
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    spin_loop();
                } else {
                    yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Releases the lock when dropped, also during unwinding.
struct Unlock<'a>(&'a AtomicBool);

impl Drop for Unlock<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// [`SpinLock`]'s contract over loom's blocking mutex.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct BlockingLock<T>(crate::loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> BlockingLock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(crate::loom::sync::Mutex::new(value))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock())
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::SpinLock;
    use crate::loom::sync::Arc;
    use crate::loom::thread;

    #[test]
    fn loom_shard_spin_lock_mutual_exclusion() {
        loom::model(|| {
            let lock = Arc::new(SpinLock::new(0_u32));
            let other = {
                let lock = Arc::clone(&lock);
                // The non-atomic increment is a loom-checked `UnsafeCell` access: two
                // holders at once would be reported as a data race.
                thread::spawn(move || lock.with(|value| *value += 1))
            };
            lock.with(|value| *value += 1);
            other.join().unwrap();
            assert_eq!(lock.with(|value| *value), 2);
        });
    }
}
