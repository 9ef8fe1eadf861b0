//! An in-memory file system locked hand over hand, driven by concurrent clients, with an
//! invariant checker.
//!
//! ```text
//! cargo run --release --example filesystem                      # 8 clients, 20,000 operations each
//! cargo run --release --example filesystem -- --clients 16 --ops 5000 --seed 7
//! ```
//!
//! Directories and files are one recursive node type, `Node`, each behind its own `RwLock`.
//! Paths are walked with [`chainlock::walk`]: lookups (`read`, `list`, `stat`) read-lock every
//! node on the path; changes (`create`, `write`, `rename`, `rm -r`) crab: they read-lock the
//! path and write-lock only the node they change; `mkdir -p` walks exclusively because it
//! may change every node on its way. `rm -r` unlinks the entry, then closes the whole
//! subtree node by node (the closed marker makes a node behave as absent), so that no write
//! lands in a removed file after `rm -r` returns.
//!
//! When the clients are done, the checker verifies that no node is reachable twice, that
//! the bytes in reachable files are exactly those written minus those removed, and that no
//! removed file changed after its `rm -r` returned. The program exits with status 1 on any
//! violation.

use chainlock::ChainNode;
use chainlock::parking_lot::RwLock;
use chainlock::walk::{Crab, Exclusive, Shared, Step, WalkExit, Walker};
use clap::Parser;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A directory (`data == None`) or a file.
#[derive(ChainNode, Default)]
struct Node {
    /// Set by `rm -r` on every node of the removed subtree.
    #[chain(closed)]
    removed: bool,
    #[chain(children)]
    entries: BTreeMap<String, Arc<RwLock<Node>>>,
    data: Option<Vec<u8>>,
}

type Handle = Arc<RwLock<Node>>;

/// Why a file-system operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FsError {
    NotFound,
    NotADirectory,
    IsADirectory,
    Exists,
}

impl From<WalkExit> for FsError {
    fn from(exit: WalkExit) -> Self {
        match exit {
            WalkExit::Absent { .. } | WalkExit::Closed { .. } => FsError::NotFound,
            other => panic!("unexpected walk exit: {other}"),
        }
    }
}

/// A removed file and its size when `rm -r` closed it.
type Tombstone = (Handle, usize);

struct FileSystem {
    root: Handle,
    walker: Walker,
    /// Bytes written by successful writes, and bytes taken away by `rm -r`.
    written: AtomicU64,
    removed: AtomicU64,
    tombstones: parking_lot::Mutex<Vec<Tombstone>>,
    /// Time spent at the target of each change, standing for I/O (0: none).
    io: Duration,
}

fn components(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

impl FileSystem {
    fn new(io: Duration) -> Self {
        FileSystem {
            root: Arc::default(),
            // Paths here are at most a few levels deep; a deeper walk is a bug.
            walker: Walker::new().max_depth(64),
            written: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            tombstones: parking_lot::Mutex::default(),
            io,
        }
    }

    fn io(&self) {
        if !self.io.is_zero() {
            std::thread::sleep(self.io);
        }
    }

    /// `mkdir -p`: exclusive hand over hand, creating what is missing on the way.
    fn mkdir_p(&self, path: &str) -> Result<(), FsError> {
        let parts = components(path);
        let mut error = None;
        let target = self.walker.descend(&self.root, Exclusive, |dir, depth| {
            if dir.data.is_some() {
                error = Some(FsError::NotADirectory);
                return Step::Absent;
            }
            let Some(name) = parts.get(depth) else {
                return Step::Here;
            };
            let child = dir.entries.entry(name.clone()).or_default().clone();
            Step::Descend(child)
        });
        match (target, error) {
            (_, Some(error)) => Err(error),
            (Ok(dir), None) if dir.data.is_some() => Err(FsError::NotADirectory),
            (Ok(_), None) => Ok(()),
            (Err(exit), None) => Err(exit.into()),
        }
    }

    /// Creates an empty file in an existing directory.
    fn create(&self, dir: &str, name: &str) -> Result<(), FsError> {
        let mut dir = self
            .walker
            .descend_keys(&self.root, Crab, components(dir))?;
        if dir.data.is_some() {
            return Err(FsError::NotADirectory);
        }
        if dir.entries.contains_key(name) {
            return Err(FsError::Exists);
        }
        let file = Node {
            data: Some(Vec::new()),
            ..Node::default()
        };
        dir.entries
            .insert(name.to_owned(), Arc::new(RwLock::new(file)));
        Ok(())
    }

    /// Appends to a file.
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), FsError> {
        let mut file = self
            .walker
            .descend_keys(&self.root, Crab, components(path))?;
        let data = file.data.as_mut().ok_or(FsError::IsADirectory)?;
        self.io();
        data.extend_from_slice(bytes);
        self.written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, FsError> {
        let file = self
            .walker
            .descend_keys(&self.root, Shared, components(path))?;
        self.io();
        file.data.clone().ok_or(FsError::IsADirectory)
    }

    fn list(&self, path: &str) -> Result<Vec<String>, FsError> {
        let dir = self
            .walker
            .descend_keys(&self.root, Shared, components(path))?;
        if dir.data.is_some() {
            return Err(FsError::NotADirectory);
        }
        Ok(dir.entries.keys().cloned().collect())
    }

    /// The size of a file, or the number of entries of a directory.
    fn stat(&self, path: &str) -> Result<usize, FsError> {
        let node = self
            .walker
            .descend_keys(&self.root, Shared, components(path))?;
        Ok(node.data.as_ref().map_or(node.entries.len(), Vec::len))
    }

    /// Renames an entry within one directory; the new name must be free.
    fn rename(&self, dir: &str, from: &str, to: &str) -> Result<(), FsError> {
        let mut dir = self
            .walker
            .descend_keys(&self.root, Crab, components(dir))?;
        if dir.entries.contains_key(to) {
            return Err(FsError::Exists);
        }
        let entry = dir.entries.remove(from).ok_or(FsError::NotFound)?;
        dir.entries.insert(to.to_owned(), entry);
        Ok(())
    }

    /// `rm -r`: unlinks the entry under its parent's write lock, then closes its subtree
    /// node by node, each under its write lock, so that a walk already inside finishes
    /// first and every later one finds it closed.
    fn remove_all(&self, path: &str) -> Result<(), FsError> {
        let mut parts = components(path);
        let name = parts.pop().ok_or(FsError::Exists)?; // the root cannot be removed
        let mut parent = self.walker.descend_keys(&self.root, Crab, parts)?;
        let entry = parent.entries.remove(&name).ok_or(FsError::NotFound)?;
        drop(parent);
        let mut pending = vec![entry];
        while let Some(handle) = pending.pop() {
            let mut node = handle.write();
            node.removed = true;
            pending.extend(node.entries.values().cloned());
            if let Some(data) = &node.data {
                self.removed.fetch_add(data.len() as u64, Ordering::Relaxed);
                self.tombstones.lock().push((handle.clone(), data.len()));
            }
        }
        Ok(())
    }
}

/// What the checker found wrong.
fn check(fs: &FileSystem) -> Vec<String> {
    let mut violations = Vec::new();
    let mut seen = HashSet::new();
    let mut bytes = 0u64;
    let mut pending = vec![("/".to_owned(), fs.root.clone())];
    while let Some((path, handle)) = pending.pop() {
        if !seen.insert(Arc::as_ptr(&handle)) {
            violations.push(format!("{path} is reachable twice"));
            continue;
        }
        let node = handle.read();
        if node.removed {
            violations.push(format!("{path} is reachable but removed"));
        }
        bytes += node.data.as_ref().map_or(0, |data| data.len() as u64);
        for (name, child) in &node.entries {
            pending.push((format!("{path}{name}/"), child.clone()));
        }
    }
    let (written, removed) = (
        fs.written.load(Ordering::Relaxed),
        fs.removed.load(Ordering::Relaxed),
    );
    if written.checked_sub(removed) != Some(bytes) {
        violations.push(format!(
            "reachable files hold {bytes} bytes, but {written} were written and {removed} removed"
        ));
    }
    for (handle, size) in fs.tombstones.lock().iter() {
        let now = handle.read().data.as_ref().map_or(0, Vec::len);
        if now != *size {
            violations.push(format!(
                "a removed file grew from {size} to {now} bytes after its rm -r returned"
            ));
        }
    }
    violations
}

#[derive(Parser, Debug)]
#[command(
    about = "An in-memory file system locked hand over hand, under concurrent clients, with an invariant checker"
)]
struct Args {
    /// Concurrent client threads.
    #[arg(long, default_value_t = 8)]
    clients: u64,
    /// Operations per client.
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Seed of the clients' random operations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Microseconds each change or read spends at its target, standing for I/O.
    #[arg(long, default_value_t = 0)]
    io_micros: u64,
}

/// A small xorshift generator: deterministic per client.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// A path of 0 to 3 directories from a small namespace, so that clients collide.
    fn dir(&mut self) -> String {
        let depth = self.below(4);
        (0..depth).map(|_| format!("/d{}", self.below(3))).collect()
    }

    fn name(&mut self) -> String {
        format!("f{}", self.below(3))
    }
}

/// One client's counts of operations that succeeded and failed.
#[derive(Default)]
struct Counts {
    ok: u64,
    failed: u64,
}

fn client(fs: &FileSystem, seed: u64, ops: u64) -> Counts {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let mut counts = Counts::default();
    for _ in 0..ops {
        let (dir, name) = (rng.dir(), rng.name());
        let file = format!("{dir}/{name}");
        let outcome = match rng.below(100) {
            0..10 => fs.mkdir_p(&dir),
            10..20 => fs.create(&dir, &name),
            20..55 => fs.write(&file, b"0123456789"),
            55..75 => fs.read(&file).map(drop),
            75..85 => fs.list(&dir).map(drop),
            85..93 => fs.stat(&file).map(drop),
            93..98 => fs.rename(&dir, &name, &rng.name()),
            _ => fs.remove_all(&dir),
        };
        match outcome {
            Ok(()) => counts.ok += 1,
            Err(_) => counts.failed += 1,
        }
    }
    counts
}

fn main() {
    let args = Args::parse();
    let fs = FileSystem::new(Duration::from_micros(args.io_micros));
    let started = Instant::now();
    let counts: Vec<Counts> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..args.clients)
            .map(|index| {
                let fs = &fs;
                scope.spawn(move || client(fs, args.seed.wrapping_add(index), args.ops))
            })
            .collect();
        clients
            .into_iter()
            .map(|client| client.join().expect("a client panicked"))
            .collect()
    });
    let elapsed = started.elapsed();
    let (ok, failed) = counts
        .iter()
        .fold((0, 0), |(ok, failed), c| (ok + c.ok, failed + c.failed));
    let violations = check(&fs);
    println!(
        "filesystem: {} clients x {} operations in {elapsed:.2?} ({:.0} ops/s): {ok} succeeded, {failed} failed (missing paths, names taken)",
        args.clients,
        args.ops,
        (ok + failed) as f64 / elapsed.as_secs_f64(),
    );
    println!(
        "written {} bytes, removed {} with {} files; {} violations",
        fs.written.load(Ordering::Relaxed),
        fs.removed.load(Ordering::Relaxed),
        fs.tombstones.lock().len(),
        violations.len()
    );
    for violation in &violations {
        eprintln!("violation: {violation}");
    }
    if !violations.is_empty() || ok == 0 {
        std::process::exit(1);
    }
}
