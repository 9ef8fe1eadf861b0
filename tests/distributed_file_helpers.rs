//! The file backend's helper threads are bounded per process, not per client: cancelled
//! waiters of many clients leave at most one thread blocked in `flock` per name, and a free
//! name is found free right after. In a test binary of its own, so that no other test's
//! helper threads are counted.

#![cfg(target_os = "linux")]

mod distributed_common;

use chainlock::distributed::LockClient;
use distributed_common::{Holder, Scratch};
use std::time::{Duration, Instant};

/// Threads of this process blocked in (or about to enter) `flock` for a waiter.
fn helper_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == "chainlock-flock")
        .count()
}

#[test]
fn cancelled_waiters_of_many_clients_leave_one_helper_thread() {
    let dir = Scratch::new("file-helpers");
    let mut holder = Holder::spawn("file", dir.path().to_str().unwrap(), "busy");
    for _ in 0..100 {
        // A client of its own each time, as independent parts of a program would have.
        let locks = LockClient::file(dir.path()).unwrap();
        assert!(
            locks
                .blocking_try_lock_for("busy", Duration::from_millis(1))
                .unwrap()
                .is_none()
        );
    }
    let helpers = helper_threads();
    assert!(helpers <= 1, "{helpers} threads wait in flock for one name");
    // While the other process holds it, the name is held: never a false "free".
    let locks = LockClient::file(dir.path()).unwrap();
    assert!(locks.blocking_try_lock("busy").unwrap().is_none());

    holder.kill();
    // The helper left behind takes the lock, drops it and ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    while helper_threads() > 0 {
        assert!(Instant::now() < deadline, "the helper thread never ended");
        std::thread::yield_now();
    }
    for round in 0..300 {
        let guard = locks.blocking_try_lock("busy").unwrap();
        let guard = guard.unwrap_or_else(|| panic!("round {round}: a free name looked held"));
        guard.blocking_release().unwrap();
    }
}
