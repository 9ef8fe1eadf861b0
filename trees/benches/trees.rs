//! The two recursive-tree programs against one global lock, at 1, 2, 4, 16 and 64 client
//! threads, side by side in one run:
//!
//! - `filesystem`: a stable tree (4 × 4 directories, 4 files each); 70% writes and 20% reads
//!   of a random file, each spending 50 µs at its target (a sleep standing for I/O), 10%
//!   `stat` of a random directory. `walk` is [`FileSystem`] as it is (crabbing per path);
//!   `global` is the same file system with one `RwLock` around the whole tree taken first
//!   (write for writes, read for the rest), so the node locks below it are uncontended.
//! - `ordered_map`: [`OrderedMap`] against `RwLock<BTreeMap>`, 50,000 keys of 100,000
//!   present, `read_mostly` (90% `get`, 10% `insert`) and `write_heavy` (50/50).
//!
//! Each iteration runs a fixed number of operations spread over the threads, timed from the
//! moment every thread is ready to the moment the last one finishes. Run:
//! `cargo bench -p chainlock-trees --bench trees`.

use chainlock::parking_lot::RwLock;
use chainlock_trees::{FileSystem, OrderedMap, Rng};
use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group,
};
use std::collections::BTreeMap;
use std::sync::Barrier;
use std::time::{Duration, Instant};

const THREADS: [u64; 5] = [1, 2, 4, 16, 64];

/// Runs `ops` operations over `threads` client threads; returns the time from the moment
/// all are ready to the moment the last one is done.
fn run(threads: u64, ops: u64, op: &(dyn Fn(&mut Rng) + Sync)) -> Duration {
    let barrier = Barrier::new(threads as usize + 1);
    std::thread::scope(|scope| {
        let clients: Vec<_> = (0..threads)
            .map(|index| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut rng = Rng::new(index);
                    barrier.wait();
                    for _ in 0..ops / threads {
                        op(&mut rng);
                    }
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        for client in clients {
            client.join().expect("a client panicked");
        }
        started.elapsed()
    })
}

/// Fewer operations when the benchmarks only run once as tests.
fn scaled(ops: u64) -> u64 {
    if std::env::args().any(|arg| arg == "--bench") {
        ops
    } else {
        ops / 20
    }
}

/// A group of multi-threaded runs: few samples (each is many operations), throughput in
/// operations.
fn group<'a>(c: &'a mut Criterion, name: &str, ops: u64) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(ops));
    group
}

fn populated_fs() -> FileSystem {
    let fs = FileSystem::new(Duration::from_micros(50));
    for a in 0..4 {
        for b in 0..4 {
            let dir = format!("/d{a}/d{b}");
            fs.mkdir_p(&dir).unwrap();
            for f in 0..4 {
                fs.create(&dir, &format!("f{f}")).unwrap();
            }
        }
    }
    fs
}

fn filesystem(c: &mut Criterion) {
    let ops = scaled(2_000);
    let global = RwLock::new(());
    let mut group = group(c, "filesystem", ops);
    for (name, coarse) in [("walk", false), ("global", true)] {
        // One file system per side, so that the second does not read the first's longer files.
        let fs = populated_fs();
        let op = |rng: &mut Rng| {
            let (a, b) = (rng.below(4), rng.below(4));
            let file = format!("/d{a}/d{b}/f{}", rng.below(4));
            match rng.below(10) {
                0..7 => {
                    let _global = coarse.then(|| global.write());
                    fs.write(&file, b"x").unwrap();
                }
                7..9 => {
                    let _global = coarse.then(|| global.read());
                    fs.read(&file).unwrap();
                }
                _ => {
                    let _global = coarse.then(|| global.read());
                    fs.stat(&format!("/d{a}/d{b}")).unwrap();
                }
            }
        };
        for threads in THREADS {
            group.bench_function(BenchmarkId::new(name, threads), |b| {
                b.iter_custom(|iterations| (0..iterations).map(|_| run(threads, ops, &op)).sum());
            });
        }
        assert!(fs.check().is_empty(), "{:?}", fs.check());
    }
    group.finish();
}

fn ordered_map(c: &mut Criterion) {
    const KEYS: u64 = 100_000;
    let ops = scaled(200_000);
    for (mix, get_percent) in [("read_mostly", 90), ("write_heavy", 50)] {
        let map = OrderedMap::new();
        let global = RwLock::new(BTreeMap::new());
        for key in (0..KEYS).step_by(2) {
            map.insert(key, key);
            global.write().insert(key, key);
        }
        let mut group = group(c, &format!("ordered_map_{mix}"), ops);
        for threads in THREADS {
            group.bench_function(BenchmarkId::new("walk", threads), |b| {
                let op = |rng: &mut Rng| {
                    let key = rng.below(KEYS);
                    if rng.below(100) < get_percent {
                        std::hint::black_box(map.get(&key));
                    } else {
                        map.insert(key, key);
                    }
                };
                b.iter_custom(|iterations| (0..iterations).map(|_| run(threads, ops, &op)).sum());
            });
            group.bench_function(BenchmarkId::new("global", threads), |b| {
                let op = |rng: &mut Rng| {
                    let key = rng.below(KEYS);
                    if rng.below(100) < get_percent {
                        std::hint::black_box(global.read().get(&key).copied());
                    } else {
                        global.write().insert(key, key);
                    }
                };
                b.iter_custom(|iterations| (0..iterations).map(|_| run(threads, ops, &op)).sum());
            });
        }
        group.finish();
        map.check().unwrap();
    }
}

criterion_group!(benches, filesystem, ordered_map);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
