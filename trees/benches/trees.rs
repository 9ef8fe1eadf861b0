//! The two recursive-tree programs against one global lock, at 1, 2, 4, 16 and 64 client
//! threads, side by side in one run:
//!
//! - `filesystem`: a stable tree (4 × 4 directories, 4 files each); 70% writes and 20% reads
//!   of a random file, each spending 50 µs at its target (a sleep standing for I/O), 10%
//!   `stat` of a random directory. `walk` is [`FileSystem`] as it is (crabbing per path);
//!   `global` is the same file system with one `RwLock` around the whole tree taken first
//!   (write for writes, read for the rest), so the node locks below it are uncontended.
//! - `ordered_map`: [`OrderedMap`] (optimistic lock coupling) against one global
//!   `RwLock<BTreeMap>`, crossbeam-skiplist's `SkipMap` and scc's `TreeIndex`, and an
//!   unsynchronized `BTreeMap` on one thread (the limit); 50,000 keys of 100,000 present,
//!   `read_mostly` (90% `get`, 10% `insert`) and `write_heavy` (50/50).
//!
//! With `--instructions` the binary runs 10,000 lookups on each peer instead, one
//! `#[inline(never)]` function each, for callgrind:
//!
//! ```sh
//! cargo bench -p chainlock-trees --bench trees --no-run
//! BIN=$(ls -t target/release/deps/trees-* | grep -v '\.d$' | head -1)
//! for f in lookups_ordered_map lookups_btreemap lookups_global lookups_skip_map lookups_tree_index; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$f \
//!     --toggle-collect="trees::$f" "$BIN" --instructions 2>&1 | grep Collected
//! done   # totals are for 10,000 lookups each
//! ```
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
use crossbeam_skiplist::SkipMap;
use scc::TreeIndex;
use std::collections::BTreeMap;
use std::hint::black_box;
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

/// One client operation, run by `run` on each thread.
type Op<'a> = dyn Fn(&mut Rng) + Sync + 'a;

/// The maps of the `ordered_map` groups, filled alike: 50,000 keys of 100,000 present.
struct Maps {
    ordered_map: OrderedMap<u64, u64>,
    global: RwLock<BTreeMap<u64, u64>>,
    skip_map: SkipMap<u64, u64>,
    tree_index: TreeIndex<u64, u64>,
    unsynchronized: BTreeMap<u64, u64>,
}

const KEYS: u64 = 100_000;

impl Maps {
    fn new() -> Self {
        let maps = Maps {
            ordered_map: OrderedMap::new(),
            global: RwLock::new(BTreeMap::new()),
            skip_map: SkipMap::new(),
            tree_index: TreeIndex::new(),
            unsynchronized: BTreeMap::new(),
        };
        let mut maps = maps;
        for key in (0..KEYS).step_by(2) {
            maps.ordered_map.insert(key, key);
            maps.global.write().insert(key, key);
            maps.skip_map.insert(key, key);
            maps.tree_index.upsert_sync(key, key);
            maps.unsynchronized.insert(key, key);
        }
        maps
    }
}

/// One operation of a mix on each peer: a `get` with probability `get_percent`, else an
/// insert (replacing the value when the key is present).
fn op_ordered_map(map: &OrderedMap<u64, u64>, rng: &mut Rng, get_percent: u64) {
    let key = rng.below(KEYS);
    if rng.below(100) < get_percent {
        black_box(map.get(&key));
    } else {
        map.insert(key, key);
    }
}

fn op_global(map: &RwLock<BTreeMap<u64, u64>>, rng: &mut Rng, get_percent: u64) {
    let key = rng.below(KEYS);
    if rng.below(100) < get_percent {
        black_box(map.read().get(&key).copied());
    } else {
        map.write().insert(key, key);
    }
}

fn op_skip_map(map: &SkipMap<u64, u64>, rng: &mut Rng, get_percent: u64) {
    let key = rng.below(KEYS);
    if rng.below(100) < get_percent {
        black_box(map.get(&key).map(|entry| *entry.value()));
    } else {
        map.insert(key, key);
    }
}

fn op_tree_index(map: &TreeIndex<u64, u64>, rng: &mut Rng, get_percent: u64) {
    let key = rng.below(KEYS);
    if rng.below(100) < get_percent {
        black_box(map.peek_with(&key, |_, value| *value));
    } else {
        map.upsert_sync(key, key);
    }
}

fn ordered_map(c: &mut Criterion) {
    let ops = scaled(200_000);
    for (mix, get_percent) in [("read_mostly", 90), ("write_heavy", 50)] {
        let mut maps = Maps::new();
        let mut group = group(c, &format!("ordered_map_{mix}"), ops);
        // The limit: an unsynchronized BTreeMap on one thread (no threads spawned).
        group.bench_function(BenchmarkId::new("btreemap_unsynchronized", 1), |b| {
            b.iter_custom(|iterations| {
                let started = Instant::now();
                for _ in 0..iterations {
                    let mut rng = Rng::new(0);
                    for _ in 0..ops {
                        let key = rng.below(KEYS);
                        if rng.below(100) < get_percent {
                            black_box(maps.unsynchronized.get(&key).copied());
                        } else {
                            maps.unsynchronized.insert(key, key);
                        }
                    }
                }
                started.elapsed()
            });
        });
        let maps = &maps;
        for threads in THREADS {
            let sides: [(&str, &Op<'_>); 4] = [
                ("ordered_map", &|rng| {
                    op_ordered_map(&maps.ordered_map, rng, get_percent);
                }),
                ("global", &|rng| op_global(&maps.global, rng, get_percent)),
                ("skip_map", &|rng| {
                    op_skip_map(&maps.skip_map, rng, get_percent);
                }),
                ("tree_index", &|rng| {
                    op_tree_index(&maps.tree_index, rng, get_percent);
                }),
            ];
            for (name, op) in sides {
                group.bench_function(BenchmarkId::new(name, threads), |b| {
                    b.iter_custom(|iterations| {
                        (0..iterations).map(|_| run(threads, ops, op)).sum()
                    });
                });
            }
        }
        group.finish();
        maps.ordered_map.check().unwrap();
    }
}

/// The lookups callgrind counts (`--instructions`): 10,000 gets of random keys (half
/// present) on each peer, one `#[inline(never)]` function each.
#[inline(never)]
fn lookups_ordered_map(map: &OrderedMap<u64, u64>, keys: &[u64]) -> u64 {
    keys.iter().filter_map(|key| map.get(key)).sum()
}

#[inline(never)]
fn lookups_btreemap(map: &BTreeMap<u64, u64>, keys: &[u64]) -> u64 {
    keys.iter().filter_map(|key| map.get(key).copied()).sum()
}

#[inline(never)]
fn lookups_global(map: &RwLock<BTreeMap<u64, u64>>, keys: &[u64]) -> u64 {
    keys.iter()
        .filter_map(|key| map.read().get(key).copied())
        .sum()
}

#[inline(never)]
fn lookups_skip_map(map: &SkipMap<u64, u64>, keys: &[u64]) -> u64 {
    keys.iter()
        .filter_map(|key| map.get(key).map(|entry| *entry.value()))
        .sum()
}

#[inline(never)]
fn lookups_tree_index(map: &TreeIndex<u64, u64>, keys: &[u64]) -> u64 {
    keys.iter()
        .filter_map(|key| map.peek_with(key, |_, value| *value))
        .sum()
}

fn instructions() {
    const LOOKUPS: usize = 10_000;
    let maps = Maps::new();
    let mut rng = Rng::new(42);
    let keys: Vec<u64> = (0..LOOKUPS).map(|_| rng.below(KEYS)).collect();
    let keys = black_box(&keys[..]);
    let sums = [
        lookups_ordered_map(black_box(&maps.ordered_map), keys),
        lookups_btreemap(black_box(&maps.unsynchronized), keys),
        lookups_global(black_box(&maps.global), keys),
        lookups_skip_map(black_box(&maps.skip_map), keys),
        lookups_tree_index(black_box(&maps.tree_index), keys),
    ];
    assert!(
        sums.iter().all(|&sum| sum == sums[0]),
        "the peers disagree: {sums:?}"
    );
}

criterion_group!(benches, filesystem, ordered_map);

/// `--instructions`: the lookups callgrind counts, without criterion. Otherwise: criterion.
fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        instructions();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
