//! The file backend with real processes: mutual exclusion, `kill -9`, threads, timeouts,
//! cancellation, hostile names, fencing tokens.

mod distributed_common;

use chainlock::distributed::{Error, LockClient};
use distributed_common::{Holder, Scratch, hammer, hostile_names};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[test]
fn eight_processes_never_overlap() {
    let dir = Scratch::new("file-hammer");
    hammer(
        "file",
        dir.path().to_str().unwrap(),
        8,
        500,
        &["alpha", "beta", "gamma"],
    );
}

#[test]
fn kill_9_of_the_holder_frees_the_name_within_a_second() {
    let dir = Scratch::new("file-kill");
    let target = dir.path().to_str().unwrap();
    let mut holder = Holder::spawn("file", target, "orders");
    let locks = LockClient::file(dir.path()).unwrap();
    assert!(
        locks.blocking_try_lock("orders").unwrap().is_none(),
        "the holder holds it"
    );
    holder.kill();
    let start = Instant::now();
    let guard = locks
        .blocking_try_lock_for("orders", Duration::from_secs(1))
        .unwrap();
    let guard = guard.expect("acquired within 1 s of the kill");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(
        guard.token().get() > holder.token,
        "tokens increase across the crash"
    );
}

#[test]
fn threads_of_one_process_never_hold_a_name_at_once() {
    let dir = Scratch::new("file-threads");
    // Two clients as well as two threads: the kernel lock, not only the in-process gate, must
    // exclude (each client has its own gate).
    let clients = [
        LockClient::file(dir.path()).unwrap(),
        LockClient::file(dir.path()).unwrap(),
    ];
    let inside = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let locks = clients[thread % 2].clone();
            let (inside, rounds) = (Arc::clone(&inside), Arc::clone(&rounds));
            scope.spawn(move || {
                for _ in 0..200 {
                    let guard = locks.blocking_lock("shared").unwrap();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two threads hold the name"
                    );
                    std::thread::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    rounds.fetch_add(1, Ordering::Relaxed);
                    drop(guard);
                }
            });
        }
    });
    assert_eq!(rounds.load(Ordering::Relaxed), 800);
}

#[test]
fn tokens_increase_across_clients_and_releases() {
    let dir = Scratch::new("file-tokens");
    let a = LockClient::file(dir.path()).unwrap();
    let b = LockClient::file(dir.path()).unwrap();
    let mut last = 0;
    for round in 0..20 {
        let locks = if round % 2 == 0 { &a } else { &b };
        let guard = locks.blocking_lock("counter").unwrap();
        assert!(guard.token().get() > last);
        last = guard.token().get();
        if round % 3 == 0 {
            drop(guard);
        } else {
            guard.blocking_release().unwrap();
        }
    }
    assert_eq!(last, 20, "the file backend's tokens are consecutive");
}

#[test]
fn timeouts_zero_short_and_infinite() {
    let dir = Scratch::new("file-timeouts");
    let mut holder = Holder::spawn("file", dir.path().to_str().unwrap(), "t");
    let locks = LockClient::file(dir.path()).unwrap();

    let start = Instant::now();
    assert!(
        locks
            .blocking_try_lock_for("t", Duration::ZERO)
            .unwrap()
            .is_none()
    );
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "a zero timeout does not wait"
    );

    let start = Instant::now();
    assert!(
        locks
            .blocking_try_lock_for("t", Duration::from_millis(200))
            .unwrap()
            .is_none()
    );
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(2),
        "waited {elapsed:?}"
    );

    // Infinite: blocks until the holder dies; `Duration::MAX` means the same (no overflow).
    let waiter = {
        let locks = locks.clone();
        std::thread::spawn(move || locks.blocking_lock("t").map(|guard| guard.token().get()))
    };
    let huge = {
        let locks = locks.clone();
        std::thread::spawn(move || {
            locks
                .blocking_try_lock_for("t", Duration::MAX)
                .map(|guard| guard.map(|guard| guard.token().get()))
        })
    };
    distributed_common::wait_for_flock_waiter(&dir.join("n-t.lock"));
    assert!(
        !waiter.is_finished(),
        "an unbounded acquire waits while the name is held"
    );
    assert!(!huge.is_finished(), "a `Duration::MAX` timeout waits too");
    holder.kill();
    let token = waiter.join().unwrap().unwrap();
    assert!(token > holder.token);
    let huge = huge.join().expect("no overflow panic").unwrap();
    assert!(huge.is_some_and(|huge| huge > holder.token && huge != token));
}

#[test]
fn a_grant_racing_a_timeout_is_released() {
    let dir = Scratch::new("file-race");
    let locks = LockClient::file(dir.path()).unwrap();
    let other = LockClient::file(dir.path()).unwrap();
    for step in 0..20_u64 {
        let guard = locks.blocking_lock("race").unwrap();
        let timeout = Duration::from_millis(20);
        let racer = {
            let other = other.clone();
            std::thread::spawn(move || {
                other
                    .blocking_try_lock_for("race", timeout)
                    .unwrap()
                    .map(|g| g.token().get())
            })
        };
        // Release around the moment the racer gives up: the schedule of the race, not a
        // synchronization (every outcome is checked below).
        std::thread::sleep(Duration::from_micros(15_000 + step * 500));
        drop(guard);
        let outcome = racer.join().unwrap();
        // Whatever happened, the name is free again right after, and tokens still increase.
        let again = locks
            .blocking_try_lock_for("race", Duration::from_secs(2))
            .unwrap();
        let again = again.expect("the name is not left locked by a timed-out waiter");
        if let Some(token) = outcome {
            assert!(again.token().get() > token);
        }
    }
}

#[test]
fn cancelled_acquire_leaves_the_name_free() {
    let dir = Scratch::new("file-cancel");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locks = LockClient::file(dir.path()).unwrap();
        let guard = locks.lock("c").await.unwrap();
        let pending = tokio::time::timeout(Duration::from_millis(50), locks.lock("c")).await;
        assert!(pending.is_err(), "the second acquire waits");
        guard.release().await.unwrap();
        let again = tokio::time::timeout(Duration::from_secs(2), locks.lock("c")).await;
        assert!(
            again
                .expect("not left locked by the cancelled acquire")
                .is_ok()
        );
    });
}

#[test]
fn hostile_names_stay_inside_the_directory_and_stay_distinct() {
    let dir = Scratch::new("file-names");
    let locks_dir = dir.join("locks");
    let locks = LockClient::file(&locks_dir).unwrap();
    let names = hostile_names();
    // All held at once: distinct names are distinct locks.
    let guards: Vec<_> = names
        .iter()
        .map(|name| locks.blocking_try_lock(name).unwrap().expect("free"))
        .collect();
    for (name, guard) in names.iter().zip(&guards) {
        assert_eq!(guard.name(), name.as_str());
        assert!(
            locks.blocking_try_lock(name).unwrap().is_none(),
            "same name, same lock"
        );
    }
    let files: Vec<_> = std::fs::read_dir(&locks_dir)
        .unwrap()
        .map(|entry| entry.unwrap())
        .collect();
    assert_eq!(
        files.len(),
        names.len(),
        "one file per name, all inside the lock directory"
    );
    for file in &files {
        assert!(file.file_type().unwrap().is_file());
        assert!(file.file_name().len() < 200);
    }
    let outside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(outside.len(), 1, "nothing escaped the lock directory");
    assert!(
        !std::path::Path::new("/tmp/escape").exists()
            || std::fs::metadata("/tmp/escape").unwrap().is_dir()
    );
}

#[test]
fn a_foreign_file_is_a_clear_error() {
    let dir = Scratch::new("file-corrupt");
    let locks = LockClient::file(dir.path()).unwrap();
    drop(locks.blocking_lock("x").unwrap());
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for len in [13, 100, 3] {
        std::fs::write(&file, vec![b'?'; len]).unwrap();
        match locks.blocking_lock("x") {
            Err(Error::CorruptLockFile { len: reported, .. }) => {
                assert_eq!(reported, len as u64, "the file's length");
            }
            other => panic!("expected CorruptLockFile, got {other:?}"),
        }
    }
    // And the failed acquisition left the name free.
    std::fs::write(&file, 7_u64.to_le_bytes()).unwrap();
    assert_eq!(locks.blocking_lock("x").unwrap().token().get(), 8);
}

#[test]
fn an_unusable_directory_is_a_clear_error() {
    let dir = Scratch::new("file-baddir");
    let not_a_dir = dir.join("file");
    std::fs::write(&not_a_dir, b"").unwrap();
    assert!(matches!(
        LockClient::file(&not_a_dir),
        Err(Error::Io { .. })
    ));
}

#[test]
fn the_file_backend_never_reports_a_loss() {
    let dir = Scratch::new("file-lost");
    let locks = LockClient::file(dir.path()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let guard = locks.lock("l").await.unwrap();
        assert!(!guard.is_lost());
        assert!(
            tokio::time::timeout(Duration::from_millis(50), guard.lost())
                .await
                .is_err()
        );
        guard.release().await.unwrap();
    });
}

#[test]
#[should_panic(expected = "interleaved")]
fn the_checker_catches_interleaved_records() {
    let dir = Scratch::new("file-checker");
    let log = dir.join("x.log");
    std::fs::write(
        &log,
        "B 0 0 1\nB 1 0 2\nC 0 0 1 1\nC 0 0 1 2\nE 0 0 1\nC 1 0 2 1\nC 1 0 2 2\nE 1 0 2\n",
    )
    .unwrap();
    distributed_common::check_log(&log);
}

#[test]
#[should_panic(expected = "token 1 after 2")]
fn the_checker_catches_tokens_going_back() {
    let dir = Scratch::new("file-checker-tokens");
    let log = dir.join("x.log");
    std::fs::write(
        &log,
        "B 0 0 2\nC 0 0 2 1\nC 0 0 2 2\nE 0 0 2\nB 1 0 1\nC 1 0 1 1\nC 1 0 1 2\nE 1 0 1\n",
    )
    .unwrap();
    distributed_common::check_log(&log);
}

/// The lock file of `name` in `dir` (the documented mapping, for a plain name).
#[cfg(unix)]
fn lock_file(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    dir.join(format!("n-{name}.lock"))
}

#[cfg(unix)]
#[test]
fn a_planted_symlink_is_never_followed() {
    let dir = Scratch::new("file-symlink");
    let locks_dir = dir.join("locks");
    let locks = LockClient::file(&locks_dir).unwrap();
    // A link to an existing file of the victim's, and a dangling one to where a file would
    // be created.
    let precious = dir.join("precious");
    std::fs::write(&precious, b"PRECIOUS").unwrap();
    std::os::unix::fs::symlink(&precious, lock_file(&locks_dir, "victim")).unwrap();
    let created = dir.join("created-outside");
    std::os::unix::fs::symlink(&created, lock_file(&locks_dir, "dangling")).unwrap();
    for name in ["victim", "dangling"] {
        for attempt in 0..2 {
            let outcome = if attempt == 0 {
                locks.blocking_lock(name)
            } else {
                locks
                    .blocking_try_lock(name)
                    .map(|guard| guard.expect("an error, not a held name"))
            };
            assert!(
                matches!(outcome, Err(Error::UnsafeLockFile { .. })),
                "{name}: {outcome:?}"
            );
        }
    }
    assert_eq!(std::fs::read(&precious).unwrap(), b"PRECIOUS");
    assert!(
        !created.exists(),
        "a file was created through a dangling link"
    );
}

#[cfg(unix)]
#[test]
fn only_regular_lock_files_of_our_own_are_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("file-planted");
    let locks = LockClient::file(dir.path()).unwrap();
    // A FIFO (opening one must not hang), a hard link to a file outside, a world-writable file.
    let status = std::process::Command::new("mkfifo")
        .arg(lock_file(dir.path(), "fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let outside = Scratch::new("file-planted-outside");
    let target = outside.join("target");
    std::fs::write(&target, 41_u64.to_le_bytes()).unwrap();
    std::fs::hard_link(&target, lock_file(dir.path(), "hardlink")).unwrap();
    let open = lock_file(dir.path(), "open");
    std::fs::write(&open, b"").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::create_dir(lock_file(dir.path(), "directory")).unwrap();
    for name in ["fifo", "hardlink", "open", "directory"] {
        let outcome = locks.blocking_try_lock_for(name, Duration::from_secs(5));
        assert!(
            matches!(outcome, Err(Error::UnsafeLockFile { .. })),
            "{name}: {:?}",
            outcome.map(|guard| guard.map(|guard| guard.token()))
        );
    }
    assert_eq!(std::fs::read(&target).unwrap(), 41_u64.to_le_bytes());
}

#[cfg(unix)]
#[test]
fn new_lock_files_are_mode_0660_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("file-mode");
    let locks = LockClient::file(dir.path()).unwrap();
    locks
        .blocking_lock("mode")
        .unwrap()
        .blocking_release()
        .unwrap();
    let mode = std::fs::metadata(lock_file(dir.path(), "mode"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o660, "mode {mode:o}");
}

/// The worker binary as a second OS user can run it: linked (or copied, across file systems)
/// into `dir`, a scratch directory under the temporary directory that the caller makes
/// reachable and that is removed with it, mode 0755, started there. The build's own path sits
/// in the checkout's `target/`, which other users cannot reach when the checkout is private (a
/// home directory with mode 0700, any `mktemp -d`). A link is tried first: a file this process
/// just wrote can be "busy" to `exec` while another test thread forks.
#[cfg(unix)]
fn worker_runnable_by_others(dir: &Scratch) -> std::process::Command {
    use std::os::unix::fs::PermissionsExt;
    let built = env!("CARGO_BIN_EXE_distributed-worker");
    let exe = dir.join("distributed-worker");
    if std::fs::hard_link(built, &exe).is_err() {
        std::fs::copy(built, &exe).unwrap();
    }
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = std::process::Command::new(exe);
    command.current_dir(dir.path());
    command
}

/// Runs as a second OS user (`postgres`, when the tests run as root and that user exists):
/// two users sharing a lock directory through a group exclude each other and share tokens.
#[cfg(unix)]
#[test]
fn a_second_user_shares_a_group_lock_directory() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let id = |flag: &str| -> Option<u32> {
        let out = std::process::Command::new("id")
            .args([flag, "postgres"])
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    let am_root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    let (Some(uid), Some(gid), true) = (id("-u"), id("-g"), am_root) else {
        eprintln!("notice: not root or no `postgres` user; skipping the second-user test");
        return;
    };
    let dir = Scratch::new("file-users");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::os::unix::fs::chown(&shared, None, Some(gid)).unwrap();
    // setgid: files created inside belong to the directory's group.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o2770)).unwrap();
    let locks = LockClient::file(&shared).unwrap();
    let first = locks.blocking_lock("shared").unwrap().token().get();

    let mut child = worker_runnable_by_others(&dir)
        .args(["hold", "file", shared.to_str().unwrap(), "shared"])
        .uid(uid)
        .gid(gid)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let theirs: u64 = line
        .trim()
        .strip_prefix("held ")
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("the second user could not lock: {line:?}")
        })
        .parse()
        .unwrap();
    assert!(theirs > first);
    assert!(
        locks.blocking_try_lock("shared").unwrap().is_none(),
        "the second user holds it"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let again = locks
        .blocking_try_lock_for("shared", Duration::from_secs(5))
        .unwrap()
        .expect("freed when the second user's process died");
    assert!(again.token().get() > theirs);
}
