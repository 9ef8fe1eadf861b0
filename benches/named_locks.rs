//! Named locks against their natural alternatives, side by side in one run:
//!
//! - `uncontended`: lock + unlock of one key on one thread: a bare `parking_lot::Mutex`,
//!   `Striped`, `KeyedLocks`, a naive manager and the `lockable` crate's `LockPool`.
//! - `throughput_4_threads/<n>_keys`: 4 threads locking random keys among `n`: one global
//!   mutex, `Striped`, `KeyedLocks`, the naive manager and `LockPool`.
//!
//! Run: `cargo bench --bench named_locks` (add `-- --warm-up-time 1 --measurement-time 3`
//! to override the short defaults below). The uncontended cycles are `#[inline(never)]`
//! functions so that `valgrind --tool=callgrind --toggle-collect=<function>` counts each
//! one's instructions: run the bench binary with `--instructions` for that (see
//! DEVELOPMENT.md).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use chainlock::keyed::KeyedLocks;
use chainlock::striped::{DefaultHashBuilder, Striped};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use lockable::LockPool;
use parking_lot::{ArcMutexGuard, Mutex, RawMutex};

/// The naive keyed lock manager: one global map of `Arc<Mutex<()>>`, cleaned up on
/// release (an entry is removed when nobody else holds or awaits it). The map uses the
/// same fast hash as chainlock, so the comparison measures the design, not the hasher.
#[derive(Default)]
struct NaiveManager {
    map: Mutex<HashMap<u64, Arc<Mutex<()>>, DefaultHashBuilder>>,
}

struct NaiveGuard<'a> {
    manager: &'a NaiveManager,
    key: u64,
    guard: Option<ArcMutexGuard<RawMutex, ()>>,
}

impl NaiveManager {
    fn lock(&self, key: u64) -> NaiveGuard<'_> {
        let mutex = Arc::clone(self.map.lock().entry(key).or_default());
        NaiveGuard {
            manager: self,
            key,
            guard: Some(mutex.lock_arc()),
        }
    }
}

impl Drop for NaiveGuard<'_> {
    fn drop(&mut self) {
        let guard = self.guard.take().expect("held until dropped");
        let mut map = self.manager.map.lock();
        let mutex = ArcMutexGuard::into_arc(guard); // unlocks
        // The map's `Arc` and ours: nobody else holds or waits for this key.
        if Arc::strong_count(&mutex) == 2 {
            map.remove(&self.key);
        }
    }
}

// One uncontended lock + unlock cycle per peer, each a separate function that is never
// inlined: criterion and callgrind measure the same code, and every peer pays one call.

#[inline(never)]
fn cycle_parking_lot_mutex(mutex: &Mutex<()>) {
    drop(mutex.lock());
}

#[inline(never)]
fn cycle_striped(striped: &Striped<Mutex<()>>, key: u64) {
    drop(striped.lock(&key));
}

#[inline(never)]
fn cycle_keyed_locks(keyed: &KeyedLocks<u64>, key: u64) {
    drop(keyed.lock(key));
}

#[inline(never)]
fn cycle_naive_manager(naive: &NaiveManager, key: u64) {
    drop(naive.lock(key));
}

#[inline(never)]
fn cycle_lockable(pool: &LockPool<u64>, key: u64) {
    drop(pool.blocking_lock(key));
}

/// The peers of the uncontended benchmark, built once for criterion and for
/// `--instructions`.
struct Peers {
    mutex: Mutex<()>,
    striped: Striped<Mutex<()>>,
    keyed: KeyedLocks<u64>,
    naive: NaiveManager,
    pool: LockPool<u64>,
}

impl Peers {
    fn new() -> Self {
        Self {
            mutex: Mutex::new(()),
            striped: Striped::new(64),
            keyed: KeyedLocks::new(),
            naive: NaiveManager::default(),
            pool: LockPool::new(),
        }
    }
}

const KEY: u64 = 42;

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("uncontended");
    group.throughput(Throughput::Elements(1));
    let peers = Peers::new();
    group.bench_function("parking_lot_mutex", |b| {
        b.iter(|| cycle_parking_lot_mutex(black_box(&peers.mutex)));
    });
    group.bench_function("striped", |b| {
        b.iter(|| cycle_striped(black_box(&peers.striped), black_box(KEY)));
    });
    group.bench_function("keyed_locks", |b| {
        b.iter(|| cycle_keyed_locks(black_box(&peers.keyed), black_box(KEY)));
    });
    group.bench_function("naive_manager", |b| {
        b.iter(|| cycle_naive_manager(black_box(&peers.naive), black_box(KEY)));
    });
    group.bench_function("lockable", |b| {
        b.iter(|| cycle_lockable(black_box(&peers.pool), black_box(KEY)));
    });
    group.finish();
}

const THREADS: usize = 4;

/// Runs `op(key)` `iters` times on each of [`THREADS`] threads over random keys below
/// `keys`, and returns the wall time from a common start to the last thread's end.
fn parallel(iters: u64, keys: u64, op: &(impl Fn(u64) + Sync)) -> Duration {
    let start = Barrier::new(THREADS + 1);
    thread::scope(|s| {
        for seed in 0..THREADS as u64 {
            let start = &start;
            s.spawn(move || {
                let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (seed + 1);
                start.wait();
                for _ in 0..iters {
                    // xorshift64: cheap, and the same key sequence for every peer.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    op(state % keys);
                }
            });
        }
        start.wait();
        let began = Instant::now();
        // Leaving the scope joins every thread.
        began
    })
    .elapsed()
}

fn throughput(c: &mut Criterion) {
    for keys in [1_u64, 16, 100_000] {
        let mut group = c.benchmark_group(format!("throughput_{THREADS}_threads"));
        group.throughput(Throughput::Elements(THREADS as u64));
        let id = |name: &str| BenchmarkId::new(name, format!("{keys}_keys"));

        let global = Mutex::new(());
        group.bench_function(id("global_mutex"), |b| {
            b.iter_custom(|iters| parallel(iters, keys, &|_| drop(global.lock())));
        });
        let striped: Striped<Mutex<()>> = Striped::new(64);
        group.bench_function(id("striped"), |b| {
            b.iter_custom(|iters| parallel(iters, keys, &|key| drop(striped.lock(&key))));
        });
        let keyed = KeyedLocks::new();
        group.bench_function(id("keyed_locks"), |b| {
            b.iter_custom(|iters| parallel(iters, keys, &|key| drop(keyed.lock(key))));
        });
        let naive = NaiveManager::default();
        group.bench_function(id("naive_manager"), |b| {
            b.iter_custom(|iters| parallel(iters, keys, &|key| drop(naive.lock(key))));
        });
        let pool = LockPool::new();
        group.bench_function(id("lockable"), |b| {
            b.iter_custom(|iters| parallel(iters, keys, &|key| drop(pool.blocking_lock(key))));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // Short by default: the whole run stays within a few minutes on a shared machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = uncontended, throughput
}

/// `--instructions`: run each uncontended cycle a fixed number of times without criterion,
/// for callgrind's instruction counts. Otherwise: criterion.
fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        const CALLS: u64 = 10_000;
        let peers = Peers::new();
        for _ in 0..CALLS {
            cycle_parking_lot_mutex(black_box(&peers.mutex));
            cycle_striped(black_box(&peers.striped), black_box(KEY));
            cycle_keyed_locks(black_box(&peers.keyed), black_box(KEY));
            cycle_naive_manager(black_box(&peers.naive), black_box(KEY));
            cycle_lockable(black_box(&peers.pool), black_box(KEY));
        }
        assert!(peers.keyed.is_empty(), "every cycle released its key");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
