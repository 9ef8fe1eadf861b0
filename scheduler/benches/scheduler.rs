//! Scheduler throughput against client threads (1, 2, 4, 16, 64), for each strategy
//! (`chain`, `crab`, `optimistic`, `coarse`) and each kind of leaf work (none, ~1 µs CPU, ~50 µs blocking
//! sleep), on the service of the command-line program with its default shape and mix.
//!
//! Each iteration runs a fixed number of operations spread over the client threads, timed
//! from the moment every thread is ready to the moment the last one finishes (spawning is
//! not timed), and checks the invariants afterwards. The service keeps its state across
//! iterations, so warm-up brings it to a steady state.
//!
//! Run: `cargo bench -p chainlock-scheduler --bench scheduler`; then, from the workspace root,
//! `python3 scheduler/report.py` writes the README table and plot from
//! `target/criterion/scheduler_*`.
//!
//! With `--instructions` it runs no criterion benchmark: one client thread, one strategy
//! (`SCHEDULER_STRATEGY`, default `optimistic`; `optimistic-hand-written` is the `optimistic`
//! service over the hand-written descent below), a service warmed up to a steady state, then
//! [`SEAT_CALLS`] calls of [`seat_op`] (a seat lock and one descent to the student's class)
//! and as many of [`attend_op`] (a seat lock and two descents: leave, then join), each
//! `#[inline(never)]` for callgrind's `--toggle-collect` (DEVELOPMENT.md has the commands).

use chainlock::chain::{Absence, ChildrenRef, EpochGuard, MAX_RESTARTS};
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, Exit};
use chainlock_scheduler::load::{LoadConfig, Mix, Session, Stop};
use chainlock_scheduler::optimistic::tree::{Lecture, Registry};
use chainlock_scheduler::optimistic::{OptimisticDescent, OptimisticScheduler, lecture_by_version};
use chainlock_scheduler::tree::Class;
use chainlock_scheduler::{
    DEFAULT_LECTURES, DEFAULT_STUDENTS, DEFAULT_THRESHOLD, LeafWork, Scheduler, ServiceConfig,
    Strategy,
};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const THREADS: [usize; 5] = [1, 2, 4, 16, 64];

/// Operations per iteration: enough for the slowest strategy to run well above the cost of
/// starting a run, few enough that the 45 benchmarks take a few minutes. Ten times fewer
/// when the benchmarks only run once as tests.
fn ops_per_iteration(leaf_work: LeafWork) -> u64 {
    let ops = match leaf_work {
        LeafWork::None => 50_000,
        LeafWork::Cpu => 20_000,
        LeafWork::Blocking => 2_000,
    };
    let benchmarking = std::env::args().any(|arg| arg == "--bench");
    if benchmarking { ops } else { ops / 10 }
}

fn scheduler(c: &mut Criterion) {
    for leaf_work in LeafWork::ALL {
        let ops = ops_per_iteration(leaf_work);
        let mut group = c.benchmark_group(format!("scheduler_{leaf_work}"));
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(ops));
        for strategy in Strategy::ALL {
            let config = ServiceConfig::new(DEFAULT_STUDENTS, DEFAULT_THRESHOLD, leaf_work)
                .expect("the defaults are valid");
            let session = Session::new(strategy.build(config), DEFAULT_LECTURES);
            for threads in THREADS {
                let id = BenchmarkId::new(strategy.name(), threads);
                let mut seed = 0;
                group.bench_function(id, |b| {
                    b.iter_custom(|iterations| {
                        (0..iterations)
                            .map(|_| {
                                seed += 1;
                                let load = LoadConfig {
                                    threads,
                                    stop: Stop::Ops(ops),
                                    mix: Mix::default(),
                                    seed,
                                    check_every: None,
                                    record_latency: false,
                                };
                                let report = session.run(&load, &mut |_| {});
                                assert!(
                                    report.invariants_hold(),
                                    "{strategy}, {threads} threads, {leaf_work} leaf work: {:?}",
                                    report.violations
                                );
                                report.elapsed
                            })
                            .sum()
                    });
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, scheduler);

/// The `optimistic` strategy's descent to a class written by hand over chainlock's public
/// API ([`HybridLock::optimistic`], a lookup by reference under an [`EpochGuard`], the
/// class's lock, `validate`; [`MAX_RESTARTS`] restarts, then shared holds), the baseline of
/// the generated one (`--instructions`, `SCHEDULER_STRATEGY=optimistic-hand-written`).
struct HandWritten;

fn absent(level: usize, cause: Absence) -> Exit {
    Exit::Absent { level, cause }
}

impl OptimisticDescent for HandWritten {
    fn class<R>(
        root: &Arc<HybridLock<Registry>>,
        lecture: u32,
        mut pick: impl for<'g> FnMut(&'g Lecture, &'g EpochGuard) -> Option<&'g Arc<Mutex<Class>>>,
        leaf: impl FnOnce(&mut Class) -> R,
    ) -> Result<R, Exit> {
        let guard = EpochGuard::pin();
        for _ in 0..=MAX_RESTARTS {
            // A writer holding a lock, or a version changed under the reader: start again.
            let Ok(registry) = root.optimistic() else {
                continue;
            };
            let Some(node) = registry.child_ref(&lecture, &guard) else {
                if registry.validate().is_ok() {
                    return Err(absent(1, Absence::Missing));
                }
                continue;
            };
            let Ok(read) = node.optimistic() else {
                continue;
            };
            if registry.validate().is_err() {
                continue;
            }
            if read.is_closed() {
                if read.validate().is_ok() {
                    return Err(absent(1, Absence::Closed));
                }
                continue;
            }
            let Some(class) = pick(&read, &guard) else {
                if read.validate().is_ok() {
                    return Err(absent(2, Absence::Missing));
                }
                continue;
            };
            // Lock the child, then validate the parent: the class was the lecture's child
            // when it was locked.
            let mut class = class.lock();
            if read.validate().is_err() {
                continue;
            }
            if class.is_closed() {
                return Err(absent(2, Absence::Closed));
            }
            return Ok(leaf(&mut class));
        }
        // The pessimistic pass: shared locks hand over hand (an `Arc` cloned per level).
        let registry = root.read();
        let node = registry
            .child_ref(&lecture, &guard)
            .cloned()
            .ok_or(absent(1, Absence::Missing))?;
        let read = node.read();
        drop(registry);
        if read.is_closed() {
            return Err(absent(1, Absence::Closed));
        }
        let mut class = pick(&read, &guard)
            .ok_or(absent(2, Absence::Missing))?
            .lock_arc();
        drop(read);
        if class.is_closed() {
            return Err(absent(2, Absence::Closed));
        }
        Ok(leaf(&mut class))
    }

    fn lecture<R>(
        root: &Arc<HybridLock<Registry>>,
        lecture: u32,
        change: impl FnOnce(&Lecture) -> R,
    ) -> Result<R, Exit> {
        lecture_by_version(root, lecture, change)
    }
}

/// Calls of each measured operation in `--instructions` mode.
const SEAT_CALLS: u32 = 10_000;

/// One descent to `student`'s class (they attend one): what callgrind counts per descent.
#[inline(never)]
fn seat_op(service: &dyn Scheduler, student: u32) {
    black_box(service.seat(student)).expect("a known student");
}

/// An `attend`: the student leaves their class and joins one of `lecture`.
#[inline(never)]
fn attend_op(service: &dyn Scheduler, student: u32, lecture: u32) {
    black_box(service.attend(student, lecture)).expect("the lectures stay open");
}

/// What `mark_stores` writes to: a store to it starts and ends the measured descents.
static mut STORES_MARK: u64 = 0;

#[inline(never)]
fn mark_stores() {
    // SAFETY: one thread writes it, and nothing reads it but the trace.
    unsafe { std::ptr::write_volatile(&raw mut STORES_MARK, 1) };
}

/// `--instructions`: see the crate docs.
fn instructions() {
    let name = std::env::var("SCHEDULER_STRATEGY").unwrap_or_else(|_| "optimistic".to_owned());
    let config = ServiceConfig::new(DEFAULT_STUDENTS, DEFAULT_THRESHOLD, LeafWork::None)
        .expect("the defaults are valid");
    let service: Arc<dyn Scheduler> = if name == "optimistic-hand-written" {
        Arc::new(OptimisticScheduler::<HandWritten>::new(config))
    } else {
        name.parse::<Strategy>()
            .expect("SCHEDULER_STRATEGY: a strategy or optimistic-hand-written")
            .build(config)
    };
    let session = Session::new(service, DEFAULT_LECTURES);
    // The default mix without cancelled lectures (whose numbers the session replaces), so
    // that every lecture `0..DEFAULT_LECTURES` stays open: a steady state of full classes.
    let mix: Mix = "attend=900,expel=50,cancel-class=20,statistics=28"
        .parse()
        .expect("a valid mix");
    // Under lackey (`SCHEDULER_STORES`), whose trace of every access is slow, a shorter one.
    let stores = std::env::var_os("SCHEDULER_STORES").is_some();
    let warm_up = LoadConfig {
        threads: 1,
        stop: Stop::Ops(if stores { 30_000 } else { 200_000 }),
        mix,
        seed: 1,
        check_every: None,
        record_latency: false,
    };
    assert!(session.run(&warm_up, &mut |_| {}).invariants_hold());
    let service = session.service();
    let seated: Vec<u32> = (0..DEFAULT_STUDENTS)
        .filter(|&student| service.seat(student).ok().flatten().is_some())
        .collect();
    // For `scheduler/stores.py` under valgrind's lackey: where the stack is, and a store to a
    // marker before and after the measured descents.
    if stores {
        let local = 0_u8;
        println!("mark {:p}", &raw const STORES_MARK);
        println!("stack {:p}", &raw const local);
        mark_stores();
    }
    for call in 0..SEAT_CALLS {
        seat_op(service, seated[call as usize % seated.len()]);
    }
    if stores {
        mark_stores();
        return;
    }
    // Students and lectures spread as the load generator spreads them.
    for call in 0..SEAT_CALLS {
        let student = call.wrapping_mul(0x9E37_79B9) % DEFAULT_STUDENTS;
        attend_op(service, student, call.wrapping_mul(7) % DEFAULT_LECTURES);
    }
    assert_eq!(session.check(), []);
}

fn main() {
    if std::env::args().any(|arg| arg == "--instructions") {
        instructions();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
