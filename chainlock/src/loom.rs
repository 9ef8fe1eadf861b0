//! The one door through which model-checked primitives reach synchronization.
//!
//! Under `--cfg loom` this re-exports [loom]'s mocks so that `cargo test` with
//! `RUSTFLAGS="--cfg loom"` explores every interleaving of the code written against it;
//! otherwise it is `std` plus `parking_lot` (tokio's `src/loom/mod.rs` does the same).
//!
//! [`Mutex`](sync::Mutex) and [`Condvar`](sync::Condvar) expose `parking_lot`'s API (no
//! poisoning, `wait(&mut guard)`) in both configurations, so code above this module never
//! branches on `cfg(loom)`. Only what the primitives use is re-exported; helpers that only
//! loom models need (`thread::spawn`, `sync::unlocked`) exist under `cfg(all(loom, test))`.
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(loom))]
mod imp {
    pub(crate) mod sync {
        pub(crate) use std::sync::Arc;
        pub(crate) mod atomic {
            pub(crate) use std::sync::atomic::*;
        }
        pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};

        /// parking_lot's raw reader-writer lock behind inherent methods, so that code above
        /// reads the same in both configurations (the loom twin is a model of it). Its
        /// per-acquisition states are stateless markers, made again on release.
        pub(crate) struct RawRwLock(parking_lot::RawRwLock);
        type Shared = <parking_lot::RawRwLock as lock_api::RawRwLock>::SharedGuard;
        type Exclusive = <parking_lot::RawRwLock as lock_api::RawRwLock>::ExclusiveGuard;
        impl RawRwLock {
            pub(crate) const fn new() -> Self {
                use lock_api::RawRwLock as _;
                Self(parking_lot::RawRwLock::INIT)
            }
            #[inline]
            pub(crate) fn lock_exclusive(&self) {
                let _: Exclusive = lock_api::RawRwLock::lock_exclusive(&self.0);
            }
            #[inline]
            pub(crate) fn try_lock_exclusive(&self) -> bool {
                lock_api::RawRwLock::try_lock_exclusive(&self.0).is_some()
            }
            /// # Safety
            ///
            /// Held exclusively by the caller.
            #[inline]
            pub(crate) unsafe fn unlock_exclusive(&self) {
                // SAFETY: forwarded from the caller; the state is a stateless marker.
                unsafe { lock_api::RawRwLock::unlock_exclusive(&self.0, Exclusive::default()) }
            }
            #[inline]
            pub(crate) fn lock_shared(&self) {
                let _: Shared = lock_api::RawRwLock::lock_shared(&self.0);
            }
            #[inline]
            pub(crate) fn try_lock_shared(&self) -> bool {
                lock_api::RawRwLock::try_lock_shared(&self.0).is_some()
            }
            /// # Safety
            ///
            /// Held shared by the caller.
            #[inline]
            pub(crate) unsafe fn unlock_shared(&self) {
                // SAFETY: forwarded from the caller; the state is a stateless marker.
                unsafe { lock_api::RawRwLock::unlock_shared(&self.0, Shared::default()) }
            }
            /// # Safety
            ///
            /// Held exclusively by the caller.
            #[inline]
            pub(crate) unsafe fn downgrade(&self) {
                // SAFETY: forwarded from the caller; the state is a stateless marker.
                let _: Shared = unsafe {
                    lock_api::RawRwLockDowngrade::downgrade(&self.0, Exclusive::default())
                };
            }
            #[inline]
            pub(crate) fn is_locked(&self) -> bool {
                lock_api::RawRwLock::is_locked(&self.0)
            }
            /// Waits for a shared hold until `deadline`; whether it was taken.
            #[inline]
            pub(crate) fn try_lock_shared_until(&self, deadline: std::time::Instant) -> bool {
                lock_api::RawRwLockTimed::try_lock_shared_until(&self.0, deadline).is_some()
            }
            /// Waits for an exclusive hold until `deadline`; whether it was taken.
            #[inline]
            pub(crate) fn try_lock_exclusive_until(&self, deadline: std::time::Instant) -> bool {
                lock_api::RawRwLockTimed::try_lock_exclusive_until(&self.0, deadline).is_some()
            }
        }
    }
    pub(crate) mod thread {
        pub(crate) use std::thread::{Thread, current, park, park_timeout, yield_now};

        /// A token naming the calling thread, unique for the life of the process (see
        /// [`unique_token`](crate::loom::unique_token)); cheaper than `current().id()`.
        #[inline]
        pub(crate) fn token() -> u64 {
            std::thread_local!(static TOKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
            TOKEN
                .try_with(|token| {
                    if token.get() == 0 {
                        token.set(crate::loom::unique_token());
                    }
                    token.get()
                })
                // During thread-local destruction: a fresh token is still unique.
                .unwrap_or_else(|_| crate::loom::unique_token())
        }
    }
    pub(crate) mod cell {
        /// `UnsafeCell` with loom's closure API, so that loom can track every access.
        #[derive(Debug)]
        pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);
        impl<T> UnsafeCell<T> {
            pub(crate) const fn new(value: T) -> Self {
                Self(std::cell::UnsafeCell::new(value))
            }
            #[inline]
            pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0.get())
            }
        }
    }
    pub(crate) mod hint {
        pub(crate) use std::hint::spin_loop;
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) mod sync {
        pub(crate) use loom::sync::Arc;
        pub(crate) mod atomic {
            pub(crate) use loom::sync::atomic::*;
            pub(crate) use std::sync::atomic::Ordering;
        }

        /// loom's mutex behind parking_lot's signature (no poisoning).
        #[derive(Debug, Default)]
        pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
        pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
        impl<T> Mutex<T> {
            pub(crate) fn new(value: T) -> Self {
                Self(loom::sync::Mutex::new(value))
            }
            pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
                self.0.lock().unwrap()
            }
        }

        /// loom's condition variable behind parking_lot's signature. loom cannot model
        /// time, so a timed wait is an untimed one that reports no timeout; model the
        /// timeout path by calling the code's cancellation path from a model thread.
        #[derive(Debug, Default)]
        pub(crate) struct Condvar(loom::sync::Condvar);
        impl Condvar {
            pub(crate) fn new() -> Self {
                Self(loom::sync::Condvar::new())
            }
            pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
                replace_guard(guard, |g| self.0.wait(g).unwrap());
            }
            /// loom has no clock: waits until notified and reports no timeout.
            pub(crate) fn wait_until<T>(
                &self,
                guard: &mut MutexGuard<'_, T>,
                _deadline: std::time::Instant,
            ) -> WaitTimeoutResult {
                self.wait(guard);
                WaitTimeoutResult(false)
            }
            pub(crate) fn notify_all(&self) -> usize {
                self.0.notify_all();
                0
            }
        }

        /// A model of a raw reader-writer lock (`-1`: held exclusively, `n > 0`: `n`
        /// readers), with the inherent methods of the `std` configuration's wrapper.
        #[derive(Debug, Default)]
        pub(crate) struct RawRwLock {
            state: Mutex<isize>,
            changed: Condvar,
        }
        impl RawRwLock {
            pub(crate) fn new() -> Self {
                Self::default()
            }
            pub(crate) fn lock_exclusive(&self) {
                let mut state = self.state.lock();
                while *state != 0 {
                    self.changed.wait(&mut state);
                }
                *state = -1;
            }
            pub(crate) fn try_lock_exclusive(&self) -> bool {
                let mut state = self.state.lock();
                let free = *state == 0;
                if free {
                    *state = -1;
                }
                free
            }
            pub(crate) unsafe fn unlock_exclusive(&self) {
                *self.state.lock() = 0;
                self.changed.notify_all();
            }
            pub(crate) fn lock_shared(&self) {
                let mut state = self.state.lock();
                while *state < 0 {
                    self.changed.wait(&mut state);
                }
                *state += 1;
            }
            pub(crate) fn try_lock_shared(&self) -> bool {
                let mut state = self.state.lock();
                let free = *state >= 0;
                if free {
                    *state += 1;
                }
                free
            }
            pub(crate) unsafe fn unlock_shared(&self) {
                let mut state = self.state.lock();
                *state -= 1;
                if *state == 0 {
                    drop(state);
                    self.changed.notify_all();
                }
            }
            pub(crate) unsafe fn downgrade(&self) {
                *self.state.lock() = 1;
                self.changed.notify_all();
            }
            pub(crate) fn is_locked(&self) -> bool {
                *self.state.lock() != 0
            }
        }

        /// parking_lot's `WaitTimeoutResult` (which cannot be built outside lock_api).
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct WaitTimeoutResult(bool);
        impl WaitTimeoutResult {
            pub(crate) fn timed_out(self) -> bool {
                self.0
            }
        }

        /// Runs `f` with `guard`'s mutex unlocked, then locks it again (parking_lot's
        /// `MutexGuard::unlocked`); lets a model release the lock at a chosen point.
        #[cfg(test)]
        pub(crate) fn unlocked<'a, T, R>(
            mutex: &'a Mutex<T>,
            guard: &mut MutexGuard<'a, T>,
            f: impl FnOnce() -> R,
        ) -> R {
            let mut result = None;
            replace_guard(guard, |g| {
                drop(g);
                result = Some(f());
                mutex.lock()
            });
            result.expect("`f` ran")
        }

        /// Moves the guard out of `slot`, runs `f` on it and puts the result back.
        fn replace_guard<'a, T>(
            slot: &mut MutexGuard<'a, T>,
            f: impl FnOnce(MutexGuard<'a, T>) -> MutexGuard<'a, T>,
        ) {
            // SAFETY: `slot` is overwritten with a valid guard before anyone can observe
            // it; a panic in `f` aborts (loom turns panics into model failures anyway).
            unsafe {
                let guard = std::ptr::read(slot);
                let abort_on_unwind = AbortOnDrop;
                let guard = f(guard);
                std::mem::forget(abort_on_unwind);
                std::ptr::write(slot, guard);
            }
        }
        struct AbortOnDrop;
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                std::process::abort();
            }
        }
    }
    pub(crate) mod thread {
        #[cfg(test)]
        pub(crate) use loom::thread::spawn;
        pub(crate) use loom::thread::{Thread, current, park, yield_now};

        /// A token naming the calling (loom) thread, unique for the life of the process.
        pub(crate) fn token() -> u64 {
            loom::thread_local!(static TOKEN: u64 = crate::loom::unique_token());
            TOKEN.with(|token| *token)
        }
        /// loom has no clock: a timed park is a park.
        pub(crate) fn park_timeout(_: std::time::Duration) {
            park();
        }
    }
    pub(crate) mod cell {
        pub(crate) use loom::cell::UnsafeCell;
    }
    pub(crate) mod hint {
        pub(crate) use loom::hint::spin_loop;
    }
}

pub(crate) use imp::*;

/// A number never returned before in this process (never 0): names owners of locks, such as
/// threads ([`thread::token`]) or single acquisitions. A plain `std` atomic in both
/// configurations: it only needs uniqueness, not to be part of a loom model.
#[inline]
pub(crate) fn unique_token() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
