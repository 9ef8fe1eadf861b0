//! An in-memory file system locked hand over hand, driven by concurrent clients, with an
//! invariant checker.
//!
//! ```text
//! cargo run --release -p chainlock-trees --example filesystem                      # 8 clients, 20,000 operations each
//! cargo run --release -p chainlock-trees --example filesystem -- --clients 16 --ops 5000 --seed 7
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

use chainlock_trees::{FileSystem, Rng};
use clap::Parser;
use std::time::{Duration, Instant};

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

/// One client's counts of operations that succeeded and failed.
#[derive(Default)]
struct Counts {
    ok: u64,
    failed: u64,
}

fn client(fs: &FileSystem, seed: u64, ops: u64) -> Counts {
    let mut rng = Rng::new(seed);
    let mut counts = Counts::default();
    for _ in 0..ops {
        match fs.random_operation(&mut rng) {
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
    let violations = fs.check();
    println!(
        "filesystem: {} clients x {} operations in {elapsed:.2?}: {ok} succeeded, {failed} failed (missing paths, names taken)",
        args.clients, args.ops,
    );
    let (written, removed) = fs.bytes();
    println!(
        "written {written} bytes, removed {removed} with {} files; {} violations",
        fs.removed_files(),
        violations.len()
    );
    for violation in &violations {
        eprintln!("violation: {violation}");
    }
    if !violations.is_empty() || ok == 0 {
        std::process::exit(1);
    }
}
