//! `chainlock::rooms::Rooms` against the obvious alternative (one global mutex, one
//! condition variable, `notify_all`: `tests/support/rooms_baseline.rs`), side by side:
//!
//! - `rooms_uncontended`: enter and leave the same room on one thread, with a bare
//!   `parking_lot::Mutex` lock+unlock as the yardstick;
//! - `rooms_throughput`: 8 threads entering random rooms out of 2 or 8, with a short
//!   critical section; time per entry (all threads together);
//! - after the timings, the count of wake-ups and futile wake-ups of each lock on the
//!   same contended workload (printed; ours is zero by design).
//!
//! `cargo bench --bench rooms -- --warm-up-time 1 --measurement-time 3`

use chainlock::rooms::Rooms;
use chainlock_suite::rooms_baseline::CondvarRooms;
use criterion::{BenchmarkId, Criterion, criterion_group};
use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

const THREADS: usize = 8;

/// The two locks behind one interface, so that every workload runs the same code.
trait RoomsLock: Sync {
    fn name(&self) -> &'static str;
    fn with_room(&self, room: usize, f: impl FnOnce());
}

impl RoomsLock for Rooms {
    fn name(&self) -> &'static str {
        "chainlock_rooms"
    }
    #[inline]
    fn with_room(&self, room: usize, f: impl FnOnce()) {
        let _guard = self.enter(room);
        f();
    }
}

impl RoomsLock for CondvarRooms {
    fn name(&self) -> &'static str {
        "mutex_condvar_notify_all"
    }
    #[inline]
    fn with_room(&self, room: usize, f: impl FnOnce()) {
        let _guard = self.enter(room);
        f();
    }
}

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("rooms_uncontended");
    let mutex = parking_lot::Mutex::new(());
    group.bench_function("parking_lot_mutex_lock_unlock", |b| {
        b.iter(|| drop(black_box(&mutex).lock()));
    });
    let rooms = Rooms::new(2);
    group.bench_function("chainlock_rooms_enter_leave", |b| {
        b.iter(|| drop(black_box(&rooms).enter(black_box(0))));
    });
    let held = rooms.enter(0);
    group.bench_function("chainlock_rooms_enter_leave_occupied_room", |b| {
        b.iter(|| drop(black_box(&rooms).enter(black_box(0))));
    });
    drop(held);
    let baseline = CondvarRooms::new(2);
    group.bench_function("mutex_condvar_notify_all_enter_leave", |b| {
        b.iter(|| drop(black_box(&baseline).enter(black_box(0))));
    });
    group.finish();
}

/// `THREADS` threads share `ops` entries into random rooms; returns the wall time from
/// the first thread's start to the last thread's end.
fn contended_run(lock: &impl RoomsLock, rooms: usize, ops: u64) -> Duration {
    let per_thread = ops.div_ceil(THREADS as u64);
    let start_line = Barrier::new(THREADS);
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS as u64)
            .map(|seed| {
                let start_line = &start_line;
                s.spawn(move || {
                    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    start_line.wait();
                    let start = Instant::now();
                    for _ in 0..per_thread {
                        x ^= x << 13; // xorshift: cheap, per thread
                        x ^= x >> 7;
                        x ^= x << 17;
                        let room = (x % rooms as u64) as usize;
                        lock.with_room(room, || {
                            for i in 0..16u32 {
                                black_box(i); // a short critical section
                            }
                        });
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("threads ran");
    let last = spans.iter().map(|s| s.1).max().expect("threads ran");
    last - first
}

fn throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("rooms_throughput_8_threads");
    for rooms in [2, 8] {
        group.bench_with_input(
            BenchmarkId::new("chainlock_rooms", rooms),
            &rooms,
            |b, &n| {
                let lock = Rooms::new(n);
                b.iter_custom(|iters| contended_run(&lock, n, iters));
            },
        );
        group.bench_with_input(
            BenchmarkId::new("mutex_condvar_notify_all", rooms),
            &rooms,
            |b, &n| {
                let lock = CondvarRooms::new(n);
                b.iter_custom(|iters| contended_run(&lock, n, iters));
            },
        );
    }
    group.finish();
}

/// Wake-ups on one fixed contended workload per lock (not a timing).
fn report_wakeups() {
    const OPS: u64 = 40_000;
    println!("\nwake-ups on {OPS} entries by {THREADS} threads (futile = woken, not admitted):");
    for rooms in [2, 8] {
        let ours = Rooms::new(rooms);
        contended_run(&ours, rooms, OPS);
        let stats = ours.stats();
        let theirs = CondvarRooms::new(rooms);
        contended_run(&theirs, rooms, OPS);
        let (wakeups, futile) = theirs.wakeups();
        println!(
            "  {rooms} rooms: {:<26} waits {:>6}  wake-ups {:>6}  futile {:>6}",
            ours.name(),
            stats.waits,
            stats.wakeups,
            stats.futile_wakeups
        );
        println!(
            "  {rooms} rooms: {:<26} waits {:>6}  wake-ups {wakeups:>6}  futile {futile:>6}",
            theirs.name(),
            "-",
        );
        assert_eq!(
            stats.futile_wakeups, 0,
            "chainlock rooms woke a thread in vain"
        );
    }
}

criterion_group!(benches, uncontended, throughput);

fn main() {
    benches();
    report_wakeups();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
