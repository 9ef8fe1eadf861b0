//! Lock striping: stripe counts, key spreading, padding, bulk locking (dedup, order,
//! all-or-nothing, no deadlock under contention), read/write stripes, semaphore stripes.

use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::striped::Striped;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng, rngs::SmallRng};

#[test]
fn stripe_counts_round_up_to_powers_of_two() {
    for (asked, got) in [(1, 1), (2, 2), (3, 4), (64, 64), (65, 128), (1000, 1024)] {
        let striped: Striped<Mutex<()>> = Striped::new(asked);
        assert_eq!(striped.stripe_count(), got, "asked for {asked}");
        assert_eq!(striped.iter().len(), got);
        assert!(striped.stripe(got - 1).is_some());
        assert!(striped.stripe(got).is_none());
    }
}

#[test]
#[should_panic(expected = "at least one stripe")]
fn zero_stripes_is_refused() {
    let _: Striped<Mutex<()>> = Striped::new(0);
}

#[test]
fn stripes_do_not_share_cache_lines() {
    let striped: Striped<Mutex<()>> = Striped::new(4);
    let first = std::ptr::from_ref(striped.stripe(0).unwrap()) as usize;
    let second = std::ptr::from_ref(striped.stripe(1).unwrap()) as usize;
    assert!(
        second - first >= 64,
        "stripes {} bytes apart",
        second - first
    );
}

#[test]
fn equal_keys_share_a_stripe_and_keys_spread_evenly() {
    const STRIPES: usize = 64;
    const KEYS: usize = 128_000;
    let striped: Striped<Mutex<()>> = Striped::new(STRIPES);
    assert_eq!(
        striped.index_of("user-17"),
        striped.index_of(&String::from("user-17"))
    );
    let mut per_stripe = [0_usize; STRIPES];
    for key in 0..KEYS {
        per_stripe[striped.index_of(&key)] += 1;
    }
    let mean = KEYS / STRIPES; // 2000; one standard deviation is about 44
    for (stripe, &count) in per_stripe.iter().enumerate() {
        assert!(
            count.abs_diff(mean) < mean / 5,
            "stripe {stripe} got {count} keys"
        );
    }
}

#[test]
fn lock_all_dedups_and_locks_in_ascending_order() {
    let striped: Striped<Mutex<u32>> = Striped::new(16);
    let keys = ["e", "a", "d", "a", "c", "b", "e"];
    let expected = striped.indices_of(keys);
    assert!(expected.is_sorted() && expected.windows(2).all(|w| w[0] < w[1]));
    let mut held = striped.lock_all(keys);
    assert_eq!(held.stripes(), expected);
    assert_eq!(held.len(), expected.len());
    for (_, guard) in held.iter_mut() {
        **guard += 1;
    }
    thread::scope(|s| {
        s.spawn(|| {
            for key in keys {
                assert!(striped.try_lock(key).is_none(), "{key} is held");
            }
        });
    });
    drop(held);
    let total: u32 = striped.iter().map(|stripe| *stripe.lock()).sum();
    assert_eq!(
        total,
        u32::try_from(expected.len()).unwrap(),
        "each stripe once"
    );
    assert!(striped.lock_all(Vec::<u8>::new()).is_empty());
}

#[test]
fn try_lock_all_is_all_or_nothing() {
    let striped: Striped<Mutex<()>> = Striped::new(256);
    let keys: Vec<u32> = (0..8).collect();
    let indices = striped.indices_of(&keys);
    let busy = *indices.last().unwrap();
    thread::scope(|s| {
        let (held_tx, held_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let striped = &striped;
        s.spawn(move || {
            let _held = striped.stripe(busy).unwrap().lock();
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        assert!(striped.try_lock_all(&keys).is_none());
        for &index in &indices[..indices.len() - 1] {
            assert!(
                !striped.stripe(index).unwrap().is_locked(),
                "stripe {index} left locked"
            );
        }
        done_tx.send(()).unwrap();
    });
    assert_eq!(striped.try_lock_all(&keys).unwrap().stripes(), indices);
}

#[test]
fn read_and_write_stripes() {
    let striped: Striped<RwLock<()>> = Striped::new(8);
    let readers = striped.read_all(["x", "y"]);
    let also = striped.read_all(["y", "x"]);
    assert!(striped.try_read("x").is_some());
    assert!(striped.try_write("x").is_none());
    drop((readers, also));
    let writers = striped.write_all(["x", "y"]);
    assert!(striped.try_read("y").is_none());
    drop(writers);
    assert!(striped.try_write("y").is_some());
}

#[test]
fn concurrent_bulk_lockers_never_deadlock_and_count_exactly() {
    const THREADS: u64 = 4;
    const ROUNDS: usize = 3_000;
    // Few stripes: every bulk lock overlaps with the others.
    let striped: Arc<Striped<Mutex<u64>>> = Arc::new(Striped::new(8));
    let start = Arc::new(Barrier::new(THREADS as usize));
    let (done_tx, done_rx) = mpsc::channel();
    for seed in 0..THREADS {
        let (striped, start, done_tx) = (Arc::clone(&striped), Arc::clone(&start), done_tx.clone());
        // Detached threads: if they deadlock, the test fails on the timeout below
        // instead of hanging in a join.
        thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut increments = [0_u64; 8];
            start.wait();
            for _ in 0..ROUNDS {
                let mut keys: Vec<u32> =
                    (0..rng.random_range(1..6)).map(|_| rng.random()).collect();
                keys.shuffle(&mut rng);
                let mut held = striped.lock_all(&keys);
                for (index, guard) in held.iter_mut() {
                    **guard += 1;
                    increments[index] += 1;
                }
            }
            done_tx.send(increments).unwrap();
        });
    }
    let mut expected = [0_u64; 8];
    for _ in 0..THREADS {
        let increments = done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("bulk lockers deadlocked");
        for (total, add) in expected.iter_mut().zip(increments) {
            *total += add;
        }
    }
    for (index, stripe) in striped.iter().enumerate() {
        assert_eq!(*stripe.lock(), expected[index], "stripe {index}");
    }
}

mod semaphores {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread;
    use std::time::{Duration, Instant};

    use chainlock::striped::{Semaphore, Striped};

    fn eventually(what: &str, condition: impl Fn() -> bool) {
        let start = Instant::now();
        while !condition() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "never happened: {what}"
            );
            thread::yield_now();
        }
    }

    #[test]
    fn a_stripe_gives_out_at_most_its_permits() {
        let stripes: Striped<Semaphore> = Striped::semaphores(1, 2);
        let (a, b) = (stripes.acquire("x"), stripes.acquire("y")); // one stripe
        assert!(stripes.try_acquire("z").is_none());
        assert!(
            stripes
                .try_acquire_for("z", Duration::from_millis(5))
                .is_none()
        );
        drop(a);
        assert_eq!(stripes.get("x").available(), 1);
        drop(b);
        assert_eq!(stripes.get("x").available(), 2);
        let held = stripes.acquire_all(["a", "b", "c"]);
        assert_eq!(held.len(), 1, "one permit per distinct stripe");
    }

    #[test]
    fn stripe_waiters_are_served_in_arrival_order() {
        let stripes: Striped<Semaphore> = Striped::semaphores(1, 1);
        let order = Mutex::new(Vec::new());
        let held = stripes.acquire(&0);
        thread::scope(|s| {
            for id in 1..=3 {
                let (stripes, order) = (&stripes, &order);
                s.spawn(move || {
                    let _p = stripes.acquire(&0);
                    order.lock().unwrap().push(id);
                });
                eventually("queued", || stripes.get(&0).waiting() >= id);
            }
            drop(held);
        });
        assert_eq!(order.into_inner().unwrap(), [1, 2, 3]);
    }

    #[test]
    fn stress_never_more_than_the_permits_of_a_stripe() {
        const PERMITS: usize = 3;
        let stripes: Striped<Semaphore> = Striped::semaphores(2, PERMITS);
        let inside: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        thread::scope(|s| {
            for t in 0..8_u64 {
                let (stripes, inside) = (&stripes, &inside);
                s.spawn(move || {
                    for i in 0..1_000_u64 {
                        let key = t * 7 + i;
                        let stripe = stripes.index_of(&key);
                        let permit = if i % 4 == 0 {
                            stripes.try_acquire_for(&key, Duration::from_micros(i % 100))
                        } else {
                            Some(stripes.acquire(&key))
                        };
                        if let Some(_permit) = permit {
                            let now = inside[stripe].fetch_add(1, Ordering::SeqCst) + 1;
                            assert!(now <= PERMITS, "{now} holders of stripe {stripe}");
                            thread::yield_now();
                            inside[stripe].fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        for stripe in stripes.iter() {
            assert_eq!(stripe.available(), PERMITS);
        }
    }
}

/// The semaphore stripes' forms added by the vocabulary change: each refuses or times out
/// while the permit is taken, and succeeds once it is free.
#[test]
fn semaphore_timed_and_bulk_forms_expire_while_held_and_succeed_when_free() {
    use std::time::Instant;
    let hosts = Striped::semaphores(1, 1);
    let short = Duration::from_millis(5);
    let held = hosts.acquire("a");
    assert!(
        hosts
            .try_acquire_until("b", Instant::now() + short)
            .is_none()
    );
    assert!(hosts.try_acquire_all(["a", "b"]).is_none());
    assert!(hosts.try_acquire_all_for(["a", "b"], short).is_none());
    assert!(
        hosts
            .try_acquire_all_until(["b"], Instant::now() + short)
            .is_none()
    );
    drop(held);
    assert!(
        hosts
            .try_acquire_until("b", Instant::now() + short)
            .is_some()
    );
    let all = hosts.try_acquire_all(["a", "b"]).expect("free");
    assert_eq!((all.len(), all.into_guards().len()), (1, 1));
    assert!(hosts.try_acquire_all_for(["a", "b"], short).is_some());
    assert!(
        hosts
            .try_acquire_all_until(["a"], Instant::now() + short)
            .is_some()
    );
    assert_eq!(hosts.get("a").available(), 1);
}

/// The timed forms of mutex and reader-writer stripes (over parking_lot's timed raw locks):
/// each times out while a stripe is held against it, and succeeds once it is free.
#[test]
fn timed_stripe_forms_expire_while_held_and_succeed_when_free() {
    use std::time::Instant;
    let short = Duration::from_millis(5);
    let soon = || Instant::now() + short;

    let mutexes: Striped<Mutex<()>> = Striped::new(1);
    thread::scope(|s| {
        let held = mutexes.lock(&1);
        s.spawn(|| {
            assert!(mutexes.try_lock_for(&2, short).is_none());
            assert!(mutexes.try_lock_until(&2, soon()).is_none());
            assert!(mutexes.try_lock_all_for([1, 2], short).is_none());
            assert!(mutexes.try_lock_all_until([1, 2], soon()).is_none());
        })
        .join()
        .unwrap();
        drop(held);
    });
    assert!(mutexes.try_lock_for(&2, short).is_some());
    assert!(mutexes.try_lock_until(&2, soon()).is_some());
    assert_eq!(
        mutexes.try_lock_all_for([1, 2], short).map(|g| g.len()),
        Some(1)
    );
    assert!(mutexes.try_lock_all_until([1, 2], soon()).is_some());

    let rw: Striped<RwLock<()>> = Striped::new(1);
    let w = rw.write(&1);
    assert!(rw.try_read_for(&2, short).is_none());
    assert!(rw.try_read_until(&2, soon()).is_none());
    assert!(rw.try_read_all([1, 2]).is_none());
    assert!(rw.try_read_all_for([1, 2], short).is_none());
    assert!(rw.try_read_all_until([1, 2], soon()).is_none());
    drop(w);
    let r = rw.read(&1);
    assert!(rw.try_write_for(&2, short).is_none());
    assert!(rw.try_write_until(&2, soon()).is_none());
    assert!(rw.try_write_all([1, 2]).is_none());
    assert!(rw.try_write_all_for([1, 2], short).is_none());
    assert!(rw.try_write_all_until([1, 2], soon()).is_none());
    assert!(
        rw.try_read_all_for([1, 2], short).is_some(),
        "readers share"
    );
    drop(r);
    assert!(rw.try_write_for(&2, short).is_some());
    assert!(rw.try_write_until(&2, soon()).is_some());
    assert!(rw.try_write_all([1, 2]).is_some());
    assert!(rw.try_write_all_for([1, 2], short).is_some());
    assert!(rw.try_write_all_until([1, 2], soon()).is_some());
    assert!(rw.try_read_all_until([1, 2], soon()).is_some());
}
