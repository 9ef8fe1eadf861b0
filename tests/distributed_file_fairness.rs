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
