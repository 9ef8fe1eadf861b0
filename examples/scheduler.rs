//! The scheduling service under load: `chain` (chainlock, hand over hand), `crab` (chainlock,
//! shared down to an exclusive leaf) and `coarse` (one global mutex), side by side.
//!
//! ```text
//! cargo run --release --example scheduler                       # every strategy × leaf work
//! cargo run --release --example scheduler -- --leaf blocking --threads 64
//! cargo run --release --example scheduler -- --help
//! ```
//!
//! The service itself lives in the suite's support library (`tests/support/scheduler`), so
//! that the test and the benchmark run the same code.

use chainlock_suite::scheduler::load::{LoadConfig, Mix, Report, Session, Stop};
use chainlock_suite::scheduler::{
    DEFAULT_LECTURES, DEFAULT_STUDENTS, DEFAULT_THRESHOLD, LeafWork, ServiceConfig, Strategy,
    leaf_work,
};
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// Runs the scheduling service under a random load with each locking strategy and prints
/// throughput, latency and the invariant verdict side by side.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Strategies to compare, comma-separated: chain, crab, coarse.
    #[arg(
        long,
        short,
        value_delimiter = ',',
        default_value = "chain,crab,coarse"
    )]
    strategy: Vec<Strategy>,
    /// Work done at a class while it is locked, comma-separated: none, cpu (~1 µs),
    /// blocking (a 50 µs sleep standing for I/O).
    #[arg(
        long,
        short,
        value_delimiter = ',',
        default_value = "none,cpu,blocking"
    )]
    leaf: Vec<LeafWork>,
    /// Client threads.
    #[arg(long, short, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Lectures running at once (a cancelled lecture is replaced by a new one).
    #[arg(long, default_value_t = DEFAULT_LECTURES, value_parser = clap::value_parser!(u32).range(1..))]
    lectures: u32,
    /// Students.
    #[arg(long, default_value_t = DEFAULT_STUDENTS, value_parser = clap::value_parser!(u32).range(1..))]
    students: u32,
    /// The most students a class may hold; a lecture whose classes are all full gets a new one.
    #[arg(long, default_value_t = DEFAULT_THRESHOLD, value_parser = clap::value_parser!(u32).range(1..))]
    threshold: u32,
    /// Operation weights: attend, expel, cancel-class, cancel-lecture, statistics.
    #[arg(long, default_value_t = Mix::default())]
    mix: Mix,
    /// How long each run lasts, e.g. `1s`, `500ms`, `2.5` (seconds).
    #[arg(long, short, default_value = "1s", value_parser = parse_duration)]
    duration: Duration,
    /// Stop each run after this many operations instead of after --duration.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ops: Option<u64>,
    /// Invariant checks during each run, every this long (`0`: only at the end).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    check_every: Duration,
    /// Seed of the clients' random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else {
        (text.strip_suffix('s').unwrap_or(text), 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|value| Duration::try_from_secs_f64(value * unit).ok())
        .ok_or_else(|| format!("`{text}` is not a duration like `1s`, `250ms` or `2.5`"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let load = LoadConfig {
        threads: usize::from(args.threads),
        stop: args.ops.map_or(Stop::After(args.duration), Stop::Ops),
        mix: args.mix,
        seed: args.seed,
        check_every: (!args.check_every.is_zero()).then_some(args.check_every),
        record_latency: true,
    };
    describe(&args);

    let mut rows = Vec::new();
    for &leaf in &args.leaf {
        let config = ServiceConfig::new(args.students, args.threshold, leaf)
            .expect("clap checked students and threshold");
        for &strategy in &args.strategy {
            let session = Session::new(strategy.build(config), args.lectures);
            let report = session.run(&load, &mut |progress| {
                eprint!(
                    "\r  {leaf:<8} {strategy:<6} {:>5.1} s  {:>10} ops  {} checks  {} violations   ",
                    progress.elapsed.as_secs_f64(),
                    progress.ops,
                    progress.checks,
                    progress.violations,
                );
                let _ = std::io::stderr().flush();
            });
            eprint!("\r{:80}\r", "");
            for violation in report.violations.iter().take(5) {
                eprintln!("  {leaf} {strategy}: VIOLATION: {violation}");
            }
            rows.push((leaf, report));
        }
    }
    print_table(&rows, args.threads);
    if rows.iter().all(|(_, report)| report.invariants_hold()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The set-up, and what the leaf work really costs here.
fn describe(args: &Args) {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "scheduler: {} client threads on {cores} cores, {} lectures, {} students, classes of at most {}",
        args.threads, args.lectures, args.students, args.threshold
    );
    println!(
        "mix: {}; each run: {}",
        args.mix,
        args.ops.map_or_else(
            || format!("{:?}", args.duration),
            |ops| format!("{ops} operations")
        )
    );
    leaf_work::lower_timer_slack();
    let costs: Vec<String> = args
        .leaf
        .iter()
        .filter(|&&leaf| leaf != LeafWork::None)
        .map(|&leaf| format!("{leaf} {}", micros(leaf.measure(200))))
        .collect();
    if !costs.is_empty() {
        println!(
            "leaf work, median cost here (held under the class lock; coarse: the global lock): {}",
            costs.join(", ")
        );
    }
    println!();
}

fn print_table(rows: &[(LeafWork, Report)], threads: u16) {
    println!(
        "| leaf work | strategy | threads |      ops/s | vs coarse |       p50 |       p99 | checks | invariants |"
    );
    println!(
        "|-----------|----------|--------:|-----------:|----------:|----------:|----------:|-------:|------------|"
    );
    for (leaf, report) in rows {
        let coarse = rows
            .iter()
            .find(|(other, r)| other == leaf && r.strategy == Strategy::Coarse)
            .map(|(_, r)| r.throughput());
        let ratio = coarse.map_or_else(String::new, |coarse| {
            format!("{:.2}×", report.throughput() / coarse)
        });
        let (p50, p99) = report
            .latency
            .map_or((String::new(), String::new()), |latency| {
                (micros(latency.p50), micros(latency.p99))
            });
        let verdict = if report.invariants_hold() {
            "hold".to_owned()
        } else {
            format!("{} BROKEN", report.violations.len())
        };
        println!(
            "| {leaf:<9} | {:<8} | {threads:>7} | {:>10.0} | {ratio:>9} | {p50:>9} | {p99:>9} | {:>6} | {verdict:<10} |",
            report.strategy,
            report.throughput(),
            report.checks,
        );
    }
}

fn micros(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 10.0 {
        format!("{micros:.2} µs")
    } else if micros < 10_000.0 {
        format!("{micros:.0} µs")
    } else {
        format!("{:.1} ms", micros / 1e3)
    }
}
