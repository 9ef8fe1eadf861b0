//! loom model of bulk striping: concurrent bulk lockers with overlapping keys given in
//! opposite orders exclude each other and never deadlock.

use std::hash::{BuildHasherDefault, Hasher};

use lock_api::{GuardSend, Mutex, RawMutex};

use crate::striped::Striped;

/// A blocking raw mutex over loom's mutex and condvar, so loom sees a blocked thread
/// (and reports a deadlock) instead of a spin.
struct LoomRawMutex {
    locked: loom::sync::Mutex<bool>,
    unlocked: loom::sync::Condvar,
}

impl LoomRawMutex {
    fn new() -> Self {
        Self {
            locked: loom::sync::Mutex::new(false),
            unlocked: loom::sync::Condvar::new(),
        }
    }
}

// SAFETY: `locked` is true exactly while one guard exists; it is read and written under
// loom's mutex, which gives acquire/release ordering.
unsafe impl RawMutex for LoomRawMutex {
    // loom objects cannot be built in a const: stripes are made with `Mutex::from_raw`.
    const INIT: Self = panic!("build `LoomRawMutex` with `new`");
    type Guard = GuardSend;

    fn lock(&self) -> GuardSend {
        let mut locked = self.locked.lock().unwrap();
        while *locked {
            locked = self.unlocked.wait(locked).unwrap();
        }
        *locked = true;
        GuardSend::new()
    }

    fn try_lock(&self) -> Option<GuardSend> {
        let mut locked = self.locked.lock().unwrap();
        (!*locked).then(|| {
            *locked = true;
            GuardSend::new()
        })
    }

    unsafe fn unlock(&self, _: GuardSend) {
        *self.locked.lock().unwrap() = false;
        self.unlocked.notify_all();
    }

    fn is_locked(&self) -> bool {
        *self.locked.lock().unwrap()
    }
}

/// Maps a `u64` key to itself, so that key `i` lands on stripe `i`.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys");
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[test]
fn loom_striped_bulk_lockers_in_opposite_orders_never_deadlock() {
    loom::model(|| {
        let striped = loom::sync::Arc::new(Striped::from_fn(
            2,
            BuildHasherDefault::<Identity>::default(),
            |_| Mutex::<LoomRawMutex, u32>::from_raw(LoomRawMutex::new(), 0),
        ));
        let other = {
            let striped = loom::sync::Arc::clone(&striped);
            loom::thread::spawn(move || {
                let mut held = striped.lock_all([1_u64, 0, 1]);
                assert_eq!(held.stripes(), [0, 1]);
                for (_, guard) in held.iter_mut() {
                    **guard += 1;
                }
            })
        };
        {
            let mut held = striped.lock_all([0_u64, 1]);
            for (_, guard) in held.iter_mut() {
                **guard += 1;
            }
        }
        other.join().unwrap();
        assert_eq!(*striped.lock(&0_u64), 2);
        assert_eq!(*striped.lock(&1_u64), 2);
    });
}
