//! loom models of the weighted registry behind the keyed reader-writer locks and permits:
//! every interleaving of read/write hand-off, batched readers, permits, an upgrade racing a
//! reader's release, and a timeout racing a grant (loom has no clock: a deadline already
//! past makes the waiter take its cancellation path at once, racing the grant).

use std::time::Instant;

use crate::keyed::{KeyedPermits, KeyedRwLocks};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::thread;

/// One shard, so that every operation meets on one registry lock.
fn rw() -> Arc<KeyedRwLocks<u8>> {
    Arc::new(KeyedRwLocks::with_shards(1))
}

/// Writes `cell`: loom reports a data race if anyone reads or writes it at the same time.
fn write(cell: &UnsafeCell<u32>) {
    // SAFETY: called only under a write lock of the cell's key; loom checks that.
    cell.with_mut(|value| unsafe { *value += 1 });
}

/// Reads `cell`: concurrent reads are fine, a concurrent write is a reported race.
fn read(cell: &UnsafeCell<u32>) -> u32 {
    // SAFETY: called only under a read or write lock of the cell's key; loom checks that.
    cell.with(|value| unsafe { *value })
}

#[test]
fn loom_rw_writer_to_readers_hand_off_no_lost_wakeup_and_cleanup() {
    loom::model(|| {
        let locks = rw();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let writer = locks.write(1);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
                thread::spawn(move || {
                    let _r = locks.read(1);
                    read(&cell)
                })
            })
            .collect();
        write(&cell);
        drop(writer);
        // A lost wake-up leaves a reader parked forever: loom reports the deadlock.
        for reader in readers {
            assert_eq!(reader.join().unwrap(), 1, "readers see the write");
        }
        assert!(locks.is_empty(), "the entry goes with the last release");
    });
}

#[test]
fn loom_rw_reader_and_writer_exclude_each_other() {
    loom::model(|| {
        let locks = rw();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let writer = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                let _w = locks.write(1);
                write(&cell);
            })
        };
        let seen = {
            let _r = locks.read(1);
            read(&cell)
        };
        writer.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(read(&cell), 1);
        assert!(locks.is_empty());
    });
}

#[test]
fn loom_rw_timed_out_writer_racing_its_grant_neither_loses_nor_strands() {
    loom::model(|| {
        let locks = rw();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let reader = locks.read(1);
        let timed = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                // The deadline has passed: after queueing, the writer cancels at once, in
                // a race with the grant when the reader leaves.
                let got = locks.try_write_until(1, Instant::now());
                if got.is_some() {
                    write(&cell);
                }
                got.is_some()
            })
        };
        let late = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || {
                // Queued behind the writer, or let in beside the first reader once the
                // writer left; stranded (a reported deadlock) if the cancel forgot it.
                let _r = locks.read(1);
                read(&cell)
            })
        };
        drop(reader);
        let wrote = timed.join().unwrap();
        let seen = late.join().unwrap();
        assert!(seen <= u32::from(wrote));
        assert_eq!(read(&cell), u32::from(wrote));
        assert!(locks.is_empty());
    });
}

#[test]
fn loom_rw_a_cancelled_writer_lets_the_readers_queued_behind_it_in() {
    loom::model(|| {
        let locks = rw();
        let reader = locks.read(1);
        let timed = {
            let locks = Arc::clone(&locks);
            // Cannot be granted while `reader` is held: it queues, then cancels.
            thread::spawn(move || locks.try_write_until(1, Instant::now()).is_some())
        };
        let late = {
            let locks = Arc::clone(&locks);
            thread::spawn(move || drop(locks.read(1)))
        };
        assert!(!timed.join().unwrap());
        // `reader` is still held: if the writer's cancellation did not grant the reader
        // queued behind it, `late` sleeps forever (a reported deadlock).
        late.join().unwrap();
        drop(reader);
        assert!(locks.is_empty());
    });
}

#[test]
fn loom_rw_upgrade_racing_a_reader_release() {
    loom::model(|| {
        let locks = rw();
        let cell = Arc::new(UnsafeCell::new(0_u32));
        let upgradable = locks.upgradable_read(1);
        let reader = {
            let (locks, cell) = (Arc::clone(&locks), Arc::clone(&cell));
            thread::spawn(move || locks.try_read(1).map(|_r| read(&cell)))
        };
        let w = upgradable.upgrade();
        write(&cell);
        drop(w);
        if let Some(seen) = reader.join().unwrap() {
            assert!(seen <= 1);
        }
        assert!(locks.is_empty());
    });
}

#[test]
fn loom_permits_never_more_than_n_and_no_lost_grant() {
    // Three threads contending: every interleaving with up to four preemptions (the full
    // space takes hours; bugs of this kind show within a few, as loom's docs advise).
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(4);
    builder.check(|| {
        let permits = Arc::new(KeyedPermits::<u8>::with_shards(2, 1));
        let inside = Arc::new(AtomicUsize::new(0));
        let holder = |permits: Arc<KeyedPermits<u8>>, inside: Arc<AtomicUsize>| {
            move || {
                let _p = permits.acquire(1);
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= 2, "{now} holders of 2 permits");
                inside.fetch_sub(1, Ordering::SeqCst);
            }
        };
        let threads: Vec<_> = (0..2)
            .map(|_| thread::spawn(holder(Arc::clone(&permits), Arc::clone(&inside))))
            .collect();
        holder(Arc::clone(&permits), Arc::clone(&inside))();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(permits.is_empty());
    });
}

#[test]
fn loom_permit_timeout_racing_a_grant() {
    loom::model(|| {
        let permits = Arc::new(KeyedPermits::<u8>::with_shards(1, 1));
        let held = permits.acquire(1);
        let timed = {
            let permits = Arc::clone(&permits);
            thread::spawn(move || permits.try_acquire_until(1, Instant::now()).is_some())
        };
        let blocking = {
            let permits = Arc::clone(&permits);
            thread::spawn(move || drop(permits.acquire(1)))
        };
        drop(held);
        timed.join().unwrap();
        // If the timed waiter's grant were lost, `blocking` would sleep forever.
        blocking.join().unwrap();
        assert!(permits.is_empty());
    });
}
