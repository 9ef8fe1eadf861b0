//! Named locks against their natural alternatives, side by side in one run:
//!
//! - `uncontended`: lock + unlock of one key on one thread: a bare `parking_lot::Mutex`,
//!   `Striped`, `KeyedLocks`, a naive manager and the `lockable` crate's `LockPool`.
//! - `throughput_4_threads/<n>_keys`: 4 threads locking random keys among `n`: one global
//!   mutex, `Striped`, `KeyedLocks`, the naive manager and `LockPool`.
//! - `uncontended_read`: read lock + unlock of one key on one thread: a bare
//!   `parking_lot::RwLock`, `KeyedRwLocks` and the naive reader-writer manager
//!   (`Mutex<HashMap<K, Arc<RwLock<()>>>>`, cleaned up on release).
//! - `uncontended_permit`: one permit of one key taken and given back: `KeyedPermits`,
//!   `AsyncKeyedPermits` (its future polled once), a bare `tokio::sync::Semaphore` and a map
//!   of `tokio::sync::Semaphore`s per key (cleaned up on release).
//! - `throughput_rw_4_threads/16_keys`: 4 threads over 16 keys, 9 reads to 1 write:
//!   `KeyedRwLocks` against the naive reader-writer manager.
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

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use chainlock::keyed::{AsyncKeyedPermits, KeyedLocks, KeyedPermits, KeyedRwLocks};
use chainlock::striped::{DefaultHashBuilder, Striped};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use lockable::LockPool;
use parking_lot::{
    ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockWriteGuard, Mutex, RawMutex, RawRwLock, RwLock,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// The naive keyed reader-writer manager: one global map of `Arc<RwLock<()>>`, cleaned up
/// on release like [`NaiveManager`].
#[derive(Default)]
struct NaiveRwManager {
    map: Mutex<HashMap<u64, Arc<RwLock<()>>, DefaultHashBuilder>>,
}

/// Held only to be dropped (which unlocks).
enum NaiveRwHold {
    Read(#[expect(dead_code, reason = "held for its drop")] ArcRwLockReadGuard<RawRwLock, ()>),
    Write(#[expect(dead_code, reason = "held for its drop")] ArcRwLockWriteGuard<RawRwLock, ()>),
}

struct NaiveRwGuard<'a> {
    manager: &'a NaiveRwManager,
    key: u64,
    lock: Arc<RwLock<()>>,
    hold: Option<NaiveRwHold>,
}

impl NaiveRwManager {
    fn entry(&self, key: u64) -> Arc<RwLock<()>> {
        Arc::clone(self.map.lock().entry(key).or_default())
    }

    fn read(&self, key: u64) -> NaiveRwGuard<'_> {
        let lock = self.entry(key);
        let hold = NaiveRwHold::Read(lock.read_arc());
        NaiveRwGuard {
            manager: self,
            key,
            lock,
            hold: Some(hold),
        }
    }

    fn write(&self, key: u64) -> NaiveRwGuard<'_> {
        let lock = self.entry(key);
        let hold = NaiveRwHold::Write(lock.write_arc());
        NaiveRwGuard {
            manager: self,
            key,
            lock,
            hold: Some(hold),
        }
    }
}

impl Drop for NaiveRwGuard<'_> {
    fn drop(&mut self) {
        let mut map = self.manager.map.lock();
        drop(self.hold.take()); // unlocks
        // The map's `Arc` and ours: nobody else holds or waits for this key.
        if Arc::strong_count(&self.lock) == 2 {
            map.remove(&self.key);
        }
    }
}

/// Per-key permits the usual async way: a map of `tokio::sync::Semaphore`s, cleaned up on
/// release.
struct TokioPermitMap {
    map: Mutex<HashMap<u64, Arc<Semaphore>, DefaultHashBuilder>>,
    permits: usize,
}

struct TokioPermit<'a> {
    owner: &'a TokioPermitMap,
    key: u64,
    semaphore: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
}

impl TokioPermitMap {
    fn new(permits: usize) -> Self {
        Self {
            map: Mutex::default(),
            permits,
        }
    }

    /// Uncontended: the permit is free (the benchmark never waits).
    fn acquire(&self, key: u64) -> TokioPermit<'_> {
        let semaphore = Arc::clone(
            self.map
                .lock()
                .entry(key)
                .or_insert_with(|| Arc::new(Semaphore::new(self.permits))),
        );
        let permit = Arc::clone(&semaphore)
            .try_acquire_owned()
            .expect("uncontended");
        TokioPermit {
            owner: self,
            key,
            semaphore,
            permit: Some(permit),
        }
    }
}

impl Drop for TokioPermit<'_> {
    fn drop(&mut self) {
        let mut map = self.owner.map.lock();
        drop(self.permit.take());
        if Arc::strong_count(&self.semaphore) == 2 {
            map.remove(&self.key);
        }
    }
}

/// Polls `future` once with a no-op waker: it must be ready (uncontended).
fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("uncontended"),
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

#[inline(never)]
fn cycle_parking_lot_rwlock_read(lock: &RwLock<()>) {
    drop(lock.read());
}

#[inline(never)]
fn cycle_keyed_rw_read(keyed: &KeyedRwLocks<u64>, key: u64) {
    drop(keyed.read(key));
}

#[inline(never)]
fn cycle_naive_rw_read(naive: &NaiveRwManager, key: u64) {
    drop(naive.read(key));
}

#[inline(never)]
fn cycle_keyed_permits(permits: &KeyedPermits<u64>, key: u64) {
    drop(permits.acquire(key));
}

#[inline(never)]
fn cycle_async_keyed_permits(permits: &AsyncKeyedPermits<u64>, key: u64) {
    drop(ready(permits.acquire(key)));
}

#[inline(never)]
fn cycle_tokio_semaphore(semaphore: &Semaphore) {
    drop(semaphore.try_acquire().expect("uncontended"));
}

#[inline(never)]
fn cycle_tokio_semaphore_map(map: &TokioPermitMap, key: u64) {
    drop(map.acquire(key));
}

/// The peers of the uncontended benchmark, built once for criterion and for
/// `--instructions`.
struct Peers {
    mutex: Mutex<()>,
    striped: Striped<Mutex<()>>,
    keyed: KeyedLocks<u64>,
    naive: NaiveManager,
    pool: LockPool<u64>,
    rwlock: RwLock<()>,
    keyed_rw: KeyedRwLocks<u64>,
    naive_rw: NaiveRwManager,
    permits: KeyedPermits<u64>,
    async_permits: AsyncKeyedPermits<u64>,
    semaphore: Semaphore,
    semaphore_map: TokioPermitMap,
}

/// Permits per key in the permit benchmarks.
const PERMITS: usize = 4;

impl Peers {
    fn new() -> Self {
        Self {
            mutex: Mutex::new(()),
            striped: Striped::new(64),
            keyed: KeyedLocks::new(),
            naive: NaiveManager::default(),
            pool: LockPool::new(),
            rwlock: RwLock::new(()),
            keyed_rw: KeyedRwLocks::new(),
            naive_rw: NaiveRwManager::default(),
            permits: KeyedPermits::new(PERMITS),
            async_permits: AsyncKeyedPermits::new(PERMITS),
            semaphore: Semaphore::new(PERMITS),
            semaphore_map: TokioPermitMap::new(PERMITS),
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

    let mut group = c.benchmark_group("uncontended_read");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parking_lot_rwlock", |b| {
        b.iter(|| cycle_parking_lot_rwlock_read(black_box(&peers.rwlock)));
    });
    group.bench_function("keyed_rw_locks", |b| {
        b.iter(|| cycle_keyed_rw_read(black_box(&peers.keyed_rw), black_box(KEY)));
    });
    group.bench_function("naive_rw_manager", |b| {
        b.iter(|| cycle_naive_rw_read(black_box(&peers.naive_rw), black_box(KEY)));
    });
    group.finish();

    let mut group = c.benchmark_group("uncontended_permit");
    group.throughput(Throughput::Elements(1));
    group.bench_function("keyed_permits", |b| {
        b.iter(|| cycle_keyed_permits(black_box(&peers.permits), black_box(KEY)));
    });
    group.bench_function("async_keyed_permits", |b| {
        b.iter(|| cycle_async_keyed_permits(black_box(&peers.async_permits), black_box(KEY)));
    });
    group.bench_function("tokio_semaphore", |b| {
        b.iter(|| cycle_tokio_semaphore(black_box(&peers.semaphore)));
    });
    group.bench_function("tokio_semaphore_map", |b| {
        b.iter(|| cycle_tokio_semaphore_map(black_box(&peers.semaphore_map), black_box(KEY)));
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

fn throughput_rw(c: &mut Criterion) {
    const KEYS: u64 = 16;
    let mut group = c.benchmark_group(format!("throughput_rw_{THREADS}_threads"));
    group.throughput(Throughput::Elements(THREADS as u64));
    let id = |name: &str| BenchmarkId::new(name, format!("{KEYS}_keys"));
    // Key `k`'s draws: one in ten writes (the low digit of the random key decides).
    let keyed = KeyedRwLocks::new();
    group.bench_function(id("keyed_rw_locks"), |b| {
        b.iter_custom(|iters| {
            parallel(iters, KEYS * 10, &|draw| {
                if draw % 10 == 0 {
                    drop(keyed.write(draw / 10));
                } else {
                    drop(keyed.read(draw / 10));
                }
            })
        });
    });
    let naive = NaiveRwManager::default();
    group.bench_function(id("naive_rw_manager"), |b| {
        b.iter_custom(|iters| {
            parallel(iters, KEYS * 10, &|draw| {
                if draw % 10 == 0 {
                    drop(naive.write(draw / 10));
                } else {
                    drop(naive.read(draw / 10));
                }
            })
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Short by default: the whole run stays within a few minutes on a shared machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = uncontended, throughput, throughput_rw
}

/// `--instructions`: run each uncontended cycle a fixed number of times without criterion,
/// for callgrind's instruction counts. Otherwise: criterion.
fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        const CALLS: u64 = 10_000;
        chainlock_suite::bench::telemetry_from_env();
        let peers = Peers::new();
        for _ in 0..CALLS {
            cycle_parking_lot_mutex(black_box(&peers.mutex));
            cycle_striped(black_box(&peers.striped), black_box(KEY));
            cycle_keyed_locks(black_box(&peers.keyed), black_box(KEY));
            cycle_naive_manager(black_box(&peers.naive), black_box(KEY));
            cycle_lockable(black_box(&peers.pool), black_box(KEY));
            cycle_parking_lot_rwlock_read(black_box(&peers.rwlock));
            cycle_keyed_rw_read(black_box(&peers.keyed_rw), black_box(KEY));
            cycle_naive_rw_read(black_box(&peers.naive_rw), black_box(KEY));
            cycle_keyed_permits(black_box(&peers.permits), black_box(KEY));
            cycle_async_keyed_permits(black_box(&peers.async_permits), black_box(KEY));
            cycle_tokio_semaphore(black_box(&peers.semaphore));
            cycle_tokio_semaphore_map(black_box(&peers.semaphore_map), black_box(KEY));
        }
        assert!(peers.keyed.is_empty(), "every cycle released its key");
        assert!(peers.keyed_rw.is_empty() && peers.permits.is_empty());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
