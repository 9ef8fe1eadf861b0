//! The scheduling service under load: `chain` (chainlock, hand over hand), `crab` (chainlock,
//! shared down to an exclusive leaf), `optimistic` (versions down to an exclusive leaf) and
//! `coarse` (one global mutex), side by side.
//!
//! ```text
//! cargo run --release -p chainlock-scheduler                      # every strategy × leaf work
//! cargo run --release -p chainlock-scheduler -- --leaf blocking --threads 64
//! cargo run --release -p chainlock-scheduler -- --stats           # + the hottest locks, an SVG of waits
//! cargo run --release -p chainlock-scheduler -- --help
//! ```
//!
//! The service is this package's library (`src/lib.rs`), which its tests and benchmark use too.

use chainlock_scheduler::load::{LoadConfig, Mix, Progress, Report, Session, Stop};
use chainlock_scheduler::stats::{self, RunStats};
use chainlock_scheduler::{
    DEFAULT_LECTURES, DEFAULT_STUDENTS, DEFAULT_THRESHOLD, LeafWork, ServiceConfig, Strategy,
    leaf_work,
};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// A scheduling service for online classes under load, with four locking strategies side
/// by side.
///
/// Lectures are split into classes of at most `--threshold` students; client threads attend
/// lectures, expel students, cancel classes and lectures and read statistics at random. Each
/// strategy (chain: chainlock's hand-over-hand locking, every level exclusive; crab: shared
/// locks down to an exclusive class lock; optimistic: versions read instead of locks down to
/// an exclusive class lock; coarse: one global mutex) serves the same load once
/// per kind of leaf work, while the invariants (no class above the threshold, every student
/// in at most one class, statistics equal to a recount) are checked on consistent snapshots.
/// Prints throughput, latency and the invariant verdict as a table; exits with failure if an
/// invariant broke.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Strategies to compare, comma-separated: chain, crab, optimistic, coarse.
    #[arg(
        long,
        short,
        value_delimiter = ',',
        default_value = "chain,crab,optimistic,coarse"
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
    /// How long each run lasts, e.g. `1s`, `500ms`, `1m 30s`.
    #[arg(long, short, default_value = "1s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Stop each run after this many operations instead of after --duration.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ops: Option<u64>,
    /// Invariant checks during each run, every this long (`0s`: only at the end).
    #[arg(long, default_value = "200ms", value_parser = humantime::parse_duration)]
    check_every: Duration,
    /// Seed of the clients' random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record chainlock's contention telemetry during each run: print the hottest lock
    /// classes of each run (a `lock_stat`-style table) and write an SVG of the wait-time
    /// distributions per strategy (see --stats-svg).
    #[arg(long)]
    stats: bool,
    /// With --stats: record one acquisition in this many (at random intervals; each counts
    /// for this many, so the counts are estimates).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    sample_every: u32,
    /// With --stats: where the SVG goes.
    #[arg(long, default_value = "scheduler-waits.svg")]
    stats_svg: PathBuf,
    /// With --stats: how many of the hottest lock classes each run's table shows.
    #[arg(long, default_value_t = 5)]
    stats_top: usize,
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
    let mut runs = Vec::new();
    for &leaf in &args.leaf {
        let config = ServiceConfig::new(args.students, args.threshold, leaf)
            .expect("clap checked students and threshold");
        for &strategy in &args.strategy {
            let session = Session::new(strategy.build(config), args.lectures);
            let mut progress = RunProgress::new(format!("{leaf:<8} {strategy:<6}"), load.stop);
            if args.stats {
                stats::start(args.sample_every);
            }
            let report = session.run(&load, &mut |now| progress.update(now));
            if args.stats {
                let report = stats::finish();
                runs.push(RunStats {
                    leaf,
                    strategy,
                    report,
                });
            }
            progress.finish(&report);
            for violation in report.violations.iter().take(5) {
                eprintln!("  {leaf} {strategy}: VIOLATION: {violation}");
            }
            rows.push((leaf, report));
        }
    }
    print_table(&rows, args.threads);
    if args.stats && !print_stats(&args, &runs) {
        return ExitCode::FAILURE;
    }
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
            || humantime::format_duration(args.duration).to_string(),
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
        "| leaf work | strategy   | threads |      ops/s | vs coarse |       p50 |       p99 | checks | invariants |"
    );
    println!(
        "|-----------|------------|--------:|-----------:|----------:|----------:|----------:|-------:|------------|"
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
            "| {leaf:<9} | {:<10} | {threads:>7} | {:>10.0} | {ratio:>9} | {p50:>9} | {p99:>9} | {:>6} | {verdict:<10} |",
            report.strategy,
            report.throughput(),
            report.checks,
        );
    }
}

/// The hottest lock classes of each run, and the SVG; `false` if the SVG could not be written.
fn print_stats(args: &Args, runs: &[RunStats]) -> bool {
    println!();
    let scale = if args.sample_every == 1 {
        "every acquisition recorded".to_owned()
    } else {
        format!(
            "estimates: one acquisition in {0} recorded, each counted {0} times",
            args.sample_every
        )
    };
    println!("## the lock each run waited for most, and who held it ({scale})");
    for run in runs {
        println!("{}", stats::headline(run));
    }
    println!();
    println!(
        "## the {} hottest lock classes of each run, by total wait",
        args.stats_top
    );
    for run in runs {
        println!();
        println!("### leaf work {}, strategy {}", run.leaf, run.strategy);
        print!("{}", stats::hottest(&run.report, args.stats_top));
    }
    println!();
    match std::fs::write(&args.stats_svg, stats::svg(runs)) {
        Ok(()) => {
            println!(
                "wait-time distributions per strategy: {}",
                args.stats_svg.display()
            );
            true
        }
        Err(error) => {
            eprintln!("cannot write {}: {error}", args.stats_svg.display());
            false
        }
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

/// How often a run reports progress in plain lines when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The progress of one run on stderr. On a terminal, an indicatif bar redrawn in place and
/// cleared at the end. Otherwise (redirected to a file or a pipe, or `TERM=dumb`, where
/// indicatif hides its bar and draws nothing at all), plain lines: one every
/// [`PLAIN_EVERY`] and one when the run ends.
struct RunProgress {
    label: String,
    /// `None` when stderr is not a terminal.
    bar: Option<ProgressBar>,
    stop: Stop,
    last_line: Instant,
}

impl RunProgress {
    fn new(label: String, stop: Stop) -> Self {
        let (length, unit) = match stop {
            Stop::After(duration) => (duration.as_millis().try_into().unwrap_or(u64::MAX), "ms"),
            Stop::Ops(ops) => (ops, "ops"),
        };
        let template = format!("  {{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}  {{msg}}");
        let bar = ProgressBar::new(length)
            .with_style(
                ProgressStyle::with_template(&template)
                    .expect("a valid template")
                    .progress_chars("=> "),
            )
            .with_prefix(label.clone());
        // Hidden when stderr is not a terminal, or TERM=dumb.
        let bar = (!bar.is_hidden()).then_some(bar);
        Self {
            label,
            bar,
            stop,
            last_line: Instant::now(),
        }
    }

    fn update(&mut self, progress: Progress) {
        let counts = format!(
            "{} ops, {} checks, {} violations",
            progress.ops, progress.checks, progress.violations
        );
        if let Some(bar) = &self.bar {
            bar.set_position(match self.stop {
                Stop::After(_) => progress.elapsed.as_millis().try_into().unwrap_or(u64::MAX),
                Stop::Ops(_) => progress.ops,
            });
            bar.set_message(counts);
        } else if self.last_line.elapsed() >= PLAIN_EVERY {
            eprintln!(
                "  {} {:>6.1} s  {counts}",
                self.label,
                progress.elapsed.as_secs_f64()
            );
            self.last_line = Instant::now();
        }
    }

    fn finish(self, report: &Report) {
        match self.bar {
            Some(bar) => bar.finish_and_clear(),
            None => eprintln!(
                "  {} {:>6.1} s  {} ops, {} checks, {} violations (done)",
                self.label,
                report.elapsed.as_secs_f64(),
                report.ops,
                report.checks,
                report.violations.len()
            ),
        }
    }
}
