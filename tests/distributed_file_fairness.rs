//! The file backend's reader-writer lock prefers writers: under a continuous stream of
//! overlapping readers (real processes), a writer is served within a bound — the readers
//! inside when it reached the turnstile finish, and it goes in (see the module docs of
//! `chainlock::distributed`, "Fairness and bounds").

mod distributed_common;

use chainlock::distributed::LockClient;
use distributed_common::{Holder, Scratch};
use std::time::{Duration, Instant};

/// How long each reader of the stream holds the name.
const HOLD_MS: u64 = 30;

#[test]
fn a_writer_is_served_within_a_bound_under_a_continuous_reader_stream() {
    let scratch = Scratch::new("fair");
    let dir = scratch.path().to_str().unwrap().to_owned();
    let hold_ms = HOLD_MS.to_string();
    // Three reader processes, each holding the name shared for 30 ms and taking it again at
    // once: at almost every instant some reader holds it (the stream that starved writers).
    let _readers: Vec<Holder> = (0..3)
        .map(|_| Holder::spawn_with(&["read-stream", "file", &dir, "catalog", &hold_ms]))
        .collect();
    let locks = LockClient::file(&dir).unwrap();
    let mut slowest = Duration::ZERO;
    for round in 0..10 {
        let start = Instant::now();
        let writer = locks
            .blocking_try_lock_for("catalog", Duration::from_secs(30))
            .unwrap()
            .unwrap_or_else(|| panic!("round {round}: the writer starved for 30 s"));
        let waited = start.elapsed();
        slowest = slowest.max(waited);
        assert!(!writer.is_shared());
        writer.blocking_release().unwrap();
    }
    eprintln!("slowest writer wait under the reader stream: {slowest:?}");
    // The bound: the readers inside (30 ms each) plus turns at the turnstile; generous for a
    // loaded machine, far below a starvation.
    assert!(
        slowest < Duration::from_secs(10),
        "a writer waited {slowest:?} under the reader stream"
    );
}

#[test]
fn a_writer_is_not_overtaken_by_try_lock_shared_readers_of_its_own_client() {
    let scratch = Scratch::new("fair-try");
    let locks = LockClient::file(scratch.path()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Two reader threads of the writer's own client, each taking a new shared hold with
    // `try_lock_shared` before it leaves the one it has (a hand-over): the name is never free
    // while new readers are granted.
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (locks, stop) = (locks.clone(), std::sync::Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut held = None;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    // The previous hold leaves only after the next was asked for.
                    held = locks.blocking_try_lock_shared("catalog").unwrap();
                    // The reader's work (a load, not a synchronization).
                    std::thread::sleep(Duration::from_millis(10));
                }
                drop(held);
            })
        })
        .collect();
    let start = Instant::now();
    while let Some(writer) = locks.blocking_try_lock("catalog").unwrap() {
        drop(writer);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no reader stream"
        );
    }
    let mut slowest = Duration::ZERO;
    for round in 0..3 {
        let start = Instant::now();
        let writer = locks
            .blocking_try_lock_for("catalog", Duration::from_secs(3))
            .unwrap()
            .unwrap_or_else(|| {
                panic!("round {round}: the writer waited 3 s under try_lock_shared readers")
            });
        slowest = slowest.max(start.elapsed());
        writer.blocking_release().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    for reader in readers {
        reader.join().unwrap();
    }
    eprintln!("slowest writer under try_lock_shared readers of its client: {slowest:?}");
    assert!(slowest < Duration::from_secs(1), "{slowest:?}");
}
