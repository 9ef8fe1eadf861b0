//! loom models of the exclusive engine (through `KeyedLocks`): every interleaving of lock, release, hand-off
//! and timeout (loom has no clock: a deadline already past when the waiter checks it makes
//! the waiter take its cancellation path, racing with the grant).

use std::time::Instant;

use crate::keyed::KeyedLocks;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::{Arc, Mutex};
use crate::loom::thread;

/// One shard, so that every operation meets on one registry lock.
fn manager() -> Arc<KeyedLocks<u8>> {
    Arc::new(KeyedLocks::with_shards(1))
}

/// Increments `cell` non-atomically: loom reports a data race if two threads do it at once.
fn bump(cell: &UnsafeCell<u32>) {
    // SAFETY: called only while holding the key the cell belongs to; loom checks that.
    cell.with_mut(|value| unsafe { *value += 1 });
}

fn read(cell: &UnsafeCell<u32>) -> u32 {
    // SAFETY: called after every writer was joined.
    cell.with(|value| unsafe { *value })
}

/// Waits (yielding to loom) until `n` threads are queued for `key`.
fn until_waiting(locks: &KeyedLocks<u8>, key: u8, n: usize) {
    while locks.waiting(&key) < n {
        thread::yield_now();
    }
}

#[test]
fn loom_keyed_mutual_exclusion_no_lost_wakeup_and_cleanup() {
    loom::model(|| {
        let locks = manager();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let other = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                let _key = locks.lock(1);
                bump(&cell);
            })
        };
        {
            let _key = locks.lock(1);
            bump(&cell);
        }
        // A lost wake-up leaves `other` parked forever: loom reports the deadlock.
        other.join().unwrap();
        assert_eq!(read(&cell), 2);
        assert!(locks.is_empty(), "the entry goes with the last release");
    });
}

#[test]
fn loom_keyed_fifo_hand_off_and_no_barging() {
    loom::model(|| {
        let locks = manager();
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = locks.lock(1);
        let spawn_waiter = |id: u8| {
            let (locks, order) = (Arc::clone(&locks), Arc::clone(&order));
            thread::spawn(move || {
                let _key = locks.lock(1);
                order.lock().push(id);
            })
        };
        let first = spawn_waiter(1);
        until_waiting(&locks, 1, 1);
        let second = spawn_waiter(2);
        until_waiting(&locks, 1, 2);
        drop(held);
        // Strict hand-off: the releasing thread cannot barge. If it gets the key now,
        // both waiters must have had it already.
        if let Some(_again) = locks.try_lock(1) {
            assert_eq!(*order.lock(), [1, 2]);
        }
        first.join().unwrap();
        second.join().unwrap();
        assert_eq!(*order.lock(), [1, 2], "granted in arrival order");
        assert!(locks.is_empty());
    });
}

#[test]
fn loom_keyed_timeout_racing_grant_neither_loses_nor_strands() {
    loom::model(|| {
        let locks = manager();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let held = locks.lock(1);
        let timed = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                // The deadline has passed: after queueing, the waiter cancels at once,
                // in a race with the grant below.
                let got = locks.try_lock_until(1, Instant::now());
                if got.is_some() {
                    bump(&cell);
                }
                got.is_some()
            })
        };
        let blocking = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                let _key = locks.lock(1);
                bump(&cell);
            })
        };
        drop(held);
        let timed_got_it = timed.join().unwrap();
        // If the timed waiter's grant were lost, `blocking` would sleep forever.
        blocking.join().unwrap();
        assert_eq!(read(&cell), 1 + u32::from(timed_got_it));
        assert!(locks.is_empty());
    });
}
