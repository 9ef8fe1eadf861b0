//! Contention telemetry of the acquisitions the first release did not record (feature
//! `telemetry`): async room entries (counts, contention, waits, holds across `.await`,
//! cancellation) and the multi-stripe calls of `Striped`, with sites at this file's lines.
//!
//! Telemetry is process-wide: the tests take one lock (`serial`) so that one test's
//! `enable`/`disable` never changes another's, and each names its locks uniquely.

use std::future::Future;
use std::pin::pin;
use std::sync::MutexGuard;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use chainlock::keyed::{KeyedLocks, KeyedPermits, KeyedRwLocks};
use chainlock::rooms::Rooms;
use chainlock::striped::Striped;
use chainlock::telemetry::{self, Config, LockName, LockStats};
use chainlock_suite::watchdog::{eventually, watchdog};

type Mutex<T> = chainlock::parking_lot::Mutex<T>;
type RwLock<T> = chainlock::parking_lot::RwLock<T>;

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The statistics of `lock` now (panics if none were recorded).
fn stats(lock: &LockName) -> LockStats {
    telemetry::report()
        .locks
        .into_iter()
        .find(|stats| &stats.lock == lock)
        .unwrap_or_else(|| panic!("no statistics for {lock}"))
}

/// The line of the live holder of `lock`, if any.
fn holder_line(lock: &LockName) -> Option<u32> {
    let live = telemetry::live();
    let holder = live.holders.iter().find(|h| &h.lock == lock)?;
    assert_eq!(holder.site.file(), file!());
    Some(holder.site.line())
}

fn room(rooms: &str, room: &str) -> LockName {
    LockName::Room {
        rooms: rooms.into(),
        room: room.into(),
    }
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn async_room_entries_count_waits_holds_and_cancels() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let rooms = Rooms::new(2).telemetry_name("async rooms");
    let serving = room("async rooms", "0");

    // Uncontended: ready on the first poll; held at this line.
    let free_line = line!() + 1;
    let entry = rooms.enter_async(0);
    let Poll::Ready(guard) = poll_once(pin!(entry)) else {
        panic!("a free room is entered on the first poll");
    };
    assert_eq!(holder_line(&serving), Some(free_line));
    drop(guard);

    // Contended: the first poll is pending until room 1 is left.
    let maintaining = rooms.enter(1);
    let waiter_line = line!() + 1;
    let mut entry = pin!(rooms.enter_async(0));
    assert!(poll_once(entry.as_mut()).is_pending());
    let waiting = telemetry::live();
    let waiter = waiting
        .waiters
        .iter()
        .find(|w| w.lock == serving)
        .expect("the pending entry waits, live");
    assert_eq!(waiter.site.line(), waiter_line);
    assert_eq!(waiter.site.file(), file!());
    std::thread::sleep(Duration::from_millis(2)); // a wait of at least 2 ms, not a sync
    drop(maintaining);
    let Poll::Ready(guard) = poll_once(entry.as_mut()) else {
        panic!("room 1 was left: room 0 opens");
    };
    assert!(
        telemetry::live().waiters.iter().all(|w| w.lock != serving),
        "the wait ended"
    );
    drop(guard);

    // Cancelled: pending, then dropped; gave up, no wait left behind, not counted.
    let maintaining = rooms.enter(1);
    {
        let mut entry = pin!(rooms.enter_async(0));
        assert!(poll_once(entry.as_mut()).is_pending());
        assert!(telemetry::live().waiters.iter().any(|w| w.lock == serving));
    }
    assert!(telemetry::live().waiters.iter().all(|w| w.lock != serving));
    drop(maintaining);

    let stats = stats(&serving);
    assert_eq!((stats.acquisitions, stats.contended), (2, 1));
    assert_eq!(
        stats.wait.count, 2,
        "both entries are timed (sample every 1)"
    );
    assert!(
        stats.wait.max >= Duration::from_millis(2),
        "{:?}",
        stats.wait
    );
    assert_eq!(stats.waiter_sites.len(), 1);
    assert_eq!(stats.waiter_sites[0].site.line(), waiter_line);
    assert_eq!(
        (stats.hold.count, stats.hold_across_await.count),
        (0, 2),
        "async entries are holds across `.await`"
    );
    assert_eq!(crate::stats(&room("async rooms", "1")).hold.count, 2);
}

#[test]
fn owned_and_timed_async_room_entries_are_the_callers() {
    let _serial = serial();
    telemetry::enable(Config::new());
    let rooms = std::sync::Arc::new(Rooms::new(2).telemetry_name("timed rooms"));
    let serving = room("timed rooms", "0");
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async {
            let owned_line = line!() + 1;
            let owned = rooms.enter_owned_async(0).await;
            tokio::task::yield_now().await;
            let owned_site = holder_line(&serving);
            drop(owned);
            let for_line = line!() + 1;
            let entered = rooms.try_enter_for_async(0, Duration::from_secs(30)).await;
            let for_site = holder_line(&serving);
            drop(entered.expect("a free room"));
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            let until_line = line!() + 1;
            let entered = rooms.try_enter_until_async(0, deadline).await;
            let until_site = holder_line(&serving);
            drop(entered.expect("a free room"));
            assert_eq!(
                [owned_site, for_site, until_site],
                [Some(owned_line), Some(for_line), Some(until_line)]
            );
            // Timed out: gave up, not counted.
            let maintaining = rooms.enter(1);
            let late = rooms.try_enter_for_async(0, Duration::from_millis(1)).await;
            assert!(late.is_none());
            drop(maintaining);
        });
    let stats = stats(&serving);
    assert_eq!((stats.acquisitions, stats.contended), (3, 0));
    assert_eq!(stats.hold_across_await.count, 3);
    assert!(telemetry::live().waiters.iter().all(|w| w.lock != serving));
}

/// Two keys of `stripes` on different stripes, the lower stripe first.
fn two_stripes<L>(stripes: &Striped<L>) -> (u32, u32) {
    let first = 0_u32;
    let second = (1..1000)
        .find(|k| stripes.index_of(k) != stripes.index_of(&first))
        .unwrap();
    if stripes.index_of(&first) < stripes.index_of(&second) {
        (first, second)
    } else {
        (second, first)
    }
}

#[test]
fn multi_stripe_calls_count_each_stripe_at_the_callers_line() {
    let _serial = serial();
    let _watchdog = watchdog("multi_stripe_calls_count_each_stripe_at_the_callers_line");
    telemetry::enable(Config::new());
    let stripes: Striped<Mutex<()>> = Striped::new(4).telemetry_name("bulk");
    let (low, high) = two_stripes(&stripes);
    let stripe = |key: u32| LockName::Stripe {
        set: "bulk".into(),
        index: stripes.index_of(&key),
    };

    drop(stripes.lock_all([high, low, high]));
    drop(stripes.try_lock_all([low, high]).expect("free"));
    drop(stripes.try_lock_all_for([low, high], Duration::from_secs(30)));
    // Busy low stripe: `try_lock_all` gives up on it (not a wait) and never reaches high.
    let held = stripes.lock(&low);
    assert!(stripes.try_lock_all([low, high]).is_none());
    // Contended: the bulk call waits on the low stripe, at this file's line.
    let waiter_line = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let line = line!() + 1;
            drop(stripes.lock_all([low, high]));
            line
        });
        eventually("the bulk waiter is seen", || {
            telemetry::live()
                .waiters
                .iter()
                .any(|w| w.lock == stripe(low))
        });
        let live = telemetry::live();
        let waiting = live.waiters.iter().find(|w| w.lock == stripe(low)).unwrap();
        assert_eq!(waiting.site.file(), file!());
        drop(held);
        waiter.join().unwrap()
    });
    let low_stats = stats(&stripe(low));
    assert_eq!((low_stats.acquisitions, low_stats.contended), (5, 1));
    assert_eq!(low_stats.wait.count, 5);
    assert_eq!(low_stats.waiter_sites.len(), 1);
    assert_eq!(low_stats.waiter_sites[0].site.line(), waiter_line);
    assert_eq!(low_stats.waiter_sites[0].site.file(), file!());
    let high_stats = stats(&stripe(high));
    assert_eq!((high_stats.acquisitions, high_stats.contended), (4, 0));

    let rw: Striped<RwLock<()>> = Striped::new(4).telemetry_name("bulk rw");
    let (low, high) = two_stripes(&rw);
    drop(rw.read_all([low, high]));
    drop(rw.write_all([low, high]));
    drop(rw.try_read_all([low]).expect("free"));
    drop(rw.try_write_all_until([high], std::time::Instant::now()));
    let rw_stripe = |key: u32| LockName::Stripe {
        set: "bulk rw".into(),
        index: rw.index_of(&key),
    };
    assert_eq!(stats(&rw_stripe(low)).acquisitions, 3);
    assert_eq!(stats(&rw_stripe(high)).acquisitions, 3);
}

/// The lines of the live holders of locks whose names contain `part`.
fn holder_lines(part: &str) -> Vec<u32> {
    let live = telemetry::live();
    let mut lines: Vec<u32> = live
        .holders
        .iter()
        .filter(|h| h.lock.to_string().contains(part))
        .inspect(|h| assert_eq!(h.site.file(), file!(), "{h:?}"))
        .map(|h| h.site.line())
        .collect();
    lines.sort_unstable();
    lines
}

#[test]
fn multi_key_calls_are_sited_at_the_callers_line() {
    let _serial = serial();
    telemetry::enable(Config::new());

    let semaphores = Striped::semaphores(4, 1);
    let (low, high) = two_stripes(&semaphores);
    let line = line!() + 1;
    let permits = semaphores.acquire_all([low, high]);
    // The stripes of a striped semaphore are named after the library's line: find them
    // by their holders' site, this file.
    let snapshot = telemetry::live();
    let ours: Vec<_> = snapshot
        .holders
        .iter()
        .filter(|h| h.site.file() == file!())
        .collect();
    assert_eq!(ours.len(), 2, "{snapshot}");
    assert!(ours.iter().all(|h| h.site.line() == line));
    drop(permits);
    let line = line!() + 1;
    let permits = semaphores.try_acquire_all_for([low, high], Duration::from_secs(30));
    assert!(
        telemetry::live()
            .holders
            .iter()
            .filter(|h| h.site.file() == file!())
            .all(|h| h.site.line() == line)
    );
    drop(permits);

    let locks = KeyedLocks::<u32>::new().telemetry_name("multi locks");
    let line = line!() + 1;
    let held = locks.lock_all([2, 1]);
    assert_eq!(holder_lines("multi locks"), [line, line]);
    drop(held);
    let line = line!() + 1;
    let held = locks.try_lock_all([2, 1]);
    assert_eq!(holder_lines("multi locks"), [line, line]);
    drop(held);
    let line = line!() + 1;
    let held = locks.try_lock_all_for([2, 1], Duration::from_secs(30));
    assert_eq!(holder_lines("multi locks"), [line, line]);
    drop(held);

    let rw = KeyedRwLocks::<u32>::new().telemetry_name("multi rw");
    let line = line!() + 1;
    let held = (rw.read_all([1, 2]), rw.try_read_all([3]));
    assert_eq!(holder_lines("multi rw"), [line, line, line]);
    drop(held);
    let line = line!() + 1;
    let held = rw.try_write_all_for([1, 2], Duration::from_secs(30));
    assert_eq!(holder_lines("multi rw"), [line, line]);
    drop(held);

    let permits = KeyedPermits::<u32>::new(2).telemetry_name("multi permits");
    let line = line!() + 1;
    let held = (permits.acquire_all([1, 2]), permits.try_acquire_all([3]));
    assert_eq!(holder_lines("multi permits"), [line, line, line]);
    drop(held);
}

/// A key whose `Debug` locks another key of the same manager: naming a key for the
/// statistics runs that `Debug`, which must not happen under the manager's hot-key table
/// (every acquisition of the manager takes it: the lock below would never return).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Reentrant(u32);

static REENTRANT: std::sync::LazyLock<KeyedLocks<Reentrant>> = std::sync::LazyLock::new(|| {
    KeyedLocks::new()
        .telemetry_name("reentrant")
        .telemetry_keys_debug()
});

impl std::fmt::Debug for Reentrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == 1 {
            drop(REENTRANT.lock(Reentrant(2)));
        }
        write!(f, "k{}", self.0)
    }
}

#[test]
fn a_key_whose_debug_locks_the_same_manager_is_named_without_a_deadlock() {
    let _serial = serial();
    let dog = watchdog("a_key_whose_debug_locks_the_same_manager_is_named_without_a_deadlock");
    telemetry::enable(Config::new());
    drop(REENTRANT.lock(Reentrant(1)));
    drop(REENTRANT.lock(Reentrant(1)));
    let named = |key: &str| LockName::Key {
        manager: "reentrant".into(),
        key: key.into(),
    };
    assert_eq!(stats(&named("k1")).acquisitions, 2);
    assert!(stats(&named("k2")).acquisitions >= 1);
    telemetry::disable();
    drop(dog);
}

/// A `tracing` subscriber that panics on every event.
struct Panicking;

impl tracing::Subscriber for Panicking {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        panic!("a subscriber that panics");
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_subscriber_that_panics_on_the_slow_wait_report_does_not_keep_the_lock() {
    let _serial = serial();
    let dog = watchdog("a_subscriber_that_panics_on_the_slow_wait_report_does_not_keep_the_lock");
    telemetry::enable(Config::new().slow_wait(Duration::from_nanos(1)));
    let locks = KeyedLocks::<u32>::new().telemetry_name("panicking-subscriber");
    thread::scope(|scope| {
        let held = locks.lock(1);
        let waiter = scope.spawn(|| drop(locks.lock(1)));
        eventually("the waiter waits", || {
            telemetry::live()
                .waiters
                .iter()
                .any(|wait| matches!(&wait.lock, LockName::Key { manager, .. } if &**manager == "panicking-subscriber"))
        });
        // The release reports the slow wait it ends to a subscriber that panics: the key
        // must be released all the same.
        tracing::subscriber::with_default(Panicking, || drop(held));
        waiter.join().expect("the waiter got the key and let it go");
    });
    assert!(locks.try_lock(1).is_some(), "the key is free");
    telemetry::disable();
    drop(dog);
}
