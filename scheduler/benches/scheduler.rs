//! Scheduler throughput against client threads (1, 2, 4, 16, 64), for each strategy
//! (`chain`, `crab`, `coarse`) and each kind of leaf work (none, ~1 µs CPU, ~50 µs blocking
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

use chainlock_scheduler::load::{LoadConfig, Mix, Session, Stop};
use chainlock_scheduler::{
    DEFAULT_LECTURES, DEFAULT_STUDENTS, DEFAULT_THRESHOLD, LeafWork, ServiceConfig, Strategy,
};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
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
criterion_main!(benches);
