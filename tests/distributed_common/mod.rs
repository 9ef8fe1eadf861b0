//! Helpers shared by the `distributed_*` tests: worker processes, the interleaving checker,
//! scratch directories and the PostgreSQL server's address.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each `distributed_*` test crate uses a different part of this module: `expect` would be unfulfilled in some"
)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A runtime for the tests' async parts: two workers, timers and I/O.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A per-test name, so that tests running at once never share one.
pub fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The test server's URL, from `CHAINLOCK_PG_URL` (set by `scripts/pg.sh`). In CI (`CI` set)
/// a missing server fails the test; elsewhere the test is skipped with a notice.
pub fn pg_url() -> Option<String> {
    if let Ok(url) = std::env::var("CHAINLOCK_PG_URL") {
        return Some(url);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CHAINLOCK_PG_URL is not set in CI: run the tests through scripts/test.sh (scripts/pg.sh starts a server)"
    );
    eprintln!(
        "notice: CHAINLOCK_PG_URL is not set; skipping this PostgreSQL test (run it with `bash scripts/pg.sh cargo test`)"
    );
    None
}

/// A scratch directory removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir =
            std::env::temp_dir().join(format!("chainlock-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, part: &str) -> PathBuf {
        self.0.join(part)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_distributed-worker"))
}

/// Runs `processes` hammer workers at once and checks their logs.
pub fn hammer(backend: &str, target: &str, processes: u64, iterations: u64, names: &[&str]) {
    let logs = Scratch::new("hammer-logs");
    let children: Vec<Child> = (0..processes)
        .map(|id| {
            worker()
                .args([
                    "hammer",
                    backend,
                    target,
                    &id.to_string(),
                    &iterations.to_string(),
                ])
                .arg(logs.path())
                .args(names)
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "worker failed: {status}");
    }
    let total: usize = names
        .iter()
        .map(|name| check_log(&logs.join(&format!("{name}.log"))))
        .sum();
    assert_eq!(
        total as u64,
        processes * iterations,
        "every acquisition wrote one record"
    );
}

/// The interleaving checker: every record is `B`, `C 1`, `C 2`, `E` of one acquisition with
/// nothing in between, and tokens strictly increase. Returns the number of records.
pub fn check_log(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len().is_multiple_of(4),
        "{}: torn record",
        path.display()
    );
    let mut last_token = 0_u64;
    for (index, record) in lines.chunks(4).enumerate() {
        let begin: Vec<&str> = record[0].split(' ').collect();
        assert_eq!(
            begin[0],
            "B",
            "{} record {index}: interleaved: {record:?}",
            path.display()
        );
        let (id, i, token) = (begin[1], begin[2], begin[3]);
        assert_eq!(
            record[1],
            format!("C {id} {i} {token} 1"),
            "{} record {index}: interleaved",
            path.display()
        );
        assert_eq!(
            record[2],
            format!("C {id} {i} {token} 2"),
            "{} record {index}: interleaved",
            path.display()
        );
        assert_eq!(
            record[3],
            format!("E {id} {i} {token}"),
            "{} record {index}: interleaved",
            path.display()
        );
        let token: u64 = token.parse().unwrap();
        assert!(
            token > last_token,
            "{} record {index}: token {token} after {last_token}",
            path.display()
        );
        last_token = token;
    }
    lines.len() / 4
}

/// A worker process holding `name`; killed (SIGKILL) on drop.
pub struct Holder {
    pub child: Child,
    pub token: u64,
}

impl Holder {
    pub fn spawn(backend: &str, target: &str, name: &str) -> Self {
        Self::spawn_with(&["hold", backend, target, name])
    }

    /// A worker running `args` (a `hold…` command), once it said `held <token>`.
    pub fn spawn_with(args: &[&str]) -> Self {
        let mut child = worker()
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn holder");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let token = line
            .trim()
            .strip_prefix("held ")
            .unwrap_or_else(|| panic!("holder said {line:?}"))
            .parse()
            .unwrap();
        Self { child, token }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker process holding `name` until told to release it (`hold-release`); killed (SIGKILL)
/// on drop.
pub struct Releaser {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Releaser {
    /// The worker, once it holds `name`.
    pub fn spawn(backend: &str, target: &str, name: &str) -> Self {
        let mut child = worker()
            .args(["hold-release", backend, target, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn releaser");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.starts_with("held "), "releaser said {line:?}");
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Tells the worker to release its lock; returns once its `release` returned.
    pub fn release(&mut self) {
        use std::io::Write;
        let mut stdin = self.stdin.take().expect("released once");
        stdin.write_all(b"release\n").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "released", "releaser said {line:?}");
    }
}

impl Drop for Releaser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Names that a careless mapping would turn into paths, injections or oversized files.
pub fn hostile_names() -> Vec<String> {
    vec![
        "/".into(),
        "..".into(),
        ".".into(),
        "../../../../tmp/escape".into(),
        "/etc/passwd".into(),
        "a\0b".into(),
        "a\0c".into(),
        "'; DROP TABLE x; --".into(),
        String::new(),
        "é/ü".into(),
        "x".repeat(1 << 20),
        format!("{}y", "x".repeat((1 << 20) - 1)),
    ]
}

/// Counts how often each item occurs.
pub fn counts<T: std::hash::Hash + Eq>(items: impl IntoIterator<Item = T>) -> HashMap<T, usize> {
    let mut map = HashMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

/// Waits until a thread of some process sleeps in `flock` for the file at `path` (a blocked
/// entry in `/proc/locks` for its inode). Elsewhere than Linux, returns at once.
pub fn wait_for_flock_waiter(path: &Path) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let inode = std::fs::metadata(path).unwrap().ino();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let locks = std::fs::read_to_string("/proc/locks").unwrap();
            let blocked = locks.lines().any(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                // `1: -> FLOCK  ADVISORY  WRITE 123 08:01:4567 0 EOF`
                fields.get(1) == Some(&"->")
                    && fields.get(2) == Some(&"FLOCK")
                    && fields
                        .get(6)
                        .and_then(|dev_inode| dev_inode.rsplit(':').next())
                        .and_then(|ino| ino.parse::<u64>().ok())
                        == Some(inode)
            });
            if blocked {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nobody waits in flock for {}",
                path.display()
            );
            std::thread::yield_now();
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

/// Waits for `condition` (asked every 20 ms: a polling pace, not synchronization) until
/// `limit` passed; panics with `what` then.
pub fn wait_for(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
