//! The keyed lock manager: reentrancy, FIFO hand-off, timeouts, bounded memory, multi-key
//! locking, panics, stress with invariants, and the async variant's cancel safety.

use std::cell::UnsafeCell;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use chainlock::keyed::{AsyncKeyedLocks, KeyedLocks};
use chainlock_suite::watchdog::{HANG, watchdog};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// Counters updated with a non-atomic read-modify-write: only mutual exclusion keeps them
/// exact, so a lost update reveals two holders of one key.
struct RacyCounters(Vec<UnsafeCell<u64>>);

// SAFETY: each cell is accessed only by the holder of its key (that is what is tested).
unsafe impl Sync for RacyCounters {}

impl RacyCounters {
    fn new(n: usize) -> Self {
        Self((0..n).map(|_| UnsafeCell::new(0)).collect())
    }

    /// Read, give other threads a chance to interleave, write back plus one.
    fn bump(&self, key: usize) {
        let cell = self.0[key].get();
        // SAFETY: the caller holds `key`.
        let value = unsafe { cell.read_volatile() };
        if value % 7 == 0 {
            thread::yield_now();
        }
        // SAFETY: as above.
        unsafe { cell.write_volatile(value + 1) };
    }

    fn get(&self, key: usize) -> u64 {
        // SAFETY: read after all writers were joined.
        unsafe { *self.0[key].get() }
    }
}

/// Waits until `n` threads are queued for `key`, failing the test instead of hanging.
fn until_waiting<K: Eq + Hash>(locks: &KeyedLocks<K>, key: &K, n: usize) {
    let start = Instant::now();
    while locks.waiting(key) < n {
        assert!(start.elapsed() < HANG, "waiters never queued");
        thread::yield_now();
    }
}

#[test]
fn a_key_is_exclusive_and_other_keys_are_independent() {
    let locks = KeyedLocks::new();
    let held = locks.lock("a");
    thread::scope(|s| {
        s.spawn(|| {
            assert!(locks.try_lock("a").is_none());
            assert!(locks.try_lock("b").is_some());
        });
    });
    assert_eq!(locks.len(), 1);
    drop(held);
    assert!(locks.is_empty());
}

#[test]
fn reentrant_holds_free_the_key_only_with_the_last_guard() {
    let locks = KeyedLocks::new();
    let first = locks.lock(5);
    let second = locks.lock(5);
    let third = locks.try_lock(5).expect("the holder may relock");
    let elsewhere = |expect_free: bool| {
        thread::scope(|s| {
            s.spawn(|| assert_eq!(locks.try_lock(5).is_some(), expect_free));
        });
    };
    drop(second); // out of order
    elsewhere(false);
    drop(first);
    elsewhere(false);
    assert_eq!(locks.len(), 1);
    drop(third);
    elsewhere(true);
    assert!(locks.is_empty());
}

#[test]
fn waiters_are_granted_in_arrival_order() {
    const WAITERS: usize = 8;
    let _watchdog = watchdog("waiters_are_granted_in_arrival_order");
    let locks = KeyedLocks::new();
    let order = Mutex::new(Vec::new());
    let held = locks.lock(0);
    thread::scope(|s| {
        for id in 0..WAITERS {
            let (locks, order) = (&locks, &order);
            s.spawn(move || {
                let _key = locks.lock(0);
                order.lock().unwrap().push(id);
            });
            until_waiting(locks, &0, id + 1);
        }
        drop(held);
    });
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
    assert!(locks.is_empty());
}

#[test]
fn the_releasing_thread_cannot_barge_past_a_waiter() {
    let _watchdog = watchdog("the_releasing_thread_cannot_barge_past_a_waiter");
    let locks = KeyedLocks::new();
    let held = locks.lock(1);
    let (release_tx, release_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let locks = &locks;
        s.spawn(move || {
            let _key = locks.lock(1);
            release_rx.recv_timeout(HANG).unwrap();
        });
        until_waiting(locks, &1, 1);
        drop(held);
        // The key was handed to the waiter inside `drop`: it is not free, even though the
        // waiter may not have woken up yet.
        assert!(locks.try_lock(1).is_none());
        assert!(locks.try_lock_for(1, Duration::from_millis(1)).is_none());
        release_tx.send(()).unwrap();
    });
    assert!(locks.try_lock(1).is_some());
}

#[test]
fn timeouts_zero_short_and_infinite() {
    let _watchdog = watchdog("timeouts_zero_short_and_infinite");
    let locks = KeyedLocks::new();
    let held = locks.lock("k");
    thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            assert!(locks.try_lock_for("k", Duration::ZERO).is_none());
            assert_eq!(locks.waiting(&"k"), 0, "a zero timeout never queues");

            let start_short = Instant::now();
            assert!(locks.try_lock_for("k", Duration::from_millis(30)).is_none());
            assert!(start_short.elapsed() >= Duration::from_millis(30));
            assert!(locks.try_lock_until("k", Instant::now()).is_none());
            assert_eq!(locks.waiting(&"k"), 0, "a timed-out waiter left the queue");
            assert!(start.elapsed() < HANG);
        });
    });
    let (got_tx, got_rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| {
            // Duration::MAX overflows the clock: it means "wait forever".
            let guard = locks.try_lock_for("k", Duration::MAX);
            got_tx.send(guard.is_some()).unwrap();
        });
        until_waiting(&locks, &"k", 1);
        assert!(got_rx.try_recv().is_err(), "still waiting while held");
        drop(held);
        assert!(got_rx.recv_timeout(HANG).unwrap());
    });
    // A free key is taken even with a deadline in the past.
    assert!(locks.try_lock_until("k", Instant::now()).is_some());
    assert!(locks.is_empty());
}

#[test]
fn a_timed_out_waiter_does_not_strand_the_next_one() {
    let _watchdog = watchdog("a_timed_out_waiter_does_not_strand_the_next_one");
    let locks = KeyedLocks::new();
    let held = locks.lock(9);
    let (got_tx, got_rx) = mpsc::channel();
    thread::scope(|s| {
        // Long enough that the second waiter queues behind it even on a loaded machine (a
        // thread can take tens of milliseconds to start there): with 20 ms it sometimes timed
        // out first, and the two never waited together.
        let timed = s.spawn(|| locks.try_lock_for(9, Duration::from_secs(2)).is_some());
        until_waiting(&locks, &9, 1);
        s.spawn(|| {
            let _key = locks.lock(9);
            got_tx.send(()).unwrap();
        });
        until_waiting(&locks, &9, 2);
        assert!(!timed.join().unwrap(), "timed out while the key was held");
        assert_eq!(locks.waiting(&9), 1);
        drop(held);
        got_rx
            .recv_timeout(HANG)
            .expect("the next waiter was handed the key");
    });
    assert!(locks.is_empty());
}

#[test]
fn timeouts_racing_releases_never_lose_a_grant() {
    let _watchdog = watchdog("timeouts_racing_releases_never_lose_a_grant");
    // Many waiters time out right around the moment the key is handed to them. If a grant
    // were lost, the key would stay held forever and the final `try_lock` would fail.
    let locks = KeyedLocks::with_shards(1);
    let mut rng = SmallRng::seed_from_u64(7);
    for round in 0..200 {
        let held = locks.lock(0_u32);
        let hold_for = Duration::from_micros(rng.random_range(0..300));
        thread::scope(|s| {
            for i in 0..3_u64 {
                let locks = &locks;
                s.spawn(move || {
                    let timeout = Duration::from_micros(100 * i + (round % 5) * 40);
                    drop(locks.try_lock_for(0, timeout));
                });
            }
            thread::sleep(hold_for);
            drop(held);
        });
        assert!(
            locks.try_lock(0).is_some(),
            "round {round}: the key was stranded"
        );
        assert!(locks.is_empty(), "round {round}: an entry was left behind");
    }
}

#[test]
fn a_million_distinct_keys_leave_the_manager_empty() {
    let locks = KeyedLocks::new();
    for key in 0..1_000_000_u64 {
        let guard = locks.lock(key);
        drop(guard);
    }
    assert!(locks.is_empty());
    // A burst of concurrently held keys is released entry by entry, too.
    let held: Vec<_> = (0..100_000_u64).map(|key| locks.lock(key)).collect();
    assert_eq!(locks.len(), 100_000);
    drop(held);
    assert!(locks.is_empty());
}

/// Guards, waiters and timed-out waiters remember where their key's entry sits; growing
/// and shrinking the table moves entries. Everything must still find its own entry.
#[test]
fn holds_and_waiters_survive_the_table_growing_and_shrinking_under_them() {
    let _watchdog = watchdog("holds_and_waiters_survive_the_table_growing_and_shrinking");
    let locks = KeyedLocks::with_shards(1); // one table for every key
    let first = locks.lock(0_u64);
    let second = locks.lock(0); // reentrant: a second hold of the same entry
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            let guard = locks.lock(0);
            assert_eq!(locks.waiting(&0), 0);
            drop(guard);
        });
        let timed_out = s.spawn(|| {
            until_waiting(&locks, &0, 1);
            // Queued behind `waiter`, gives up after the table has moved (it cancels a
            // stale position).
            assert!(locks.try_lock_for(0, Duration::from_millis(300)).is_none());
        });
        until_waiting(&locks, &0, 2);
        // Grow the table far past its size, with every key held (distinct entries that a
        // stale position could point at), then shrink it again.
        let others: Vec<_> = (1..20_000_u64).map(|key| locks.lock(key)).collect();
        assert_eq!(locks.len(), 20_000);
        timed_out.join().unwrap();
        drop(others);
        assert_eq!(locks.len(), 1);
        assert_eq!(locks.waiting(&0), 1);
        drop(second);
        assert!(locks.is_locked(&0), "one hold is left");
        drop(first); // hands the key to `waiter`
        waiter.join().unwrap();
    });
    assert!(locks.is_empty());
    // Fresh tickets issued after the shrink point at the current positions.
    let again: Vec<_> = (0..1_000_u64).map(|key| locks.lock(key)).collect();
    assert_eq!(locks.len(), 1_000);
    drop(again);
    assert!(locks.is_empty());
}

#[test]
fn multi_key_locking_from_opposite_orders_never_deadlocks() {
    const ROUNDS: usize = 2_000;
    let _watchdog = watchdog("multi_key_locking_from_opposite_orders_never_deadlocks");
    let locks = KeyedLocks::new();
    let counters = RacyCounters::new(4);
    let start = Barrier::new(2);
    thread::scope(|s| {
        for keys in [[0, 1, 2], [2, 1, 0]] {
            let (locks, counters, start) = (&locks, &counters, &start);
            s.spawn(move || {
                start.wait();
                for round in 0..ROUNDS {
                    let mut keys = keys.to_vec();
                    keys.push(3 * (round % 2)); // overlap shifts between rounds
                    let held = locks
                        .try_lock_all_for(keys.clone(), HANG)
                        .expect("overlapping multi-key locks deadlocked");
                    keys.sort_unstable();
                    keys.dedup();
                    assert_eq!(held.len(), keys.len());
                    for key in keys {
                        counters.bump(key);
                    }
                }
            });
        }
    });
    let expected_3 = u64::try_from(ROUNDS).unwrap(); // key 3 on odd rounds of both
    assert_eq!(counters.get(0), 2 * expected_3);
    assert_eq!(counters.get(3), expected_3);
    assert!(locks.is_empty());
}

#[test]
fn multi_key_locking_is_all_or_nothing() {
    let locks = KeyedLocks::new();
    let held_c = locks.lock('c');
    thread::scope(|s| {
        s.spawn(|| {
            assert!(
                locks
                    .try_lock_all_for(['a', 'b', 'c', 'd'], Duration::from_millis(20))
                    .is_none()
            );
            assert!(locks.try_lock_all_for(['a', 'c'], Duration::ZERO).is_none());
            for key in ['a', 'b', 'd'] {
                assert!(!locks.is_locked(&key), "{key} was left locked");
            }
            assert_eq!(locks.waiting(&'c'), 0);
        });
    });
    drop(held_c);
    let all = locks.lock_all(['d', 'a', 'a']);
    assert_eq!(all.len(), 2);
    assert_eq!(locks.len(), 2);
    let guards = all.into_guards();
    drop(guards);
    assert!(locks.is_empty());
}

#[test]
fn a_panic_while_holding_releases_the_key() {
    let locks = KeyedLocks::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _key = locks.lock(3);
        panic!("injected");
    }));
    assert!(outcome.is_err());
    assert!(locks.is_empty());
    thread::scope(|s| {
        s.spawn(|| assert!(locks.try_lock(3).is_some()));
    });
}

/// A key whose `Eq` panics when asked to, to inject a panic inside the registry.
#[derive(Debug)]
struct Touchy {
    id: u32,
    panics: bool,
}

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        assert!(!(self.panics || other.panics), "injected panic in Eq");
        self.id == other.id
    }
}
impl Eq for Touchy {}
impl Hash for Touchy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

#[test]
fn a_key_panicking_inside_the_registry_leaves_it_consistent() {
    let _watchdog = watchdog("a_key_panicking_inside_the_registry_leaves_it_consistent");
    let locks = KeyedLocks::with_shards(1);
    let held = locks.lock(Touchy {
        id: 1,
        panics: false,
    });
    let outcome = thread::scope(|s| {
        s.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                drop(locks.lock(Touchy {
                    id: 1,
                    panics: true,
                }));
            }))
        })
        .join()
        .unwrap()
    });
    assert!(outcome.is_err(), "Eq was called and panicked");
    assert_eq!(locks.len(), 1);
    assert_eq!(
        locks.waiting(&Touchy {
            id: 1,
            panics: false
        }),
        0
    );
    drop(held);
    assert!(locks.is_empty());
    drop(locks.lock(Touchy {
        id: 1,
        panics: false,
    }));
    assert!(locks.is_empty());
}

#[test]
fn stress_counters_under_keys_never_lose_an_update() {
    const THREADS: usize = 8;
    const KEYS: usize = 16;
    const OPS: usize = 4_000;
    let _watchdog = watchdog("stress_counters_under_keys_never_lose_an_update");
    let locks = KeyedLocks::with_shards(4);
    let counters = RacyCounters::new(KEYS);
    let expected: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
    thread::scope(|s| {
        for seed in 0..THREADS as u64 {
            let (locks, counters, expected) = (&locks, &counters, &expected);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let key = rng.random_range(0..KEYS);
                    let guard = match rng.random_range(0..5) {
                        0 => Some(locks.lock(key)),
                        1 => locks.try_lock(key),
                        2 => {
                            locks.try_lock_for(key, Duration::from_micros(rng.random_range(0..50)))
                        }
                        3 => {
                            // Reentrant: the inner hold must not free the key early.
                            let outer = locks.lock(key);
                            let inner = locks.lock(key);
                            drop(inner);
                            Some(outer)
                        }
                        _ => {
                            let other = rng.random_range(0..KEYS);
                            if let Some(both) =
                                locks.try_lock_all_for([key, other], Duration::from_micros(200))
                            {
                                counters.bump(key);
                                expected[key].fetch_add(1, Ordering::Relaxed);
                                if other != key {
                                    counters.bump(other);
                                    expected[other].fetch_add(1, Ordering::Relaxed);
                                }
                                drop(both);
                            }
                            None
                        }
                    };
                    if let Some(_guard) = guard {
                        counters.bump(key);
                        expected[key].fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    for (key, expected) in expected.iter().enumerate() {
        assert_eq!(
            counters.get(key),
            expected.load(Ordering::Relaxed),
            "key {key}"
        );
    }
    let total: u64 = expected.iter().map(|e| e.load(Ordering::Relaxed)).sum();
    assert!(
        total > (THREADS * OPS / 2) as u64,
        "most operations got their keys"
    );
    assert!(locks.is_empty());
}

#[test]
fn keyed_locks_are_shareable_and_async_guards_are_send() {
    fn shareable<T: Send + Sync>() {}
    fn send<T: Send>() {}
    fn send_future<T: Send>(_: &T) {}
    // Blocking guards are `!Send`: `check` below is ambiguous (does not compile) for a
    // `Send` type, the `static_assertions::assert_not_impl_any!` trick.
    trait AmbiguousIfSend<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}

    shareable::<KeyedLocks<String>>();
    shareable::<AsyncKeyedLocks<String>>();
    send::<chainlock::keyed::AsyncKeyGuard<'static, String>>();
    send::<chainlock::keyed::KeyGuards<chainlock::keyed::AsyncKeyGuard<'static, String>>>();
    // The lock futures are `Send` too (they are `async fn`s: checked on a value).
    let tasks = AsyncKeyedLocks::<String>::new();
    send_future(&tasks.lock("k".to_owned()));
    send_future(&tasks.lock_all(["k".to_owned()]));
    <chainlock::keyed::KeyGuard<'static, String> as AmbiguousIfSend<_>>::check();
    <chainlock::keyed::KeyGuards<chainlock::keyed::KeyGuard<'static, String>> as AmbiguousIfSend<
        _,
    >>::check();
}

/// Both faces are built, probed and printed by the same core; each keeps its own name.
#[test]
fn both_faces_share_constructors_and_probes() {
    use std::hash::{BuildHasherDefault, DefaultHasher};
    type Fixed = BuildHasherDefault<DefaultHasher>;

    let blocking: KeyedLocks<u32, Fixed> = KeyedLocks::with_hasher(Fixed::default());
    let tasks: AsyncKeyedLocks<u32, Fixed> = AsyncKeyedLocks::with_hasher(Fixed::default());
    let held = (blocking.try_lock(1).unwrap(), tasks.try_lock(1).unwrap());
    assert!(
        blocking.try_lock(1).is_some(),
        "blocking: reentrant per thread"
    );
    assert!(
        tasks.try_lock(1).is_none(),
        "async: one owner per acquisition"
    );
    assert_eq!((blocking.len(), tasks.len()), (1, 1));
    assert_eq!(blocking.shard_count(), tasks.shard_count());
    let blocking_debug = format!("{blocking:?}");
    let tasks_debug = format!("{tasks:?}");
    assert!(
        blocking_debug.starts_with("KeyedLocks {"),
        "{blocking_debug}"
    );
    assert!(
        tasks_debug.starts_with("AsyncKeyedLocks {"),
        "{tasks_debug}"
    );
    drop(held);
    assert!(blocking.is_empty() && tasks.is_empty());
}

mod async_locks {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Polls `future` once with a waker that does nothing.
    fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[tokio::test]
    async fn lock_waits_for_release_in_fifo_order() {
        let locks = AsyncKeyedLocks::new();
        let held = locks.lock(1).await;
        let mut first = Box::pin(locks.lock(1));
        let mut second = Box::pin(locks.lock(1));
        let mut third = Box::pin(locks.lock(1));
        for pending in [&mut first, &mut second, &mut third] {
            assert!(poll_once(pending).is_pending());
        }
        assert_eq!(locks.waiting(&1), 3);
        drop(held);
        assert!(poll_once(&mut third).is_pending());
        assert!(poll_once(&mut second).is_pending());
        let Poll::Ready(guard) = poll_once(&mut first) else {
            panic!("the longest waiter is granted first");
        };
        drop(guard);
        assert!(poll_once(&mut third).is_pending());
        assert!(poll_once(&mut second).is_ready());
        drop(second);
        assert!(poll_once(&mut third).is_ready());
        drop((first, third));
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn dropping_a_pending_future_leaves_the_queue() {
        let locks = AsyncKeyedLocks::new();
        let held = locks.lock("k").await;
        let timed = tokio::time::timeout(Duration::from_millis(10), locks.lock("k")).await;
        assert!(timed.is_err());
        assert_eq!(locks.waiting(&"k"), 0);
        drop(held);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn dropping_a_granted_but_unpolled_future_passes_the_key_on() {
        let locks = AsyncKeyedLocks::new();
        let held = locks.lock("k").await;
        let mut granted = Box::pin(locks.lock("k"));
        assert!(poll_once(&mut granted).is_pending());
        let mut next = Box::pin(locks.lock("k"));
        assert!(poll_once(&mut next).is_pending());
        drop(held); // hands the key to `granted`, which will never be polled again
        assert!(poll_once(&mut next).is_pending());
        drop(granted); // must pass the key on, not strand `next`
        let Poll::Ready(guard) = poll_once(&mut next) else {
            panic!("the grant was lost with the dropped future");
        };
        drop(guard);
        drop(next);
        assert!(locks.is_empty());
    }

    #[tokio::test]
    async fn a_cancelled_lock_all_releases_what_it_took() {
        let locks = AsyncKeyedLocks::new();
        let held_b = locks.lock("b").await;
        let timed =
            tokio::time::timeout(Duration::from_millis(10), locks.lock_all(["a", "b"])).await;
        assert!(timed.is_err());
        assert!(!locks.is_locked("a"));
        assert_eq!(locks.waiting("b"), 0);
        drop(held_b);
        assert_eq!(locks.lock_all(["b", "a"]).await.len(), 2);
        assert!(locks.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn stress_with_cancellations_never_loses_an_update() {
        const TASKS: u64 = 16;
        const OPS: usize = 500;
        const KEYS: usize = 4;
        let locks = Arc::new(AsyncKeyedLocks::new());
        let counters = Arc::new(RacyCounters::new(KEYS));
        let expected = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        let cancelled = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for seed in 0..TASKS {
            let (locks, counters, expected, cancelled) = (
                locks.clone(),
                counters.clone(),
                expected.clone(),
                cancelled.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let key = rng.random_range(0..KEYS);
                    let timeout = Duration::from_micros(rng.random_range(0..400));
                    match tokio::time::timeout(timeout, locks.lock(key)).await {
                        Ok(_guard) => {
                            counters.bump(key);
                            tokio::task::yield_now().await; // held across an await
                            expected[key].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => cancelled.store(true, Ordering::Relaxed),
                    }
                }
            }));
        }
        for task in tasks {
            tokio::time::timeout(HANG, task)
                .await
                .expect("a task hung")
                .unwrap();
        }
        for (key, expected) in expected.iter().enumerate() {
            assert_eq!(
                counters.get(key),
                expected.load(Ordering::Relaxed),
                "key {key}"
            );
        }
        assert!(
            cancelled.load(Ordering::Relaxed),
            "the run exercised cancellations"
        );
        assert!(locks.is_empty());
    }
}

/// The forms added by the vocabulary change: `try_lock_all` refuses, and the async timed
/// waits time out, while a key is held; all succeed once it is free.
#[test]
fn try_lock_all_refuses_while_held_and_succeeds_when_free() {
    let locks = KeyedLocks::new();
    let held = locks.lock("b");
    thread::scope(|s| {
        s.spawn(|| {
            assert!(locks.try_lock_all(["a", "b"]).is_none());
            assert!(!locks.is_locked("a"), "all or nothing");
        });
    });
    drop(held);
    let all = locks.try_lock_all(["b", "a", "b"]).expect("free");
    assert_eq!((all.len(), all.is_empty()), (2, false));
    assert_eq!(all.into_guards().len(), 2);
    assert!(locks.is_empty());
}

#[tokio::test]
async fn async_timed_locks_expire_while_held_and_succeed_when_free() {
    let locks = AsyncKeyedLocks::new();
    let short = Duration::from_millis(5);
    let soon = || Instant::now() + short;
    let held = locks.lock(1).await;
    assert!(locks.try_lock_for(1, short).await.is_none());
    assert!(locks.try_lock_until(1, soon()).await.is_none());
    assert!(locks.try_lock_all_for([0, 1], short).await.is_none());
    assert!(locks.try_lock_all_until([0, 1], soon()).await.is_none());
    assert!(locks.try_lock_all([0, 1]).is_none());
    assert!(!locks.is_locked(&0), "all or nothing");
    assert_eq!(locks.waiting(&1), 0, "timed-out waiters left the queue");
    drop(held);
    assert!(locks.try_lock_for(1, short).await.is_some());
    assert!(locks.try_lock_until(1, soon()).await.is_some());
    assert_eq!(
        locks.try_lock_all_for([1, 0], short).await.map(|g| g.len()),
        Some(2)
    );
    assert_eq!(
        locks
            .try_lock_all_until([1, 0], soon())
            .await
            .map(|g| g.len()),
        Some(2)
    );
    assert!(locks.is_empty());
}
