//! Hang detection for tests of blocking code: a deadlock fails the run instead of hanging it.
//!
//! ```ignore
//! use chainlock_suite::watchdog::{HANG, eventually, watchdog};
//!
//! let _watchdog = watchdog("my_test"); // the process exits with an error after HANG
//! eventually("the waiter queued", || locks.waiting(&key) == 1);
//! ```

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen before it declares a hang: long
/// enough for a loaded 2-core CI machine, short enough that a deadlock ends the run.
pub const HANG: Duration = Duration::from_secs(30);

/// Ends the test process with an error if the test is still running after [`HANG`].
/// Disarmed when dropped.
#[must_use = "the watchdog is disarmed when dropped: bind it to a variable (`let _watchdog`)"]
pub struct Watchdog {
    _disarm: mpsc::Sender<()>,
}

/// Arms a [`Watchdog`] for the test named `test` (the name goes into the failure message).
pub fn watchdog(test: &'static str) -> Watchdog {
    let (disarm, disarmed) = mpsc::channel::<()>();
    thread::spawn(move || {
        if disarmed.recv_timeout(HANG) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!("{test}: still running after {HANG:?}: deadlock");
            std::process::exit(101);
        }
    });
    Watchdog { _disarm: disarm }
}

/// Waits until `condition` holds, failing the test (naming `what`) after [`HANG`] instead of
/// hanging.
///
/// # Panics
///
/// If `condition` does not hold within [`HANG`].
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < HANG, "never happened: {what}");
        thread::yield_now();
    }
}
