//! Helper process of the distributed tests (`tests/distributed_*.rs`); not an example.
//!
//! ```text
//! distributed-worker hammer BACKEND TARGET ID ITERATIONS LOG_DIR NAME...
//!     acquires a random one of NAME... ITERATIONS times; under the lock appends
//!     `B <id> <i> <token>`, two chunk lines and `E <id> <i> <token>` to LOG_DIR/<name>.log,
//!     one write(2) per line, so that overlapping holders interleave visibly
//! distributed-worker rw-hammer BACKEND TARGET ID ITERATIONS LOG_DIR NAME
//!     ITERATIONS times, at random: as a writer (exclusive) appends a record to LOG_DIR/<name>.log
//!     as `hammer` does; as a reader (shared) checks that the log holds only whole records and
//!     that its token is at least the last writer's, exiting with an error otherwise
//! distributed-worker hold BACKEND TARGET NAME
//!     acquires NAME, prints `held <token>`, then sleeps until killed
//! distributed-worker hold-shared BACKEND TARGET NAME
//!     acquires NAME in shared mode, prints `held <token>`, then sleeps until killed
//! distributed-worker hold-permit BACKEND TARGET NAME PERMITS
//!     acquires a permit of the semaphore NAME, prints `held <token>`, then sleeps until killed
//! distributed-worker read-stream BACKEND TARGET NAME HOLD_MS
//!     forever: holds NAME in shared mode for HOLD_MS, releases it, takes it again at once;
//!     prints `held <token>` after the first hold (several of these keep NAME read-held
//!     without a gap)
//! distributed-worker hold-all BACKEND TARGET NAME...
//!     acquires every NAME at once, prints `held 0`, then sleeps until killed
//! distributed-worker hold-release BACKEND TARGET NAME
//!     acquires NAME, prints `held <token>`, releases it (`release`, not a drop) at the first
//!     line or the end of stdin, prints `released`, then sleeps until killed
//! distributed-worker hold-report BACKEND TARGET NAME TTL_SECS
//!     acquires NAME (etcd: with a lease TTL of TTL_SECS), prints `held <token>`, then answers
//!     every line on stdin with `lost <is_lost()>`, but the line `relock`: releases the hold
//!     (printing `released <outcome>`), locks NAME again, waiting as long as it takes, and prints
//!     `held <token>` (or `error <error>`)
//! distributed-worker campaign BACKEND TARGET NAME VALUE TTL_SECS
//!     campaigns for NAME with VALUE (etcd: with a lease TTL of TTL_SECS; postgres: with
//!     heartbeats every TTL_SECS / 4 answered within TTL_SECS / 4, so lost after TTL_SECS
//!     of silence and freed by the server after 1.5 × TTL_SECS), prints
//!     `leader <token>` once it leads, then answers every line on stdin: `?` with
//!     `lost <is_lost()>`, `proclaim V` with `proclaimed ok` (or `proclaimed <error>`),
//!     `resign` with `resigned ok` (or `resigned <error>`, then exits)
//! distributed-worker observe BACKEND TARGET NAME
//!     observes NAME and prints `leader <token> <value>` (or `none`) for every change seen
//! ```
//! distributed-worker cycles BACKEND TARGET NAME
//!     connects, prints `ready`, then for every line `N` on stdin runs N lock + release cycles
//!     of free names (`NAME-<i>`) and prints `cycles <p50 µs> <max µs> <errors> <slow>`
//!     (slow: cycles of 500 ms or more, the etcd client's attempt timeout); for a line
//!     `health` it prints `health <client's Debug>` (etcd: each member's health)
//! BACKEND is `file` (TARGET: lock directory), `postgres` (TARGET: URL) or, with the suite's
//! feature `etcd`, `etcd` (TARGET: endpoints, comma-separated; lease TTL 2 s).

use chainlock::distributed::{LockClient, PostgresOptions};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

fn client(backend: &str, target: &str) -> LockClient {
    match backend {
        "file" => LockClient::file(target).expect("lock directory"),
        "postgres" => LockClient::blocking_postgres_with(
            PostgresOptions::new(target)
                .expect("url")
                .max_idle_connections(2),
        )
        .expect("connect to postgres"),
        #[cfg(feature = "etcd")]
        "etcd" => etcd_client(target, 2),
        other => panic!("unknown backend {other}"),
    }
}

#[cfg(feature = "etcd")]
fn etcd_client(target: &str, ttl: u64) -> LockClient {
    LockClient::blocking_etcd_with(
        chainlock::distributed::EtcdOptions::new(target.split(','))
            .ttl(std::time::Duration::from_secs(ttl)),
    )
    .expect("connect to etcd")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| {
        args.get(i).map_or_else(
            || panic!("missing argument {i}: see the module docs"),
            String::as_str,
        )
    };
    match arg(0) {
        "hammer" => {
            let locks = client(arg(1), arg(2));
            let id: u64 = arg(3).parse().expect("ID");
            let iterations: u64 = arg(4).parse().expect("ITERATIONS");
            let log_dir = Path::new(arg(5));
            let names = &args[6..];
            assert!(!names.is_empty(), "no names");
            // xorshift, seeded by the worker id: reproducible, different per worker.
            let mut state =
                0x9E37_79B9_7F4A_7C15_u64 ^ (id + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            for i in 0..iterations {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let name = &names[(state % names.len() as u64) as usize];
                let guard = locks.blocking_lock(name).expect("acquire");
                let token = guard.token();
                let mut log = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log_dir.join(format!("{name}.log")))
                    .expect("open log");
                for line in [
                    format!("B {id} {i} {token}\n"),
                    format!("C {id} {i} {token} 1\n"),
                    format!("C {id} {i} {token} 2\n"),
                    format!("E {id} {i} {token}\n"),
                ] {
                    log.write_all(line.as_bytes()).expect("append");
                    std::thread::yield_now();
                }
                guard.blocking_release().expect("release");
            }
        }
        "hold" => {
            let locks = client(arg(1), arg(2));
            let guard = locks.blocking_lock(arg(3)).expect("acquire");
            println!("held {}", guard.token());
            std::io::stdout().flush().expect("stdout");
            loop {
                std::thread::park();
            }
        }
        "rw-hammer" => rw_hammer(&arg),
        "hold-shared" => {
            let locks = client(arg(1), arg(2));
            let guard = locks.blocking_lock_shared(arg(3)).expect("acquire");
            hold_forever(guard.token().get(), guard);
        }
        "hold-permit" => {
            let locks = client(arg(1), arg(2));
            let permits: usize = arg(4).parse().expect("PERMITS");
            let permit = locks
                .semaphore(arg(3), permits)
                .blocking_acquire()
                .expect("acquire");
            hold_forever(permit.token().get(), permit);
        }
        "read-stream" => {
            let locks = client(arg(1), arg(2));
            let hold = std::time::Duration::from_millis(arg(4).parse().expect("HOLD_MS"));
            let mut first = true;
            loop {
                let guard = locks.blocking_lock_shared(arg(3)).expect("acquire");
                if first {
                    println!("held {}", guard.token().get());
                    std::io::stdout().flush().expect("stdout");
                    first = false;
                }
                // The reader's work (a load, not a synchronization).
                std::thread::sleep(hold);
                drop(guard);
            }
        }
        "hold-report" => hold_report(&arg),
        "campaign" => campaign(&arg),
        "observe" => observe(&client(arg(1), arg(2)), arg(3)),
        "cycles" => cycles(&client(arg(1), arg(2)), arg(3)),
        "hold-release" => hold_release(&arg),
        "hold-all" => {
            let locks = client(arg(1), arg(2));
            let all = locks.blocking_lock_all(&args[3..]).expect("acquire");
            hold_forever(0, all);
        }
        other => panic!("unknown command {other}"),
    }
}

/// `cycles BACKEND TARGET NAME` (see the module docs).
fn cycles(locks: &LockClient, name: &str) {
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    let mut next = 0_u64;
    for line in std::io::stdin().lines() {
        let line = line.expect("stdin");
        if line.trim() == "health" {
            println!("health {locks:?}");
            std::io::stdout().flush().expect("stdout");
            continue;
        }
        let n: usize = line.trim().parse().expect("N");
        let mut took = Vec::with_capacity(n);
        let mut errors = 0;
        for _ in 0..n {
            next += 1;
            let start = std::time::Instant::now();
            let outcome = locks
                .blocking_lock(format!("{name}-{next}").as_str())
                .and_then(chainlock::distributed::DistributedGuard::blocking_release);
            took.push(start.elapsed());
            if let Err(error) = outcome {
                eprintln!("cycle {next}: {error}");
                errors += 1;
            }
        }
        took.sort();
        let slow = took
            .iter()
            .filter(|took| **took >= std::time::Duration::from_millis(500))
            .count();
        println!(
            "cycles {} {} {errors} {slow}",
            took[n / 2].as_micros(),
            took[n - 1].as_micros()
        );
        std::io::stdout().flush().expect("stdout");
    }
}

/// `hold-report BACKEND TARGET NAME TTL_SECS` (see the module docs).
fn hold_report<'a>(arg: &impl Fn(usize) -> &'a str) {
    let locks = match arg(1) {
        #[cfg(feature = "etcd")]
        "etcd" => etcd_client(arg(2), arg(4).parse().expect("TTL_SECS")),
        backend => client(backend, arg(2)),
    };
    let mut guard = Some(locks.blocking_lock(arg(3)).expect("acquire"));
    let mut out = std::io::stdout().lock();
    writeln!(out, "held {}", guard.as_ref().expect("held").token()).expect("stdout");
    out.flush().expect("stdout");
    for line in std::io::stdin().lines() {
        if line.expect("stdin").trim() == "relock" {
            if let Some(old) = guard.take() {
                let released = old
                    .blocking_release()
                    .map_or_else(|e| e.to_string(), |()| "ok".into());
                writeln!(out, "released {released}").expect("stdout");
                out.flush().expect("stdout");
            }
            match locks.blocking_lock(arg(3)) {
                Ok(new) => {
                    writeln!(out, "held {}", new.token()).expect("stdout");
                    guard = Some(new);
                }
                Err(error) => writeln!(out, "error {error}").expect("stdout"),
            }
        } else {
            let lost = guard
                .as_ref()
                .is_none_or(chainlock::distributed::DistributedGuard::is_lost);
            writeln!(out, "lost {lost}").expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

/// `hold-release BACKEND TARGET NAME` (see the module docs).
fn hold_release<'a>(arg: &impl Fn(usize) -> &'a str) -> ! {
    let locks = client(arg(1), arg(2));
    let guard = locks.blocking_lock(arg(3)).expect("acquire");
    println!("held {}", guard.token());
    std::io::stdout().flush().expect("stdout");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("stdin");
    guard.blocking_release().expect("release");
    hold_forever_saying("released", locks);
}

/// `observe BACKEND TARGET NAME` (see the module docs).
fn observe(client: &LockClient, name: &str) -> ! {
    let mut leaders = client.blocking_observe(name).expect("observe");
    let mut out = std::io::stdout().lock();
    let mut leader = leaders.current();
    loop {
        match &leader {
            Some(leader) => writeln!(
                out,
                "leader {} {}",
                leader.token(),
                String::from_utf8_lossy(leader.value())
            ),
            None => writeln!(out, "none"),
        }
        .expect("stdout");
        out.flush().expect("stdout");
        leader = leaders.blocking_changed().expect("observe");
    }
}

/// `campaign BACKEND TARGET NAME VALUE TTL_SECS` (see the module docs).
fn campaign<'a>(arg: &impl Fn(usize) -> &'a str) {
    let client = match arg(1) {
        #[cfg(feature = "etcd")]
        "etcd" => etcd_client(arg(2), arg(5).parse().expect("TTL_SECS")),
        "postgres" => {
            let quarter = std::time::Duration::from_secs(arg(5).parse().expect("TTL_SECS")) / 4;
            LockClient::blocking_postgres_with(
                PostgresOptions::new(arg(2))
                    .expect("url")
                    .heartbeat_interval(quarter)
                    .heartbeat_timeout(quarter),
            )
            .expect("connect to postgres")
        }
        backend => client(backend, arg(2)),
    };
    let leadership = client.blocking_campaign(arg(3), arg(4)).expect("campaign");
    let mut out = std::io::stdout().lock();
    writeln!(out, "leader {}", leadership.token()).expect("stdout");
    out.flush().expect("stdout");
    for line in std::io::stdin().lines() {
        let line = line.expect("stdin");
        let line = line.trim();
        if line == "resign" {
            let resigned = leadership
                .blocking_resign()
                .map_or_else(|e| e.to_string(), |()| "ok".into());
            writeln!(out, "resigned {resigned}").expect("stdout");
            out.flush().expect("stdout");
            return;
        } else if let Some(value) = line.strip_prefix("proclaim ") {
            let proclaimed = leadership
                .blocking_proclaim(value)
                .map_or_else(|e| e.to_string(), |()| "ok".into());
            writeln!(out, "proclaimed {proclaimed}").expect("stdout");
        } else {
            writeln!(out, "lost {}", leadership.is_lost()).expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

/// Prints `held <token>` and keeps `held` until killed.
fn hold_forever<T>(token: u64, held: T) -> ! {
    hold_forever_saying(&format!("held {token}"), held)
}

/// Prints `line` and keeps `kept` until killed.
fn hold_forever_saying<T>(line: &str, kept: T) -> ! {
    println!("{line}");
    std::io::stdout().flush().expect("stdout");
    let _kept = kept;
    loop {
        std::thread::park();
    }
}

/// `rw-hammer BACKEND TARGET ID ITERATIONS LOG_DIR NAME` (see the module docs).
fn rw_hammer<'a>(arg: &impl Fn(usize) -> &'a str) {
    let locks = client(arg(1), arg(2));
    let id: u64 = arg(3).parse().expect("ID");
    let iterations: u64 = arg(4).parse().expect("ITERATIONS");
    let log = Path::new(arg(5)).join(format!("{}.log", arg(6)));
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (id + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    for i in 0..iterations {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if state.is_multiple_of(3) {
            let guard = locks.blocking_lock(arg(6)).expect("acquire");
            let token = guard.token();
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .expect("open log");
            for line in [
                format!("B {id} {i} {token}\n"),
                format!("C {id} {i} {token} 1\n"),
                format!("C {id} {i} {token} 2\n"),
                format!("E {id} {i} {token}\n"),
            ] {
                file.write_all(line.as_bytes()).expect("append");
                std::thread::yield_now();
            }
            guard.blocking_release().expect("release");
        } else {
            let guard = locks.blocking_lock_shared(arg(6)).expect("acquire");
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            assert!(
                lines.len().is_multiple_of(4),
                "a reader saw a torn record: {} lines",
                lines.len()
            );
            if let Some(last) = lines.last() {
                let writer: u64 = last.rsplit(' ').next().unwrap().parse().unwrap();
                assert!(
                    guard.token().get() >= writer,
                    "reader token {} below the last writer's {writer}",
                    guard.token()
                );
            }
            std::thread::yield_now();
            guard.blocking_release().expect("release");
        }
    }
}
