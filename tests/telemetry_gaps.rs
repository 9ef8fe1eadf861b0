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
use std::time::Duration;

use chainlock::rooms::Rooms;
use chainlock::telemetry::{self, Config, LockName, LockStats};

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
            let entered = rooms.try_enter_for_async(0, Duration::from_secs(60)).await;
            let for_site = holder_line(&serving);
            drop(entered.unwrap().expect("a free room"));
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let until_line = line!() + 1;
            let entered = rooms.try_enter_until_async(0, deadline).await;
            let until_site = holder_line(&serving);
            drop(entered.unwrap().expect("a free room"));
            assert_eq!(
                [owned_site, for_site, until_site],
                [Some(owned_line), Some(for_line), Some(until_line)]
            );
            // Timed out: gave up, not counted.
            let maintaining = rooms.enter(1);
            let late = rooms.try_enter_for_async(0, Duration::from_millis(1)).await;
            assert!(late.unwrap().is_none());
            drop(maintaining);
        });
    let stats = stats(&serving);
    assert_eq!((stats.acquisitions, stats.contended), (3, 0));
    assert_eq!(stats.hold_across_await.count, 3);
    assert!(telemetry::live().waiters.iter().all(|w| w.lock != serving));
}
