//! Contention telemetry of the named locks (feature `telemetry`): exact counts under a
//! deterministic schedule, waits against known waits, sites at this file's lines, the live
//! snapshot of a planted holder and waiter, hot keys, sampling, async holds, and the
//! wait-for cycle of a planted ABBA deadlock (debug builds).
//!
//! Telemetry is process-wide: the tests take one lock (`serial`) so that one test's
//! `enable`/`disable` never changes another's, and each names its managers uniquely.

use std::sync::{MutexGuard, mpsc};
// The planted deadlock's test (debug builds only: cycles are checked there) uses these.
#[cfg(debug_assertions)]
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use chainlock::keyed::{AsyncKeyedLocks, KeyedLocks, KeyedPermits, KeyedRwLocks};
use chainlock::rooms::Rooms;
use chainlock::striped::{Semaphore, Striped};
use chainlock::telemetry::{self, Config, LockName, LockStats};
use chainlock_suite::watchdog::{eventually, watchdog};

type Mutex<T> = chainlock::parking_lot::Mutex<T>;

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn key(manager: &str, key: &str) -> LockName {
    LockName::Key {
        manager: manager.into(),
        key: key.into(),
    }
}

/// The statistics of `lock` now (panics if none were recorded).
fn stats(lock: &LockName) -> LockStats {
    telemetry::report()
        .locks
        .into_iter()
        .find(|stats| &stats.lock == lock)
        .unwrap_or_else(|| panic!("no statistics for {lock}"))
}

fn stats_opt(lock: &LockName) -> Option<LockStats> {
    telemetry::report()
        .locks
        .into_iter()
        .find(|stats| &stats.lock == lock)
}

#[test]
fn counts_are_exact_and_sites_are_the_callers() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("counts")
        .telemetry_keys_debug();
    for _ in 0..3 {
        drop(locks.lock(1));
    }
    drop(locks.try_lock(2));
    drop(locks.try_lock_for(2, Duration::from_secs(1)));

    let one = stats(&key("counts", "1"));
    assert_eq!((one.acquisitions, one.contended), (3, 0));
    assert_eq!(one.hold.count, 3);
    assert_eq!(
        one.wait.count, 3,
        "sampled uncontended acquisitions are timed too"
    );
    assert!(one.waiter_sites.is_empty() && one.holder_sites.is_empty());
    let two = stats(&key("counts", "2"));
    assert_eq!((two.acquisitions, two.contended, two.hold.count), (2, 0, 2));

    // The holder's site is this file's line, seen through `live`.
    let held_line = line!() + 1;
    let held = locks.lock(9);
    let live = telemetry::live();
    let holding = live
        .holders
        .iter()
        .find(|h| h.lock == key("counts", "9"))
        .expect("the hold is live");
    assert_eq!(holding.site.file(), file!());
    assert_eq!(holding.site.line(), held_line);
    drop(held);
    assert!(
        !telemetry::live()
            .holders
            .iter()
            .any(|h| h.lock == key("counts", "9")),
        "a released hold leaves the snapshot"
    );
}

#[test]
fn a_known_wait_is_recorded_with_both_sites_and_shown_live() {
    let _serial = serial();
    let _watchdog = watchdog("a_known_wait_is_recorded_with_both_sites_and_shown_live");
    telemetry::enable(Config::new());
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("known-wait")
        .telemetry_keys_debug();
    let name = key("known-wait", "7");

    let holder_line = line!() + 1;
    let held = locks.lock(7);
    let (done, finished) = mpsc::channel();
    let mut seen_waiting = Duration::ZERO;
    thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            let waiter_line = line!() + 1;
            let guard = locks.lock(7);
            let outer = start.elapsed();
            drop(guard);
            done.send((waiter_line, outer)).unwrap();
        });
        // The holder holds until the waiter is seen waiting, with both sites.
        eventually("the waiter is seen waiting on key 7", || {
            telemetry::live().waiters.iter().any(|w| w.lock == name)
        });
        let live = telemetry::live();
        let waiting = live.waiters.iter().find(|w| w.lock == name).unwrap();
        assert_eq!(waiting.site.file(), file!());
        assert_eq!(waiting.holders.len(), 1, "{live}");
        assert_eq!(waiting.holders[0].site.line(), holder_line);
        seen_waiting = waiting.waited_for;
        drop(held);
    });
    let (waiter_line, outer) = finished.recv().unwrap();

    let stats = stats(&name);
    assert_eq!((stats.acquisitions, stats.contended), (2, 1));
    assert_eq!(
        stats.waiters_at_release, 1,
        "one waiter when the holder released"
    );
    // The recorded wait covers what the test saw and fits in what the waiter measured (the
    // waiter's own: on a loaded machine the holder's uncontended acquisition, also timed,
    // can be preempted for longer than the wait lasted).
    assert!(
        stats.wait.max >= seen_waiting,
        "{:?} < {seen_waiting:?}",
        stats.wait.max
    );
    assert_eq!(stats.waiter_sites.len(), 1);
    let waited = stats.waiter_sites[0].total;
    assert!(waited <= outer, "{waited:?} > {outer:?}");
    assert_eq!(stats.waiter_sites[0].site.line(), waiter_line);
    assert_eq!(stats.waiter_sites[0].count, 1);
    assert!(stats.waiter_sites[0].total >= seen_waiting);
    // Go's semantics: the releaser's site is charged the wait its release ended.
    assert_eq!(stats.holder_sites.len(), 1);
    assert_eq!(stats.holder_sites[0].site.line(), holder_line);
    assert!(stats.holder_sites[0].total >= seen_waiting);
    assert!(stats.wait.p99 <= stats.wait.max && stats.wait.p50 >= stats.wait.min);
}

/// Two waiters queue behind a holder: the first release ends the first wait, the second
/// the second. Each wait is charged to the releasers once (Go 1.22's mutex profile): the
/// delay charged to the holder sites never exceeds the waiting the waiters measured. (A
/// release charging the longest wait times the waiters charged the second waiter's wait
/// twice.)
#[test]
fn each_wait_is_charged_to_the_releasers_once() {
    let _serial = serial();
    let _watchdog = watchdog("each_wait_is_charged_to_the_releasers_once");
    telemetry::enable(Config::new());
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("charged")
        .telemetry_keys_debug();
    let name = key("charged", "3");
    let held = locks.lock(3);
    let waiting = |n: usize| {
        eventually("the waiters are seen waiting on key 3", || {
            telemetry::live()
                .waiters
                .iter()
                .filter(|w| w.lock == name)
                .count()
                == n
        });
    };
    thread::scope(|s| {
        let first = s.spawn(|| drop(locks.lock(3)));
        waiting(1);
        let second = s.spawn(|| drop(locks.lock(3)));
        waiting(2);
        drop(held);
        first.join().unwrap();
        second.join().unwrap();
    });
    let stats = stats(&name);
    assert_eq!(stats.contended, 2);
    let charged: Duration = stats.holder_sites.iter().map(|site| site.total).sum();
    assert!(charged > Duration::ZERO, "the releases were charged");
    assert!(
        charged <= stats.wait.total,
        "charged {charged:?}, waited {:?}",
        stats.wait.total
    );
}

/// A wait that ends without the lock (here a writer's deadline passes while a second reader
/// still holds the key) is timed in `gave_up`, not counted as an acquisition; the release
/// of the first reader during it was charged to that reader's site, so the charges stay
/// within the waits (`wait` and `gave_up`). (Before `gave_up`, such a wait was charged and
/// never timed: the charges exceeded the waits.)
#[test]
fn a_wait_given_up_is_timed_and_its_charges_stay_within_the_waits() {
    let _serial = serial();
    let _watchdog = watchdog("a_wait_given_up_is_timed_and_its_charges_stay_within_the_waits");
    telemetry::enable(Config::new());
    telemetry::reset();
    let locks = KeyedRwLocks::<u32>::new()
        .telemetry_name("gave-up")
        .telemetry_keys_debug();
    let name = key("gave-up", "3");
    let (first, second) = (locks.read(3), locks.read(3));
    let deadline = Duration::from_millis(300);
    thread::scope(|s| {
        let writer = s.spawn(|| locks.try_write_for(3, deadline).is_none());
        eventually("the writer waits on key 3", || {
            telemetry::live().waiters.iter().any(|w| w.lock == name)
        });
        drop(first);
        assert!(
            writer.join().unwrap(),
            "the second reader still held the key"
        );
    });
    drop(second);
    let stats = stats(&name);
    assert_eq!((stats.acquisitions, stats.contended), (2, 0), "{stats:?}");
    assert_eq!(stats.gave_up.count, 1, "{stats:?}");
    assert!(stats.gave_up.total >= deadline, "{stats:?}");
    let charged: Duration = stats.holder_sites.iter().map(|site| site.total).sum();
    assert!(
        charged > Duration::ZERO,
        "the first reader's release was charged"
    );
    assert!(
        charged <= stats.wait.total + stats.gave_up.total,
        "charged {charged:?}, waited {:?} + gave up {:?}",
        stats.wait.total,
        stats.gave_up.total
    );
    let table = telemetry::report().table();
    assert!(
        table.contains("waits given up (no lock): 1 waits,"),
        "{table}"
    );
}

/// Sampling 1 in 100: about one acquisition in 100 is sampled (intervals drawn at random,
/// mean 100, the first one too); each sample stands for 100 acquisitions.
/// The sample count of 20,000 acquisitions has a standard deviation of about 8 around 200:
/// the bounds are 6 deviations wide.
#[test]
fn sampling_records_one_in_n_and_scales_the_counts() {
    let _serial = serial();
    telemetry::enable(Config::new().sample_every(100));
    let locks = KeyedLocks::<u32>::new().telemetry_name("sampled");
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..20_000 {
                drop(locks.lock(1));
            }
        });
    });
    telemetry::enable(Config::new());
    let stats = telemetry::report()
        .locks
        .into_iter()
        .find(|s| matches!(&s.lock, LockName::Key { manager, .. } if &**manager == "sampled"))
        .unwrap();
    let samples = stats.hold.count;
    assert!((150..=250).contains(&samples), "{samples} samples");
    assert_eq!(stats.wait.count, samples, "every sample's wait is timed");
    assert_eq!(
        stats.acquisitions,
        samples * 100,
        "each sample stands for 100"
    );
    assert_eq!(stats.contended, 0);
}

/// A thread's first acquisition is no more likely to be sampled than any other: 200 threads
/// started together, one acquisition each, sampling 1 in 100, give about 1 sample (each
/// first interval drawn uniform in 1..199), not 200 (the first acquisition always sampled:
/// threads started together all contend at once, and each such sample counts for 100).
#[test]
fn a_threads_first_acquisition_is_not_always_sampled() {
    let _serial = serial();
    telemetry::enable(Config::new().sample_every(100));
    let locks = KeyedLocks::<u32>::new().telemetry_name("first");
    thread::scope(|s| {
        for _ in 0..200 {
            s.spawn(|| drop(locks.lock(1)));
        }
    });
    telemetry::enable(Config::new());
    let samples = telemetry::report()
        .locks
        .into_iter()
        .find(|s| matches!(&s.lock, LockName::Key { manager, .. } if &**manager == "first"))
        .map_or(0, |stats| stats.hold.count);
    assert!(samples < 20, "{samples} of 200 first acquisitions sampled");
}

/// Three keys taken in turn, sampling 1 in 3: every key is sampled and its estimate is
/// near its true count. A fixed period of 3 would sample only the first key (and estimate
/// 30,000 acquisitions for it, none for the others).
#[test]
fn sampling_does_not_alias_with_a_fixed_order() {
    let _serial = serial();
    telemetry::enable(Config::new().sample_every(3));
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("aliasing")
        .telemetry_keys_debug();
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..10_000 {
                for k in 1..=3 {
                    drop(locks.lock(k));
                }
            }
        });
    });
    telemetry::enable(Config::new());
    for k in ["1", "2", "3"] {
        let estimate = stats(&key("aliasing", k)).acquisitions;
        assert!(
            (8_000..=12_000).contains(&estimate),
            "key {k}: {estimate} estimated for 10,000"
        );
    }
}

#[test]
fn disabled_records_nothing_and_reset_zeroes() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("switch")
        .telemetry_keys_debug();
    drop(locks.lock(1));
    telemetry::disable();
    assert!(!telemetry::is_enabled());
    drop(locks.lock(1));
    telemetry::enable(Config::new());
    assert_eq!(stats(&key("switch", "1")).acquisitions, 1);
    telemetry::reset();
    assert!(stats_opt(&key("switch", "1")).is_none(), "reset zeroes");
    drop(locks.lock(1));
    assert_eq!(stats(&key("switch", "1")).acquisitions, 1);
}

#[test]
fn hot_keys_are_bounded_and_the_rest_summed() {
    let _serial = serial();
    telemetry::enable(Config::new().hot_keys(2));
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("hot")
        .telemetry_keys_debug();
    for _ in 0..10 {
        drop(locks.lock(1));
        drop(locks.lock(2));
    }
    for cold in 3..=5 {
        drop(locks.lock(cold));
    }
    let report = telemetry::report();
    telemetry::enable(Config::new());
    let mine: Vec<_> = report
        .locks
        .iter()
        .filter(|s| {
            matches!(&s.lock, LockName::Key { manager, .. } | LockName::OtherKeys { manager }
                if &**manager == "hot")
        })
        .collect();
    assert_eq!(mine.len(), 3, "{mine:?}");
    assert_eq!(
        report
            .locks
            .iter()
            .find(|s| s.lock == key("hot", "1"))
            .unwrap()
            .acquisitions,
        10
    );
    let other = report
        .locks
        .iter()
        .find(|s| matches!(&s.lock, LockName::OtherKeys { manager } if &**manager == "hot"))
        .unwrap();
    assert_eq!(other.acquisitions, 3);
    assert_eq!(report.hottest(1).count(), 1);
}

#[test]
fn a_hot_newcomer_takes_the_place_of_the_coldest_key() {
    let _serial = serial();
    telemetry::enable(Config::new().hot_keys(1));
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("newcomer")
        .telemetry_keys_debug();
    drop(locks.lock(1));
    for _ in 0..5 {
        drop(locks.lock(2));
    }
    telemetry::enable(Config::new());
    // Key 2 passed key 1's count: key 1's statistics went to the other keys.
    // Its first acquisition went to the other keys (a count of 1 does not pass 1).
    assert_eq!(stats(&key("newcomer", "2")).acquisitions, 4);
    assert!(stats_opt(&key("newcomer", "1")).is_none());
    let other = stats(&LockName::OtherKeys {
        manager: "newcomer".into(),
    });
    assert_eq!(other.acquisitions, 1 + 1);
}

#[test]
fn every_named_lock_of_the_engine_counts() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let rw = KeyedRwLocks::<u32>::new()
        .telemetry_name("rw")
        .telemetry_keys_debug();
    drop((rw.read(1), rw.read(1)));
    drop(rw.write(1));
    drop(rw.try_upgradable_read(1));
    let rw_stats = stats(&key("rw", "1"));
    assert_eq!((rw_stats.acquisitions, rw_stats.hold.count), (4, 4));

    let permits = KeyedPermits::<u32>::new(2)
        .telemetry_name("permits")
        .telemetry_keys_debug();
    drop((permits.acquire(1), permits.acquire(1)));
    assert!(permits.try_acquire_for(1, Duration::ZERO).is_some());
    assert_eq!(stats(&key("permits", "1")).acquisitions, 3);

    let pool = Semaphore::new(1).telemetry_name("pool");
    drop(pool.acquire());
    drop(pool.try_acquire());
    let pool_stats = stats(&LockName::Stripe {
        set: "pool".into(),
        index: 0,
    });
    assert_eq!(pool_stats.acquisitions, 2);
}

#[test]
fn default_labels_are_the_constructors_line() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let line = line!() + 1;
    let locks = KeyedLocks::<u32>::new().telemetry_keys_debug();
    drop(locks.lock(5));
    let label = format!("{}:{line}", file!());
    assert_eq!(stats(&key(&label, "5")).acquisitions, 1);
}

#[test]
fn an_async_hold_counts_across_await() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let locks = AsyncKeyedLocks::<u32>::new()
        .telemetry_name("async")
        .telemetry_keys_debug();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let guard = locks.lock(1).await;
            tokio::task::yield_now().await;
            drop(guard);
        });
    let stats = stats(&key("async", "1"));
    assert_eq!(stats.acquisitions, 1);
    assert_eq!((stats.hold.count, stats.hold_across_await.count), (0, 1));
}

/// Holds are kept per thread: an async guard taken on a thread that then ends is still
/// listed live (with that thread's name), and its release on another thread removes it and
/// records its hold.
#[test]
fn a_hold_outlives_its_thread_and_ends_on_another() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let locks = AsyncKeyedLocks::<u32>::new()
        .telemetry_name("moved")
        .telemetry_keys_debug();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let guard = thread::scope(|s| {
        thread::Builder::new()
            .name("taker".into())
            .spawn_scoped(s, || runtime.block_on(locks.lock(7)))
            .unwrap()
            .join()
            .unwrap()
    });
    let mine = |live: &telemetry::Live| {
        live.holders
            .iter()
            .filter(|h| h.lock == key("moved", "7"))
            .map(|h| h.thread.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        mine(&telemetry::live()),
        ["a task (acquired on taker)"],
        "the hold outlives the thread that took it"
    );
    thread::scope(|s| {
        s.spawn(move || drop(guard));
    });
    assert!(
        mine(&telemetry::live()).is_empty(),
        "released on another thread"
    );
    let stats = stats(&key("moved", "7"));
    assert_eq!(stats.acquisitions, 1);
    assert_eq!(stats.hold_across_await.count, 1);
}

/// A planted ABBA deadlock with timed waits: the second waiter closes the cycle, which is
/// reported with both sites; both waits then time out (the deadlock is not broken).
#[cfg(debug_assertions)]
#[test]
fn a_planted_abba_deadlock_is_reported_with_both_sites() {
    let _serial = serial();
    let _watchdog = watchdog("a_planted_abba_deadlock_is_reported_with_both_sites");
    let events = events();
    telemetry::enable(Config::new());
    telemetry::reset();
    let locks = Arc::new(
        KeyedLocks::<&str>::new()
            .telemetry_name("abba")
            .telemetry_keys_debug(),
    );
    let both_hold = Arc::new(Barrier::new(2));
    // Each keeps its first key until both waits are over: neither wait is granted.
    let both_waited = Arc::new(Barrier::new(2));
    let timeout = Duration::from_secs(5);
    let spawn = |first: &'static str, second: &'static str| {
        let locks = Arc::clone(&locks);
        let both_hold = Arc::clone(&both_hold);
        let both_waited = Arc::clone(&both_waited);
        thread::spawn(move || {
            let _first = locks.lock(first);
            both_hold.wait();
            let line = line!() + 1;
            let timed_out = locks.try_lock_for(second, timeout).is_none();
            both_waited.wait();
            (line, timed_out)
        })
    };
    let a = spawn("a", "b");
    let b = spawn("b", "a");
    eventually("the cycle is reported", || !telemetry::cycles().is_empty());
    let (line, a_timed_out) = a.join().unwrap();
    let (_, b_timed_out) = b.join().unwrap();
    assert!(
        a_timed_out && b_timed_out,
        "the deadlock is reported, not broken"
    );

    let cycles = telemetry::cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let cycle = &cycles[0];
    assert_eq!(cycle.edges.len(), 2, "{cycle}");
    let mut locks_waited: Vec<String> = cycle.edges.iter().map(|e| e.lock.to_string()).collect();
    locks_waited.sort();
    assert_eq!(locks_waited, ["abba[key \"a\"]", "abba[key \"b\"]"]);
    for edge in &cycle.edges {
        assert_eq!(edge.site.file(), file!());
        assert_eq!(edge.site.line(), line, "the waiter's site");
        assert_eq!(edge.holders.len(), 1, "{cycle}");
        assert_eq!(edge.holders[0].site.line(), line - 3, "the holder's site");
    }
    let caught = events.lock().unwrap().clone();
    assert_eq!(
        caught
            .iter()
            .filter(|e| e.contains("wait-for cycle") && e.contains("abba[key"))
            .count(),
        1,
        "one `tracing::error!` for the cycle: {caught:#?}"
    );
}

#[test]
fn stripes_count_and_time_their_waits() {
    let _serial = serial();
    let _watchdog = watchdog("stripes_count_and_time_their_waits");
    telemetry::enable(Config::new());
    let stripes: Striped<Mutex<()>> = Striped::new(4).telemetry_name("stripes");
    let name = LockName::Stripe {
        set: "stripes".into(),
        index: stripes.index_of(&1_u32),
    };
    drop(stripes.lock(&1_u32));
    drop(stripes.try_lock(&1_u32));
    let held = stripes.lock(&1_u32);
    let waiter_line = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let line = line!() + 1;
            drop(stripes.lock(&1_u32));
            line
        });
        eventually("the stripe's waiter is seen", || {
            telemetry::live().waiters.iter().any(|w| w.lock == name)
        });
        drop(held);
        waiter.join().unwrap()
    });
    let stats = stats(&name);
    assert_eq!((stats.acquisitions, stats.contended), (4, 1));
    assert_eq!(stats.waiter_sites[0].site.line(), waiter_line);
    assert_eq!(
        stats.hold.count, 0,
        "a stripe's own guard is returned: holds are not followed"
    );
}

#[test]
fn rooms_count_entries_holds_and_waits() {
    let _serial = serial();
    let _watchdog = watchdog("rooms_count_entries_holds_and_waits");
    telemetry::enable(Config::new());
    let rooms = Rooms::new(2).telemetry_name("phases");
    let room = |room: &str| LockName::Room {
        rooms: "phases".into(),
        room: room.into(),
    };
    drop((rooms.enter(0), rooms.try_enter(0)));
    let maintaining = rooms.enter(1);
    thread::scope(|s| {
        s.spawn(|| drop(rooms.enter(0)));
        eventually("the waiter for room 0 is seen", || {
            telemetry::live()
                .waiters
                .iter()
                .any(|w| w.lock == room("0"))
        });
        drop(maintaining);
    });
    let serving = stats(&room("0"));
    assert_eq!((serving.acquisitions, serving.contended), (3, 1));
    assert_eq!(serving.hold.count, 3);
    assert_eq!(stats(&room("1")).hold.count, 1);
}

/// The events of `chainlock::telemetry`, caught by a process-wide subscriber: (message and
/// fields as text) per event.
fn events() -> &'static std::sync::Mutex<Vec<String>> {
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    struct Catch;
    struct Text(String);
    impl Visit for Text {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            use std::fmt::Write as _;
            let _ = write!(self.0, "{}={value:?}; ", field.name());
        }
    }
    impl Subscriber for Catch {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            metadata.target().starts_with("chainlock")
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut text = Text(String::new());
            event.record(&mut text);
            EVENTS.lock().unwrap().push(text.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    static EVENTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| tracing::subscriber::set_global_default(Catch).unwrap());
    &EVENTS
}

#[test]
fn a_slow_wait_is_reported_through_tracing_with_the_snapshot() {
    let _serial = serial();
    let _watchdog = watchdog("a_slow_wait_is_reported_through_tracing_with_the_snapshot");
    let events = events();
    telemetry::enable(Config::new().slow_wait(Duration::from_millis(1)));
    let locks = KeyedLocks::<u32>::new()
        .telemetry_name("slow")
        .telemetry_keys_debug();
    let name = key("slow", "1");
    let holder_line = line!() + 1;
    let held = locks.lock(1);
    let waiter_line = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let line = line!() + 1;
            drop(locks.lock(1));
            line
        });
        // Hold until the waiter has waited past the threshold (seen, not slept).
        eventually("the waiter has waited 2 ms", || {
            telemetry::live()
                .waiters
                .iter()
                .any(|w| w.lock == name && w.waited_for >= Duration::from_millis(2))
        });
        drop(held);
        waiter.join().unwrap()
    });
    telemetry::enable(Config::new());
    let caught = events.lock().unwrap().clone();
    let of = |message: &str| -> Vec<String> {
        caught
            .iter()
            .filter(|e| e.contains(&format!("message={message}")) && e.contains("slow[key 1]"))
            .cloned()
            .collect()
    };
    // The waiter's report when its wait ends.
    let waited = of("a slow wait for");
    assert_eq!(waited.len(), 1, "{caught:#?}");
    let waiter_site = format!("{}:{waiter_line}", file!());
    assert!(
        waited[0].contains(&format!("site={waiter_site}")),
        "{}",
        waited[0]
    );
    assert!(waited[0].contains("acquired=true"), "{}", waited[0]);
    // The holder's report as it releases: the snapshot shows it holding, the waiter waiting.
    let released = of("a release ends a slow wait");
    assert_eq!(released.len(), 1, "{caught:#?}");
    let holder = format!("{}:{holder_line}", file!());
    assert!(
        released[0].contains(&format!("holder_site={holder}")),
        "{}",
        released[0]
    );
    assert!(
        released[0].contains(&format!("at {holder}:")),
        "{}",
        released[0]
    );
    assert!(
        released[0].contains(&format!("at {waiter_site}:")),
        "{}",
        released[0]
    );
}
