//! Per-key reader-writer locks (`KeyedRwLocks`, `AsyncKeyedRwLocks`): sharing and exclusion,
//! strict FIFO with batched readers, upgrades and downgrades, timeouts racing grants,
//! multi-key locking, user code that panics, stress with an invariant checker, bounded
//! memory, and the async face's cancel safety.

use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use chainlock::keyed::{AsyncKeyedRwLocks, KeyedRwLocks};
use chainlock_suite::watchdog::{HANG, eventually, watchdog};
use rand::{Rng, SeedableRng, rngs::SmallRng};

fn until_waiting<K: Eq + Hash>(locks: &KeyedRwLocks<K>, key: &K, n: usize) {
    eventually("waiters queued", || locks.waiting(key) >= n);
}

/// Checks the reader-writer invariant of one key from inside the critical sections: never a
/// writer with anyone else.
#[derive(Default)]
struct Occupancy(AtomicU64);

const WRITER: u64 = 1 << 40;

impl Occupancy {
    fn enter_read(&self) {
        let before = self.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(before & WRITER, 0, "a reader got in with a writer");
    }
    fn leave_read(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
    fn enter_write(&self) {
        let before = self.0.fetch_add(WRITER, Ordering::SeqCst);
        assert_eq!(before, 0, "a writer got in with someone else");
    }
    fn leave_write(&self) {
        self.0.fetch_sub(WRITER, Ordering::SeqCst);
    }
}

#[test]
fn readers_share_a_key_and_a_writer_has_it_alone() {
    let locks = KeyedRwLocks::new();
    let (a, b) = (locks.read(1), locks.read(1));
    assert!(locks.is_locked(&1) && !locks.is_write_locked(&1));
    assert!(locks.try_write(1).is_none());
    assert!(locks.try_read(2).is_some(), "other keys are independent");
    drop((a, b));
    let w = locks.write(1);
    assert!(locks.is_write_locked(&1));
    assert!(locks.try_read(1).is_none());
    assert!(locks.try_upgradable_read(1).is_none());
    drop(w);
    assert!(locks.is_empty());
}

#[test]
fn fifo_with_batched_readers_and_no_writer_starvation() {
    let _watchdog = watchdog("fifo_with_batched_readers_and_no_writer_starvation");
    let locks = KeyedRwLocks::new();
    let log = Mutex::new(Vec::new());
    let readers_in = AtomicUsize::new(0);
    let writer = locks.write(0);
    thread::scope(|s| {
        // Queue: reader 1, reader 2, writer 3, reader 4.
        for (id, write) in [(1, false), (2, false), (3, true), (4, false)] {
            let (locks, log, readers_in) = (&locks, &log, &readers_in);
            s.spawn(move || {
                if write {
                    let _w = locks.write(0);
                    log.lock().unwrap().push(id);
                } else {
                    let _r = locks.read(0);
                    log.lock().unwrap().push(id);
                    if id < 3 {
                        // The first two readers are granted together: each waits, holding
                        // its read lock, until the other is in too.
                        readers_in.fetch_add(1, Ordering::SeqCst);
                        eventually("both batched readers in", || {
                            readers_in.load(Ordering::SeqCst) == 2
                        });
                    }
                }
            });
            until_waiting(locks, &0, id);
        }
        // A newcomer cannot overtake the queue, even as a reader of a read-held key later.
        assert!(locks.try_read(0).is_none());
        drop(writer);
    });
    let log = log.into_inner().unwrap();
    assert!(log[..2] == [1, 2] || log[..2] == [2, 1], "{log:?}");
    assert_eq!(log[2..], [3, 4], "the writer before the later reader");
    assert!(locks.is_empty());
}

#[test]
fn a_queued_writer_holds_off_new_readers_until_it_had_its_turn() {
    let _watchdog = watchdog("a_queued_writer_holds_off_new_readers_until_it_had_its_turn");
    let locks = KeyedRwLocks::new();
    let reader = locks.read("k");
    thread::scope(|s| {
        let writer = s.spawn(|| drop(locks.write("k")));
        until_waiting(&locks, &"k", 1);
        assert!(
            locks.try_read("k").is_none(),
            "no reader overtakes the writer"
        );
        assert!(locks.try_read_for("k", Duration::from_millis(5)).is_none());
        drop(reader);
        writer.join().unwrap();
    });
    assert!(locks.try_read("k").is_some());
    assert!(locks.is_empty());
}

#[test]
fn a_timed_out_writer_lets_the_readers_queued_behind_it_in() {
    let _watchdog = watchdog("a_timed_out_writer_lets_the_readers_queued_behind_it_in");
    let locks = KeyedRwLocks::new();
    let reader = locks.read(5);
    let late_reader_in = AtomicBool::new(false);
    thread::scope(|s| {
        let writer = s.spawn(|| locks.try_write_for(5, Duration::from_millis(50)).is_none());
        until_waiting(&locks, &5, 1);
        s.spawn(|| {
            let _r = locks.read(5);
            late_reader_in.store(true, Ordering::SeqCst);
        });
        until_waiting(&locks, &5, 2);
        assert!(writer.join().unwrap(), "the writer timed out");
        // The first reader still holds the key: the late reader must get in beside it.
        eventually("the reader behind the timed-out writer is granted", || {
            late_reader_in.load(Ordering::SeqCst)
        });
        drop(reader);
    });
    assert!(locks.is_empty());
}

#[test]
fn timeouts_racing_releases_never_lose_a_grant() {
    let _watchdog = watchdog("timeouts_racing_releases_never_lose_a_grant");
    let locks = KeyedRwLocks::new();
    for round in 0..2_000_u64 {
        let holder = locks.write(0);
        thread::scope(|s| {
            let waiter = s.spawn(|| {
                let timeout = Duration::from_micros(round % 50);
                if round % 2 == 0 {
                    locks.try_read_for(0, timeout).is_some()
                } else {
                    locks.try_write_for(0, timeout).is_some()
                }
            });
            if round % 3 == 0 {
                thread::yield_now();
            }
            drop(holder);
            waiter.join().unwrap();
        });
        // Granted or not, nothing is left behind and the key is free.
        assert!(locks.is_empty(), "round {round}");
        assert!(locks.try_write(0).is_some(), "round {round}");
    }
}

#[test]
fn an_upgrade_waits_for_readers_only_and_goes_ahead_of_the_queue() {
    let _watchdog = watchdog("an_upgrade_waits_for_readers_only_and_goes_ahead_of_the_queue");
    let locks = KeyedRwLocks::new();
    let upgradable = locks.upgradable_read("k");
    let reader = locks.read("k");
    let writer_done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            drop(locks.write("k"));
            writer_done.store(true, Ordering::SeqCst);
        });
        until_waiting(&locks, &"k", 1);
        let upgrade = s.spawn(|| {
            let w = upgradable.upgrade();
            assert!(
                !writer_done.load(Ordering::SeqCst),
                "the upgrade went ahead"
            );
            w
        });
        until_waiting(&locks, &"k", 2);
        drop(reader);
        let w = upgrade.join().unwrap();
        assert!(locks.is_write_locked("k"));
        assert!(!writer_done.load(Ordering::SeqCst));
        drop(w);
    });
    assert!(writer_done.load(Ordering::SeqCst));
    assert!(locks.is_empty());
}

#[test]
fn a_timed_out_upgrade_keeps_its_read_and_unblocks_the_queue() {
    let _watchdog = watchdog("a_timed_out_upgrade_keeps_its_read_and_unblocks_the_queue");
    let locks = KeyedRwLocks::new();
    let upgradable = locks.upgradable_read(1);
    let reader = locks.read(1);
    let upgradable = upgradable
        .try_upgrade_for(Duration::from_millis(10))
        .expect_err("a reader is in");
    assert_eq!(locks.waiting(&1), 0, "the upgrade left the queue");
    assert!(locks.try_read(1).is_some(), "readers still share with it");
    drop(reader);
    let w = upgradable.try_upgrade().expect("alone now");
    let r = w.downgrade();
    assert!(locks.try_read(1).is_some());
    drop(r);
    assert!(locks.is_empty());
}

#[test]
fn downgrading_lets_queued_readers_in_but_not_a_writer() {
    let _watchdog = watchdog("downgrading_lets_queued_readers_in_but_not_a_writer");
    let locks = KeyedRwLocks::new();
    let w = locks.write(3);
    let reader_in = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let _r = locks.read(3);
            reader_in.store(true, Ordering::SeqCst);
        });
        until_waiting(&locks, &3, 1);
        let u = w.downgrade_to_upgradable();
        eventually("the queued reader joined the downgraded holder", || {
            reader_in.load(Ordering::SeqCst)
        });
        assert!(locks.try_write(3).is_none());
        drop(u.downgrade());
    });
    assert!(locks.is_empty());
}

#[test]
fn multi_key_locking_from_opposite_orders_never_deadlocks() {
    let _watchdog = watchdog("multi_key_locking_from_opposite_orders_never_deadlocks");
    let locks = KeyedRwLocks::new();
    thread::scope(|s| {
        for t in 0..4_u32 {
            let locks = &locks;
            s.spawn(move || {
                for i in 0..500_u32 {
                    let keys = if t % 2 == 0 { [1, 2, 3] } else { [3, 2, 1] };
                    if (i + t) % 3 == 0 {
                        drop(locks.read_all(keys));
                    } else {
                        drop(locks.write_all(keys));
                    }
                }
            });
        }
    });
    assert!(locks.is_empty());
}

#[test]
fn multi_key_locking_is_all_or_nothing() {
    let locks = KeyedRwLocks::new();
    let blocker = locks.read("c");
    assert!(
        locks
            .try_write_all_for(["a", "b", "c"], Duration::from_millis(5))
            .is_none()
    );
    assert!(!locks.is_locked("a") && !locks.is_locked("b"));
    let readers = locks
        .try_read_all_for(["c", "a"], Duration::from_millis(5))
        .expect("readers share c");
    assert_eq!(readers.len(), 2);
    drop((readers, blocker));
    assert!(locks.is_empty());
}

/// A key whose `Hash`, `Eq` or `Drop` panics on demand (`Eq`/`Hash` on `id`).
#[derive(Debug)]
struct Touchy {
    id: u32,
    panic_in: Option<&'static str>,
}

impl Touchy {
    fn calm(id: u32) -> Self {
        Touchy { id, panic_in: None }
    }
    fn panicking(id: u32, panic_in: &'static str) -> Self {
        Touchy {
            id,
            panic_in: Some(panic_in),
        }
    }
}

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        assert!(
            self.panic_in != Some("eq") && other.panic_in != Some("eq"),
            "eq panics"
        );
        self.id == other.id
    }
}

impl Eq for Touchy {}

impl Hash for Touchy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        assert!(self.panic_in != Some("hash"), "hash panics");
        self.id.hash(state);
    }
}

impl Drop for Touchy {
    fn drop(&mut self) {
        assert!(
            self.panic_in != Some("drop") || thread::panicking(),
            "drop panics"
        );
    }
}

#[test]
fn keys_panicking_in_hash_eq_or_drop_leave_nothing_locked() {
    let _watchdog = watchdog("keys_panicking_in_hash_eq_or_drop_leave_nothing_locked");
    let locks = KeyedRwLocks::with_shards(1);
    for panic_in in ["hash", "eq", "drop"] {
        // Granted at once (readers share), then the duplicate key panics.
        let held = locks.read(Touchy::calm(1));
        let result = catch_unwind(AssertUnwindSafe(|| {
            drop(locks.read(Touchy::panicking(1, panic_in)));
        }));
        assert!(result.is_err(), "{panic_in}");
        drop(held);
        assert!(locks.is_empty(), "{panic_in}: nothing left behind");
        // Queued behind a writer, then the key panics.
        let held = locks.write(Touchy::calm(1));
        thread::scope(|s| {
            let queued = s.spawn(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    drop(locks.read(Touchy::panicking(1, panic_in)));
                }))
                .is_err()
            });
            assert!(queued.join().unwrap(), "{panic_in}");
        });
        assert_eq!(locks.waiting(&Touchy::calm(1)), 0, "{panic_in}");
        drop(held);
        assert!(locks.is_empty(), "{panic_in}");
        assert!(locks.try_write(Touchy::calm(1)).is_some(), "{panic_in}");
    }
}

#[test]
fn a_panic_while_holding_releases_the_key() {
    let locks = KeyedRwLocks::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _w = locks.write(1);
        panic!("while writing");
    }));
    assert!(result.is_err());
    assert!(locks.is_empty());
}

#[test]
fn stress_never_a_writer_with_anyone_else_and_every_waiter_served() {
    const THREADS: u64 = 8;
    const OPS: usize = 2_000;
    const KEYS: usize = 3;
    let _watchdog = watchdog("stress_never_a_writer_with_anyone_else_and_every_waiter_served");
    let locks = KeyedRwLocks::new();
    let occupancy: Vec<Occupancy> = (0..KEYS).map(|_| Occupancy::default()).collect();
    let served = AtomicUsize::new(0);
    let timed_out = AtomicUsize::new(0);
    thread::scope(|s| {
        for seed in 0..THREADS {
            let (locks, occupancy, served, timed_out) = (&locks, &occupancy, &served, &timed_out);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let key = rng.random_range(0..KEYS);
                    let cell = &occupancy[key];
                    match rng.random_range(0..6) {
                        0 | 1 => {
                            let _r = locks.read(key);
                            cell.enter_read();
                            thread::yield_now();
                            cell.leave_read();
                        }
                        2 => {
                            let _w = locks.write(key);
                            cell.enter_write();
                            thread::yield_now();
                            cell.leave_write();
                        }
                        3 => {
                            let u = locks.upgradable_read(key);
                            cell.enter_read();
                            cell.leave_read();
                            let w = u.upgrade();
                            cell.enter_write();
                            cell.leave_write();
                            let r = w.downgrade();
                            cell.enter_read();
                            cell.leave_read();
                            drop(r);
                        }
                        4 => {
                            let timeout = Duration::from_micros(rng.random_range(0..200));
                            if let Some(_w) = locks.try_write_for(key, timeout) {
                                cell.enter_write();
                                cell.leave_write();
                            } else {
                                timed_out.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        _ => {
                            let timeout = Duration::from_micros(rng.random_range(0..200));
                            if let Some(_r) = locks.try_read_for(key, timeout) {
                                cell.enter_read();
                                cell.leave_read();
                            } else {
                                timed_out.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    served.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(served.load(Ordering::Relaxed), THREADS as usize * OPS);
    assert!(locks.is_empty(), "memory back to empty");
}

#[test]
fn a_million_distinct_keys_leave_the_manager_empty() {
    let locks = KeyedRwLocks::new();
    for key in 0..1_000_000_u64 {
        if key % 2 == 0 {
            let r = locks.read(key);
            let r2 = locks.read(key);
            drop((r, r2));
        } else {
            drop(locks.write(key));
        }
    }
    assert_eq!(locks.len(), 0);
    // Many keys held at once, then all released: the tables give memory back.
    let held: Vec<_> = (0..100_000_u64).map(|key| locks.read(key)).collect();
    assert_eq!(locks.len(), 100_000);
    drop(held);
    assert_eq!(locks.len(), 0);
}

#[test]
fn guards_are_send_and_managers_shareable() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}
    let locks = KeyedRwLocks::new();
    sync(&locks);
    let r = locks.read(1);
    send(&r);
    // Released on another thread.
    thread::scope(|s| {
        s.spawn(move || drop(r));
    });
    assert!(locks.is_empty());
    assert!(format!("{locks:?}").starts_with("KeyedRwLocks"));
    let async_locks = AsyncKeyedRwLocks::<u8>::new();
    assert!(format!("{async_locks:?}").starts_with("AsyncKeyedRwLocks"));
}

mod async_locks {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Polls `future` once with a waker that does nothing.
    fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[tokio::test]
    async fn batched_readers_then_the_writer_in_fifo_order() {
        let locks = AsyncKeyedRwLocks::new();
        let held = locks.write(1).await;
        let mut r1 = Box::pin(locks.read(1));
        let mut r2 = Box::pin(locks.read(1));
        let mut w = Box::pin(locks.write(1));
        let mut r3 = Box::pin(locks.read(1));
        assert!(poll_once(r1.as_mut()).is_pending());
        assert!(poll_once(r2.as_mut()).is_pending());
        assert!(poll_once(w.as_mut()).is_pending());
        assert!(poll_once(r3.as_mut()).is_pending());
        assert_eq!(locks.waiting(&1), 4);
        drop(held);
        assert!(poll_once(r3.as_mut()).is_pending(), "behind the writer");
        assert!(poll_once(w.as_mut()).is_pending());
        let Poll::Ready(g1) = poll_once(r1.as_mut()) else {
            panic!("first reader granted")
        };
        let Poll::Ready(g2) = poll_once(r2.as_mut()) else {
            panic!("second reader granted with it")
        };
        drop(g1);
        assert!(poll_once(w.as_mut()).is_pending());
        drop(g2);
        let Poll::Ready(gw) = poll_once(w.as_mut()) else {
            panic!("writer next")
        };
        assert!(poll_once(r3.as_mut()).is_pending());
        drop(gw);
        assert!(poll_once(r3.as_mut()).is_ready());
        drop((r1, r2, w, r3));
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn dropping_a_pending_future_leaves_the_queue_and_unblocks_readers() {
        let locks = AsyncKeyedRwLocks::new();
        let reader = locks.read("k").await;
        let mut writer = Box::pin(locks.write("k"));
        assert!(poll_once(writer.as_mut()).is_pending());
        let mut late = Box::pin(locks.read("k"));
        assert!(poll_once(late.as_mut()).is_pending(), "behind the writer");
        drop(writer);
        assert_eq!(locks.waiting("k"), 0);
        assert!(
            poll_once(late.as_mut()).is_ready(),
            "let in beside the reader"
        );
        drop((late, reader));
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn dropping_a_granted_but_unpolled_future_gives_the_key_back() {
        let locks = AsyncKeyedRwLocks::new();
        let held = locks.read("k").await;
        let mut granted = Box::pin(locks.write("k"));
        assert!(poll_once(granted.as_mut()).is_pending());
        let mut next = Box::pin(locks.read("k"));
        assert!(poll_once(next.as_mut()).is_pending());
        drop(held); // grants the writer, which will never be polled again
        assert!(poll_once(next.as_mut()).is_pending());
        drop(granted);
        assert!(
            poll_once(next.as_mut()).is_ready(),
            "the grant was passed on"
        );
        drop(next);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_upgrade_releases_everything() {
        let locks = AsyncKeyedRwLocks::new();
        let u = locks.upgradable_read(1).await;
        let r = locks.read(1).await;
        let mut upgrade = Box::pin(u.upgrade());
        assert!(poll_once(upgrade.as_mut()).is_pending());
        drop(r); // grants the upgrade
        drop(upgrade);
        assert!(locks.is_empty());
        // And a pending one.
        let u = locks.upgradable_read(1).await;
        let r = locks.read(1).await;
        let timed = tokio::time::timeout(Duration::from_millis(5), u.upgrade()).await;
        assert!(timed.is_err());
        assert_eq!(locks.waiting(&1), 0);
        drop(r);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn a_cancelled_write_all_releases_what_it_took() {
        let locks = AsyncKeyedRwLocks::new();
        let b = locks.read("b").await;
        let timed =
            tokio::time::timeout(Duration::from_millis(5), locks.write_all(["a", "b"])).await;
        assert!(timed.is_err());
        assert!(!locks.is_locked("a"));
        drop(b);
        assert!(locks.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn stress_with_cancellations_keeps_the_invariant() {
        const TASKS: u64 = 16;
        const OPS: usize = 400;
        const KEYS: usize = 3;
        let locks = Arc::new(AsyncKeyedRwLocks::new());
        let occupancy: Arc<Vec<Occupancy>> =
            Arc::new((0..KEYS).map(|_| Occupancy::default()).collect());
        let cancelled = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for seed in 0..TASKS {
            let (locks, occupancy, cancelled, served) = (
                Arc::clone(&locks),
                Arc::clone(&occupancy),
                Arc::clone(&cancelled),
                Arc::clone(&served),
            );
            tasks.push(tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let key = rng.random_range(0..KEYS);
                    let cell = &occupancy[key];
                    let timeout = Duration::from_micros(rng.random_range(0..300));
                    if rng.random_bool(0.3) {
                        match tokio::time::timeout(timeout, locks.write(key)).await {
                            Ok(_w) => {
                                cell.enter_write();
                                tokio::task::yield_now().await;
                                cell.leave_write();
                            }
                            Err(_) => cancelled.store(true, Ordering::Relaxed),
                        }
                    } else {
                        match tokio::time::timeout(timeout, locks.read(key)).await {
                            Ok(_r) => {
                                cell.enter_read();
                                tokio::task::yield_now().await;
                                cell.leave_read();
                            }
                            Err(_) => cancelled.store(true, Ordering::Relaxed),
                        }
                    }
                    served.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for task in tasks {
            tokio::time::timeout(HANG, task)
                .await
                .expect("a task hung")
                .unwrap();
        }
        assert_eq!(served.load(Ordering::Relaxed), TASKS as usize * OPS);
        assert!(cancelled.load(Ordering::Relaxed), "exercised cancellations");
        assert!(locks.is_empty());
    }
}

/// The timed and non-waiting forms added by the vocabulary change: each times out (or
/// refuses) while the key is held against it, and succeeds once it is free.
#[test]
fn every_timed_form_expires_while_held_and_succeeds_when_free() {
    let locks = KeyedRwLocks::new();
    let soon = || Instant::now() + Duration::from_millis(5);

    let u = locks.upgradable_read("k");
    assert!(locks.try_upgradable_read_until("k", soon()).is_none());
    let r = locks.read("k");
    let u = u.try_upgrade_until(soon()).expect_err("a reader is in");
    assert!(locks.is_locked("k") && !locks.is_write_locked("k"));
    drop(r);
    let w = u.try_upgrade_until(soon()).expect("the readers left");
    assert!(locks.is_write_locked("k"));
    drop(w);
    assert!(locks.try_upgradable_read_until("k", soon()).is_some());

    let held = locks.write("b");
    assert!(locks.try_read_all(["a", "b"]).is_none());
    assert!(locks.try_read_all_until(["a", "b"], soon()).is_none());
    assert!(locks.try_write_all(["a", "b"]).is_none());
    assert!(locks.try_write_all_until(["a", "b"], soon()).is_none());
    assert!(!locks.is_locked("a"), "all or nothing");
    drop(held);
    assert_eq!(locks.try_read_all(["b", "a"]).map(|g| g.len()), Some(2));
    assert_eq!(
        locks
            .try_write_all_until(["b", "a", "b"], soon())
            .map(|g| g.len()),
        Some(2)
    );
    assert!(locks.is_empty());
}

#[tokio::test]
async fn async_timed_forms_expire_while_held_and_succeed_when_free() {
    let locks = AsyncKeyedRwLocks::new();
    let short = Duration::from_millis(5);
    let soon = || Instant::now() + short;

    let w = locks.write(1).await;
    assert!(locks.try_read_for(1, short).await.is_none());
    assert!(locks.try_read_until(1, soon()).await.is_none());
    assert!(locks.try_upgradable_read_for(1, short).await.is_none());
    assert!(locks.try_read_all_for([0, 1], short).await.is_none());
    assert!(locks.try_write_all_until([0, 1], soon()).await.is_none());
    assert!(!locks.is_locked(&0), "all or nothing");
    drop(w);
    let r = locks.read(1).await;
    assert!(locks.try_write_for(1, short).await.is_none());
    assert!(locks.try_write_until(1, soon()).await.is_none());
    let u = locks
        .try_upgradable_read_until(1, soon())
        .await
        .expect("readers share");
    let u = u.try_upgrade_for(short).await.expect_err("a reader is in");
    drop(r);
    let w = u.try_upgrade_until(soon()).await.expect("the reader left");
    assert!(locks.is_write_locked(&1));
    drop(w);
    assert!(locks.try_write_for(1, short).await.is_some());
    assert_eq!(
        locks
            .try_read_all_until([1, 0], soon())
            .await
            .map(|g| g.len()),
        Some(2)
    );
    assert_eq!(
        locks
            .try_write_all_for([1, 0], short)
            .await
            .map(|g| g.len()),
        Some(2)
    );
    assert!(locks.is_empty());
}
