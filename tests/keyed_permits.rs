//! Per-key permits (`KeyedPermits`, `AsyncKeyedPermits`): at most N holders per key, strict
//! FIFO, timeouts racing grants, multi-key acquisition, user code that panics, stress with
//! an invariant checker, bounded memory, and the async face's cancel safety.

use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use chainlock::keyed::{AsyncKeyedPermits, KeyedPermits};
use chainlock_suite::watchdog::{HANG, eventually, watchdog};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// Counts the holders of one key from inside; fails if they ever exceed the permits.
struct Inside {
    now: AtomicUsize,
    most: AtomicUsize,
    permits: usize,
}

impl Inside {
    fn new(permits: usize) -> Self {
        Self {
            now: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            permits,
        }
    }
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(
            now <= self.permits,
            "{now} holders of {} permits",
            self.permits
        );
        self.most.fetch_max(now, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn at_most_n_holders_per_key_and_keys_are_independent() {
    let permits = KeyedPermits::new(3);
    let held: Vec<_> = (0..3).map(|_| permits.acquire("a")).collect();
    assert_eq!(permits.available(&"a"), 0);
    assert!(permits.try_acquire("a").is_none());
    assert!(permits.try_acquire("b").is_some());
    drop(held);
    assert_eq!(permits.available(&"a"), 3);
    assert!(permits.is_empty());
}

#[test]
#[should_panic(expected = "at least one permit")]
fn zero_permits_is_refused() {
    let _ = KeyedPermits::<u8>::new(0);
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let _watchdog = watchdog("waiters_are_served_in_arrival_order");
    let permits = KeyedPermits::new(1);
    let order = Mutex::new(Vec::new());
    let held = permits.acquire(0);
    thread::scope(|s| {
        for id in 1..=4 {
            let (permits, order) = (&permits, &order);
            s.spawn(move || {
                let _p = permits.acquire(0);
                order.lock().unwrap().push(id);
            });
            eventually("queued", || permits.waiting(&0) >= id);
        }
        assert!(permits.try_acquire(0).is_none(), "no barging");
        drop(held);
    });
    assert_eq!(order.into_inner().unwrap(), [1, 2, 3, 4]);
    assert!(permits.is_empty());
}

#[test]
fn timeouts_racing_releases_never_lose_a_grant() {
    let _watchdog = watchdog("timeouts_racing_releases_never_lose_a_grant");
    let permits = KeyedPermits::new(2);
    for round in 0..2_000_u64 {
        let (a, b) = (permits.acquire(0), permits.acquire(0));
        thread::scope(|s| {
            let waiter =
                s.spawn(|| drop(permits.try_acquire_for(0, Duration::from_micros(round % 50))));
            if round % 3 == 0 {
                thread::yield_now();
            }
            drop(a);
            waiter.join().unwrap();
        });
        drop(b);
        assert!(permits.is_empty(), "round {round}");
        assert_eq!(permits.available(&0), 2, "round {round}");
    }
}

#[test]
fn multi_key_acquisition_is_all_or_nothing_and_never_deadlocks() {
    let _watchdog = watchdog("multi_key_acquisition_is_all_or_nothing_and_never_deadlocks");
    let permits = KeyedPermits::new(1);
    let blocker = permits.acquire("c");
    assert!(
        permits
            .try_acquire_all_for(["a", "b", "c"], Duration::from_millis(5))
            .is_none()
    );
    assert_eq!(permits.len(), 1, "only the blocker's key");
    drop(blocker);
    assert!(permits.is_empty());
    let permits = KeyedPermits::new(1);
    thread::scope(|s| {
        for t in 0..4 {
            let permits = &permits;
            s.spawn(move || {
                for _ in 0..500 {
                    let keys = if t % 2 == 0 { [1, 2, 3] } else { [3, 2, 1] };
                    drop(permits.acquire_all(keys));
                }
            });
        }
    });
    assert!(permits.is_empty());
}

/// A key whose `Drop` panics when `boom` (`Eq`/`Hash` on `id`).
#[derive(Debug)]
struct Key {
    id: u32,
    boom: bool,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}
impl Eq for Key {}
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}
impl Drop for Key {
    fn drop(&mut self) {
        assert!(!self.boom || thread::panicking(), "drop panics");
    }
}

#[test]
fn a_panicking_key_destructor_leaves_no_permit_taken() {
    let permits = KeyedPermits::new(2);
    let held = permits.acquire(Key { id: 1, boom: false });
    // Granted (a permit is free), then the duplicate key panics: the permit is given back.
    let result = catch_unwind(AssertUnwindSafe(|| {
        drop(permits.acquire(Key { id: 1, boom: true }));
    }));
    assert!(result.is_err());
    assert_eq!(permits.available(&Key { id: 1, boom: false }), 1);
    drop(held);
    assert!(permits.is_empty());
}

#[test]
fn stress_never_more_than_n_holders_and_every_waiter_served() {
    const THREADS: u64 = 8;
    const OPS: usize = 2_000;
    const KEYS: usize = 3;
    const PERMITS: usize = 3;
    let _watchdog = watchdog("stress_never_more_than_n_holders_and_every_waiter_served");
    let permits = KeyedPermits::new(PERMITS);
    let inside: Vec<Inside> = (0..KEYS).map(|_| Inside::new(PERMITS)).collect();
    let served = AtomicUsize::new(0);
    thread::scope(|s| {
        for seed in 0..THREADS {
            let (permits, inside, served) = (&permits, &inside, &served);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let key = rng.random_range(0..KEYS);
                    let permit = if rng.random_bool(0.3) {
                        permits
                            .try_acquire_for(key, Duration::from_micros(rng.random_range(0..200)))
                    } else {
                        Some(permits.acquire(key))
                    };
                    if let Some(_permit) = permit {
                        inside[key].enter();
                        thread::yield_now();
                        inside[key].leave();
                    }
                    served.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(served.load(Ordering::Relaxed), THREADS as usize * OPS);
    assert!(
        inside.iter().any(|key| key.most.load(Ordering::SeqCst) > 1),
        "permits were shared"
    );
    assert!(permits.is_empty());
}

#[test]
fn a_million_distinct_keys_leave_the_manager_empty() {
    let permits = KeyedPermits::new(2);
    for key in 0..1_000_000_u64 {
        let a = permits.acquire(key);
        let b = permits.acquire(key);
        drop((a, b));
    }
    assert_eq!(permits.len(), 0);
}

mod async_permits {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[tokio::test]
    async fn fifo_and_cancel_safety() {
        let permits = AsyncKeyedPermits::new(1);
        let held = permits.acquire("k").await;
        let mut granted = Box::pin(permits.acquire("k"));
        let mut next = Box::pin(permits.acquire("k"));
        assert!(poll_once(granted.as_mut()).is_pending());
        assert!(poll_once(next.as_mut()).is_pending());
        drop(held); // grants `granted`, never polled again
        assert!(poll_once(next.as_mut()).is_pending());
        drop(granted);
        assert!(
            poll_once(next.as_mut()).is_ready(),
            "the permit was passed on"
        );
        drop(next);
        let held = permits.acquire("k").await;
        let timed = tokio::time::timeout(Duration::from_millis(5), permits.acquire("k")).await;
        assert!(timed.is_err());
        assert_eq!(permits.waiting(&"k"), 0);
        drop(held);
        assert!(permits.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn stress_with_cancellations_never_more_than_n() {
        const TASKS: u64 = 16;
        const OPS: usize = 400;
        const PERMITS: usize = 2;
        let permits = Arc::new(AsyncKeyedPermits::new(PERMITS));
        let inside = Arc::new(Inside::new(PERMITS));
        let cancelled = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for seed in 0..TASKS {
            let (permits, inside, cancelled) = (
                Arc::clone(&permits),
                Arc::clone(&inside),
                Arc::clone(&cancelled),
            );
            tasks.push(tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let timeout = Duration::from_micros(rng.random_range(0..300));
                    match tokio::time::timeout(timeout, permits.acquire(0_u8)).await {
                        Ok(_p) => {
                            inside.enter();
                            tokio::task::yield_now().await;
                            inside.leave();
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
        assert!(cancelled.load(Ordering::Relaxed));
        assert!(permits.is_empty());
    }
}

/// The forms added by the vocabulary change: each refuses or times out while the permits
/// are taken, and succeeds once one is free.
#[test]
fn every_timed_form_expires_while_held_and_succeeds_when_free() {
    let hosts = KeyedPermits::new(1);
    let soon = || Instant::now() + Duration::from_millis(5);
    let b = hosts.acquire("b");
    assert!(hosts.try_acquire_all(["a", "b"]).is_none());
    assert!(hosts.try_acquire_all_until(["a", "b"], soon()).is_none());
    assert_eq!(hosts.available("a"), 1, "all or nothing");
    drop(b);
    let held = hosts
        .try_acquire_all_until(["b", "a"], soon())
        .expect("free");
    assert_eq!(held.len(), 2);
    assert!(hosts.try_acquire_all(["a"]).is_none());
    drop(held);
    assert_eq!(hosts.try_acquire_all(["a", "b"]).map(|g| g.len()), Some(2));
    assert!(hosts.is_empty());
}

#[tokio::test]
async fn async_timed_forms_expire_while_held_and_succeed_when_free() {
    let hosts = AsyncKeyedPermits::new(1);
    let short = Duration::from_millis(5);
    let soon = || Instant::now() + short;
    let held = hosts.acquire("h").await;
    assert!(hosts.try_acquire_for("h", short).await.is_none());
    assert!(hosts.try_acquire_until("h", soon()).await.is_none());
    assert!(hosts.try_acquire_all_for(["g", "h"], short).await.is_none());
    assert!(
        hosts
            .try_acquire_all_until(["g", "h"], soon())
            .await
            .is_none()
    );
    assert_eq!(hosts.available("g"), 1, "all or nothing");
    drop(held);
    assert!(hosts.try_acquire_for("h", short).await.is_some());
    assert!(hosts.try_acquire_until("h", soon()).await.is_some());
    let all = hosts
        .try_acquire_all_for(["h", "g"], short)
        .await
        .expect("free");
    assert_eq!(all.into_guards().len(), 2);
    assert!(
        hosts
            .try_acquire_all_until(["g", "h"], soon())
            .await
            .is_some()
    );
    assert!(hosts.is_empty());
}
