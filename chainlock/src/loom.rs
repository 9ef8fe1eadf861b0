//! The one door through which model-checked primitives reach synchronization.
//!
//! Under `--cfg loom` this re-exports [loom]'s mocks so that `cargo test` with
//! `RUSTFLAGS="--cfg loom"` explores every interleaving of the code written against it;
//! otherwise it is `std` plus `parking_lot` (tokio's `src/loom/mod.rs` does the same).
//!
//! [`Mutex`] and [`Condvar`] expose `parking_lot`'s API (no poisoning, `wait(&mut guard)`)
//! in both configurations, so code above this module never branches on `cfg(loom)`.
//!
//! [loom]: https://docs.rs/loom
#![allow(dead_code, unreachable_pub, unused_imports)]

#[cfg(not(loom))]
mod imp {
    pub(crate) mod sync {
        pub(crate) use std::sync::Arc;
        pub(crate) mod atomic {
            pub(crate) use std::sync::atomic::*;
        }
        pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
    }
    pub(crate) mod thread {
        pub(crate) use std::thread::{Thread, current, park, park_timeout, spawn, yield_now};
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
            pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
                f(self.0.get())
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
            pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
                self.0.try_lock().ok()
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
            pub(crate) fn notify_one(&self) -> bool {
                self.0.notify_one();
                true
            }
            pub(crate) fn notify_all(&self) -> usize {
                self.0.notify_all();
                0
            }
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
        pub(crate) use loom::thread::{Thread, current, park, spawn, yield_now};
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
